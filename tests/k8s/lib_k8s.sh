# Helpers of the Kubernetes end-to-end tests (POSIX sh; sourced after tests/e2e/lib.sh): a test
# API server over TLS with a test CA, the node agent on a simulated GPU, the plugins, and the
# test kubelet. Everything in $SCRATCH; every process stopped at exit.
: "${K8S_DIR:=$(cd "$(dirname "$0")" && pwd)}"
: "${FGPU_K8S_REFERENCE:?run this through ctest (FGPU_K8S_REFERENCE is not set)}"
KUBELET="$FGPU_BIN_DIR/fgpu-test-kubelet"
# A sanitizer build's interposer is preloaded into uninstrumented programs (as in tests/e2e).
export ASAN_OPTIONS="${ASAN_OPTIONS:-verify_asan_link_order=0:detect_leaks=0}"
KUBE="python3 $K8S_DIR/kube.py"
SEGMENT=/fgpu-k8s-e2e-$$
AGENT_SOCKET=$SCRATCH/agent/agent.sock
PIDS=""

stop_all() {
  for pid in $PIDS; do kill -9 "$pid" 2>/dev/null; done
  for pid in $PIDS; do wait "$pid" 2>/dev/null; done
  "$FGPU" sim reset --segment "$SEGMENT" >/dev/null 2>&1
  rm -rf "$SCRATCH"
}
trap stop_all EXIT

require_k8s() {
  require_probe_and_driver
  [ -x "$KUBELET" ] || skip "fgpu-test-kubelet is not built"
  [ -d "$FGPU_K8S_REFERENCE" ] || skip "no Kubernetes schemas at $FGPU_K8S_REFERENCE"
  [ -f "$FGPU_BIN_DIR/../lib/fgpu/libfgpu.so" ] || skip "the interposer is not built"
  command -v openssl >/dev/null || skip "openssl is not installed"
  "$FGPU" k8s --help >/dev/null 2>&1 || skip "this fgpu has no k8s command"
}

wait_for() {  # wait_for TENTHS WHAT COMMAND...: polls COMMAND every 0.1 s
  tries=$1 what=$2
  shift 2
  for _ in $(seq "$tries"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "timed out waiting for $what"
}

# A CA and a server certificate for 127.0.0.1, a token, the API server, and its kubeconfig.
start_apiserver() {
  mkdir -p "$SCRATCH/pki"
  (cd "$SCRATCH/pki" &&
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=test-ca &&
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1 &&
    printf 'subjectAltName=IP:127.0.0.1\n' >ext &&
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 1 \
      -extfile ext) >"$SCRATCH/pki/log" 2>&1 || fail "openssl: $(cat "$SCRATCH/pki/log")"
  echo "e2e-token-$$" >"$SCRATCH/pki/token"
  python3 "$K8S_DIR/apiserver/fake_apiserver.py" --cert "$SCRATCH/pki/server.crt" --key "$SCRATCH/pki/server.key" \
    --token-file "$SCRATCH/pki/token" --reference "$FGPU_K8S_REFERENCE" \
    >"$SCRATCH/apiserver.out" 2>"$SCRATCH/apiserver.err" &
  PIDS="$PIDS $!"
  wait_for 100 "the API server" grep -q control_port "$SCRATCH/apiserver.out"
  API_PORT=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["port"])' "$SCRATCH/apiserver.out")
  CONTROL_PORT=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["control_port"])' "$SCRATCH/apiserver.out")
  export KUBE_SERVER="https://127.0.0.1:$API_PORT" KUBE_CA="$SCRATCH/pki/ca.crt" KUBE_TOKEN
  KUBE_TOKEN=$(cat "$SCRATCH/pki/token")
  cat >"$SCRATCH/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $KUBE_SERVER
    certificate-authority: $KUBE_CA
users:
- name: plugin
  user:
    token: $KUBE_TOKEN
contexts:
- name: test
  context:
    cluster: test
    user: plugin
current-context: test
KUBECONFIG
}

control() {  # control METHOD PATH [JSON]
  python3 - "$CONTROL_PORT" "$@" <<'PY'
import json, sys, urllib.request
port, method, path = sys.argv[1:4]
data = sys.argv[4].encode() if len(sys.argv) > 4 else None
req = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), method=method, data=data)
req.add_header("Content-Type", "application/json")
print(urllib.request.urlopen(req, timeout=10).read().decode())
PY
}

