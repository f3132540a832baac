# e2e: fgpu sim run sets up the simulated driver's environment and becomes the command.
# Usage: sh sim_run_test.sh CASE (see the cases below).
. "$(dirname "$0")/lib.sh"

case_environment() {
  write_gpu_config "$SCRATCH/gpu.json"
  LD_LIBRARY_PATH=/e2e/previous
  export LD_LIBRARY_PATH
  run_fgpu sim run --config "$SCRATCH/gpu.json" -- sh -c 'echo "$LD_LIBRARY_PATH $FGPU_SIM_CONFIG ${FGPU_SIM_SEGMENT-unset}"'
  expect_status 0
  expect_out "$(physical_dir "$FGPU_BUILD_SIM_LIBDIR"):/e2e/previous $SCRATCH/gpu.json unset"
}

case_relative_config() {
  write_gpu_config "$SCRATCH/gpu.json"
  cd "$SCRATCH" || fail "cd $SCRATCH"
  # The child changes directory and must still find the config: the path is absolute.
  run_fgpu sim run --config gpu.json -- sh -c 'cd / && echo "$FGPU_SIM_CONFIG" && cat "$FGPU_SIM_CONFIG"'
  expect_status 0
  expect_out_contains "$SCRATCH/gpu.json"
  expect_out_contains "E2E GPU"
}

case_segment() {
  run_fgpu sim run --segment /fgpu-e2e-segment -- sh -c 'echo "$FGPU_SIM_SEGMENT"'
  expect_status 0
  expect_out "/fgpu-e2e-segment"
  run_fgpu sim run --segment no-leading-slash -- true
  expect_status 2
  expect_err_contains "--segment"
}

case_libdir_override() {
  mkdir -p "$SCRATCH/driver" && : >"$SCRATCH/driver/libcuda.so.1"
  unset LD_LIBRARY_PATH
  export FGPU_SIM_LIBDIR="$SCRATCH/driver"
  run_fgpu sim run -- sh -c 'echo "$LD_LIBRARY_PATH"'
  expect_status 0
  expect_out "$SCRATCH/driver"
}

case_exit_status() {
  run_fgpu sim run -- sh -c 'exit 7'
  expect_status 7
  run_fgpu sim run -- true
  expect_status 0
}

case_killed_by_signal() {
  # fgpu has become the command (exec), so the caller sees the signal itself.
  run_fgpu sim run -- sh -c 'kill -TERM $$'
  expect_status 143
}

case_bad_config() {
  printf '{"devices": [{"memroy": "16GiB"}]}\n' >"$SCRATCH/typo.json"
  run_fgpu sim run --config "$SCRATCH/typo.json" -- sh -c ": >'$SCRATCH/ran'"
  expect_status 2
  expect_err_contains "invalid simulator configuration (--config $SCRATCH/typo.json)"
  expect_err_contains "memroy"
  [ ! -e "$SCRATCH/ran" ] || fail "the command ran despite the invalid config"

  printf 'not json\n' >"$SCRATCH/garbage.json"
  export FGPU_SIM_CONFIG="$SCRATCH/garbage.json"
  run_fgpu sim run -- true
  expect_status 2
  expect_err_contains "FGPU_SIM_CONFIG=$SCRATCH/garbage.json"
}

case_missing_config() {
  run_fgpu sim run --config "$SCRATCH/absent.json" -- true
  expect_status 2
  expect_err_contains "$SCRATCH/absent.json"
}

case_missing_command() {
  run_fgpu sim run -- "$SCRATCH/no-such-program"
  expect_status 127
  expect_err_contains "cannot run '$SCRATCH/no-such-program'"
  run_fgpu sim run -- fgpu-e2e-no-such-command-on-path
  expect_status 127
}

case_missing_driver() {
  mkdir -p "$SCRATCH/empty"
  export FGPU_SIM_LIBDIR="$SCRATCH/empty"
  run_fgpu sim run -- true
  expect_status 1
  expect_err_contains "$SCRATCH/empty/libcuda.so.1"
}

run_case "$@"
