# e2e: fgpu demo, the tour of the simulated GPU, runs every step and cleans up after itself.
. "$(dirname "$0")/lib.sh"

require_probe_and_driver
run_fgpu demo
expect_status 0
for step in "[1/5]" "[2/5]" "[3/5]" "[4/5]" "[5/5]" "CUDA_ERROR_OUT_OF_MEMORY" "Demo complete"; do
  expect_out_contains "$step"
done
segment=$(printf '%s\n' "$OUT" | grep -o '/fgpu-demo-[0-9]*-[0-9]*' | head -n 1)
[ -n "$segment" ] || fail "the demo did not name its segment"
[ ! -e "/dev/shm/${segment#/}" ] || fail "the demo left its segment $segment behind"
