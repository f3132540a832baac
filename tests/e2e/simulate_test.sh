# e2e: `fgpu simulate` on the small checked-in trace (src/simulate/testdata): the table, the
# JSON summary, the files under --out, and clear errors (exit 2) for bad input.
# Usage: sh simulate_test.sh CASE
. "$(dirname "$0")/lib.sh"

DATA=$(cd "$(dirname "$0")/../../src/simulate/testdata" && pwd)
NODES="$DATA/nodes.csv"
PODS="$DATA/pods.csv"

case_table() {
  run_fgpu simulate --nodes "$NODES" --pods "$PODS" --policy FGD,FGD+,Random --seeds 1-3 --jobs 2
  expect_status 0
  for word in "56 nodes (299 GPUs)" "327 pods" "seeds 1-3" "unalloc@100" "unalloc@130" "decisions/s" \
    "p99 us" "FGD+" "Random"; do
    expect_out_contains "$word"
  done
  # No terminal: no progress bar on stderr.
  case "$ERR" in *"runs"*) fail "progress bar drawn without a terminal: $ERR" ;; esac
}

case_json() {
  run_fgpu simulate --nodes "$NODES" --pods "$PODS" --policy all --seeds 4 --format json
  expect_status 0
  for field in '"policy": "FGD+"' '"policy": "BestFit"' '"unallocated_pct_at_100":' '"unallocated_pct_at_130":' \
    '"decisions_per_sec":' '"p99_decision_us":' '"per_seed":'; do
    expect_out_contains "$field"
  done
  case "$OUT" in "["*"]") ;; *) fail "JSON summary is not one array of policy objects: $OUT" ;; esac
}

case_out_dir() {
  run_fgpu simulate --nodes "$NODES" --pods "$PODS" --policy BestFit,FGD --seeds 1-2 --out "$SCRATCH/result"
  expect_status 0
  for file in table.txt summary.json curves.csv unallocated.svg; do
    [ -s "$SCRATCH/result/$file" ] || fail "--out did not write $file"
  done
  head -c 4 "$SCRATCH/result/unallocated.svg" | grep -q '<svg' || fail "unallocated.svg is not an SVG"
  grep -q '^FGD,130,' "$SCRATCH/result/curves.csv" || fail "curves.csv lacks FGD at arrived 130%"
  expect_err_contains "wrote table.txt"
}

# --time: the four baselines through the Governor in time, issue 16's bars judged, the files.
case_time() {
  run_fgpu simulate --time --nodes "$NODES" --pods "$PODS" --seeds 42 --load 1.2 --window 0.5 --warmup 0.1 \
    --drain 0.1 --out "$SCRATCH/timed"
  expect_status 0
  for word in "fgpu simulate --time" "load 1.20" "fifo" "priority" "preemption" "fgpu" "LS p99" "Jain (sat)" \
    "issue 16's bars at load 1.20" "allocated GPU" "lost to preemption" "org1/team1"; do
    expect_out_contains "$word"
  done
  for file in table.txt summary.json timeline-load-1.20.svg; do
    [ -s "$SCRATCH/timed/$file" ] || fail "--out did not write $file"
  done
  head -c 4 "$SCRATCH/timed/timeline-load-1.20.svg" | grep -q '<svg' || fail "the timeline is not an SVG"
  run_fgpu simulate --time --nodes "$NODES" --pods "$PODS" --seeds 42 --baselines fifo,fgpu --window 0.5 \
    --warmup 0.1 --drain 0.1 --format json
  expect_status 0
  expect_out_contains '"baseline": "fgpu"'
  expect_out_contains '"delay_p99_seconds":'
  expect_out_contains '"bars":'
}

