# e2e: fgpu's commands against a real agent on the simulated GPU (one 4 GiB GPU): fgpu slice
# list|show|resize|delete, status --json, top's timestamp, fgpu run's refusals and exit codes,
# and fgpu run applying the slice's whole environment from a shell outside `fgpu sim run`.
# Usage: sh cli_agent_test.sh CASE   (77: fgpu-probe, the interposer or libcuda.so.1 not built)
. "$(dirname "$0")/lib.sh"
export ASAN_OPTIONS=${ASAN_OPTIONS:-verify_asan_link_order=0}

SEGMENT=/fgpu-e2e-cli-agent-$$
AGENT_PID=
SOCKET=$SCRATCH/agent/agent.sock
HOLDER_PID=

stop_agent() {
  [ -n "$HOLDER_PID" ] && kill "$HOLDER_PID" 2>/dev/null && wait "$HOLDER_PID" 2>/dev/null
  [ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
  "$FGPU" sim reset --segment "$SEGMENT" >/dev/null 2>&1
  rm -rf "$SCRATCH"
}
trap stop_agent EXIT

# The agent under `fgpu sim run`: it and the slices it makes see the simulated GPU; this shell
# does not (no LD_LIBRARY_PATH, no FGPU_SIM_*), as a user's shell beside the agent would not.
start_agent() {
  require_probe_and_driver
  [ -f "$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so" ] || skip "the interposer is not built"
  printf '{"devices": [{"name": "E2E GPU", "memory": "4GiB", "context_overhead": "300MiB"}]}\n' >"$SCRATCH/gpu.json"
  FGPU_COMPUTE_DIR=$SCRATCH/boards "$FGPU" sim run --config "$SCRATCH/gpu.json" --segment "$SEGMENT" -- \
    "$FGPU" agent --state "$SCRATCH/agent" >"$SCRATCH/agent.out" 2>"$SCRATCH/agent.err" &
  AGENT_PID=$!
  for _ in $(seq 100); do grep -q serving "$SCRATCH/agent.out" 2>/dev/null && return 0; sleep 0.1; done
  fail "the agent did not start: $(cat "$SCRATCH/agent.err")"
}

# A workload holding 64 MiB in a 1 GiB slice for 30 s, in the background; its slice's id in $SLICE.
start_holder() {
  "$FGPU" run --agent "$SOCKET" --memory 1GiB --tenant holder -- "$PROBE" alloc --bytes 64MiB --hold-ms 30000 \
    >"$SCRATCH/holder.out" 2>"$SCRATCH/holder.err" &
  HOLDER_PID=$!
  for _ in $(seq 100); do
    SLICE=$(sed -n 's/^fgpu run: slice \([^ ]*\) on .*/\1/p' "$SCRATCH/holder.err")
    [ -n "$SLICE" ] && return 0
    sleep 0.1
  done
  fail "no slice for the holder: $(cat "$SCRATCH/holder.err")"
}

case_slice_commands() {
  start_agent
  start_holder
  run_fgpu slice list --agent "$SOCKET"
  expect_status 0
  expect_out_contains "$SLICE"
  expect_out_contains "holder"
  run_fgpu slice show "$SLICE" --agent "$SOCKET"
  expect_status 0
  expect_out_contains "memory_bytes: 1 GiB"
  expect_out_contains "env.FGPU_SLICE: "
  run_fgpu slice resize "$SLICE" --memory 2G --tier batch --agent "$SOCKET"
  expect_status 0
  expect_out_contains "resized $SLICE"
  expect_out_contains "2 GiB"
  expect_out_contains "batch"
  run_fgpu slice resize "$SLICE" --agent "$SOCKET"
  expect_status 2
  expect_err_contains "name what to change"
  run_fgpu slice show no-such-slice --agent "$SOCKET"
  expect_status 2
  run_fgpu slice resize "$SLICE" --memory 40Gi --agent "$SOCKET"
  expect_status 1
  run_fgpu slice delete "$SLICE" --agent "$SOCKET"
  expect_status 0
  expect_out "deleted $SLICE"
  run_fgpu slice list --agent "$SOCKET"
  expect_out "no slices"
}

case_status_json_and_top() {
  start_agent
  start_holder
  run_fgpu status --json --agent "$SOCKET"
  expect_status 0
  expect_out_contains '"gpus": ['
  expect_out_contains '"slices": ['
  expect_out_contains "\"id\": \"$SLICE\""
  run_fgpu status --agent "$SOCKET"
  expect_status 0
  expect_out_contains "$SLICE"
  run_fgpu top --count 1 --agent "$SOCKET"
  expect_status 0
  echo "$OUT" | head -n 1 | grep -Eq '^fgpu top  [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} ' ||
    fail "top's first line is not a timestamp: $OUT"
}

case_refusals_and_exit_codes() {
  start_agent
  start_holder
  # 1 GiB of 4 held: 3.5 GiB does not fit now (exit 1, the free room and --wait named) ...
  run_fgpu run --agent "$SOCKET" --memory 3.5GiB -- "$PROBE" info
  expect_status 1
  expect_err_contains "free now: GPU 0: 3 GiB and"
  expect_err_contains "--wait"
  # ... 5 GiB never fits (a usage error, as for a private slice).
  run_fgpu run --agent "$SOCKET" --memory 5GiB -- "$PROBE" info
  expect_status 2
  expect_err_contains "more than any GPU here has"
  run_fgpu run --agent "$SOCKET" --memory 1GiB --tier fast -- "$PROBE" info
  expect_status 2
  expect_err_contains "latency"
  run_fgpu run --agent 127.0.0.1:9 --memory 1GiB -- "$PROBE" info
  expect_status 2
  expect_err_contains "Unix socket"
  run_fgpu status --agent "$SCRATCH/no-such.sock"
  expect_status 1
  run_fgpu status --agent localhost:nope
  expect_status 2
}

# From this shell (no simulator in its environment) the workload starts on the agent's simulated
# GPU only if fgpu run applies the slice's LD_LIBRARY_PATH and FGPU_SIM_* too.
case_run_applies_the_slice_environment() {
  start_agent
  run_fgpu run --agent "$SOCKET" --memory 1G -- "$PROBE" info
  expect_status 0
  expect_out_contains '"event":"info"'
  expect_out_contains 'E2E GPU'
  # sh is not built with the sanitizer the preloaded interposer may carry: no leak report at its exit.
  ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0
  run_fgpu run --agent "$SOCKET" --memory 1Gi -- sh -c 'echo "$LD_LIBRARY_PATH|$FGPU_SIM_SEGMENT|$FGPU_SLICE"'
  expect_status 0
  expect_out_contains "lib/fgpu/sim"
  expect_out_contains "|$SEGMENT|"
}

run_case "$@"
