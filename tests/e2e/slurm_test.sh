#!/bin/sh
# e2e: fgpu's SPANK plugin (src/slurm, fgpu_spank.so) on a real Slurm 22.05 cluster on loopback.
#
# Each case starts its own cluster in its scratch directory: munged (its own key and socket),
# slurmctld and three slurmd on one host (node1..node3, multiple-slurmd), each node with two
# fake GPU device files and an `fgpu agent` on its own simulated GPUs (two H100s per node, UUIDs
# distinct per node), then drives srun/sbatch/scancel. A fresh cluster per case costs about two
# seconds and keeps the cases independent: a drained node, a stopped agent or a leftover job of
# one case cannot make another fail. Every config lives in the scratch directory (SLURM_CONF,
# PlugStackConfig, AuthInfo=socket=...); /etc/slurm and /etc/munge are not read or changed.
# Every daemon is stopped by its PID at exit, also on failure (their logs are printed then, and
# with FGPU_E2E_VERBOSE=1 always).
#
# Skips (77) when not root, when Slurm, munge or the plugin is not there (scripts/bootstrap
# installs slurm-wlm, munge and libslurm-dev; without libslurm-dev the plugin is not built),
# when fgpu, fgpu-probe, the interposer or the simulated driver is not built, or when the
# interposer is a ThreadSanitizer build that cannot be preloaded (the tsan preset).
. "$(dirname "$0")/lib.sh"
PATH="$PATH:/usr/sbin:/sbin"
# Workloads preload the interposer; under the dev preset it is an AddressSanitizer build, loaded
# into programs that are not (the batch script's shell, srun inside it).
export ASAN_OPTIONS="${ASAN_OPTIONS:-verify_asan_link_order=0:detect_leaks=0}"

[ "$(id -u)" -eq 0 ] || skip "needs root: slurmd starts jobs as their users, and munged and slurmd run here as root"
for tool in munged mungekey slurmctld slurmd srun sbatch scancel squeue sinfo scontrol mknod; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed (scripts/bootstrap installs slurm-wlm and munge)"
done
PLUGIN="$FGPU_BIN_DIR/../lib/fgpu/fgpu_spank.so"
[ -f "$PLUGIN" ] || skip "$PLUGIN is not built (configure found no slurm/spank.h: install libslurm-dev)"
HOOK="$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so"
[ -f "$HOOK" ] || skip "$HOOK (the interposer, target fgpu_hook) is not built"
[ -x "$FGPU" ] || skip "$FGPU is not built"
require_probe_and_driver

NODES="node1 node2 node3"
GIB=1073741824
chmod 755 "$SCRATCH"  # munged wants its socket's directories searchable by everyone
LOGS="$SCRATCH/logs"
mkdir -p "$LOGS" "$SCRATCH/agents" "$SCRATCH/boards" "$SCRATCH/out"
# Nothing of a surrounding Slurm job or of the caller's Slurm defaults leaks into our clients.
for variable in $(env | sed -n 's/^\(\(SLURM\|SBATCH\|SALLOC\|SRUN\)_[A-Za-z0-9_]*\)=.*/\1/p'); do
  unset "$variable"
done
export SLURM_CONF="$SCRATCH/slurm.conf"
# The agents and the workloads' interposers meet on these compute boards, not the machine's.
export FGPU_COMPUTE_DIR="$SCRATCH/boards"
MUNGED_PID="" CTLD_PID="" SLURMD_PIDS="" CLIENT_PIDS=""
AGENT_PID_node1="" AGENT_PID_node2="" AGENT_PID_node3=""

# --- cleanup: every process this script started, by PID ------------------------------------

