# e2e: fgpu between users who do not trust each other (docs/security.md). A root `fgpu agent` on
# a simulated GPU; every attack runs as an unprivileged user (setpriv to uids this script makes
# up: no account is created) and asserts both the refusal and that nothing changed.
# Needs root, setpriv and curl (scripts/bootstrap installs curl); else 77.
. "$(dirname "$0")/lib.sh"
export ASAN_OPTIONS="${ASAN_OPTIONS:-verify_asan_link_order=0}"

[ "$(id -u)" -eq 0 ] || skip "needs root (the agent runs as root; attackers are other uids)"
command -v setpriv >/dev/null 2>&1 || skip "setpriv is not installed (util-linux)"
command -v curl >/dev/null 2>&1 || skip "curl is not installed (scripts/bootstrap installs it)"
[ -f "$FGPU_BUILD_SIM_LIBDIR/libcuda.so.1" ] || skip "the simulated driver is not built"
# The system's Python: the attackers' uids cannot run one installed under root's home.
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || skip "$PYTHON is not installed"

VICTIM=4243
ATTACKER=4242
SEGMENT="/fgpu-e2e-security-$$"
STATE="$SCRATCH/state"
PIDS=""
MOUNTED=""
chmod 0755 "$SCRATCH"  # the attackers must reach the state directory's socket, as on a real node

