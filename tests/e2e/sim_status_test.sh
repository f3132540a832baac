# e2e: fgpu sim status reads the shared segment; fgpu sim reset removes it.
# Usage: sh sim_status_test.sh CASE
. "$(dirname "$0")/lib.sh"

SEGMENT="/fgpu-e2e-status-$$"
cleanup_segment() {
  "$FGPU" sim reset --segment "$SEGMENT" >/dev/null 2>&1
  rm -rf "$SCRATCH"
}
trap cleanup_segment EXIT

case_absent_segment() {
  run_fgpu sim status --segment "$SEGMENT" --json
  expect_status 0
  expect_out_contains '"segment_exists":false'
  expect_out_contains '"processes":[]'
  # Asking must not create the segment.
  [ ! -e "/dev/shm/${SEGMENT#/}" ] || fail "sim status created $SEGMENT"
  run_fgpu sim status --segment "$SEGMENT"
  expect_status 0
  expect_out_contains "does not exist yet"
}

case_live_segment() {
  require_probe_and_driver
  # fgpu sim run execs the probe, so $! is the probe's own pid, the one NVML reports.
  "$FGPU" sim run --segment "$SEGMENT" -- "$PROBE" alloc --bytes 1GiB --hold-ms 20000 >"$SCRATCH/probe.out" &
  probe_pid=$!
  waited=0
  until grep -q '"mem_get_info"' "$SCRATCH/probe.out" 2>/dev/null; do
    kill -0 "$probe_pid" 2>/dev/null || fail "the probe exited early: $(cat "$SCRATCH/probe.out")"
    [ "$waited" -lt 300 ] || fail "the probe did not allocate within 30 s"
    sleep 0.1
    waited=$((waited + 1))
  done

  run_fgpu sim status --segment "$SEGMENT" --json
  expect_status 0
  expect_out_contains '"segment_exists":true'
  expect_out_contains "\"pid\":$probe_pid,"
  run_fgpu sim status --segment "$SEGMENT"
  expect_status 0
  expect_out_contains "$probe_pid"

  kill "$probe_pid"
  wait "$probe_pid" 2>/dev/null
  run_fgpu sim reset --segment "$SEGMENT"
  expect_status 0
  expect_out "removed segment $SEGMENT"
  [ ! -e "/dev/shm/${SEGMENT#/}" ] || fail "sim reset left $SEGMENT behind"
}

run_case "$@"