stop_pid() {
  [ -n "$1" ] || return 0
  kill -CONT "$1" 2>/dev/null
  kill "$1" 2>/dev/null || return 0
  waited=0
  while kill -0 "$1" 2>/dev/null && [ "$waited" -lt 50 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  kill -9 "$1" 2>/dev/null
  wait "$1" 2>/dev/null
  return 0
}

print_logs() {
  for log in "$LOGS"/* "$SCRATCH"/out/*; do
    [ -f "$log" ] || continue
    echo "----- $log (last 40 lines)" >&2
    tail -n 40 "$log" >&2
  done
}

cleanup() {
  status=$?
  for pid in $CLIENT_PIDS; do stop_pid "$pid"; done
  # Jobs first, while slurmctld and slurmd can still end them: slurmstepd outlives slurmd.
  if [ -n "$CTLD_PID" ] && kill -0 "$CTLD_PID" 2>/dev/null; then
    for node in $NODES; do eval "kill -CONT \"\$AGENT_PID_$node\"" 2>/dev/null; done
    scancel --full --quiet --partition=debug >/dev/null 2>&1
    waited=0
    while [ -n "$(squeue -h -o %i 2>/dev/null)" ] && [ "$waited" -lt 100 ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
  fi
  for pid in $SLURMD_PIDS; do stop_pid "$pid"; done
  stop_pid "$CTLD_PID"
  for node in $NODES; do
    eval "stop_pid \"\$AGENT_PID_$node\""
    "$FGPU" sim reset --segment "/fgpu-slurm-$node-$$" >/dev/null 2>&1
  done
  stop_pid "$MUNGED_PID"
  if [ "$status" -ne 0 ] && [ "$status" -ne 77 ] || [ -n "${FGPU_E2E_VERBOSE:-}" ]; then print_logs; fi
  rm -rf "$SCRATCH"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# --- the cluster ------------------------------------------------------------------------------

port_listening() {
  hex=$(printf '%04X' "$1")
  grep -q ":$hex [0-9A-F]*:[0-9A-F]* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# Ports from the PID, so that two builds' test runs on one machine do not collide.
choose_ports() {
  base=$((20000 + ($$ % 2000) * 20))
  tries=0
  while port_listening "$base" || port_listening $((base + 1)) || port_listening $((base + 2)) ||
    port_listening $((base + 3)); do
    tries=$((tries + 1))
    [ "$tries" -lt 50 ] || fail "no four free TCP ports found for slurmctld and slurmd"
    base=$((base + 97))
  done
  CTLD_PORT=$base
}

write_configs() {
  choose_ports
  cat >"$SCRATCH/slurm.conf" <<EOF
ClusterName=fgpue2e
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmctldPort=$CTLD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SCRATCH/munge/munge.sock
StateSaveLocation=$SCRATCH/ctld
SlurmdSpoolDir=$SCRATCH/spool/%n
SlurmctldPidFile=$SCRATCH/ctld/slurmctld.pid
SlurmdPidFile=$SCRATCH/spool/slurmd-%n.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
PlugStackConfig=$SCRATCH/plugstack.conf
GresTypes=gpu,shard
NodeName=node[1-3] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$((CTLD_PORT + 1))-$((CTLD_PORT + 3))] CPUs=4 RealMemory=1000 Gres=gpu:h100:2,shard:8 State=UNKNOWN
PartitionName=debug Nodes=node[1-3] Default=YES MaxTime=INFINITE State=UP
EOF
  # gres/gpu needs device files that stat as character devices; they live in the scratch
  # directory (never /dev) and go with it.
  mkdir -p "$SCRATCH/dev" "$SCRATCH/ctld"
  : >"$SCRATCH/gres.conf"
  minor=0
  for node in $NODES; do
    mkdir -p "$SCRATCH/spool/$node"
    for gpu in 0 1; do
      mknod -m 600 "$SCRATCH/dev/$node-nvidia$gpu" c 195 "$minor" || skip "cannot mknod a fake GPU device file"
      minor=$((minor + 1))
    done
    echo "NodeName=$node Name=gpu Type=h100 File=$SCRATCH/dev/$node-nvidia[0-1]" >>"$SCRATCH/gres.conf"
    # Two simulated H100s per node; explicit UUIDs, because derived ones are the same on every
    # node (docs/sim-config.md) and a slice's GPU must name one node's GPU.
    n=${node#node}
    cat >"$SCRATCH/$node-gpus.json" <<EOF
{"devices": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-5e000000-0000-4000-8000-00000000${n}000"},
             {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-5e000000-0000-4000-8000-00000000${n}001"}]}
EOF
  done
  echo "NodeName=node[1-3] Name=shard Count=8" >>"$SCRATCH/gres.conf"
  echo "required $PLUGIN agent=$SCRATCH/agents/%n.sock timeout_ms=1000 ${PLUGIN_EXTRA:-}" >"$SCRATCH/plugstack.conf"
}

start_munged() {
  mkdir -p -m 755 "$SCRATCH/munge"
  mungekey --create --keyfile="$SCRATCH/munge/munge.key" >"$LOGS/mungekey.out" 2>&1 || fail "mungekey failed"
  munged --foreground --socket="$SCRATCH/munge/munge.sock" --key-file="$SCRATCH/munge/munge.key" \
    --log-file="$LOGS/munged.log" --pid-file="$SCRATCH/munge/munged.pid" --seed-file="$SCRATCH/munge/munged.seed" \
    >"$LOGS/munged.out" 2>&1 &
  MUNGED_PID=$!
  wait_for 50 "munged's socket" test -S "$SCRATCH/munge/munge.sock"
}

# start_agent NODE: the node's fgpu agent on its own simulated GPUs (segment per node).
start_agent() {
  : >"$LOGS/agent-$1.out"
  "$FGPU" sim run --segment "/fgpu-slurm-$1-$$" --config "$SCRATCH/$1-gpus.json" -- \
    "$FGPU" agent --state "$SCRATCH/state-$1" --socket "$SCRATCH/agents/$1.sock" \
    >>"$LOGS/agent-$1.out" 2>>"$LOGS/agent-$1.err" &
  eval "AGENT_PID_$1=\$!"
}

wait_for_agent() {
  wait_for 200 "the agent of $1" grep -q serving "$LOGS/agent-$1.out"
}

# Workloads run with the interposer preloaded, into Slurm's own programs too (a batch script's
# shell). A ThreadSanitizer build of it crashes any program it is preloaded into.
require_preloadable_interposer() {
  if readelf -d "$HOOK" 2>/dev/null | grep -q 'libtsan' && ! LD_PRELOAD="$HOOK" /bin/true 2>/dev/null; then
    skip "this build's interposer is a ThreadSanitizer build, which crashes the programs it is preloaded into"
  fi
}

# start_cluster [no_workloads]: the cluster of the file's header; `no_workloads` for cases whose
# jobs never get a slice (they run in every preset).
start_cluster() {
  [ "${1:-}" = no_workloads ] || require_preloadable_interposer
  cluster_started=$(now_ms)
  write_configs
  start_munged
  for node in $NODES; do start_agent "$node"; done
  slurmctld -D -f "$SLURM_CONF" >"$LOGS/slurmctld.out" 2>&1 &
  CTLD_PID=$!
  for node in $NODES; do
    slurmd -D -N "$node" -f "$SLURM_CONF" >"$LOGS/slurmd-$node.out" 2>&1 &
    SLURMD_PIDS="$SLURMD_PIDS $!"
  done
  for node in $NODES; do wait_for_agent "$node"; done
  wait_for 200 "three idle nodes" all_nodes_idle
  echo "cluster up in $(( $(now_ms) - cluster_started )) ms"
}

# --- helpers ------------------------------------------------------------------------------------

now_ms() {
  date +%s%3N
}

# wait_for TENTHS WHAT CMD...: runs CMD every 0.1 s until it succeeds; fails after TENTHS tries.
wait_for() {
  tries=$1 what=$2
  shift 2
  i=0
  until "$@" >/dev/null 2>&1; do
    i=$((i + 1))
    [ "$i" -lt "$tries" ] || fail "waited $((tries / 10)) s for $what"
    sleep 0.1
  done
}

all_nodes_idle() {
  [ "$(sinfo -h -N -o '%N %T' | sort -u | tr '\n' ' ')" = "node1 idle node2 idle node3 idle " ]
}

# Idle again within 5 s (a step that just ended may still be completing); never drained.
expect_nodes_healthy() {
  i=0
  until all_nodes_idle; do
    i=$((i + 1))
    [ "$i" -lt 50 ] || fail "a node is not idle: $(sinfo -h -N -o '%N %T %E')"
    sleep 0.1
  done
}

# agent NODE METHOD PATH: the node agent's answer (JSON) on stdout.
agent() {
  if command -v curl >/dev/null 2>&1; then
    curl -sS --max-time 5 --unix-socket "$SCRATCH/agents/$1.sock" -X "$2" "http://agent$3"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c '
import http.client, socket, sys
class UnixConnection(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(sys.argv[1])
connection = UnixConnection("agent")
connection.request(sys.argv[2], sys.argv[3])
sys.stdout.write(connection.getresponse().read().decode())' "$SCRATCH/agents/$1.sock" "$2" "$3"
  else
    skip "neither curl nor python3 to call the agent's API with"
  fi
}

slice_count() {
  agent "$1" GET /v1/slices | grep -o '"id":"[^"]*"' | wc -l
}

has_slices() {
  [ "$(slice_count "$1")" -eq "$2" ]
}

has_slice_for_job() {
  agent "$1" GET /v1/slices | grep -q "\"job\":\"$2\""
}

# run_client NAME CMD...: CMD's stdout and stderr in $SCRATCH/out/NAME.{out,err}, status in $STATUS.
run_client() {
  name=$1
  shift
  STATUS=0
  "$@" >"$SCRATCH/out/$name.out" 2>"$SCRATCH/out/$name.err" || STATUS=$?
  OUT=$(cat "$SCRATCH/out/$name.out")
  ERR=$(cat "$SCRATCH/out/$name.err")
}

# start_client NAME CMD...: the same in the background; its PID is in $CLIENT_PID.
start_client() {
  name=$1
  shift
  "$@" >"$SCRATCH/out/$name.out" 2>"$SCRATCH/out/$name.err" &
  CLIENT_PID=$!
  CLIENT_PIDS="$CLIENT_PIDS $CLIENT_PID"
}

# finish_client PID NAME: waits for it; its status in $STATUS, output in $OUT and $ERR.
finish_client() {
  STATUS=0
  wait "$1" || STATUS=$?
  OUT=$(cat "$SCRATCH/out/$2.out")
  ERR=$(cat "$SCRATCH/out/$2.err")
}

expect_nonzero() {
  [ "$STATUS" -ne 0 ] || fail "expected a failure, got exit status 0
stdout: $OUT
stderr: $ERR"
}

# expect_refused TEXT: the step failed in task init with TEXT, and the node stayed healthy.
expect_refused() {
  expect_nonzero
  expect_err_contains "$1"
  expect_err_contains "task_init() failed"
  expect_nodes_healthy
}

job_id_of() {
  sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$SCRATCH/out/$1.out"
}

job_finished() {
  [ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ]
}

# wait_for_job ID: until the job has left the queue (polled: sbatch -W backs off for seconds);
# its final state, as "COMPLETED 0:0", in $JOB_END.
wait_for_job() {
  wait_for 600 "job $1 to finish" job_finished "$1"
  JOB_END=$(scontrol show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\) .*/\1/p;s/.* ExitCode=\([0-9:]*\).*/\1/p' | tr '\n' ' ')
}

# --- the cases ----------------------------------------------------------------------------------

# Two srun jobs with --gpu-memory=30GiB share one simulated H100 (80 GB): both run at once,
# each capped at 30 GiB (the interposer's view), and each slice carries its job, user, account.
case_two_jobs_share_a_gpu() {
  start_cluster
  for job in a b; do
    start_client "share-$job" srun -w node1 -A physics --gres=shard:2 --gpu-memory=30GiB \
      "$PROBE" alloc --bytes 20GiB --hold-ms 4000
    eval "PID_$job=\$CLIENT_PID"
  done
  wait_for 200 "two slices on node1's agent" has_slices node1 2
  slices=$(agent node1 GET /v1/slices)
  for field in '"user":"root"' '"account":"physics"' '"tenant":"physics"'; do
    [ "$(printf '%s' "$slices" | grep -o "$field" | wc -l)" -eq 2 ] || fail "both slices should have $field: $slices"
  done
  [ "$(printf '%s' "$slices" | grep -o '"job":"[0-9]*\.0"' | sort -u | wc -l)" -eq 2 ] ||
    fail "two slices of two different jobs' step 0 expected: $slices"
  [ "$(printf '%s' "$slices" | grep -o '"gpu":"GPU-[^"]*"' | sort -u | wc -l)" -eq 1 ] ||
    fail "both slices should be on one GPU: $slices"
  for job in a b; do
    eval "finish_client \"\$PID_$job\" share-$job"
    expect_status 0
    expect_out_contains '"result":"CUDA_SUCCESS"'
    expect_out_contains "\"total\":$((30 * GIB))"  # the slice's cap is the device the job sees
  done
  wait_for 50 "the slices to be released" has_slices node1 0
  # Chargeback by Slurm account: each slice was billed when it was released.
  report=$("$FGPU" report --agent "$SCRATCH/agents/node1.sock" --since all --by account --format csv) ||
    fail "fgpu report --by account failed"
  # At least one record per slice: the agent's first accounting pass, 250 ms after it starts, may
  # close a record of a slice made that early too.
  printf '%s\n' "$report" | grep -q '^physics,[0-9.]*,[0-9.]*,[0-9.]*,[2-9][0-9]*$' ||
    fail "fgpu report --by account should bill both jobs' records to physics: $report"
  echo "PASS: two 30 GiB jobs ran at once on one simulated H100, each seeing a 30 GiB GPU, billed to physics"
}

# A job of an unprivileged user: the plugin asks for the slice with the user's privileges (the
# agent's socket is open to everyone, the agent learns the uid from the kernel), and the user's
# workload can use and is held to the slice the root agent made.
case_job_of_another_user() {
  id nobody >/dev/null 2>&1 || skip "no user 'nobody' to run a job as"
  command -v runuser >/dev/null 2>&1 || skip "runuser (util-linux) is not installed"
  start_cluster
  # The simulated GPU's shared memory is private to the agent's user (root); a real GPU is not.
  chmod 666 "/dev/shm/fgpu-slurm-node1-$$" || fail "no simulated GPU segment for node1"
  start_client user runuser -u nobody -- srun -w node1 -A physics --gres=shard:1 --gpu-memory=2GiB \
    "$PROBE" alloc --bytes 1GiB --hold-ms 2000
  wait_for 200 "the job's slice" has_slices node1 1
  slice=$(agent node1 GET /v1/slices)
  case "$slice" in *'"user":"nobody"'*'"account":"physics"'* | *'"account":"physics"'*'"user":"nobody"'*) ;;
    *) fail "the slice should name user nobody and account physics: $slice" ;; esac
  case "$slice" in *"\"owner_uid\":$(id -u nobody)"*) ;; *) fail "the slice should be owned by nobody: $slice" ;; esac
  finish_client "$CLIENT_PID" user
  expect_status 0
  expect_out_contains "\"total\":$((2 * GIB))"
  expect_nodes_healthy
  run_client over runuser -u nobody -- srun -w node1 --gres=shard:1 --gpu-memory=2GiB "$PROBE" alloc --bytes 3GiB
  expect_status 1
  expect_out_contains '"result":"CUDA_ERROR_OUT_OF_MEMORY"'
  wait_for 50 "the slices to be released" has_slices node1 0
  echo "PASS: nobody's jobs got and were held to their slices"
}