cleanup() {
  for pid in $PIDS; do kill "$pid" 2>/dev/null; done
  for pid in $PIDS; do wait "$pid" 2>/dev/null; done
  [ -z "$MOUNTED" ] || umount "$MOUNTED" 2>/dev/null
  [ -z "${MADE_ETC:-}" ] || rmdir /etc/fgpu 2>/dev/null
  "$FGPU" sim reset --segment "$SEGMENT" >/dev/null 2>&1
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

printf '{"devices": [{"count": 2, "name": "Sim H100", "memory": "16GiB"}]}\n' >"$SCRATCH/gpus.json"
TOKEN="security-e2e-token-$$-0123456789"
(umask 077 && printf '%s\n' "$TOKEN" >"$SCRATCH/token")

# start_agent [FLAGS...]: a root agent on the simulated GPUs, TCP on a free port.
start_agent() {
  : >"$SCRATCH/agent.out"
  "$FGPU" sim run --segment "$SEGMENT" --config "$SCRATCH/gpus.json" -- \
    "$FGPU" agent --state "$STATE" --listen 127.0.0.1:0 --token-file "$SCRATCH/token" "$@" \
    >"$SCRATCH/agent.out" 2>"$SCRATCH/agent.err" &
  AGENT=$!
  PIDS="$PIDS $AGENT"
  waited=0
  until PORT=$(sed -n 's|.*serving http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$SCRATCH/agent.out") && [ -n "$PORT" ]; do
    [ "$waited" -lt 100 ] || fail "the agent did not start in 10 s: $(cat "$SCRATCH/agent.out" "$SCRATCH/agent.err")"
    sleep 0.1
    waited=$((waited + 1))
  done
}

stop_agent() {
  kill "$AGENT" && wait "$AGENT" 2>/dev/null
}

# as UID CMD...: runs CMD as that uid and gid, with no supplementary groups.
as() {
  uid=$1
  shift
  setpriv --reuid "$uid" --regid "$uid" --clear-groups -- "$@"
}

# unix_call UID METHOD PATH [BODY]: the status in $CODE and the body in $BODY over the Unix socket.
unix_call() {
  uid=$1 method=$2 path=$3
  shift 3
  [ $# -eq 0 ] || set -- --data "$1"
  answer=$(as "$uid" curl -sS -w '\n%{http_code}' --unix-socket "$STATE/agent.sock" -X "$method" \
    -H 'Content-Type: application/json' "$@" "http://localhost$path") || fail "curl as $uid: $method $path"
  split_answer
}

# The answer of `curl -w '\n%{http_code}'` (written to stdout: the attackers cannot write to the
# scratch directory) into $BODY and $CODE.
split_answer() {
  CODE=${answer##*
}
  BODY=${answer%
*}
}

# tcp_call UID METHOD PATH [BODY [HEADER...]]: the same over loopback TCP.
tcp_call() {
  uid=$1 method=$2 path=$3
  shift 3
  data=""
  if [ $# -gt 0 ]; then
    data=$1
    shift
  fi
  set -- "$@" -H 'Content-Type: application/json'
  [ -z "$data" ] || set -- "$@" --data "$data"
  answer=$(as "$uid" curl -sS -w '\n%{http_code}' -X "$method" "$@" "http://127.0.0.1:$PORT$path") ||
    fail "curl as $uid over TCP: $method $path"
  split_answer
}

expect_code() {
  [ "$CODE" = "$1" ] || fail "expected HTTP $1, got $CODE: $BODY"
}

expect_body_contains() {
  case "$BODY" in *"$1"*) ;; *) fail "the answer lacks '$1': $BODY" ;; esac
}

field() {
  printf '%s' "$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^\",}]*\)\"\{0,1\}[,}].*/\1/p"
}

# managed UID CMD...: CMD as UID on a managed node — /etc/fgpu bind-mounted from
# $SCRATCH/etc-fgpu in a private mount namespace, so no override can escape it — on the simulated
# GPUs, with $SCRATCH/attacker as its home.
managed() {
  uid=$1
  shift
  unshare -m --propagation private sh -c 'mount --bind "$1" /etc/fgpu && shift && exec "$@"' sh \
    "$SCRATCH/etc-fgpu" setpriv --reuid "$uid" --regid "$uid" --clear-groups -- \
    env HOME="$SCRATCH/attacker" TMPDIR="$SCRATCH/attacker" \
    "$FGPU" sim run --segment "$SEGMENT" --config "$SCRATCH/gpus.json" -- "$@"
}

# The victim's slice, as the victim makes it.
victim_slice() {
  unix_call "$VICTIM" POST /v1/slices '{"memory":"4GiB","compute":20,"gpu":"0"}'
  expect_code 201
  VICTIM_SLICE=$(field "$BODY" id)
  VICTIM_DIR=$(field "$BODY" dir)
  [ -n "$VICTIM_SLICE" ] && [ -n "$VICTIM_DIR" ] || fail "no slice in $BODY"
  VICTIM_JSON=$BODY
}

# The slice's settings and identity, without its live compute state (the time its own workload
# waited in the gate, the starvation flag), which may move while the attacker tries.
settings_of() {
  printf '%s' "$1" | sed -e 's/"compute_throttled_seconds":[-0-9.e+]*,\{0,1\}//' -e 's/"starved":[a-z]*,\{0,1\}//'
}

expect_victim_unchanged() {
  unix_call "$VICTIM" GET "/v1/slices/$VICTIM_SLICE"
  expect_code 200
  [ "$(settings_of "$BODY")" = "$(settings_of "$VICTIM_JSON")" ] || fail "the victim's slice changed:
before: $VICTIM_JSON
after:  $BODY"
}

case_api_of_another_user() {
  start_agent
  victim_slice
  for request in "PATCH /v1/slices/$VICTIM_SLICE {\"memory\":\"12GiB\"}" "DELETE /v1/slices/$VICTIM_SLICE" \
    "PATCH /v1/slices/$VICTIM_SLICE {\"tier\":\"batch\"}"; do
    # shellcheck disable=SC2086
    set -- $request
    unix_call "$ATTACKER" "$@"
    expect_code 403
    expect_body_contains "belongs to another user"
  done
  unix_call "$ATTACKER" PUT /v1/gpus/0 '{"exclusive":true}'
  expect_code 403
  unix_call "$ATTACKER" GET "/v1/usage?by=user"
  expect_code 403
  # What another user sees of the slice: no directory, no environment.
  unix_call "$ATTACKER" GET "/v1/slices/$VICTIM_SLICE"
  expect_code 200
  case "$BODY" in *'"dir"'* | *'"env"'*) fail "another user sees the slice's directory: $BODY" ;; esac
  # The latency tier is a privilege; an attacker's own slice is its own.
  unix_call "$ATTACKER" POST /v1/slices '{"memory":"1GiB","tier":"latency"}'
  expect_code 403
  expect_body_contains "latency tier"
  unix_call "$ATTACKER" POST /v1/slices '{"memory":"1GiB","owner":4243}'
  expect_code 403
  unix_call "$ATTACKER" POST /v1/slices '{"memory":"1GiB","compute":10}'
  expect_code 201
  [ "$(field "$BODY" owner_uid)" = "$ATTACKER" ] || fail "the attacker's slice is not the attacker's: $BODY"
  expect_victim_unchanged
  unix_call "$VICTIM" DELETE "/v1/slices/$VICTIM_SLICE"
  expect_code 204
}

case_tcp_is_read_only() {
  start_agent
  victim_slice
  for request in "PATCH /v1/slices/$VICTIM_SLICE {\"memory\":\"12GiB\"}" "DELETE /v1/slices/$VICTIM_SLICE" \
    "POST /v1/slices {\"memory\":\"1GiB\"}" "PUT /v1/gpus/0 {\"exclusive\":true}"; do
    # shellcheck disable=SC2086
    set -- $request
    tcp_call "$ATTACKER" "$@"
    expect_code 403
  done
  tcp_call "$ATTACKER" DELETE "/v1/slices/$VICTIM_SLICE" "" -H "Authorization: Bearer not-the-token-at-all-000"
  expect_code 403
  # A page of another origin that resolves to 127.0.0.1 (DNS rebinding) sends its own Host.
  tcp_call "$ATTACKER" GET / "" -H "Host: attacker.example:$PORT"
  expect_code 403
  tcp_call "$ATTACKER" GET /v1/slices
  expect_code 200
  expect_body_contains "\"id\":\"$VICTIM_SLICE\""
  expect_victim_unchanged
  # The token file is root's: the attacker cannot read it, the admin with it may do everything.
  as "$ATTACKER" cat "$SCRATCH/token" >/dev/null 2>&1 && fail "the attacker read the token file"
  tcp_call "$ATTACKER" DELETE "/v1/slices/$VICTIM_SLICE" "" -H "Authorization: Bearer $TOKEN"
  expect_code 204
}

case_queue_tickets() {
  start_agent
  unix_call 0 POST /v1/slices '{"memory":"16GiB","gpu":"0"}'
  expect_code 201
  unix_call 0 POST /v1/slices '{"memory":"16GiB","gpu":"1"}'
  expect_code 201
  # A waiting request needs a live owner: the victim waits from a background shell.
  mkdir "$SCRATCH/victim" && chown "$VICTIM:$VICTIM" "$SCRATCH/victim"
  # The queued request is the asking process's: it must live (as fgpu run does, polling).
  as "$VICTIM" "$PYTHON" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
body = b"{\"memory\":\"1GiB\",\"wait\":true}"
s.sendall(b"POST /v1/slices HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
answer = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    answer += chunk
open(sys.argv[2], "wb").write(answer.partition(b"\r\n\r\n")[2])
time.sleep(8)  # long enough for the checks below; cleanup cannot reach it through setpriv' "$STATE/agent.sock" "$SCRATCH/victim/ticket.json" &
  PIDS="$PIDS $!"
  waited=0
  until TICKET=$(field "$(cat "$SCRATCH/victim/ticket.json" 2>/dev/null)" ticket) && [ -n "$TICKET" ]; do
    [ "$waited" -lt 100 ] || fail "no ticket: $(cat "$SCRATCH/victim/ticket.json")"
    sleep 0.1
    waited=$((waited + 1))
  done
  [ "${#TICKET}" -eq 33 ] || fail "a ticket is 128 random bits: $TICKET"
  unix_call "$ATTACKER" DELETE "/v1/queue/$TICKET"
  expect_code 404
  unix_call "$ATTACKER" GET "/v1/queue/$TICKET"
  expect_code 404
  unix_call "$VICTIM" GET "/v1/queue/$TICKET"
  expect_code 200
}

case_hostile_bodies() {
  start_agent
  # `fgpu sim run` execs the agent: $AGENT is the agent itself.
  rss_before=$(awk '/VmRSS/ {print $2}' "/proc/$AGENT/status")
  "$PYTHON" -c 'import sys; sys.stdout.write("[" * 1048576 + "]" * 1048576)' >"$SCRATCH/deep.json"
  for i in 1 2 3 4 5 6 7 8; do
    as "$ATTACKER" curl -sS -o /dev/null -w '%{http_code}\n' --unix-socket "$STATE/agent.sock" \
      -H 'Content-Type: application/json' --data-binary "@$SCRATCH/deep.json" http://localhost/v1/slices \
      >>"$SCRATCH/deep.codes" 2>/dev/null &
    PIDS="$PIDS $!"
  done
  wait_for_lines() {
    waited=0
    until [ "$(wc -l <"$SCRATCH/deep.codes")" -ge 8 ]; do
      [ "$waited" -lt 100 ] || fail "the agent did not answer the nested bodies: $(cat "$SCRATCH/deep.codes")"
      sleep 0.1
      waited=$((waited + 1))
    done
  }
  wait_for_lines
  [ "$(sort -u "$SCRATCH/deep.codes")" = "413" ] || fail "1 MiB bodies: $(sort "$SCRATCH/deep.codes" | uniq -c)"
  "$PYTHON" -c 'import sys; sys.stdout.write("[" * 30000 + "]" * 30000)' >"$SCRATCH/deep-small.json"
  answer=$(as "$ATTACKER" curl -sS -w '\n%{http_code}' --unix-socket "$STATE/agent.sock" \
    -H 'Content-Type: application/json' --data-binary "@$SCRATCH/deep-small.json" http://localhost/v1/slices)
  split_answer
  expect_code 400
  expect_body_contains "nests deeper"
  # Bytes that are not UTF-8, in the path (raw: curl would percent-encode them) and in the body.
  answer=$(as "$ATTACKER" "$PYTHON" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"GET /v1/slices/\xff\xfe HTTP/1.1\r\nHost: localhost\r\n\r\n")
answer = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    answer += chunk
head, _, body = answer.partition(b"\r\n\r\n")
sys.stdout.write(body.decode() + "\n" + head.split()[1].decode())' "$STATE/agent.sock")
  split_answer
  expect_code 400
  printf '{"memory":"1GiB","tenant":"\377"}' >"$SCRATCH/latin1.json"
  answer=$(as "$ATTACKER" curl -sS -w '\n%{http_code}' --unix-socket "$STATE/agent.sock" \
    -H 'Content-Type: application/json' --data-binary "@$SCRATCH/latin1.json" http://localhost/v1/slices)
  split_answer
  expect_code 400
  unix_call 0 GET /v1/health
  expect_code 200
  rss_after=$(awk '/VmRSS/ {print $2}' "/proc/$AGENT/status")
  echo "agent RSS: ${rss_before} kB before, ${rss_after} kB after eight 1 MiB nested bodies"
  [ "$rss_after" -lt $((rss_before + 65536)) ] || fail "the agent grew from ${rss_before} kB to ${rss_after} kB"
}

case_state_directory() {
  STATE="$SCRATCH/state/"  # a trailing slash names the same place
  start_agent
  victim_slice
  [ -d "$VICTIM_DIR" ] || fail "no slice directory $VICTIM_DIR"
  case "$VICTIM_DIR" in *//*) fail "the slice directory is not canonical: $VICTIM_DIR" ;; esac
  [ "$(stat -c %a "$SCRATCH/state")" = 711 ] || fail "the state directory is $(stat -c %a "$SCRATCH/state"), not 711"
  [ "$(stat -c %a "$SCRATCH/state/agent.db")" = 600 ] || fail "agent.db is $(stat -c %a "$SCRATCH/state/agent.db")"
  as "$ATTACKER" ls "$SCRATCH/state" >/dev/null 2>&1 && fail "another user lists the state directory"
  as "$ATTACKER" cat "$SCRATCH/state/agent.db" >/dev/null 2>&1 && fail "another user reads agent.db"
  stop_agent
  STATE="$SCRATCH/state"
  start_agent
  [ -d "$VICTIM_DIR" ] || fail "a restart with --state spelled differently removed the live slice directory"
  expect_victim_unchanged
}

case_full_disk() {
  mkdir -p "$SCRATCH/small"
  mount -t tmpfs -o size=8m tmpfs "$SCRATCH/small" 2>/dev/null || skip "cannot mount a small tmpfs here"
  MOUNTED="$SCRATCH/small"
  STATE="$SCRATCH/small/state"
  start_agent --account-interval 0.2
  victim_slice
  sleep 0.5
  # Fill the disk: everything but the agent's reserve is taken.
  dd if=/dev/zero of="$SCRATCH/small/ballast" bs=64k 2>/dev/null
  unix_call "$VICTIM" DELETE "/v1/slices/$VICTIM_SLICE"
  expect_code 204
  [ -d "$VICTIM_DIR" ] && fail "the slice directory is still there"
  unix_call "$VICTIM" GET "/v1/slices/$VICTIM_SLICE"
  expect_code 404
  rm -f "$SCRATCH/small/ballast"
  sleep 0.5
  unix_call 0 GET "/v1/usage?by=slice"
  expect_code 200
  expect_body_contains "\"key\":\"$VICTIM_SLICE\""
  unix_call 0 GET /metrics
  expect_body_contains "fgpu_agent_state_disk_full_total 1"
}

case_files_of_another_user() {
  start_agent
  victim_slice
  [ "$(stat -c '%a %u' "$VICTIM_DIR")" = "755 0" ] || fail "slice directory: $(stat -c '%a %u' "$VICTIM_DIR")"
  [ "$(stat -c '%a %u' "$VICTIM_DIR/limits")" = "644 0" ] || fail "limits: $(stat -c '%a %u' "$VICTIM_DIR/limits")"
  [ "$(stat -c '%a %u' "$VICTIM_DIR/ledger")" = "600 $VICTIM" ] || fail "ledger: $(stat -c '%a %u' "$VICTIM_DIR/ledger")"
  before=$(md5sum <"$VICTIM_DIR/ledger")
  as "$ATTACKER" sh -c ': >>"$1"' sh "$VICTIM_DIR/ledger" 2>/dev/null && fail "the attacker opened the victim's ledger"
  as "$ATTACKER" truncate -s 0 "$VICTIM_DIR/ledger" 2>/dev/null && fail "the attacker truncated the victim's ledger"
  as "$ATTACKER" sh -c ': >>"$1"' sh "$VICTIM_DIR/limits" 2>/dev/null && fail "the attacker opened the limits"
  as "$ATTACKER" rm -f "$VICTIM_DIR/ledger" 2>/dev/null
  as "$ATTACKER" touch "$VICTIM_DIR/planted" 2>/dev/null && fail "the attacker made a file in the slice directory"
  [ "$(md5sum <"$VICTIM_DIR/ledger")" = "$before" ] || fail "the victim's ledger changed"
  # The owner may wreck its own ledger (its own workloads then fail closed); the agent, which
  # reads it, neither crashes nor trusts it: the slice reads as degraded.
  size=$(stat -c %s "$VICTIM_DIR/ledger")
  as "$VICTIM" truncate -s 0 "$VICTIM_DIR/ledger" || fail "the owner cannot truncate its ledger"
  as "$VICTIM" truncate -s "$size" "$VICTIM_DIR/ledger"
  unix_call "$VICTIM" GET "/v1/slices?usage=1"
  expect_code 200
  expect_body_contains '"ledger_readable":false'
  expect_body_contains '"ledger_problem":'
  unix_call 0 GET /metrics
  expect_code 200
  expect_body_contains "fgpu_slice_ledger_readable{slice=\"$VICTIM_SLICE\""
  unix_call 0 GET /v1/health
  expect_code 200
}

# A pid the attacker writes into its own ledger — another user's process, a root process — and
# then its slice is preempted: only the slice's proven members are signalled.
case_planted_pid() {
  printf '{"stop_loss": {"grace_s": 1}, "governance": {"preemption_delay_s": 0}}\n' >"$SCRATCH/agent.json"
  start_agent --config "$SCRATCH/agent.json"
  # setpriv execs sleep: $! is the victim's process itself (a shell function would fork a subshell).
  setpriv --reuid "$VICTIM" --regid "$VICTIM" --clear-groups -- sleep 60 &
  victim_sleeper=$!
  PIDS="$PIDS $victim_sleeper"
  sleep 60 &
  root_sleeper=$!
  PIDS="$PIDS $root_sleeper"
  unix_call "$ATTACKER" POST /v1/slices '{"memory":"12GiB","tier":"batch","gpu":"0"}'
  expect_code 201
  attacker_slice=$(field "$BODY" id)
  attacker_dir=$(field "$BODY" dir)
  # The attacker's own workload joins its slice: a proven member, which eviction must reach.
  mkdir "$SCRATCH/attacker" && chown "$ATTACKER:$ATTACKER" "$SCRATCH/attacker"
  as "$ATTACKER" "$PYTHON" -c '
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"POST /v1/slices/%s/join HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n" % sys.argv[2].encode())
answer = s.recv(65536)
open(sys.argv[3], "w").write("%d %s" % (os.getpid(), answer.split()[1].decode()))
time.sleep(30)' "$STATE/agent.sock" "$attacker_slice" "$SCRATCH/attacker/joined" &
  PIDS="$PIDS $!"
  waited=0
  until [ -s "$SCRATCH/attacker/joined" ]; do
    [ "$waited" -lt 100 ] || fail "the attacker's workload did not join"
    sleep 0.1
    waited=$((waited + 1))
  done
  read -r attacker_member join_code <"$SCRATCH/attacker/joined"
  [ "$join_code" = 200 ] || fail "join answered $join_code"
  # Plant the victim's and root's processes in the attacker's ledger as live slots 0 and 1, with
  # their real start times (anyone can read them in /proc).
  as "$ATTACKER" "$PYTHON" -c '
import struct, sys
ledger, pids = sys.argv[1], [int(p) for p in sys.argv[2:]]
with open(ledger, "r+b") as f:
    for slot, pid in enumerate(pids):
        start = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[19])
        f.seek(128 + slot * 320)
        f.write(struct.pack("<IiQI", 2, pid, start, 1))' "$attacker_dir/ledger" "$victim_sleeper" "$root_sleeper" ||
    fail "the attacker could not write its own ledger"
  # Room on GPU 0 for a latency-tier request exists only without the attacker's batch slice.
  unix_call 0 POST /v1/slices '{"memory":"16GiB","gpu":"1"}'
  expect_code 201
  "$PYTHON" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
body = b"{\"memory\":\"8GiB\",\"tier\":\"latency\",\"gpu\":\"0\",\"wait\":true}"
s.sendall(b"POST /v1/slices HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
s.recv(65536)
time.sleep(8)' "$STATE/agent.sock" &
  PIDS="$PIDS $!"
  waited=0
  while unix_call 0 GET "/v1/slices/$attacker_slice" && [ "$CODE" = 200 ]; do
    [ "$waited" -lt 100 ] || fail "the attacker's slice was not preempted in 10 s: $(cat "$SCRATCH/agent.err")"
    sleep 0.1
    waited=$((waited + 1))
  done
  grep -Eq "warn (evict|preempt) slice=$attacker_slice " "$SCRATCH/agent.err" || fail "no eviction logged: $(cat "$SCRATCH/agent.err")"
  [ "$(stat -c %u "/proc/$victim_sleeper")" = "$VICTIM" ] || fail "the planted process is not the victim's"
  kill -0 "$victim_sleeper" 2>/dev/null || fail "the victim's process planted in the attacker's ledger was killed"
  kill -0 "$root_sleeper" 2>/dev/null || fail "root's process planted in the attacker's ledger was killed"
  waited=0
  while kill -0 "$attacker_member" 2>/dev/null; do
    [ "$waited" -lt 50 ] || fail "the attacker's own member process outlived the eviction"
    sleep 0.1
    waited=$((waited + 1))
  done
}

# FGPU_SLICE in another process's environment names a slice; it proves nothing. A bypassing
# process that names the victim's slice is a process of no slice: reported, never the victim's.
case_slice_env_of_unrelated_process() {
  require_probe_and_driver
  HOOK="$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so"
  [ -f "$HOOK" ] || skip "$HOOK is not built"
  start_agent
  # The simulated GPUs' segment stands for /dev/nvidia*: every user may open it.
  chmod 0666 "/dev/shm$SEGMENT"
  victim_slice
  gpu=$(field "$VICTIM_JSON" gpu)
  as "$ATTACKER" "$FGPU" sim run --segment "$SEGMENT" --config "$SCRATCH/gpus.json" -- \
    env FGPU_SLICE="$VICTIM_DIR" FGPU_DISABLE=1 LD_PRELOAD="$HOOK" CUDA_VISIBLE_DEVICES="$gpu" \
    "$PROBE" alloc --bytes 6GiB --hold-ms 4000 >/dev/null 2>"$SCRATCH/bypass.err" &
  PIDS="$PIDS $!"
  waited=0
  until unix_call 0 GET /metrics && case "$BODY" in *"fgpu_gpu_unattributed_processes{uuid=\"$gpu\"} 1"*) true ;; *) false ;; esac; do
    [ "$waited" -lt 50 ] || fail "the process of no slice was not reported: $(cat "$SCRATCH/bypass.err")
$(printf '%s' "$BODY" | grep unattributed)"
    sleep 0.1
    waited=$((waited + 1))
  done
  grep -q "outside every slice" "$SCRATCH/agent.err" || fail "not logged: $(cat "$SCRATCH/agent.err")"
  sleep 2  # two more checks
  expect_body_contains 'fgpu_stop_loss_evictions_total 0'
  expect_victim_unchanged
}

# What a managed-node case needs: the probe, the simulated driver and the interposer, unshare for
# the private bind mount of /etc/fgpu, a machine that is not managed already, and
# $SCRATCH/etc-fgpu for the case's node.conf. Sets HOOK.
prepare_managed_node() {
  require_probe_and_driver
  HOOK="$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so"
  [ -f "$HOOK" ] || skip "$HOOK is not built"
  command -v unshare >/dev/null 2>&1 || skip "unshare (util-linux) is not installed"
  [ -d /etc/fgpu ] || { mkdir /etc/fgpu && MADE_ETC=1; } || skip "cannot make /etc/fgpu for the bind mount"
  [ ! -e /etc/fgpu/node.conf ] || skip "this machine is a managed node already"
  mkdir -p "$SCRATCH/etc-fgpu"
}

# A managed node (docs/hook.md "Managed nodes"): the interposer takes only root's slices under
# slice_root. The node's fixed configuration path (/etc/fgpu/node.conf) is bind-mounted in a
# private mount namespace, so the attackers cannot escape it by unsetting an override; the rest of
# the machine is not managed.
case_self_made_slice_on_managed_node() {
  prepare_managed_node
  printf 'slice_root = %s\ncompute_dir = %s\n' "$STATE/slices" "$SCRATCH/boards" >"$SCRATCH/etc-fgpu/node.conf"
  FGPU_NODE_CONFIG="$SCRATCH/etc-fgpu/node.conf" start_agent
  chmod 0666 "/dev/shm$SEGMENT"
  [ "$(stat -c '%a %u' "$SCRATCH/boards")" = "755 0" ] || fail "boards directory: $(stat -c '%a %u' "$SCRATCH/boards")"
  victim_slice
  gpu=$(field "$VICTIM_JSON" gpu)
  mkdir "$SCRATCH/attacker" && chown "$ATTACKER:$ATTACKER" "$SCRATCH/attacker"
  # 1. A slice the attacker made itself, as big as it likes.
  managed "$ATTACKER" env -u FGPU_AGENT "$FGPU" run --memory 16GiB -- "$PROBE" alloc --bytes 8GiB \
    >"$SCRATCH/attacker/own.out" 2>"$SCRATCH/attacker/own.err" && true
  grep -q '"result":"CUDA_SUCCESS"' "$SCRATCH/attacker/own.out" &&
    fail "a self-made slice allocated on a managed node: $(cat "$SCRATCH/attacker/own.out" "$SCRATCH/attacker/own.err")"
  grep -q "fgpu: " "$SCRATCH/attacker/own.err" || fail "no reason given: $(cat "$SCRATCH/attacker/own.err")"
  echo "self-made slice: $(grep -m1 'fgpu: ' "$SCRATCH/attacker/own.err")"
  echo "                 $(grep -m1 '"alloc"' "$SCRATCH/attacker/own.out")"
  # 2. The victim's slice (root's, under slice_root): its ledger is the victim's.
  managed "$ATTACKER" env LD_PRELOAD="$HOOK" FGPU_SLICE="$VICTIM_DIR" CUDA_VISIBLE_DEVICES="$gpu" \
    "$PROBE" alloc --bytes 1GiB >"$SCRATCH/attacker/victim.out" 2>"$SCRATCH/attacker/victim.err" && true
  grep -q '"result":"CUDA_SUCCESS"' "$SCRATCH/attacker/victim.out" &&
    fail "the attacker charged the victim's slice: $(cat "$SCRATCH/attacker/victim.out")"
  # 3. An override the attacker wrote: refused, fail closed.
  printf 'slice_root = /tmp\ncompute_dir = /tmp\n' >"$SCRATCH/attacker/node.conf"
  chown "$ATTACKER" "$SCRATCH/attacker/node.conf"
  managed "$ATTACKER" env FGPU_NODE_CONFIG="$SCRATCH/attacker/node.conf" LD_PRELOAD="$HOOK" FGPU_SLICE="$VICTIM_DIR" \
    CUDA_VISIBLE_DEVICES="$gpu" "$PROBE" alloc --bytes 1GiB >"$SCRATCH/attacker/override.out" \
    2>"$SCRATCH/attacker/override.err" && true
  grep -q '"result":"CUDA_SUCCESS"' "$SCRATCH/attacker/override.out" &&
    fail "an attacker's node configuration was honoured: $(cat "$SCRATCH/attacker/override.out")"
  # The victim's own workload in its slice works on the managed node.
  managed "$VICTIM" env LD_PRELOAD="$HOOK" FGPU_SLICE="$VICTIM_DIR" CUDA_VISIBLE_DEVICES="$gpu" \
    "$PROBE" alloc --bytes 1GiB >"$SCRATCH/victim.out" 2>"$SCRATCH/victim.err" ||
    fail "the victim's workload failed: $(cat "$SCRATCH/victim.out" "$SCRATCH/victim.err")"
  grep -q '"result":"CUDA_SUCCESS"' "$SCRATCH/victim.out" || fail "the victim could not allocate: $(cat "$SCRATCH/victim.out")"
}

# 300 idle connections from one user (half TCP, half on the Unix socket) do not stop another user
# or root from being answered.
case_idle_connections() {
  start_agent
  mkdir "$SCRATCH/attacker" && chown "$ATTACKER:$ATTACKER" "$SCRATCH/attacker"
  as "$ATTACKER" "$PYTHON" -c '
import socket, sys, time
held = []
for i in range(300):
    try:
        if i % 2:
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
        else:
            s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
        held.append(s)
        s.send(b"GET /v1/health HTTP/1.1\r\n")  # a head never finished
    except OSError:
        pass  # past the per-user limit the agent may close it first: refused, as it should be
open(sys.argv[3], "w").write("open\n")
time.sleep(4)' "$STATE/agent.sock" "$PORT" "$SCRATCH/attacker/ready" &
  PIDS="$PIDS $!"
  waited=0
  until [ -s "$SCRATCH/attacker/ready" ]; do
    [ "$waited" -lt 100 ] || fail "the attacker could not open its connections"
    sleep 0.1
    waited=$((waited + 1))
  done
  for uid in 0 "$VICTIM"; do
    started=$(date +%s%N)
    unix_call "$uid" GET /v1/health
    took=$(( ($(date +%s%N) - started) / 1000000 ))
    expect_code 200
    echo "uid $uid answered in $took ms beside 300 idle connections"
    [ "$took" -lt 1000 ] || fail "uid $uid waited $took ms"
  done
  tcp_call 0 GET /v1/health
  expect_code 200
  # 64 connections per user: the rest of the 300 were refused at accept, and counted.
  unix_call 0 GET /metrics
  refused=$(printf '%s\n' "$BODY" | sed -n 's/^fgpu_agent_http_refused_total{reason="peer_limit"} \([0-9]*\)$/\1/p')
  [ "${refused:-0}" -ge 200 ] || fail "expected ~236 refusals by the per-user limit, /metrics says '${refused:-none}'"
}

# A managed node whose configuration names board_socket: the agent makes each GPU's compute board
# and policy table as sealed memfds and hands them to root and to the owners of that GPU's slices
# only (docs/compute.md "The board on a managed node"). Sets up /etc/fgpu as
# case_self_made_slice_on_managed_node does, starts the agent and defines `managed`.
start_sealed_node() {
  prepare_managed_node
  printf 'slice_root = %s\ncompute_dir = %s\nboard_socket = %s\n' "$STATE/slices" "$SCRATCH/boards" \
    "$STATE/boards.sock" >"$SCRATCH/etc-fgpu/node.conf"
  FGPU_NODE_CONFIG="$SCRATCH/etc-fgpu/node.conf" start_agent
  chmod 0666 "/dev/shm$SEGMENT"
  [ "$(stat -c '%a %u' "$STATE/boards.sock")" = "666 0" ] || fail "board socket: $(stat -c '%a %u' "$STATE/boards.sock")"
  mkdir "$SCRATCH/attacker" && chown "$ATTACKER:$ATTACKER" "$SCRATCH/attacker"
}

# board_ask UID GPU: asks the board socket for GPU's board as UID, as the interposer does, and with
# what it gets tries what an attacker would. Prints "code=N reason=... fds=N" and one line per try.
board_ask() {
  as "$1" "$PYTHON" -c '
import array, errno, mmap, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(3)
s.connect(sys.argv[1])
s.send(sys.argv[2].encode())
fds = array.array("i")
message, ancillary, flags, address = s.recvmsg(300, socket.CMSG_LEN(4 * fds.itemsize))
for level, kind, data in ancillary:
    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
        fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
print("code=%d reason=%s fds=%d" % (message[0], message[1:].decode(), len(fds)))
if len(fds) == 2:
    board, policy = fds
    def attempt(name, call):
        try:
            call()
            print(name + "=succeeded")
        except OSError as error:
            print(name + "=" + errno.errorcode[error.errno])
    attempt("truncate_board", lambda: os.ftruncate(board, 0))
    attempt("grow_board", lambda: os.ftruncate(board, 1 << 20))
    attempt("truncate_policy", lambda: os.ftruncate(policy, 0))
    attempt("write_policy", lambda: os.pwrite(policy, b"x", 8))
    attempt("map_policy_writable", lambda: mmap.mmap(policy, 2176, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE))
    attempt("reopen_policy_rw", lambda: os.open("/proc/self/fd/%d" % policy, os.O_RDWR))
    print("board_bytes=%d" % os.fstat(board).st_size)
' "$STATE/boards.sock" "$2"
}

# A user with no slice on the GPU is refused its board (the victim has one there); root is not.
case_compute_board_of_a_gpu_without_a_slice() {
  start_sealed_node
  victim_slice
  gpu=$(field "$VICTIM_JSON" gpu)
  answer=$(board_ask "$ATTACKER" "$gpu") || fail "board_ask as the attacker: $answer"
  echo "attacker, no slice on $gpu: $answer"
  case "$answer" in "code=1 reason=uid $ATTACKER has no slice on GPU $gpu"*"fds=0") ;; *) fail "not refused: $answer" ;; esac
  # A slice on the other GPU is no key to this one.
  unix_call "$ATTACKER" POST /v1/slices '{"memory":"1GiB","compute":10,"gpu":"1"}'
  expect_code 201
  answer=$(board_ask "$ATTACKER" "$gpu")
  case "$answer" in "code=1 "*) ;; *) fail "a slice on another GPU opened this one's board: $answer" ;; esac
  answer=$(board_ask "$VICTIM" "$gpu")
  case "$answer" in "code=0 reason= fds=2"*) ;; *) fail "the victim was refused its own GPU's board: $answer" ;; esac
  answer=$(board_ask 0 "$gpu")
  case "$answer" in "code=0 reason= fds=2"*) ;; *) fail "root was refused: $answer" ;; esac
  answer=$(board_ask "$ATTACKER" "GPU-not-here")
  case "$answer" in "code=2 "*"fds=0") ;; *) fail "an unknown GPU: $answer" ;; esac
}

