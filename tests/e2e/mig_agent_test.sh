# e2e: isolation classes on the simulated H100s (docs/mig.md "Isolation classes"). GPU 0 is shared,
# GPU 1 of the mig class: the agent takes it to MIG with the configured geometry at start; slices
# inside an instance are capped there, requests for hard isolation take an instance whole, and a
# geometry that would destroy an instance holding a slice is refused with the reason, the GPU
# keeping what it has, until the slice is gone.
# Usage: sh mig_agent_test.sh CASE   (77: fgpu-probe, the interposer or libcuda.so.1 not built)
. "$(dirname "$0")/lib.sh"
export ASAN_OPTIONS=${ASAN_OPTIONS:-verify_asan_link_order=0}

SEGMENT=/fgpu-e2e-mig-agent-$$
AGENT_PID=
SOCKET=$SCRATCH/agent/agent.sock
HOLDER_PID=
GIB=1073741824

cleanup() {
  [ -n "$HOLDER_PID" ] && kill "$HOLDER_PID" 2>/dev/null && wait "$HOLDER_PID" 2>/dev/null
  stop_agent
  "$FGPU" sim reset --segment "$SEGMENT" >/dev/null 2>&1
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

stop_agent() {
  [ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
  AGENT_PID=
}

# start_agent GEOMETRY: the agent (root, as MIG changes need) with GPU 1 of the mig class;
# GEOMETRY is the list's items, or "dynamic".
start_agent() {
  require_probe_and_driver
  [ -f "$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so" ] || skip "the interposer is not built"
  printf '{"devices": [{"uuid": "GPU-00000000-0000-0000-0000-0000000000a0"}, {"uuid": "GPU-00000000-0000-0000-0000-0000000000a1"}]}\n' \
    >"$SCRATCH/gpus.json"
  if [ "$1" = dynamic ]; then
    printf '{"gpus": [{"gpu": "1", "isolation": "mig", "mig": "dynamic"}]}\n' >"$SCRATCH/agent.json"
  else
    printf '{"gpus": [{"gpu": "1", "isolation": "mig", "mig": [%s]}]}\n' "$1" >"$SCRATCH/agent.json"
  fi
  # Root is what lets NVML change MIG; a test run as another user is let through explicitly.
  FGPU_SIM_MIG_PRIVILEGED=1 FGPU_COMPUTE_DIR=$SCRATCH/boards "$FGPU" sim run --config "$SCRATCH/gpus.json" \
    --segment "$SEGMENT" -- "$FGPU" agent --state "$SCRATCH/agent" --config "$SCRATCH/agent.json" --listen 127.0.0.1:0 \
    >"$SCRATCH/agent.out" 2>"$SCRATCH/agent.err" &
  AGENT_PID=$!
  for _ in $(seq 100); do grep -q serving "$SCRATCH/agent.out" 2>/dev/null && return 0; sleep 0.1; done
  fail "the agent did not start: $(cat "$SCRATCH/agent.err")"
}

# instance_uuid PROFILE [N]: the UUID of the agent's Nth (default first) MIG instance of PROFILE.
instance_uuid() {
  "$FGPU" status --json --agent "$SOCKET" |
    awk -v want="\"$1\"," -v nth="${2:-1}" '
      /"mig_profile":/ { mine = ($2 == want) }
      /"uuid":/ && mine { if (++seen == nth) { gsub(/[",]/, "", $2); print $2; exit } mine = 0 }'
}

# start_holder DEVICE BYTES HOLD_MS [FGPU RUN FLAGS...]: a workload allocating BYTES in a 10 GiB
# ($HOLDER_MEMORY) slice on DEVICE for HOLD_MS, in the background; its pid in $HOLDER_PID, its slice in $SLICE.
start_holder() {
  device=$1 bytes=$2 hold=$3
  shift 3
  "$FGPU" run --agent "$SOCKET" --memory "${HOLDER_MEMORY:-10GiB}" --device "$device" "$@" -- "$PROBE" alloc --bytes "$bytes" \
    --hold-ms "$hold" >"$SCRATCH/holder.out" 2>"$SCRATCH/holder.err" &
  HOLDER_PID=$!
  for _ in $(seq 100); do grep -q '"event":"alloc"' "$SCRATCH/holder.out" 2>/dev/null && break; sleep 0.1; done
  grep -q '"result":"CUDA_SUCCESS"' "$SCRATCH/holder.out" || fail "the holder did not allocate: $(cat "$SCRATCH/holder.err")"
  SLICE=$(sed -n 's/^fgpu run: slice \([^ ]*\) on .*/\1/p' "$SCRATCH/holder.err")
  [ -n "$SLICE" ] || fail "no slice for the holder: $(cat "$SCRATCH/holder.err")"
}

# stop_holder: ends the workload; its slice goes with it (fgpu run's slices are released on exit).
stop_holder() {
  kill "$HOLDER_PID" 2>/dev/null
  wait "$HOLDER_PID" 2>/dev/null
  HOLDER_PID=
}

# status_until TEXT: `fgpu status` (in $OUT) until it shows TEXT, for up to 10 s; fails if it never does.
status_until() {
  for _ in $(seq 100); do
    run_fgpu status --agent "$SOCKET"
    case "$OUT" in *"$1"*) return 0 ;; esac
    sleep 0.1
  done
  expect_out_contains "$1"
}

# probe_total_mem: total_mem from the probe's info line in $OUT.
probe_total_mem() {
  echo "$OUT" | sed -n 's/.*"total_mem":\([0-9]*\).*/\1/p' | head -n 1
}

case_geometry_and_slices_inside() {
  start_agent '"3g.40gb", "2g.20gb", "2g.20gb"'
  run_fgpu status --agent "$SOCKET"
  expect_status 0
  expect_out_contains "mig 3g.40gb@"
  [ "$(echo "$OUT" | grep -c 'mig 2g.20gb@')" -eq 2 ] || fail "not two 2g.20gb instances:
$OUT"
  THREE=$(instance_uuid 3g.40gb)
  TWO=$(instance_uuid 2g.20gb)
  case "$THREE" in MIG-*) ;; *) fail "no 3g.40gb instance UUID: '$THREE'" ;; esac
  # A 10 GiB slice inside the 3g.40gb: the workload sees 10 GiB and is refused past it.
  run_fgpu run --agent "$SOCKET" --memory 10GiB --device "$THREE" -- "$PROBE" info
  expect_status 0
  [ "$(probe_total_mem)" = $((10 * GIB)) ] || fail "the slice in the 3g.40gb does not show 10 GiB: $OUT"
  run_fgpu run --agent "$SOCKET" --memory 10GiB --device "$THREE" -- "$PROBE" alloc --bytes 11GiB
  expect_status 1
  expect_out_contains "CUDA_ERROR_OUT_OF_MEMORY"
  # While one holds 9 GiB in its slice there, the 2g.20gb beside it keeps its whole memory, and
  # a slice on the shared GPU 0 is capped as ever.
  start_holder "$THREE" 9GiB 20000
  run_fgpu run --agent "$SOCKET" --memory 19GiB --device "$TWO" -- "$PROBE" alloc --bytes 18GiB
  expect_status 0
  run_fgpu run --agent "$SOCKET" --memory 4GiB --device 0 -- "$PROBE" info
  expect_status 0
  [ "$(probe_total_mem)" = $((4 * GIB)) ] || fail "the slice on the shared GPU does not show 4 GiB: $OUT"
  # The GPU in MIG mode takes no slice itself, and says where to go.
  run_fgpu run --agent "$SOCKET" --memory 1GiB --device 1 -- "$PROBE" info
  expect_status 1
  expect_err_contains "is in MIG mode: name one of its instances"
}

case_hard_isolation_takes_an_instance_whole() {
  start_agent '"3g.40gb", "2g.20gb", "2g.20gb"'
  # The smallest instance that holds 15 GiB: a 2g.20gb, all of it.
  run_fgpu run --agent "$SOCKET" --isolation hard --memory 15GiB -- "$PROBE" info
  expect_status 0
  [ "$(probe_total_mem)" = $((20096 * 1048576)) ] || fail "hard isolation did not get a whole 2g.20gb: $OUT"
  expect_err_contains "MIG-"
  run_fgpu run --agent "$SOCKET" --isolation hard --memory 30GiB -- "$PROBE" info
  expect_status 0
  [ "$(probe_total_mem)" = $((40448 * 1048576)) ] || fail "30 GiB of hard isolation is not the 3g.40gb: $OUT"
  run_fgpu run --agent "$SOCKET" --isolation hard --memory 50GiB -- "$PROBE" info
  expect_status 1
  run_fgpu run --agent "$SOCKET" --isolation exclusive -- "$PROBE" info
  expect_status 1
  expect_err_contains "exclusive"
}

case_reconfiguration_waits_for_the_slice_in_the_way() {
  start_agent '"3g.40gb", "2g.20gb", "2g.20gb"'
  THREE=$(instance_uuid 3g.40gb)
  start_holder "$THREE" 1GiB 60000
  # The admin asks for one 7g.80gb: the 3g.40gb holds a slice, so nothing changes and status says why.
  stop_agent
  start_agent '"7g.80gb"'
  run_fgpu status --agent "$SOCKET"
  expect_status 0
  expect_out_contains "mig 3g.40gb@"
  expect_out_contains "is not applied: the 3g.40gb instance at memory slice"
  expect_out_contains "holds slice $SLICE"
  grep -q "fgpu agent: warn mig" "$SCRATCH/agent.err" || fail "the refusal is not logged: $(cat "$SCRATCH/agent.err")"
  [ "$(instance_uuid 3g.40gb)" = "$THREE" ] || fail "the busy instance was not kept"
  # Stop-loss finds the holder's process in its slice, though NVML lists it on the whole GPU.
  sleep 1.5
  if grep -q "warn unattributed" "$SCRATCH/agent.err"; then fail "a slice's process in a MIG instance is unattributed: $(cat "$SCRATCH/agent.err")"; fi
  # Once the workload ends its slice is released; the next start applies the geometry.
  stop_holder
  for _ in $(seq 100); do
    run_fgpu slice list --agent "$SOCKET"
    [ "$OUT" = "no slices" ] && break
    sleep 0.1
  done
  expect_out "no slices"
  stop_agent
  start_agent '"7g.80gb"'
  run_fgpu status --agent "$SOCKET"
  expect_status 0
  expect_out_contains "mig 7g.80gb@0"
  case "$OUT" in *"not applied"*) fail "the geometry is still not applied: $OUT" ;; esac
  grep -q "step=\"GPU 1: create 7g.80gb at slot 0\"" "$SCRATCH/agent.err" || fail "the steps are not logged: $(cat "$SCRATCH/agent.err")"
}

# SIGHUP re-applies the configuration's geometry to the running agent. With drain, the instance
# holding a slice takes no new slice, the others keep serving, and the geometry is applied as
# soon as the slice is gone, with no restart.
case_reload_drains_then_applies() {
  start_agent '"3g.40gb", "2g.20gb", "2g.20gb"'
  THREE=$(instance_uuid 3g.40gb)
  TWO=$(instance_uuid 2g.20gb)
  start_holder "$THREE" 1GiB 60000
  # Keep the 3g.40gb and one 2g.20gb, turn the other 2g.20gb and the rest into 1g.10gb: the busy
  # instance stays, so this applies at once.
  printf '{"gpus": [{"gpu": "1", "isolation": "mig", "drain": true, "mig": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]}]}\n' \
    >"$SCRATCH/agent.json"
  kill -HUP "$AGENT_PID"
  for _ in $(seq 50); do
    run_fgpu status --agent "$SOCKET"
    [ "$(echo "$OUT" | grep -c 'mig 1g.10gb@')" -eq 2 ] && break
    sleep 0.1
  done
  [ "$(echo "$OUT" | grep -c 'mig 1g.10gb@')" -eq 2 ] || fail "the reload did not apply the geometry: $OUT"
  [ "$(instance_uuid 3g.40gb)" = "$THREE" ] || fail "the busy 3g.40gb was touched"
  kill -0 "$HOLDER_PID" 2>/dev/null || fail "the workload in the kept instance died"
  # Now one 7g.80gb: the 3g.40gb is in the way, so it drains.
  printf '{"gpus": [{"gpu": "1", "isolation": "mig", "drain": true, "mig": ["7g.80gb"]}]}\n' >"$SCRATCH/agent.json"
  kill -HUP "$AGENT_PID"
  status_until "draining for the configured geometry (7g.80gb): the 3g.40gb instance at memory slice"
  expect_out_contains "holds slice $SLICE"
  # The idle instances are not destroyed yet either: the geometry changes in one go.
  expect_out_contains "mig 2g.20gb@"
  run_fgpu run --agent "$SOCKET" --memory 1GiB --device "$THREE" -- "$PROBE" info
  expect_status 1
  expect_err_contains "takes no new slices for now (draining for a MIG reconfiguration)"
  # The workload ends; its slice is released; the geometry follows without a restart.
  stop_holder
  status_until "mig 7g.80gb@0"
  case "$OUT" in *"draining"* | *"not applied"*) fail "a note is left after the drain: $OUT" ;; esac
  run_fgpu run --agent "$SOCKET" --isolation hard --memory 70GiB -- "$PROBE" info
  expect_status 0
  [ "$(probe_total_mem)" = $((81152 * 1048576)) ] || fail "the new 7g.80gb is not placed on: $OUT"
  grep -q "fgpu agent: info reload" "$SCRATCH/agent.err" || fail "the reload is not logged"
  # A reload with a broken file changes nothing and says so.
  printf '{"gpus": [{"gpu": "1", "isolation": "mig", "mig": ["9g.90gb"]}]}\n' >"$SCRATCH/agent.json"
  kill -HUP "$AGENT_PID"
  for _ in $(seq 50); do grep -q "no MIG profile '9g.90gb'" "$SCRATCH/agent.err" && break; sleep 0.1; done
  grep -q "no MIG profile '9g.90gb'" "$SCRATCH/agent.err" || fail "the bad geometry is not reported: $(cat "$SCRATCH/agent.err")"
  run_fgpu status --agent "$SOCKET"
  expect_out_contains "mig 7g.80gb@0"
  kill -0 "$AGENT_PID" 2>/dev/null || fail "a bad reload stopped the agent"
  # A GPU's class is fixed at start: a reload that changes it says so and changes nothing.
  printf '{"gpus": [{"gpu": "0", "isolation": "exclusive"}, {"gpu": "1", "isolation": "mig", "mig": ["7g.80gb"]}]}\n' \
    >"$SCRATCH/agent.json"
  kill -HUP "$AGENT_PID"
  for _ in $(seq 50); do grep -q "changes only with a restart" "$SCRATCH/agent.err" && break; sleep 0.1; done
  grep -q "changes only with a restart" "$SCRATCH/agent.err" || fail "the class change is not reported"
  run_fgpu run --agent "$SOCKET" --memory 1GiB --device 0 -- "$PROBE" info
  expect_status 0
  : "$TWO"
}

case_bad_geometry_stops_the_agent() {
  require_probe_and_driver
  printf '{"devices": [{}, {}]}\n' >"$SCRATCH/gpus.json"
  printf '{"gpus": [{"gpu": "1", "isolation": "mig", "mig": ["4g.40gb", "4g.40gb"]}]}\n' >"$SCRATCH/agent.json"
  run_fgpu sim run --config "$SCRATCH/gpus.json" --segment "$SEGMENT" -- \
    "$FGPU" agent --state "$SCRATCH/agent" --config "$SCRATCH/agent.json"
  [ "$STATUS" -ne 0 ] || fail "the agent started with an impossible geometry"
  expect_err_contains "4g.40gb + 4g.40gb cannot share one H100-80GB"
  printf '{"gpus": [{"gpu": "7", "isolation": "exclusive"}]}\n' >"$SCRATCH/agent.json"
  run_fgpu sim run --config "$SCRATCH/gpus.json" --segment "$SEGMENT" -- \
    "$FGPU" agent --state "$SCRATCH/agent" --config "$SCRATCH/agent.json"
  [ "$STATUS" -ne 0 ] || fail "the agent started with a GPU it does not have"
  expect_err_contains "no GPU '7' on this machine"
}

# The dashboard shows the GPU in MIG mode with its instances, and each instance with the slices
# inside it (headless Chromium; 77 without it).
case_dashboard_shows_instances_and_their_slices() {
  CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
  [ -n "$CHROMIUM" ] || skip "chromium is not installed (scripts/bootstrap installs it)"
  start_agent '"3g.40gb", "2g.20gb", "2g.20gb"'
  PORT=$(sed -n 's|.*serving http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$SCRATCH/agent.out")
  [ -n "$PORT" ] || fail "no TCP port in: $(cat "$SCRATCH/agent.out")"
  THREE=$(instance_uuid 3g.40gb)
  start_holder "$THREE" 1GiB 30000 --tenant team-mig
  DOM=$(timeout 40 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$SCRATCH/chromium-profile" --virtual-time-budget=3000 --dump-dom "http://127.0.0.1:$PORT/" \
    2>"$SCRATCH/chromium.err") || fail "chromium failed: $(tail -n 20 "$SCRATCH/chromium.err")"
  for wanted in 'id="gpu-1-geometry"' '3 instance(s): ' 'GPU 1 · MIG 3g.40gb @ slice ' 'id="gpu-1-mig' \
    "id=\"slice-$SLICE\"" '>team-mig<' 'id="gpu-0-memory"'; do
    case "$DOM" in *"$wanted"*) ;; *) fail "the dashboard lacks '$wanted':
$DOM" ;; esac
  done
}