# A job's fgpu-probe allocating past its cap gets CUDA_ERROR_OUT_OF_MEMORY; within it, succeeds.
case_allocation_past_cap_is_oom() {
  start_cluster
  run_client over srun -w node2 --gres=shard:1 --gpu-memory=2GiB "$PROBE" alloc --bytes 3GiB
  expect_status 1
  expect_out_contains '"result":"CUDA_ERROR_OUT_OF_MEMORY"'
  run_client within srun -w node2 --gres=shard:1 --gpu-memory=2GiB "$PROBE" alloc --bytes 1GiB
  expect_status 0
  expect_out_contains '"result":"CUDA_SUCCESS"'
  expect_nodes_healthy
  echo "PASS: 3 GiB in a 2 GiB slice is out of memory, 1 GiB is not"
}

# Asking for more than a GPU has, for several GPUs, or for none: refused in task init with a
# clear message, and the node stays healthy (not drained) and runs the next job.
case_too_big_is_refused() {
  start_cluster
  run_client big srun -w node3 --gres=shard:1 --gpu-memory=100GiB true
  expect_refused "fgpu: step "
  expect_err_contains ".0 was refused a slice of 100 GiB on GPU 0 by the node's fgpu agent: "
  run_client two srun -w node3 --gres=gpu:2 --gpu-memory=1GiB true
  expect_refused "this step has 2 GPUs (SLURM_STEP_GPUS=0,1) but an fgpu slice is on one GPU"
  run_client none srun -w node3 --gpu-memory=1GiB true
  expect_refused "this step has no GPU from Slurm: add --gres=shard:N"
  run_client after srun -w node3 --gres=shard:1 --gpu-memory=1GiB "$PROBE" alloc --bytes 512MiB
  expect_status 0
  has_slices node3 0 || fail "a refused step left a slice: $(agent node3 GET /v1/slices)"
  echo "PASS: refusals are clear and node3 stays idle and usable"
}