# The agent on $GPUS (default 1) simulated H100s of $GPU_MEMORY (default 40GiB), under `fgpu sim run`;
# with $AGENT_CONFIG, its configuration file (MIG changes let through as root's would be).
start_agent() {
  [ -f "$SCRATCH/gpu.json" ] || python3 -c '
import json, sys
gpu = {"name": "NVIDIA H100 80GB HBM3", "memory": sys.argv[2]}
print(json.dumps({"devices": [gpu] * int(sys.argv[1])}))' "${GPUS:-1}" "${GPU_MEMORY:-40GiB}" >"$SCRATCH/gpu.json"
  FGPU_SIM_MIG_PRIVILEGED=1 FGPU_COMPUTE_DIR=$SCRATCH/boards "$FGPU" sim run --config "$SCRATCH/gpu.json" --segment "$SEGMENT" -- \
    "$FGPU" agent --state "$SCRATCH/agent" ${AGENT_CONFIG:+--config "$AGENT_CONFIG"} >"$SCRATCH/agent.out" 2>>"$SCRATCH/agent.err" &
  AGENT_PID=$!
  PIDS="$PIDS $AGENT_PID"
  wait_for 100 "the agent" curl -sf --unix-socket "$AGENT_SOCKET" http://agent/v1/health
}

agent_get() { curl -sf --unix-socket "$AGENT_SOCKET" "http://agent$1"; }
agent_slices() { agent_get /v1/slices | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
GPU_UUID() { agent_get /v1/gpus | python3 -c 'import json,sys; print(json.load(sys.stdin)[int(sys.argv[1])]["uuid"])' "${1:-0}"; }
device_of() { echo "gpu-$(echo "$1" | sed 's/^GPU-//' | tr 'A-Z' 'a-z')"; }

start_dra_plugin() {
  mkdir -p "$SCRATCH/kubelet/plugins_registry" "$SCRATCH/kubelet/plugins" "$SCRATCH/cdi"
  "$FGPU" k8s dra-plugin --node-name node-a --agent "unix:$AGENT_SOCKET" --kubeconfig "$SCRATCH/kubeconfig" \
    --plugin-dir "$SCRATCH/kubelet/plugins/gpu.fgpu.io" --registry-dir "$SCRATCH/kubelet/plugins_registry" \
    --cdi-dir "$SCRATCH/cdi" --metrics 127.0.0.1:0 --node-config "$SCRATCH/no-node.conf" \
    >>"$SCRATCH/plugin.out" 2>>"$SCRATCH/plugin.err" &
  PLUGIN_PID=$!
  PIDS="$PIDS $PLUGIN_PID"
  wait_for 100 "the plugin's socket" test -S "$SCRATCH/kubelet/plugins/gpu.fgpu.io/dra.sock"
  DRA_SOCKET=$SCRATCH/kubelet/plugins/gpu.fgpu.io/dra.sock
}

register_plugin() {
  "$KUBELET" register --registry "$SCRATCH/kubelet/plugins_registry" --name gpu.fgpu.io >"$SCRATCH/register.json" ||
    fail "registration: $(cat "$SCRATCH/register.json") $(cat "$SCRATCH/plugin.err")"
}

# The DeviceClass, and a claim for MEMORY and COMPUTE allocated on DEVICE as the scheduler would
# (status.allocation with consumedCapacity, reserved for a pod of the claim's name).
create_device_class() {
  echo '{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"gpu.fgpu.io"},
        "spec":{"selectors":[{"cel":{"expression":"device.driver == \"gpu.fgpu.io\""}}]}}' |
    $KUBE create /apis/resource.k8s.io/v1/deviceclasses >/dev/null || fail "DeviceClass refused"
}

# create_claim NAME MEMORY COMPUTE DEVICE [DRIVER]: the claim's uid in $CLAIM_UID
create_claim() {
  name=$1 memory=$2 compute=$3 device=$4 driver=${5:-gpu.fgpu.io}
  cat >"$SCRATCH/claim-$name.json" <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"$name","namespace":"team-a"},
 "spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.fgpu.io",
   "capacity":{"requests":{"memory":"$memory","compute":"$compute"}}}}]}}}
JSON
  $KUBE create /apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims "$SCRATCH/claim-$name.json" \
    >"$SCRATCH/created-$name.json" || fail "claim $name refused: $(cat "$SCRATCH/created-$name.json")"
  CLAIM_UID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["uid"])' "$SCRATCH/created-$name.json")
  python3 - "$SCRATCH/created-$name.json" "$memory" "$compute" "$device" "$driver" >"$SCRATCH/allocated-$name.json" <<'PY'