# agent_call METHOD PATH [BODY]: the agent's API over its socket; the reply in $OUT, the HTTP
# status in $CODE.
agent_call() {
  OUT=$(curl -s --unix-socket "$SOCKET" -X "$1" -H 'Content-Type: application/json' ${3:+-d "$3"} \
    -w '\n%{http_code}' "http://agent$2")
  CODE=$(echo "$OUT" | tail -n 1)
  OUT=$(echo "$OUT" | sed '$d')
}

# gone_within TEXT: `fgpu status` stops showing TEXT within 2 s (a dynamic instance destroyed).
gone_within() {
  for _ in $(seq 20); do
    run_fgpu status --agent "$SOCKET"
    case "$OUT" in *"$1"*) sleep 0.1 ;; *) return 0 ;; esac
  done
  fail "still there after 2 s: '$1' in
$OUT"
}

# A dynamic MIG GPU keeps no geometry: a hard-isolation request makes the instance it takes (the
# smallest profile that holds it, where it leaves the most room, or the placement it names), and
# the instance goes when its last slice ends.
case_dynamic_instances_come_and_go() {
  command -v curl >/dev/null || skip "curl is not installed"
  start_agent dynamic
  run_fgpu status --agent "$SOCKET"
  expect_status 0
  expect_out_contains "mig dynamic"
  case "$OUT" in *"mig 1g"* | *"mig 2g"* | *"mig 3g"* | *"mig 4g"* | *"mig 7g"*) fail "a dynamic GPU starts with instances: $OUT" ;; esac
  # 15 GiB: the smallest profile that holds it (its memory on the fewest compute slices), a
  # 1g.20gb, is made for it, whole, at slice 6, and destroyed once the workload has ended.
  run_fgpu run --agent "$SOCKET" --isolation hard --memory 15GiB -- "$PROBE" info
  expect_status 0
  [ "$(probe_total_mem)" = $((20096 * 1048576)) ] || fail "no whole 1g.20gb made for 15 GiB: $OUT"
  grep -q 'step="made a 1g.20gb instance at memory slice 6 of GPU' "$SCRATCH/agent.err" ||
    fail "the instance is not logged: $(cat "$SCRATCH/agent.err")"
  gone_within "mig 1g.20gb@"
  grep -q 'step="destroyed the empty 1g.20gb instance at memory slice 6' "$SCRATCH/agent.err" || fail "the destroy is not logged"
  # --mig-profile names the profile: a 2g.20gb for the same 15 GiB.
  run_fgpu run --agent "$SOCKET" --isolation hard --mig-profile 2g.20gb --memory 15GiB -- "$PROBE" info
  expect_status 0
  grep -q 'step="made a 2g.20gb instance' "$SCRATCH/agent.err" || fail "no 2g.20gb made: $(cat "$SCRATCH/agent.err")"
  gone_within "mig 2g.20gb@"
  # 30 GiB held: a 3g.40gb, at slice 4 (slice 0 is where 4g.40gb and 7g.80gb start).
  HOLDER_MEMORY=30GiB start_holder 1 1GiB 60000 --isolation hard
  status_until "mig 3g.40gb@4"
  # A placement named: made where asked; one that overlaps is refused with the reason.
  agent_call POST /v1/slices '{"memory":"5GiB","isolation":"hard","gpu":"1","mig_profile":"2g.20gb","mig_start":4}'
  [ "$CODE" = 409 ] || fail "an overlapping placement was not refused ($CODE): $OUT"
  case "$OUT" in *"overlaps an instance the GPU has"*) ;; *) fail "no reason for the refusal: $OUT" ;; esac
  body='{"memory":"5GiB","isolation":"hard","gpu":"1","mig_profile":"1g.10gb","mig_start":0,"idempotency_key":"claim-1"}'
  agent_call POST /v1/slices "$body"
  [ "$CODE" = 201 ] || fail "the named placement was not made ($CODE): $OUT"
  ID=$(echo "$OUT" | sed -n 's/.*"id":"\(s[0-9]*\)".*/\1/p')
  agent_call POST /v1/slices "$body"
  [ "$CODE" = 200 ] || fail "a retry with the key made another slice ($CODE): $OUT"
  case "$OUT" in *"\"id\":\"$ID\""*) ;; *) fail "the retry did not answer slice $ID: $OUT" ;; esac
  status_until "mig 1g.10gb@0"
  # The 3g.40gb holding the workload stays; the 1g.10gb goes with its slice.
  agent_call DELETE "/v1/slices/$ID"
  [ "$CODE" = 204 ] || fail "cannot delete $ID ($CODE): $OUT"
  gone_within "mig 1g.10gb@0"
  expect_out_contains "mig 3g.40gb@4"
  kill -0 "$HOLDER_PID" 2>/dev/null || fail "the workload in the 3g.40gb died"
  # More than any instance of the GPU can hold, and a profile the GPU does not have.
  run_fgpu run --agent "$SOCKET" --isolation hard --memory 50GiB -- "$PROBE" info
  expect_status 1
  expect_err_contains "no dynamic MIG GPU has room for an instance of 50 GiB"
  run_fgpu run --agent "$SOCKET" --isolation hard --mig-profile 9g.90gb --memory 1GiB -- "$PROBE" info
  expect_status 2
  expect_err_contains "no MIG profile '9g.90gb'"
  stop_holder
  gone_within "mig 3g.40gb@4"
}

run_case "$@"