# A batch job and the steps its script starts are all capped, by one slice: the batch step's, which
# its steps on the same node share (one cap for the job there).
case_batch_job_and_steps_are_capped() {
  start_cluster
  cat >"$SCRATCH/job.sh" <<EOF
#!/bin/sh
echo "batch: \$SLURM_JOB_ID"
"$PROBE" alloc --bytes 1GiB; echo "batch-within=\$?"
"$PROBE" alloc --bytes 3GiB; echo "batch-over=\$?"
srun "$PROBE" alloc --bytes 1GiB; echo "step-within=\$?"
srun "$PROBE" alloc --bytes 3GiB; echo "step-over=\$?"
# One cap for the job on this node: the batch script holds 1 GiB, so a step's 1 GiB is over.
"$PROBE" alloc --bytes 1GiB --hold-ms 30000 >"$SCRATCH/out/holder.out" &
while ! grep -q '"alloc"' "$SCRATCH/out/holder.out"; do sleep 0.1; done
srun "$PROBE" alloc --bytes 1GiB; echo "step-shared=\$?"
kill \$! 2>/dev/null; wait
EOF
  run_client batch sbatch -w node2 --gres=shard:2 --gpu-memory=2GiB -o "$SCRATCH/out/batch-job.out" "$SCRATCH/job.sh"
  expect_status 0
  wait_for_job "$(job_id_of batch)"
  [ "$JOB_END" = "COMPLETED 0:0 " ] || fail "the batch job ended $JOB_END: $(cat "$SCRATCH/out/batch-job.out")"
  OUT=$(cat "$SCRATCH/out/batch-job.out")
  for line in batch-within=0 batch-over=1 step-within=0 step-over=1 step-shared=1; do expect_out_contains "$line"; done
  [ "$(printf '%s\n' "$OUT" | grep -c "\"total\":$((2 * GIB))")" -ge 2 ] ||
    fail "the batch step and its steps should each see a 2 GiB GPU: $OUT"
  [ "$(printf '%s\n' "$OUT" | grep -c '"result":"CUDA_ERROR_OUT_OF_MEMORY"')" -eq 3 ] ||
    fail "3 GiB, and 1 GiB beside the batch script's 1 GiB, should be out of memory: $OUT"
  grep -q "fgpu: step [0-9]*\.batch: slice " "$LOGS/slurmd-node2.log" || fail "no slice for the batch step in slurmd's log"
  for step in 0 1 2; do
    grep -q "fgpu: step [0-9]*\.$step: shares slice .* with its job's batch step" "$LOGS/slurmd-node2.log" ||
      fail "step $step did not share the batch step's slice: $(grep 'fgpu:' "$LOGS/slurmd-node2.log")"
  done
  wait_for 50 "the slices to be released" has_slices node2 0
  echo "PASS: the batch step and its steps were capped at 2 GiB, together"
}