# --mig: the same arrivals as slices, MIG instances and mixed pools, then what it refuses.
case_mig() {
  run_fgpu simulate --mig --nodes "$NODES" --pods "$PODS" --seeds 42-43
  expect_status 0
  for word in "fgpu simulate --mig" "each taken as a H100-80GB" "slices" "mig" "mixed" "unalloc %" "stranded GiB"; do
    expect_out_contains "$word"
  done
  run_fgpu simulate --mig --nodes "$NODES" --pods "$PODS" --seeds 42 --mig-model A100-40GB --format json
  expect_status 0
  expect_out_contains '"model": "A100-40GB"'
  expect_out_contains '"stranded_memory_gib":'
  run_fgpu simulate --mig --nodes "$NODES" --pods "$PODS" --mig-model H100-94GB
  expect_status 2
  expect_err_contains "--mig-model takes A100-40GB"
  run_fgpu simulate --mig --nodes "$NODES" --pods "$PODS" --mig-share 2
  expect_status 2
  expect_err_contains "--mig-share must be in [0, 1]"
  run_fgpu simulate --mig --time --nodes "$NODES" --pods "$PODS"
  expect_status 2
  expect_err_contains "separate experiments"
}

# --time refuses what it cannot run: untimed pods, bad loads, tenants, baselines.
case_time_bad_input() {
  printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1024,1,500\n' >"$SCRATCH/untimed.csv"
  run_fgpu simulate --time --nodes "$NODES" --pods "$SCRATCH/untimed.csv"
  expect_status 2
  expect_err_contains "--time needs them"
  run_fgpu simulate --time --nodes "$NODES" --pods "$PODS" --load 0
  expect_status 2
  expect_err_contains "--load takes loads in (0, 10]"
  run_fgpu simulate --time --nodes "$NODES" --pods "$PODS" --tenants 3
  expect_status 2
  expect_err_contains "--tenants takes ORGSxTEAMS"
  run_fgpu simulate --time --nodes "$NODES" --pods "$PODS" --baselines fifo,lifo
  expect_status 2
  expect_err_contains "unknown baseline 'lifo'"
  run_fgpu simulate --time --nodes "$NODES" --pods "$PODS" --window 1 --warmup 2
  expect_status 2
  expect_err_contains "--warmup"
}

case_bad_input() {
  printf 'sn,cpu_milli,memory_mib,gpu,model\nok,1000,1024,2,T4\nbad,-1,1024,2,T4\n' >"$SCRATCH/nodes.csv"
  run_fgpu simulate --nodes "$SCRATCH/nodes.csv" --pods "$PODS"
  expect_status 2
  expect_err_contains "nodes.csv:3: column cpu_milli '-1'"
  printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1024,1\n' >"$SCRATCH/pods.csv"
  run_fgpu simulate --nodes "$NODES" --pods "$SCRATCH/pods.csv"
  expect_status 2
  expect_err_contains "pods.csv:2: expected 5 fields"
  run_fgpu simulate --nodes "$SCRATCH/missing.csv" --pods "$PODS"
  expect_status 2
  expect_err_contains "cannot read"
}

case_never_fits() {
  printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\nfine,1000,1024,1,500,\nbig,1000,1024,16,1000,\nh100,1000,1024,1,1000,H100\n' \
    >"$SCRATCH/pods.csv"
  run_fgpu simulate --nodes "$NODES" --pods "$SCRATCH/pods.csv" --policy FGD --seeds 1
  expect_status 0
  expect_err_contains "pods.csv:3: pod 'big' is larger than every node"
  expect_err_contains "pods.csv:4: pod 'h100' accepts only GPU models no node has (H100)"
  expect_err_contains "2 pods can never be placed"
}

case_usage_errors() {
  run_fgpu simulate --nodes "$NODES" --pods "$PODS" --policy Magic
  expect_status 2
  expect_err_contains "unknown policy 'Magic'"
  run_fgpu simulate --nodes "$NODES" --pods "$PODS" --seeds 9-3
  expect_status 2
  expect_err_contains "bad seed"
  run_fgpu simulate --nodes "$NODES" --pods "$PODS" --inflate 0
  expect_status 2
  run_fgpu simulate --pods "$PODS"
  expect_status 2
  run_fgpu simulate --help
  expect_status 0
  expect_out_contains "--policy"
}

run_case "$@"
