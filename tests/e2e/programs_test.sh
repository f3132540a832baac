# e2e: programs none of us wrote, on the simulated driver, with and without the interposer
# (docs/sim.md "Programs none of us wrote"): numba's CUDA target, and the Rust nvml-wrapper
# crate's examples. 77 = the program is not installed (scripts/bootstrap installs it) or the
# simulated driver / interposer is not built.
. "$(dirname "$0")/lib.sh"
# Under the sanitizer build the simulated driver brings ASan into python (and Rust programs):
# LLVM's (llvmlite's) own leaks at exit are not ours to report.
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

# A context's malloc heap is device memory the driver reserves at cuCtxSetLimit: in a 1 GiB slice
# a 512 MiB heap is charged (free drops by it) and a 2 GiB one is refused with
# CUDA_ERROR_OUT_OF_MEMORY, the heap left as it was (docs/hook-memory.md "Modules, libraries and
# limits"); lowering it gives the memory back.
case_heap_limit_in_a_slice() {
  [ -f "$FGPU_BUILD_SIM_LIBDIR/libcuda.so.1" ] || skip "the simulated driver is not built"
  [ -f "$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so" ] || skip "the interposer is not built"
  [ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is not installed"
  mib=1048576
  run_fgpu sim run --segment "/fgpu-e2e-heap-$$" -- "$FGPU" run --memory 1GiB -- \
    /usr/bin/python3 "$PROGRAMS/context_limits.py" $((520 * mib)) $((2056 * mib)) $((8 * mib))
  expect_status 0
  raised=$(printf '%s\n' "$OUT" | grep "\"asked\": $((520 * mib)),")
  refused=$(printf '%s\n' "$OUT" | grep "\"asked\": $((2056 * mib)),")
  lowered=$(printf '%s\n' "$OUT" | grep "\"asked\": $((8 * mib)),")
  free_of() { printf '%s' "$1" | sed -n 's/.*"free": \([0-9]*\).*/\1/p'; }
  case "$raised" in *'"code": 0,'*) ;; *) fail "raising the heap to 520 MiB failed: $raised" ;; esac
  case "$refused" in *'"code": 2,'*"\"heap\": $((520 * mib)),"*) ;;
    *) fail "a 2 GiB heap in a 1 GiB slice was not refused with the heap kept: $refused" ;; esac
  case "$lowered" in *'"code": 0,'*) ;; *) fail "lowering the heap failed: $lowered" ;; esac
  [ $(($(free_of "$lowered") - $(free_of "$raised"))) -eq $((512 * mib)) ] ||
    fail "the 512 MiB the heap held did not come back: $raised / $lowered"
}