# scancel: the job's slice is released (by the plugin at step exit).
case_cancelled_job_releases_its_slice() {
  start_cluster
  run_client submit sbatch -w node2 --gres=shard:1 --gpu-memory=1GiB -o "$SCRATCH/out/cancel-job.out" \
    --wrap "exec $PROBE alloc --bytes 512MiB --hold-ms 60000"
  expect_status 0
  job=$(job_id_of submit)
  wait_for 200 "the batch step's slice" has_slice_for_job node2 "$job.batch"
  wait_for 100 "the workload to allocate" grep -q '"alloc"' "$SCRATCH/out/cancel-job.out"
  cancelled=$(now_ms)
  scancel "$job" || fail "scancel $job failed"
  wait_for 150 "the cancelled job's slice to be released" has_slices node2 0
  echo "slice released $(( $(now_ms) - cancelled )) ms after scancel"
  expect_nodes_healthy
  echo "PASS: scancel released the slice"
}

# No agent on the node: the step fails at once with a clear message; jobs without fgpu options
# still run there and the node stays healthy.
case_missing_agent() {
  start_cluster no_workloads
  stop_pid "$AGENT_PID_node3"
  AGENT_PID_node3=""
  started=$(now_ms)
  run_client noagent srun -w node3 --gres=shard:1 --gpu-memory=1GiB true
  took=$(( $(now_ms) - started ))
  expect_refused "the node's fgpu agent at $SCRATCH/agents/node3.sock did not answer (cannot connect"
  expect_err_contains "is \`fgpu agent\` running on this node?"
  [ "$took" -lt 5000 ] || fail "refusing took $took ms"
  run_client plain srun -w node3 true  # a job without GPUs (a shard alone would be refused: no slice)
  expect_status 0
  echo "PASS: refused in $took ms without an agent; node3 stays usable"
}

