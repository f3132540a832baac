# Helpers shared by the e2e scripts (POSIX sh; sourced). Each script runs one case, in a
# scratch directory removed at exit, with no FGPU_SIM_* variable inherited from the caller.
set -u
: "${FGPU_BIN_DIR:?run this through ctest (FGPU_BIN_DIR is not set)}"
: "${FGPU_BUILD_SIM_LIBDIR:?run this through ctest (FGPU_BUILD_SIM_LIBDIR is not set)}"
FGPU="$FGPU_BIN_DIR/fgpu"
PROBE="$FGPU_BIN_DIR/fgpu-probe"
unset FGPU_SIM_CONFIG FGPU_SIM_SEGMENT FGPU_SIM_LIBDIR
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/fgpu-e2e.XXXXXX") || exit 1
SCRATCH=$(cd "$SCRATCH" && pwd -P)
trap 'rm -rf "$SCRATCH"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

skip() {
  echo "SKIP: $*" >&2
  exit 77
}

# Skips (77) unless this build has the probe and the simulated driver.
require_probe_and_driver() {
  [ -x "$PROBE" ] || skip "$PROBE is not built"
  [ -f "$FGPU_BUILD_SIM_LIBDIR/libcuda.so.1" ] || skip "$FGPU_BUILD_SIM_LIBDIR/libcuda.so.1 is not built"
}

# run_fgpu ARGS...: runs fgpu; stdout in $OUT, stderr in $ERR, exit status in $STATUS.
run_fgpu() {
  STATUS=0
  "$FGPU" "$@" >"$SCRATCH/stdout" 2>"$SCRATCH/stderr" || STATUS=$?
  OUT=$(cat "$SCRATCH/stdout")
  ERR=$(cat "$SCRATCH/stderr")
}

expect_status() {
  [ "$STATUS" -eq "$1" ] || fail "expected exit status $1, got $STATUS
stdout: $OUT
stderr: $ERR"
}

expect_out() {
  [ "$OUT" = "$1" ] || fail "expected stdout '$1', got '$OUT' (stderr: $ERR)"
}

expect_out_contains() {
  case "$OUT" in *"$1"*) ;; *) fail "stdout lacks '$1':
$OUT" ;; esac
}

expect_err_contains() {
  case "$ERR" in *"$1"*) ;; *) fail "stderr lacks '$1':
$ERR" ;; esac
}

# The directory with symlinks resolved, as fgpu reports it (it starts from /proc/self/exe).
physical_dir() {
  (cd "$1" && pwd -P)
}

write_gpu_config() {
  printf '{"devices": [{"name": "E2E GPU", "memory": "16GiB"}]}\n' >"$1"
}

# run_case NAME: runs the script's function case_NAME (scripts end with `run_case "$@"`).
run_case() {
  [ $# -eq 1 ] || fail "usage: sh $0 CASE"
  command -v "case_$1" >/dev/null 2>&1 || fail "$0 has no case '$1'"
  "case_$1"
}