# A module's globals are device memory its load takes: in a 1 GiB slice (500 MiB of it the
# context) two modules of 200 MiB load, the third is refused with CUDA_ERROR_OUT_OF_MEMORY, and
# unloading gives everything back (docs/hook-memory.md "Modules, libraries and limits").
case_module_globals_in_a_slice() {
  [ -f "$FGPU_BUILD_SIM_LIBDIR/libcuda.so.1" ] || skip "the simulated driver is not built"
  [ -f "$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so" ] || skip "the interposer is not built"
  [ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is not installed"
  mib=1048576
  run_fgpu sim run --segment "/fgpu-e2e-module-$$" -- "$FGPU" run --memory 1GiB -- \
    /usr/bin/python3 "$PROGRAMS/module_globals.py" $((200 * mib)) 3
  expect_status 0
  expect_out_contains '"step": "load", "code": 0, "free": '
  loaded=$(printf '%s\n' "$OUT" | grep -c '"step": "load", "code": 0,')
  refused=$(printf '%s\n' "$OUT" | grep -c '"step": "load", "code": 2,')
  [ "$loaded" -eq 2 ] && [ "$refused" -eq 1 ] || fail "expected two loads and one refusal: $OUT"
  start=$(printf '%s\n' "$OUT" | sed -n 's/.*"step": "start", "code": 0, "free": \([0-9]*\).*/\1/p')
  first=$(printf '%s\n' "$OUT" | sed -n 's/.*"step": "load", "code": 0, "free": \([0-9]*\), "index": 0.*/\1/p')
  last=$(printf '%s\n' "$OUT" | sed -n 's/.*"step": "unload", "code": 0, "free": \([0-9]*\).*/\1/p' | tail -n 1)
  [ $((start - first)) -eq $((200 * mib)) ] || fail "a 200 MiB module was charged $((start - first)) bytes: $OUT"
  [ "$last" -eq "$start" ] || fail "unloading did not give the modules' memory back: $OUT"
}

# A green context costs a context's overhead like any other: in a 2 GiB slice green contexts are
# created until one is refused with CUDA_ERROR_OUT_OF_MEMORY (nothing charged for it), and
# destroying them (cuGreenCtxDestroy) gives back their overhead and the 100 MiB allocated under
# the first one (docs/hook-memory.md "Contexts"). The simulated GPU alone would make all ten.
case_green_contexts_in_a_slice() {
  [ -f "$FGPU_BUILD_SIM_LIBDIR/libcuda.so.1" ] || skip "the simulated driver is not built"
  [ -f "$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so" ] || skip "the interposer is not built"
  [ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is not installed"
  mib=1048576
  run_fgpu sim run --segment "/fgpu-e2e-green-$$" -- "$FGPU" run --memory 2GiB -- \
    /usr/bin/python3 "$PROGRAMS/green_contexts.py" 10 $((100 * mib))
  expect_status 0
  free_of() { printf '%s' "$1" | sed -n 's/.*"free": \([0-9]*\).*/\1/p'; }
  start=$(free_of "$(printf '%s\n' "$OUT" | grep '"step": "start", "code": 0,')")
  [ -n "$start" ] || fail "no green context resources: $OUT"
  first=$(free_of "$(printf '%s\n' "$OUT" | grep '"step": "create", "code": 0, .*"index": 0,')")
  allocated=$(free_of "$(printf '%s\n' "$OUT" | grep '"step": "alloc", "code": 0,')")
  [ -n "$first" ] && [ -n "$allocated" ] || fail "the first green context or its allocation failed: $OUT"
  overhead=$((start - first))
  [ "$overhead" -gt 0 ] || fail "the first green context was not charged: $OUT"
  [ $((first - allocated)) -eq $((100 * mib)) ] || fail "100 MiB under a green context was charged $((first - allocated)): $OUT"
  created=$(printf '%s\n' "$OUT" | grep -c '"step": "create", "code": 0,')
  refused=$(printf '%s\n' "$OUT" | grep '"step": "create", "code": 2,')
  [ "$created" -ge 1 ] && [ "$created" -lt 10 ] || fail "expected the slice to refuse a green context: $OUT"
  case "$refused" in *'"null": true'*) ;; *) fail "the refusal was not CUDA_ERROR_OUT_OF_MEMORY with a NULL handle: $OUT" ;; esac
  before_refusal=$(free_of "$(printf '%s\n' "$OUT" | grep '"step": "create", "code": 0,' | tail -n 1)")
  [ "$(free_of "$refused")" -eq "$before_refusal" ] || fail "the refused green context kept a charge: $OUT"
  [ "$before_refusal" -lt "$overhead" ] || fail "refused with room for one more ($before_refusal free, $overhead each): $OUT"
  destroyed=$(printf '%s\n' "$OUT" | grep -c '"step": "destroy", "code": 0,')
  [ "$destroyed" -eq "$created" ] || fail "not every green context was destroyed: $OUT"
  freed_first=$(free_of "$(printf '%s\n' "$OUT" | grep '"step": "destroy", "code": 0, .*"index": 0')")
  [ $((freed_first - before_refusal)) -eq $((overhead + 100 * mib)) ] ||
    fail "destroying the first green context did not give back its overhead and allocation: $OUT"
  last=$(free_of "$(printf '%s\n' "$OUT" | grep '"step": "destroy"' | tail -n 1)")
  [ "$last" -eq "$start" ] || fail "destroying the green contexts did not give everything back: $OUT"
}