# A stopped agent (SIGSTOP: its socket still accepts) must not hang slurmstepd: the call times out
# (timeout_ms=1000 in plugstack.conf) and the step is refused.
case_stopped_agent() {
  start_cluster
  kill -STOP "$AGENT_PID_node3"
  started=$(now_ms)
  run_client stopped timeout 30 srun -w node3 --gres=shard:1 --gpu-memory=1GiB true
  took=$(( $(now_ms) - started ))
  kill -CONT "$AGENT_PID_node3"
  expect_refused "did not answer (no response from unix:$SCRATCH/agents/node3.sock in time)"
  [ "$took" -lt 6000 ] || fail "refusing took $took ms with timeout_ms=1000"
  # The agent reads the request once it runs again; the slice it then makes has no live creator
  # and is released by its reaper.
  wait_for 100 "no slice left on node3" has_slices node3 0
  run_client after srun -w node3 --gres=shard:1 --gpu-memory=1GiB true
  expect_status 0
  echo "PASS: a stopped agent cost the step $took ms, then the node worked again"
}

# The agent dies while a job runs: the job finishes normally (the slice's limits are files the
# interposer already holds), the release at step end is only logged, the node stays healthy, and
# the restarted agent releases the orphaned slice itself.
case_agent_dies_mid_job() {
  start_cluster
  start_client dies srun -w node2 --gres=shard:1 --gpu-memory=1GiB "$PROBE" alloc --bytes 256MiB --hold-ms 3000
  job_pid=$CLIENT_PID
  wait_for 200 "the job's slice" has_slices node2 1
  wait_for 100 "the workload to allocate" grep -q '"alloc"' "$SCRATCH/out/dies.out"
  kill -9 "$AGENT_PID_node2"
  wait "$AGENT_PID_node2" 2>/dev/null
  finish_client "$job_pid" dies
  expect_status 0
  expect_out_contains '"result":"CUDA_SUCCESS"'
  expect_nodes_healthy
  wait_for 50 "the failed release in slurmd's log" grep -q "fgpu: cannot release slice" "$LOGS/slurmd-node2.log"
  start_agent node2
  wait_for_agent node2
  wait_for 100 "the restarted agent to release the orphaned slice" has_slices node2 0
  run_client after srun -w node2 --gres=shard:1 --gpu-memory=1GiB true
  expect_status 0
  echo "PASS: the job outlived its agent; the restarted agent released the slice"
}

