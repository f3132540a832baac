# e2e: the agent's dashboard, rendered by headless Chromium against a real `fgpu agent` on two
# simulated GPUs with three slices (three tenants, three tiers) and workloads in two of them.
# Checks the rendered DOM and keeps a screenshot as a test artifact:
#   $FGPU_ARTIFACT_DIR/dashboard.png (ctest sets it to <build>/artifacts).
# Skips (77) without Chromium, fgpu-probe, the simulated driver or the interposer.
# Under --virtual-time-budget the page's clock runs far ahead of the real one (polls 1.5 s apart
# in virtual time take milliseconds), so the achieved shares in the screenshot read near 0 %; a
# browser on a real clock is unaffected. Hence no assertion on them here.
. "$(dirname "$0")/lib.sh"
# Workloads preloading an AddressSanitizer build of libfgpu.so (the dev preset) need this.
export ASAN_OPTIONS="${ASAN_OPTIONS:-verify_asan_link_order=0}"

CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ] || skip "chromium is not installed (scripts/bootstrap installs it)"
require_probe_and_driver
HOOK="$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so"
[ -f "$HOOK" ] || skip "$HOOK (the interposer, target fgpu_hook) is not built"
ARTIFACT_DIR=${FGPU_ARTIFACT_DIR:-$FGPU_BIN_DIR/../artifacts}
mkdir -p "$ARTIFACT_DIR" || fail "cannot create $ARTIFACT_DIR"

SEGMENT="/fgpu-e2e-dashboard-$$"
STATE="$SCRATCH/state"
# Our own compute boards, so no other test's slices show up in (or disturb) ours.
FGPU_COMPUTE_DIR="$SCRATCH/boards"
export FGPU_COMPUTE_DIR
PIDS=""