# A user with a slice on the GPU gets its board but cannot truncate it — the victim's workload on
# the same GPU keeps running, enforced — nor write the policy table.
case_sealed_board_cannot_be_truncated() {
  start_sealed_node
  victim_slice
  gpu=$(field "$VICTIM_JSON" gpu)
  unix_call "$ATTACKER" POST /v1/slices "{\"memory\":\"1GiB\",\"compute\":10,\"gpu\":\"$gpu\"}"
  expect_code 201
  mkdir "$SCRATCH/victim" && chown "$VICTIM:$VICTIM" "$SCRATCH/victim"
  managed "$VICTIM" env LD_PRELOAD="$HOOK" FGPU_SLICE="$VICTIM_DIR" CUDA_VISIBLE_DEVICES="$gpu" \
    "$PROBE" spin --duty 100 --seconds 4 --kernel-us 1000 --window-ms 1000 \
    >"$SCRATCH/victim/spin.out" 2>"$SCRATCH/victim/spin.err" &
  spinner=$!
  PIDS="$PIDS $spinner"
  sleep 1.5  # the victim's gate has mapped the board
  answer=$(board_ask "$ATTACKER" "$gpu") || fail "board_ask as the attacker: $answer"
  echo "attacker, its own slice on $gpu:"
  echo "$answer" | sed 's/^/  /'
  for expected in "code=0 reason= fds=2" truncate_board=EPERM grow_board=EPERM truncate_policy=EINVAL \
    write_policy=EBADF map_policy_writable=EACCES reopen_policy_rw=EACCES board_bytes=6272; do
    printf '%s\n' "$answer" | grep -qx "$expected" || fail "expected $expected: $answer"
  done
  wait "$spinner" || fail "the victim's workload died: $(cat "$SCRATCH/victim/spin.err")"
  grep -q '"event":"spin"' "$SCRATCH/victim/spin.out" || fail "the victim's workload did not finish: $(cat "$SCRATCH/victim/spin.out")"
  [ ! -s "$SCRATCH/victim/spin.err" ] || fail "the victim's workload was not enforced: $(cat "$SCRATCH/victim/spin.err")"
  expect_victim_unchanged
}

