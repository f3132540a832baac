# e2e: programs none of us wrote, on the simulated driver, with and without the interposer
# (docs/sim.md "Programs none of us wrote"). 77 = the program is not installed (scripts/bootstrap
# installs it) or the simulated driver / interposer is not built.
. "$(dirname "$0")/lib.sh"
# Under the sanitizer build the simulated driver brings ASan into python: LLVM's (llvmlite's)
# own leaks at exit are not ours to report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-verify_asan_link_order=0}:detect_leaks=0
GIB=1073741824
PROGRAMS=$(cd "$(dirname "$0")/../programs" && pwd)

require_numba() {
  [ -f "$FGPU_BUILD_SIM_LIBDIR/libcuda.so.1" ] || skip "the simulated driver is not built"
  # Debian's python3-numba is for Debian's python3, whatever else is first on PATH.
  /usr/bin/python3 -c 'import numba.cuda' 2>/dev/null || skip "python3-numba is not installed"
}

# numba's device arrays, copies, streams and memory info on a simulated H100.
case_numba_on_the_simulator() {
  require_numba
  write_gpu_config "$SCRATCH/gpu.json"
  run_fgpu sim run --config "$SCRATCH/gpu.json" --segment "/fgpu-e2e-numba-$$" -- /usr/bin/python3 "$PROGRAMS/numba_memory.py"
  expect_status 0
  expect_out_contains '"step": "round_trip", "ok": true'
  expect_out_contains '"step": "stream_copy", "ok": true'
  expect_out_contains '"step": "slice", "ok": true'
}

# Two processes of one slice share a 1 GiB array through numba's IPC handles: the second reads
# and writes it, and its free memory does not change when it opens it (charged to the exporter
# only, HAMi's policy too: docs/hook-memory.md).
case_numba_ipc_in_a_slice() {
  require_numba
  [ -f "$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so" ] || skip "the interposer is not built"
  run_fgpu sim run --segment "/fgpu-e2e-numba-ipc-$$" -- "$FGPU" run --memory 4GiB -- \
    /usr/bin/python3 "$PROGRAMS/numba_memory.py" --ipc $((1 * GIB))
  expect_status 0
  expect_out_contains '"step": "ipc", "ok": true'
}

# Unpinned, numba 0.56 binds CUDA 13.0's two-argument cuCtxGetDevice_v2 with one argument, and
# the driver refuses the garbage context, as a real 13.0 driver does (numba-cuda issue #173).
case_numba_unpinned_meets_cuda_13() {
  require_numba
  write_gpu_config "$SCRATCH/gpu.json"
  run_fgpu sim run --config "$SCRATCH/gpu.json" --segment "/fgpu-e2e-numba-13-$$" -- \
    /usr/bin/python3 "$PROGRAMS/numba_memory.py" --unpinned
  expect_status 1
  expect_out_contains 'cuCtxGetDevice results in CUDA_ERROR_INVALID_CONTEXT'
}

# Under fgpu run --memory 4GiB numba sees a 4 GiB GPU and gets CUDA_ERROR_OUT_OF_MEMORY past it.
case_numba_in_a_slice() {
  require_numba
  [ -f "$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so" ] || skip "the interposer is not built"
  run_fgpu sim run --segment "/fgpu-e2e-numba-slice-$$" -- "$FGPU" run --memory 4GiB -- \
    /usr/bin/python3 "$PROGRAMS/numba_memory.py" --expect-total $((4 * GIB)) --fill $((4 * GIB))
  expect_status 0
  expect_out_contains "\"total\": $((4 * GIB))"
  expect_out_contains '"step": "out_of_memory", "ok": true'
}

run_case "$@"