# Every process this script started, by its pid, then the simulated GPUs' segment and the scratch.
cleanup() {
  for pid in $PIDS; do kill "$pid" 2>/dev/null; done
  for pid in $PIDS; do wait "$pid" 2>/dev/null; done
  "$FGPU" sim reset --segment "$SEGMENT" >/dev/null 2>&1
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

printf '{"devices": [{"count": 2, "name": "Sim H100", "memory": "16GiB"}]}\n' >"$SCRATCH/gpus.json"

# Background processes start as one simple command each (not through a shell function, which
# would fork a subshell): `fgpu sim run` execs its command, so $! is the agent's or the probe's
# own pid, the one cleanup stops.
# The slices are made over TCP with the admin token (without it the TCP listener is read-only);
# the page itself reads without one, as any viewer.
TOKEN="dashboard-e2e-token-$$-0123456789"
(umask 077 && printf '%s\n' "$TOKEN" >"$SCRATCH/token")

start_agent() {
  "$FGPU" sim run --segment "$SEGMENT" --config "$SCRATCH/gpus.json" -- \
    "$FGPU" agent --state "$STATE" --listen 127.0.0.1:0 --token-file "$SCRATCH/token" >"$SCRATCH/agent.out" 2>"$SCRATCH/agent.err" &
  PIDS="$PIDS $!"
  waited=0
  until PORT=$(sed -n 's|.*serving http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$SCRATCH/agent.out") && [ -n "$PORT" ]; do
    [ "$waited" -lt 100 ] || fail "the agent did not start in 10 s: $(cat "$SCRATCH/agent.out" "$SCRATCH/agent.err")"
    sleep 0.1
    waited=$((waited + 1))
  done
  URL="http://127.0.0.1:$PORT/"
}

# api METHOD PATH [JSON]: the agent's answer on stdout; fails on a non-2xx status.
api() {
  if command -v curl >/dev/null 2>&1; then
    method=$1 path=$2
    shift 2
    [ $# -eq 0 ] || set -- --data "$1"
    curl -sS --fail-with-body -X "$method" -H 'Content-Type: application/json' -H "Authorization: Bearer $TOKEN" \
      "$@" "$URL${path#/}" ||
      fail "$method $path failed"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c '
import http.client, sys
connection = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
body = sys.argv[4] or None
connection.request(sys.argv[2], sys.argv[3], body, {"Content-Type": "application/json",
                                                   "Authorization": "Bearer " + sys.argv[5]})
answer = connection.getresponse()
sys.stdout.write(answer.read().decode())
sys.exit(0 if answer.status < 300 else 1)' "$PORT" "$1" "$2" "${3:-}" "$TOKEN" || fail "$1 $2 failed"
  else
    skip "neither curl nor python3 to call the API with"
  fi
}

# field JSON NAME: a string field of a flat JSON object (the agent writes compact JSON).
field() {
  printf '%s' "$1" | sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p"
}

# create_slice JSON: creates a slice; sets SLICE_ID, SLICE_DIR, SLICE_GPU.
create_slice() {
  created=$(api POST /v1/slices "$1")
  SLICE_ID=$(field "$created" id)
  SLICE_DIR=$(field "$created" dir)
  SLICE_GPU=$(field "$created" gpu)
  [ -n "$SLICE_ID" ] && [ -n "$SLICE_DIR" ] || fail "unexpected answer to POST /v1/slices: $created"
}

# in_slice ARGS...: fgpu-probe ARGS inside the last created slice, as `fgpu run` starts a workload.
in_slice() {
  "$FGPU" sim run --segment "$SEGMENT" --config "$SCRATCH/gpus.json" -- \
    env LD_PRELOAD="$HOOK" FGPU_SLICE="$SLICE_DIR" CUDA_VISIBLE_DEVICES="$SLICE_GPU" \
    "$PROBE" "$@" >>"$SCRATCH/probes.out" 2>&1 &
  PIDS="$PIDS $!"
}

# chromium ARGS... URL: a fresh headless browser (its own profile) that lets the page poll for 5 s
# of virtual time before it dumps or shoots; bounded in real time too. The page's console goes to
# $SCRATCH/chromium.err, and a script error or a request the page's policy refused fails the test.
chromium() {
  : >"$SCRATCH/chromium.err"
  timeout 40 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$SCRATCH/chromium-profile" --enable-logging=stderr --v=0 --virtual-time-budget=5000 \
    "$@" 2>"$SCRATCH/chromium.err" || return 1
  if grep -E 'CONSOLE.*(Uncaught|Refused to)' "$SCRATCH/chromium.err" >&2; then
    fail "the page logged an error (above)"
  fi
}

expect_dom_contains() {
  case "$DOM" in *"$1"*) ;; *) fail "the rendered dashboard lacks '$1'; DOM:
$DOM" ;; esac
}

start_agent
create_slice '{"memory":"4GiB","compute":50,"tier":"latency","tenant":"team-alpha","gpu":"0"}'
ALPHA=$SLICE_ID
in_slice alloc --bytes 1536MiB --hold-ms 60000
in_slice spin --duty 100 --seconds 60 --kernel-us 1000
create_slice '{"memory":"6GiB","compute":30,"compute_mode":"cap","tier":"standard","tenant":"team-beta","gpu":"0"}'
BETA=$SLICE_ID
in_slice alloc --bytes 4GiB --hold-ms 60000
create_slice '{"memory":"8GiB","compute":20,"tier":"batch","tenant":"research","gpu":"1"}'
GAMMA=$SLICE_ID

# Let the workloads allocate and launch before the page's first poll.
waited=0
until [ "$(grep -c '"mem_get_info"' "$SCRATCH/probes.out" 2>/dev/null)" -ge 2 ]; do
  [ "$waited" -lt 100 ] || fail "the workloads did not allocate in 10 s: $(cat "$SCRATCH/probes.out")"
  sleep 0.1
  waited=$((waited + 1))
done

DOM=$(chromium --dump-dom "$URL") || fail "chromium --dump-dom failed: $(tail -n 20 "$SCRATCH/chromium.err")"
for slice in "$ALPHA" "$BETA" "$GAMMA"; do
  expect_dom_contains "id=\"slice-$slice\""
  expect_dom_contains ">$slice<"
  expect_dom_contains "id=\"plot-$slice\""
done
for tenant in team-alpha team-beta research; do
  expect_dom_contains ">$tenant<"
  expect_dom_contains "id=\"tenant-$tenant\""
done
expect_dom_contains 'id="gpu-0-memory"'
expect_dom_contains 'id="gpu-0-compute"'
expect_dom_contains 'id="gpu-1-memory"'
expect_dom_contains '<div id="error" role="alert" hidden="">'  # every endpoint answered
# team-alpha's and team-beta's ledgers, live (what they allocated plus each context's overhead).
# One unit for memory: GiB with two decimals, everywhere.
expect_dom_contains ' / 4.00 GiB<'
expect_dom_contains ' / 6.00 GiB<'
case "$DOM" in *'>0.00 GiB / 4.00 GiB<'* | *'>0.00 GiB / 6.00 GiB<'*) fail "a workload's memory does not show: $DOM" ;; esac
case "$DOM" in *' MiB'*) fail "a figure in MiB: the page shows memory in GiB only" ;; esac
expect_dom_contains '>Waited<'  # the compute gate's throttled time, per slice
expect_dom_contains 'class="line"'                             # the sparklines have data

# Tenant colours come from the names: a reload (a fresh browser) gives each tenant the same one.
swatch_of() {  # swatch_of DOM TENANT: the style of the swatch in the tenant's chargeback row
  printf '%s' "$1" | tr '\n' ' ' | sed -n "s|.*<tr id=\"tenant-$2\"><td><span class=\"swatch\" style=\"\([^\"]*\)\".*|\1|p"
}
FIRST=$(swatch_of "$DOM" team-alpha)
[ -n "$FIRST" ] || fail "no swatch for team-alpha in: $DOM"
rm -rf "$SCRATCH/chromium-profile"
AGAIN=$(chromium --dump-dom "$URL") || fail "chromium --dump-dom failed: $(tail -n 20 "$SCRATCH/chromium.err")"
[ "$(swatch_of "$AGAIN" team-alpha)" = "$FIRST" ] || fail "team-alpha's colour changed across reloads: $FIRST then $(swatch_of "$AGAIN" team-alpha)"
[ "$(swatch_of "$AGAIN" team-beta)" != "$FIRST" ] || fail "team-alpha and team-beta share a colour"

SHOT="$ARTIFACT_DIR/dashboard.png"
rm -f "$SHOT"
chromium --window-size=1280,900 --hide-scrollbars --screenshot="$SHOT" "$URL" >/dev/null ||
  fail "chromium --screenshot failed: $(tail -n 20 "$SCRATCH/chromium.err")"
[ -f "$SHOT" ] || fail "no screenshot at $SHOT"
size=$(wc -c <"$SHOT")
[ "$size" -gt 10240 ] || fail "the screenshot $SHOT is only $size bytes"
echo "dashboard screenshot: $SHOT ($size bytes)"