# MIG between tenants (docs/mig.md "Who may"): a whole instance or GPU is granted, never taken;
# the geometry changes only as root, so an attacker calling NVML itself is refused and the
# instances, and the slices in them, stay.
case_mig_of_another_user() {
  printf '{"devices": [{}, {}]}\n' >"$SCRATCH/gpus.json"  # two H100 80GB: MIG capable
  printf '{"gpus": [{"gpu": "1", "isolation": "mig", "mig": ["3g.40gb", "2g.20gb", "2g.20gb"]}]}\n' >"$SCRATCH/agent.json"
  start_agent --config "$SCRATCH/agent.json"
  unix_call "$VICTIM" GET /v1/gpus
  expect_code 200
  GPUS_BEFORE=$BODY
  [ "$(printf '%s' "$BODY" | grep -o '"mig_profile":"2g.20gb"' | wc -l)" -eq 2 ] || fail "the geometry was not applied: $BODY"
  for isolation in hard exclusive; do
    unix_call "$ATTACKER" POST /v1/slices "{\"memory\":\"1GiB\",\"isolation\":\"$isolation\"}"
    expect_code 403
    expect_body_contains "may not ask for $isolation isolation"
  done
  # NVML itself: reading is anyone's, changing is root's (NVML_ERROR_NO_PERMISSION = 4). Everyone
  # may use the GPU, as /dev/nvidia* are 0666 on a real node.
  chmod 0666 "/dev/shm$SEGMENT"
  mkdir "$SCRATCH/attacker" && chown "$ATTACKER:$ATTACKER" "$SCRATCH/attacker"
  answer=$(as "$ATTACKER" env HOME="$SCRATCH/attacker" TMPDIR="$SCRATCH/attacker" \
    "$FGPU" sim run --segment "$SEGMENT" --config "$SCRATCH/gpus.json" -- "$PYTHON" -c '
import ctypes
nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
gpu, instance, activation = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int()
assert nvml.nvmlDeviceGetHandleByIndex_v2(1, ctypes.byref(gpu)) == 0
off = nvml.nvmlDeviceSetMigMode(gpu, 0, ctypes.byref(activation))
found = nvml.nvmlDeviceGetGpuInstanceById(gpu, 1, ctypes.byref(instance))
gone = nvml.nvmlGpuInstanceDestroy(instance) if found == 0 else -1
print(off, found, gone)') || fail "the attacker's NVML calls did not run: $answer"
  [ "$answer" = "4 0 4" ] || fail "an unprivileged user's MIG changes were not refused with NO_PERMISSION: $answer"
  unix_call "$VICTIM" GET /v1/gpus
  [ "$(settings_of "$BODY")" = "$(settings_of "$GPUS_BEFORE")" ] || fail "the MIG geometry changed:
before: $GPUS_BEFORE
after:  $BODY"
}

# A dynamic MIG GPU, every user allowed hard isolation: the instance one user's request made is
# theirs until their slice ends. Another user cannot delete that slice (so not the instance), cannot
# place an instance over it (refused without naming whose it is), and cannot destroy it through NVML.
case_dynamic_mig_of_another_user() {
  printf '{"devices": [{}, {}]}\n' >"$SCRATCH/gpus.json"
  printf '{"gpus": [{"gpu": "1", "isolation": "mig", "mig": "dynamic"}],
           "access": {"default": {"isolations": ["trusted", "hard"], "max_compute": 100, "max_memory": "80GiB"}}}\n' \
    >"$SCRATCH/agent.json"
  start_agent --config "$SCRATCH/agent.json"
  unix_call "$VICTIM" POST /v1/slices '{"memory":"30GiB","isolation":"hard","gpu":"1","mig_profile":"3g.40gb","mig_start":4}'
  expect_code 201
  VICTIM_SLICE=$(printf '%s' "$BODY" | sed -n 's/.*"id":"\(s[0-9]*\)".*/\1/p')
  [ -n "$VICTIM_SLICE" ] || fail "no slice id in: $BODY"
  unix_call "$ATTACKER" POST /v1/slices '{"memory":"5GiB","isolation":"hard","gpu":"1","mig_profile":"2g.20gb","mig_start":4}'
  expect_code 409
  expect_body_contains "overlaps an instance the GPU has"
  case "$BODY" in *"$VICTIM_SLICE"* | *"$VICTIM"*) fail "the refusal names the other user's slice: $BODY" ;; esac
  unix_call "$ATTACKER" DELETE "/v1/slices/$VICTIM_SLICE"
  expect_code 403
  # The attacker's own hard slice gets an instance of its own beside it.
  unix_call "$ATTACKER" POST /v1/slices '{"memory":"5GiB","isolation":"hard","gpu":"1"}'
  expect_code 201
  chmod 0666 "/dev/shm$SEGMENT"
  mkdir "$SCRATCH/attacker" && chown "$ATTACKER:$ATTACKER" "$SCRATCH/attacker"
  answer=$(as "$ATTACKER" env HOME="$SCRATCH/attacker" TMPDIR="$SCRATCH/attacker" \
    "$FGPU" sim run --segment "$SEGMENT" --config "$SCRATCH/gpus.json" -- "$PYTHON" -c '
import ctypes
nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
gpu, instance = ctypes.c_void_p(), ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(1, ctypes.byref(gpu)) == 0
results = []
for gpu_instance_id in range(1, 15):
    if nvml.nvmlDeviceGetGpuInstanceById(gpu, gpu_instance_id, ctypes.byref(instance)) == 0:
        results.append(nvml.nvmlGpuInstanceDestroy(instance))
print(" ".join(map(str, results)))') || fail "the attacker's NVML calls did not run: $answer"
  [ "$answer" = "4 4" ] || fail "an unprivileged user's destroys were not refused with NO_PERMISSION (one per instance): $answer"
  sleep 0.5  # a pass of the agent's reaper: it must not take a busy instance either
  unix_call "$VICTIM" GET "/v1/slices/$VICTIM_SLICE"
  expect_code 200
  unix_call "$VICTIM" GET /v1/gpus
  expect_body_contains '"mig_profile":"3g.40gb","mig_start":4'
}