# Malformed options are refused by srun/sbatch/salloc themselves, before any job exists.
case_malformed_options() {
  start_cluster no_workloads
  for bad in "--gpu-memory=lots" "--gpu-memory=0" "--gpu-compute=0" "--gpu-compute=101" "--gpu-tier=gold"; do
    run_client bad timeout 20 srun "$bad" true
    expect_nonzero
    expect_err_contains "fgpu: ${bad%%=*}='${bad#*=}': expected"
  done
  run_client lonely timeout 20 srun --gres=shard:1 --gpu-compute=50 true
  expect_nonzero
  expect_err_contains "fgpu: --gpu-compute needs --gpu-memory"
  run_client sbatch timeout 20 sbatch --gpu-memory=12XB --wrap true
  expect_nonzero
  expect_err_contains "fgpu: --gpu-memory='12XB': expected"
  run_client salloc timeout 20 salloc --gpu-tier=fast true
  expect_nonzero
  expect_err_contains "fgpu: --gpu-tier='fast': expected batch, standard or latency"
  [ -z "$(squeue -h -o %i)" ] || fail "a malformed option made a job: $(squeue)"
  run_client plain srun -N3 true
  expect_status 0
  echo "PASS: malformed options refused before submission"
}

# A step with shards and no --gpu-memory would share the GPU unenforced: refused by default.
case_shards_without_a_slice_are_refused() {
  start_cluster no_workloads
  run_client shards srun -w node1 --gres=shard:1 "$PROBE" info
  expect_status 1
  expect_err_contains "shard(s) of a GPU but asks no slice"
  expect_nodes_healthy
  echo "PASS: a step with a shard and no slice was refused"
}