# A library's globals are placed lazily, at first use (the driver's default since CUDA 12.2, and
# the simulator's): in a 1 GiB slice (500 MiB of it the context) three libraries of 200 MiB load
# for nothing; cuLibraryGetGlobal places and charges the first two, refuses the third with
# CUDA_ERROR_OUT_OF_MEMORY (its memory placed all the same, so charged: the slice shows none
# free) and refuses it again; unloading gives everything back (docs/hook-memory.md "Lazily
# placed libraries").
case_library_globals_in_a_slice() {
  [ -f "$FGPU_BUILD_SIM_LIBDIR/libcuda.so.1" ] || skip "the simulated driver is not built"
  [ -f "$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so" ] || skip "the interposer is not built"
  [ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is not installed"
  mib=1048576
  run_fgpu sim run --segment "/fgpu-e2e-library-$$" -- "$FGPU" run --memory 1GiB -- \
    /usr/bin/python3 "$PROGRAMS/library_globals.py" $((200 * mib)) 3
  expect_status 0
  free_of() { printf '%s' "$1" | sed -n 's/.*"free": \([0-9]*\).*/\1/p'; }
  line() { printf '%s\n' "$OUT" | grep "\"step\": \"$1\"" | grep "\"index\": $2[,}]"; }
  start=$(free_of "$(printf '%s\n' "$OUT" | grep '"step": "start"')")
  loaded=$(free_of "$(line load 2)")
  [ "$(printf '%s\n' "$OUT" | grep -c '"step": "load", "code": 0,')" -eq 3 ] || fail "a load failed: $OUT"
  [ "$loaded" -eq "$start" ] || fail "loading charged $((start - loaded)) bytes before any use: $OUT"
  case "$(line place 0)$(line again 0)$(line place 1)" in
    *'"code": 0,'*'"code": 0,'*'"code": 0,'*) ;; *) fail "the first two libraries were not placed: $OUT" ;; esac
  [ $((start - $(free_of "$(line place 0)"))) -eq $((200 * mib)) ] ||
    fail "placing 200 MiB charged $((start - $(free_of "$(line place 0)"))) bytes: $OUT"
  case "$(line place 2)" in *'"code": 2,'*'"free": 0,'*) ;;
    *) fail "the third library was not refused (and charged) at the cap: $OUT" ;; esac
  case "$(line again 2)" in *'"code": 2,'*) ;; *) fail "the refused library was handed out after all: $OUT" ;; esac
  last=$(free_of "$(printf '%s\n' "$OUT" | grep '"step": "unload", "code": 0,' | tail -n 1)")
  [ "$(printf '%s\n' "$OUT" | grep -c '"step": "unload", "code": 0,')" -eq 3 ] || fail "an unload failed: $OUT"
  [ "$last" -eq "$start" ] || fail "unloading did not give the libraries' memory back: $OUT"
}