# CUDA IPC between users (docs/security.md "CUDA IPC"): the victim exports a memory handle and an
# interprocess event handle and leaks their 64 bytes each in a world-readable file. The attacker's
# cuIpcOpenMemHandle and cuIpcOpenEventHandle answer CUDA_ERROR_INVALID_HANDLE (as for a handle
# whose exporter is gone), nothing of the victim's is mapped in its process or reachable through
# /proc, and the victim's data and event are unchanged; a second process of the victim opens the
# same handles and reads the data. Once beside `fgpu sim run`, once in `fgpu run` slices of the two
# users on one GPU.
case_ipc_handles_of_another_user() {
  require_probe_and_driver
  start_agent
  chmod 0666 "/dev/shm$SEGMENT"
  cp "$(dirname "$0")/../programs/cuda_ipc_peer.py" "$SCRATCH/cuda_ipc_peer.py"
  chmod 0644 "$SCRATCH/cuda_ipc_peer.py"
  for uid in "$VICTIM" "$ATTACKER"; do
    mkdir "$SCRATCH/home-$uid" && chown "$uid:$uid" "$SCRATCH/home-$uid"
  done
  for where in beside_sim_run in_slices; do
    ipc_attempt "$where"
  done
}

# on_gpu WHERE UID CMD...: CMD as UID on the simulated GPU 0, in a process of `fgpu sim run` or in
# a slice of its own (`fgpu run` through the agent).
on_gpu() {
  where=$1 uid=$2
  shift 2
  case "$where" in
    beside_sim_run) set -- "$FGPU" sim run --segment "$SEGMENT" --config "$SCRATCH/gpus.json" -- "$@" ;;
    in_slices) set -- "$FGPU" run --agent "$STATE/agent.sock" --memory 1GiB --device 0 -- "$@" ;;
  esac
  as "$uid" env HOME="$SCRATCH/home-$uid" TMPDIR="$SCRATCH/home-$uid" "$@"
}