# shards=SIZE in plugstack.conf: such a step gets a slice of SIZE per shard.
case_shards_get_the_default_slice() {
  PLUGIN_EXTRA="shards=4GiB" start_cluster
  run_client shards srun -w node1 --gres=shard:2 "$PROBE" info
  expect_status 0
  expect_out_contains "\"total\":$((8 * GIB))"
  wait_for 50 "the slice to be released" has_slices node1 0
  echo "PASS: two shards, no --gpu-memory: an 8 GiB slice"
}

# The batch step's marker is the job's environment, which its user writes: naming another job's
# slice in it gets the step a slice of its own, never that one.
case_marker_of_another_jobs_slice() {
  start_cluster
  command -v curl >/dev/null 2>&1 || skip "curl is not installed (scripts/bootstrap installs it)"
  victim=$(curl -sS --max-time 5 --unix-socket "$SCRATCH/agents/node1.sock" -H 'Content-Type: application/json' \
    --data '{"memory":"30GiB","gpu":"0","job":"999.0","user":"root","account":"other"}' http://agent/v1/slices)
  victim_id=$(printf '%s' "$victim" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
  [ -n "$victim_id" ] || fail "no victim slice: $victim"
  printf '#!/bin/sh\nFGPU_SLURM_JOB_SLICE="$SLURM_JOB_ID@node1@%s" srun "%s" info\n' "$victim_id" "$PROBE" >"$SCRATCH/job.sh"
  run_client batch sbatch -w node1 --gres=shard:1 --gpu-memory=1GiB -o "$SCRATCH/out/marker-job.out" "$SCRATCH/job.sh"
  expect_status 0
  wait_for_job "$(job_id_of batch)"
  OUT=$(cat "$SCRATCH/out/marker-job.out")
  expect_out_contains "\"total\":$((1 * GIB))"
  grep -q "is not a slice of job" "$LOGS/slurmd-node1.log" ||
    fail "the refused marker is not logged: $(grep 'fgpu:' "$LOGS/slurmd-node1.log")"
  echo "PASS: a marker naming another job's slice got the step its own slice"
}

run_case "$@"