# A VMM allocation shared through a file descriptor (NCCL's and PyTorch's expandable segments' way)
# is charged once, to its creator: the import and its release leave the slice's free memory as
# it was; releasing the original gives the 1 GiB back (HAMi's exporter-only policy too).
case_vmm_share_in_a_slice() {
  [ -f "$FGPU_BUILD_SIM_LIBDIR/libcuda.so.1" ] || skip "the simulated driver is not built"
  [ -f "$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so" ] || skip "the interposer is not built"
  [ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is not installed"
  run_fgpu sim run --segment "/fgpu-e2e-vmm-share-$$" -- "$FGPU" run --memory 4GiB -- \
    /usr/bin/python3 "$PROGRAMS/vmm_share.py" $((1 * GIB))
  expect_status 0
  free_at() { printf '%s\n' "$OUT" | sed -n "s/.*\"step\": \"$1\", \"code\": 0, \"free\": \([0-9]*\).*/\1/p"; }
  start=$(free_at start) created=$(free_at create) imported=$(free_at import)
  released_import=$(free_at release_import) released=$(free_at release)
  [ -n "$start" ] && [ -n "$created" ] && [ -n "$imported" ] && [ -n "$released_import" ] && [ -n "$released" ] ||
    fail "a step failed: $OUT"
  [ $((start - created)) -eq $GIB ] || fail "creating 1 GiB charged $((start - created)) bytes: $OUT"
  [ "$imported" -eq "$created" ] && [ "$released_import" -eq "$created" ] ||
    fail "the import changed what the slice is charged: $OUT"
  [ "$released" -eq "$start" ] || fail "releasing the original did not give the 1 GiB back: $OUT"
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

# The Rust nvml-wrapper crate's examples (Debian's librust-nvml-wrapper-dev 0.9.0), unchanged,
# built by case nvml_wrapper_build (the fixture the other nvml_wrapper cases require) with
# Debian's cargo and rustc, offline, into the build tree, where reruns find them built.
CARGO_REGISTRY=/usr/share/cargo/registry
NVML_WRAPPER_DIR=${FGPU_PROGRAMS_BUILD_DIR:-$FGPU_BIN_DIR/../programs}/nvml_wrapper
NVML_WRAPPER_EXAMPLES=$NVML_WRAPPER_DIR/target/debug/examples

require_nvml_wrapper_toolchain() {
  [ -f "$FGPU_BUILD_SIM_LIBDIR/libnvidia-ml.so.1" ] || skip "the simulated NVML is not built"
  # A ThreadSanitizer runtime cannot come in by dlopen, nor by a preloaded interposer.
  if ldd "$FGPU_BUILD_SIM_LIBDIR/libnvidia-ml.so.1" | grep -q libtsan; then
    skip "a ThreadSanitizer build: its runtime cannot be loaded into a program built without it"
  fi
  { [ -x /usr/bin/cargo ] && [ -x /usr/bin/rustc ]; } || skip "Debian's cargo and rustc are not installed"
  [ -d "$CARGO_REGISTRY/nvml-wrapper-0.9.0" ] || skip "librust-nvml-wrapper-dev (0.9.0) is not installed"
  set -- "$CARGO_REGISTRY"/pretty-bytes-0.2.*
  [ -d "$1" ] || skip "librust-pretty-bytes-dev is not installed"
}

require_nvml_wrapper_examples() {
  require_nvml_wrapper_toolchain
  [ -x "$NVML_WRAPPER_EXAMPLES/basic_usage" ] && [ -x "$NVML_WRAPPER_EXAMPLES/event_loop" ] ||
    fail "the nvml-wrapper examples are not built in $NVML_WRAPPER_DIR (case nvml_wrapper_build)"
}

# An ASan-built interposer preloaded into a program built without ASan that names
# ld-linux-x86-64.so.2 among its own libraries (Rust programs do; python does not) crashes
# before main: ld.so then precedes libasan in the global search order, so ASan's start-up
# lookup dlsym(RTLD_NEXT, "_dl_get_tls_static_info") from libasan finds nothing and it calls
# NULL. Preloading the ASan runtime puts it ahead of ld.so (fgpu run puts libfgpu.so first).
preload_the_interposers_asan_runtime() {
  [ -f "$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so" ] || skip "the interposer is not built"
  asan=$(ldd "$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so" | awk '/libasan/ { print $3 }')
  if [ -n "$asan" ]; then
    export LD_PRELOAD="$asan${LD_PRELOAD:+:$LD_PRELOAD}"
  fi
}

# An A100 80GB: nvml-wrapper 0.9.0 knows the architectures up to Ampere.
write_a100_config() {
  printf '{"devices": [{"name": "NVIDIA A100-SXM4-80GB", "memory": "81920MiB", "sm_count": 108, "compute_capability": "8.0"}]}\n' >"$1"
}

# run_fgpu_for SECONDS ARGS...: run_fgpu, stopped after SECONDS (status 124 if it was still running).
run_fgpu_for() {
  seconds=$1
  shift
  STATUS=0
  timeout -k 5 "$seconds" "$FGPU" "$@" >"$SCRATCH/stdout" 2>"$SCRATCH/stderr" || STATUS=$?
  OUT=$(cat "$SCRATCH/stdout")
  ERR=$(cat "$SCRATCH/stderr")
}

case_nvml_wrapper_build() {
  require_nvml_wrapper_toolchain
  mkdir -p "$NVML_WRAPPER_DIR/cargo-home" || fail "cannot create $NVML_WRAPPER_DIR"
  # Copied only when changed, so that cargo finds the previous build fresh.
  for file in Cargo.toml:Cargo.toml cargo-config.toml:cargo-home/config.toml; do
    from="$PROGRAMS/nvml_wrapper/${file%%:*}"
    to="$NVML_WRAPPER_DIR/${file#*:}"
    cmp -s "$from" "$to" || cp "$from" "$to" || fail "cannot copy $from to $to"
  done
  # Debian's toolchain, whatever else (rustup) is first on PATH; its own home, not ~/.cargo.
  STATUS=0
  (cd "$NVML_WRAPPER_DIR" && CARGO_HOME="$NVML_WRAPPER_DIR/cargo-home" RUSTC=/usr/bin/rustc \
     CARGO_TARGET_DIR="$NVML_WRAPPER_DIR/target" /usr/bin/cargo build --offline --examples) \
    >"$SCRATCH/stdout" 2>"$SCRATCH/stderr" || STATUS=$?
  OUT=$(cat "$SCRATCH/stdout")
  ERR=$(cat "$SCRATCH/stderr")
  expect_status 0
  [ -x "$NVML_WRAPPER_EXAMPLES/basic_usage" ] || fail "cargo built no basic_usage: $ERR"
  [ -x "$NVML_WRAPPER_EXAMPLES/event_loop" ] || fail "cargo built no event_loop: $ERR"
}

# basic_usage on a simulated A100: name, architecture, cores, temperature, memory, clocks, PCIe
# link, multi-GPU board and the CUDA version, all through the simulated NVML.
case_nvml_wrapper_basic_usage_on_the_simulator() {
  require_nvml_wrapper_examples
  write_a100_config "$SCRATCH/gpu.json"
  run_fgpu sim run --config "$SCRATCH/gpu.json" --segment "/fgpu-e2e-nvml-wrapper-$$" -- \
    "$NVML_WRAPPER_EXAMPLES/basic_usage"
  expect_status 0
  expect_out_contains 'Your NVIDIA A100-SXM4-80GB (architecture: Ampere, CUDA cores: 6912) is currently sitting at 30 °C'
  expect_out_contains 'with a graphics clock of 1410 MHz and a memory clock of 1593 MHz'
  expect_out_contains 'Memory usage is 0 B out of an available 85.9 GB'
  expect_out_contains 'connected via a PCIe gen 4 x16 interface; the max your hardware supports is PCIe gen 4 x16'
  expect_out_contains 'This device is not on a multi-GPU board.'
  expect_out_contains 'System CUDA version: 13.0'
}

# Under fgpu run --memory 4GiB the example sees the slice: 4 GiB (pretty-bytes prints 4.29 GB).
case_nvml_wrapper_basic_usage_in_a_slice() {
  require_nvml_wrapper_examples
  preload_the_interposers_asan_runtime
  write_a100_config "$SCRATCH/gpu.json"
  run_fgpu sim run --config "$SCRATCH/gpu.json" --segment "/fgpu-e2e-nvml-wrapper-slice-$$" -- \
    "$FGPU" run --memory 4GiB -- "$NVML_WRAPPER_EXAMPLES/basic_usage"
  expect_status 0
  expect_out_contains 'Memory usage is 0 B out of an available 4.29 GB'
  expect_out_contains 'Your NVIDIA A100-SXM4-80GB (architecture: Ampere, CUDA cores: 6912)'
}

# On the default H100 the example stops where it stops on a real H100: nvml-wrapper 0.9.0's
# DeviceArchitecture ends at Ampere, so NVML_DEVICE_ARCH_HOPPER (9) is an unexpected variant.
case_nvml_wrapper_basic_usage_meets_hopper() {
  require_nvml_wrapper_examples
  run_fgpu sim run --segment "/fgpu-e2e-nvml-wrapper-h100-$$" -- "$NVML_WRAPPER_EXAMPLES/basic_usage"
  expect_status 1
  expect_err_contains 'Error: UnexpectedVariant(9)'
}

# event_loop registers the device's supported events and waits for them until stopped; none
# ever occurs on the simulator, so after 2 s it is still waiting (a failed registration or
# wait would have ended it) and has printed nothing.
case_nvml_wrapper_event_loop_on_the_simulator() {
  require_nvml_wrapper_examples
  run_fgpu_for 2 sim run --segment "/fgpu-e2e-nvml-wrapper-events-$$" -- "$NVML_WRAPPER_EXAMPLES/event_loop"
  expect_status 124
  expect_out ''
}

case_nvml_wrapper_event_loop_in_a_slice() {
  require_nvml_wrapper_examples
  preload_the_interposers_asan_runtime
  run_fgpu_for 2 sim run --segment "/fgpu-e2e-nvml-wrapper-events-slice-$$" -- \
    "$FGPU" run --memory 4GiB -- "$NVML_WRAPPER_EXAMPLES/event_loop"
  expect_status 124
  expect_out ''
}

run_case "$@"