# expect_step FILE STEP TEXT...: FILE's line of STEP holds every TEXT.
expect_step() {
  file=$1 step=$2
  shift 2
  line=$(grep -F "\"step\": \"$step\"" "$file") || fail "no $step step in $file: $(cat "$file" "${file%.out}.err" 2>/dev/null)"
  for text in "$@"; do
    case "$line" in *"$text"*) ;; *) fail "$step lacks '$text': $line" ;; esac
  done
}

ipc_attempt() {
  where=$1
  dir="$SCRATCH/ipc-$where"
  mkdir "$dir"  # root's, 0755: what the victim prints there every user reads (the leak)
  on_gpu "$where" "$VICTIM" "$PYTHON" "$SCRATCH/cuda_ipc_peer.py" export 1048576 "$dir/release" \
    >"$dir/export.out" 2>"$dir/export.err" &
  exporter=$!
  PIDS="$PIDS $exporter"
  waited=0
  until grep -q '"step": "export"' "$dir/export.out"; do
    [ "$waited" -lt 150 ] || fail "$where: the victim did not export: $(cat "$dir/export.out" "$dir/export.err")"
    sleep 0.1
    waited=$((waited + 1))
  done
  expect_step "$dir/export.out" export '"ok": true'
  as "$ATTACKER" cat "$dir/export.out" >/dev/null || fail "$where: the leaked handles are not readable"
  # The exported memory and event page are memfds of the victim's, 0600.
  owner_pid=$(sed -n 's/.*"pid": \([0-9]*\).*/\1/p' "$dir/export.out")
  memfds=""
  for fd in /proc/"$owner_pid"/fd/*; do
    case "$(readlink "$fd")" in *memfd:fgpu-sim-ipc*) memfds="$memfds $(stat -L -c '%a:%u' "$fd")" ;; esac
  done
  [ "$memfds" = " 600:$VICTIM 600:$VICTIM" ] || fail "$where: the victim's IPC memfds are '$memfds', not two 600:$VICTIM"
  on_gpu "$where" "$ATTACKER" "$PYTHON" "$SCRATCH/cuda_ipc_peer.py" open "$dir/export.out" --scribble \
    >"$dir/attacker.out" 2>"$dir/attacker.err" || fail "$where: the attacker's program failed: $(cat "$dir/attacker.err")"
  echo "$where, the attacker:"
  sed 's/^/  /' "$dir/attacker.out"
  expect_step "$dir/attacker.out" open_mem '"code": "CUDA_ERROR_INVALID_HANDLE"'
  expect_step "$dir/attacker.out" open_event '"code": "CUDA_ERROR_INVALID_HANDLE"'
  expect_step "$dir/attacker.out" reach '"ipc_mappings": 0' '"through_proc": "EACCES"'
  # The handles are good: a second process of the victim's opens them.
  on_gpu "$where" "$VICTIM" "$PYTHON" "$SCRATCH/cuda_ipc_peer.py" open "$dir/export.out" \
    >"$dir/owner.out" 2>"$dir/owner.err" || fail "$where: the victim's second process failed: $(cat "$dir/owner.err")"
  expect_step "$dir/owner.out" open_mem '"code": "CUDA_SUCCESS"' '"reads_the_pattern": true'
  expect_step "$dir/owner.out" open_event '"code": "CUDA_SUCCESS"'
  touch "$dir/release"
  wait "$exporter" || fail "$where: the victim's exporter failed: $(cat "$dir/export.err")"
  expect_step "$dir/export.out" check '"unchanged": true' '"event_query": "CUDA_SUCCESS"'
}

run_case "$@"