import json, sys
claim, memory, compute, device, driver = json.load(open(sys.argv[1])), *sys.argv[2:6]
claim["status"] = {"allocation": {"devices": {"results": [{
    "request": "gpu", "driver": driver, "pool": "node-a", "device": device, "shareID": "s1",
    "consumedCapacity": {"memory": memory, "compute": compute}}]}},
  "reservedFor": [{"resource": "pods", "name": claim["metadata"]["name"] + "-pod", "uid": "pod-" + claim["metadata"]["uid"]}]}
print(json.dumps(claim))
PY
  $KUBE put "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/$name/status" "$SCRATCH/allocated-$name.json" \
    >"$SCRATCH/status-$name.json" || fail "claim $name's allocation refused: $(cat "$SCRATCH/status-$name.json")"
}

# prepare NAME UID [API]: the test kubelet's answer in $OUT, its status in $STATUS
prepare() {
  STATUS=0
  OUT=$("$KUBELET" prepare --endpoint "$DRA_SOCKET" --api "${3:-v1}" --claim "team-a/$1/$2") || STATUS=$?
}
unprepare() {
  STATUS=0
  OUT=$("$KUBELET" unprepare --endpoint "$DRA_SOCKET" --api "${3:-v1}" --claim "team-a/$1/$2") || STATUS=$?
}
claim_error() { echo "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["claims"][sys.argv[1]]["error"])' "$1"; }
cdi_id() { echo "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["claims"][sys.argv[1]]["devices"][0]["cdi_device_ids"][0])' "$1"; }

# in_claim UID ARGS...: runs ARGS with exactly the environment the claim's CDI spec gives a
# container (nothing of this shell's), stdout in $OUT, status in $STATUS.
in_claim() {
  uid=$1
  shift
  STATUS=0
  ERR=""
  OUT=$(python3 - "$SCRATCH/cdi/gpu.fgpu.io-$uid.json" "$@" <<'PY'
import json, os, sys
spec = json.load(open(sys.argv[1]))
env = {"PATH": "/usr/bin:/bin"}
env.update({k: v for k, v in os.environ.items() if k in ("ASAN_OPTIONS", "UBSAN_OPTIONS")})  # a sanitizer build's
for entry in spec["devices"][0]["containerEdits"]["env"]:
    name, _, value = entry.partition("=")
    env[name] = value
os.execve(sys.argv[2], sys.argv[2:], env)
PY
) || STATUS=$?
}

# The device plugin beside the test kubelet's device-plugin side (its state file in $DP_STATE).
start_device_plugin_kubelet() {
  mkdir -p "$SCRATCH/device-plugins"
  DP_STATE=$SCRATCH/device-plugins/kubelet-state.json
  "$KUBELET" device-plugin-kubelet --dir "$SCRATCH/device-plugins" --state "$DP_STATE" \
    >"$SCRATCH/dp-kubelet.out" 2>"$SCRATCH/dp-kubelet.err" &
  DP_KUBELET_PID=$!
  PIDS="$PIDS $DP_KUBELET_PID"
  wait_for 100 "the test kubelet's kubelet.sock" test -S "$SCRATCH/device-plugins/kubelet.sock"
}

start_device_plugin() {
  "$FGPU" k8s device-plugin --agent "unix:$AGENT_SOCKET" --plugin-dir "$SCRATCH/device-plugins" \
    --node-config "$SCRATCH/no-node.conf" --metrics 127.0.0.1:0 ${DP_FLAGS:-} >>"$SCRATCH/dp.out" 2>>"$SCRATCH/dp.err" &
  DP_PID=$!
  PIDS="$PIDS $DP_PID"
}

dp_state() {  # dp_state EXPR: a Python expression over `s` (the test kubelet's state), as JSON
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(json.dumps(eval(sys.argv[2])))' "$DP_STATE" "$1"
}

# in_env FILE ARGS...: runs ARGS with exactly the environment of an Allocate answer (JSON "envs").
in_env() {
  file=$1
  shift
  STATUS=0
  ERR=""
  OUT=$(python3 - "$file" "$@" <<'PY'
import json, os, sys
env = {"PATH": "/usr/bin:/bin"}
env.update({k: v for k, v in os.environ.items() if k in ("ASAN_OPTIONS", "UBSAN_OPTIONS")})  # a sanitizer build's
env.update(json.load(open(sys.argv[1]))["envs"])
os.execve(sys.argv[2], sys.argv[2:], env)
PY
) || STATUS=$?
}
