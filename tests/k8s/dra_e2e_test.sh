# The DRA kubelet plugin end to end on the simulated GPU: the node agent, `fgpu k8s dra-plugin`,
# the test kubelet (tests/k8s/kubelet) and the test API server that validates every object
# against Kubernetes' OpenAPI schemas (tests/k8s/apiserver). The test plays the scheduler: it
# writes each claim's allocation (with consumedCapacity) as kube-scheduler would.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib_k8s.sh"
GIB=1073741824

start_node() {
  require_k8s
  start_apiserver
  start_agent
  create_device_class
  start_dra_plugin
  register_plugin
  GPU=$(GPU_UUID 0)
  DEVICE=$(device_of "$GPU")
}

slice_published() {
  $KUBE field /apis/resource.k8s.io/v1/resourceslices/node-a-gpu.fgpu.io "$1" | grep -qx "$2"
}

# The node's ResourceSlice passes the strict API server, has the GPU with consumable capacity,
# and is republished with the next generation within 1 s of the agent's view changing.
case_publishes_the_gpus() {
  start_node
  wait_for 50 "the ResourceSlice" slice_published 'o["spec"]["pool"]["generation"]' 1
  device='o["spec"]["devices"][0]'
  slice_published "$device[\"name\"]" "\"$DEVICE\"" || fail "no device $DEVICE"
  slice_published "$device[\"allowMultipleAllocations\"]" true || fail "not shared"
  slice_published "$device[\"capacity\"][\"memory\"][\"value\"]" '"40Gi"' || fail "memory capacity"
  slice_published "$device[\"capacity\"][\"compute\"][\"value\"]" '"100"' || fail "compute capacity"
  slice_published "$device[\"attributes\"][\"uuid\"][\"string\"]" "\"$GPU\"" || fail "uuid attribute"
  slice_published "$device[\"attributes\"][\"driverVersion\"][\"version\"]" '"580.0.0-fgpu-sim"' ||
    fail "driver version attribute"
  slice_published "$device[\"attributes\"][\"cudaComputeCapability\"][\"version\"]" '"9.0.0"' ||
    fail "compute capability attribute"
  curl -sf --unix-socket "$AGENT_SOCKET" -X PUT -H 'Content-Type: application/json' -d '{"exclusive": true}' \
    http://agent/v1/gpus/0 >/dev/null || fail "cannot make the GPU exclusive"
  wait_for 10 "the republished ResourceSlice (1 s)" slice_published 'len(o["spec"]["devices"])' 0
  slice_published 'o["spec"]["pool"]["generation"]' 2 || fail "the generation did not advance"
  curl -sf --unix-socket "$AGENT_SOCKET" -X PUT -H 'Content-Type: application/json' -d '{"exclusive": false}' \
    http://agent/v1/gpus/0 >/dev/null
  wait_for 10 "the GPU back in the ResourceSlice" slice_published 'len(o["spec"]["devices"])' 1
  echo "PASS: the GPU published, withdrawn and republished within 1 s, each a new generation"
}

# A claim for 20Gi and 30 % → a slice; a process with the CDI spec's environment sees a 20 GiB
# GPU, allocates within it and gets out-of-memory past it; unprepare releases within 1 s.
case_prepare_runs_a_capped_workload() {
  start_node
  create_claim train 20Gi 30 "$DEVICE"
  prepare train "$CLAIM_UID"
  expect_status 0
  [ "$(claim_error "$CLAIM_UID")" = "" ] || fail "prepare failed: $OUT"
  [ "$(cdi_id "$CLAIM_UID")" = "gpu.fgpu.io/slice=$CLAIM_UID-$DEVICE-s1" ] || fail "unexpected CDI id: $OUT"
  [ "$(agent_slices)" = 1 ] || fail "expected one slice"
  agent_get /v1/slices | grep -q '"claim":"train"' || fail "the slice lacks its claim: $(agent_get /v1/slices)"
  in_claim "$CLAIM_UID" "$PROBE" info
  expect_status 0
  expect_out_contains "\"total\":$((20 * GIB))"
  in_claim "$CLAIM_UID" "$PROBE" alloc --bytes 19GiB
  expect_status 0
  in_claim "$CLAIM_UID" "$PROBE" alloc --bytes 21GiB
  expect_status 1
  expect_out_contains '"result":"CUDA_ERROR_OUT_OF_MEMORY"'
  start=$(date +%s%N)
  unprepare train "$CLAIM_UID"
  expect_status 0
  wait_for 10 "the slice's release (1 s)" sh -c "[ \"\$(curl -sf --unix-socket $AGENT_SOCKET http://agent/v1/slices)\" = '[]' ]"
  echo "released in $((($(date +%s%N) - start) / 1000000)) ms"
  [ ! -e "$SCRATCH/cdi/gpu.fgpu.io-$CLAIM_UID.json" ] || fail "the CDI spec is still there"
  echo "PASS: 20 GiB seen, OOM past it, released on unprepare"
}

# Two claims share the GPU, both run at once; a third that does not fit fails with the reason
# and changes nothing; the v1beta1 service prepares too.
case_two_claims_share_a_gpu() {
  start_node
  create_claim one 20Gi 30 "$DEVICE"
  ONE=$CLAIM_UID
  create_claim two 15Gi 50 "$DEVICE"
  TWO=$CLAIM_UID
  prepare one "$ONE"
  [ "$(claim_error "$ONE")" = "" ] || fail "one: $OUT"
  prepare two "$TWO" v1beta1
  [ "$(claim_error "$TWO")" = "" ] || fail "two: $OUT"
  in_claim "$ONE" "$PROBE" alloc --bytes 10GiB --hold-ms 1500 >/dev/null &
  first=$!
  in_claim "$TWO" "$PROBE" alloc --bytes 10GiB --hold-ms 1500
  expect_status 0
  wait $first || fail "the first claim's workload failed"
  create_claim three 20Gi 10 "$DEVICE"
  THREE=$CLAIM_UID
  prepare three "$THREE"
  expect_status 0
  case "$(claim_error "$THREE")" in *"team-a/three"*"$DEVICE"*) ;; *) fail "no clear error: $OUT" ;; esac
  [ "$(agent_slices)" = 2 ] || fail "the refused claim changed the slices"
  [ ! -e "$SCRATCH/cdi/gpu.fgpu.io-$THREE.json" ] || fail "a CDI spec for a refused claim"
  $KUBE get /api/v1/namespaces/team-a/events >"$SCRATCH/events.json" || fail "cannot list events"
  python3 -c '
import json, sys
events = json.load(open(sys.argv[1]))["items"]
assert any(e["reason"] == "PrepareFailed" and e["type"] == "Warning" and e["involvedObject"]["name"] == "three"
           and e["involvedObject"]["kind"] == "ResourceClaim" for e in events), events' "$SCRATCH/events.json" ||
    fail "no Warning event on the refused claim"
  echo "PASS: two claims share one GPU; the third is refused: $(claim_error "$THREE")"
}

# Malformed claims, an unknown device, another driver's device: an error each, nothing changed.
case_bad_claims_change_nothing() {
  start_node
  create_claim unknown 1Gi 10 gpu-0000
  prepare unknown "$CLAIM_UID"
  case "$(claim_error "$CLAIM_UID")" in *"not a GPU of this node"*) ;; *) fail "unknown device: $OUT" ;; esac
  create_claim other 1Gi 10 "$DEVICE" gpu.nvidia.com
  prepare other "$CLAIM_UID"
  case "$(claim_error "$CLAIM_UID")" in *"no device of driver gpu.fgpu.io"*) ;; *) fail "other driver: $OUT" ;; esac
  echo '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"pending","namespace":"team-a"},"spec":{}}' |
    $KUBE create /apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims >"$SCRATCH/pending.json"
  PENDING=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["uid"])' "$SCRATCH/pending.json")
  prepare pending "$PENDING"
  case "$(claim_error "$PENDING")" in *"not allocated"*) ;; *) fail "unallocated: $OUT" ;; esac
  prepare missing 00000000-0000-0000-0000-000000000000
  case "$(claim_error 00000000-0000-0000-0000-000000000000)" in *"not found"*) ;; *) fail "missing: $OUT" ;; esac
  prepare pending wrong-uid
  case "$(claim_error wrong-uid)" in *"re-created"*) ;; *) fail "wrong uid: $OUT" ;; esac
  [ "$(agent_slices)" = 0 ] || fail "a bad claim made a slice"
  [ -z "$(ls "$SCRATCH/cdi")" ] || fail "a bad claim left a CDI spec: $(ls "$SCRATCH/cdi")"
  echo "PASS: every bad claim refused with its reason, nothing changed"
}

# kill -9 of the plugin, of the agent, a kubelet re-registration during a prepare, a claim deleted
# while the plugin was down: no slice lost, none leaked.
case_restarts_lose_and_leak_nothing() {
  start_node
  create_claim kept 10Gi 20 "$DEVICE"
  KEPT=$CLAIM_UID
  prepare kept "$KEPT"
  [ "$(claim_error "$KEPT")" = "" ] || fail "kept: $OUT"
  SLICE=$(agent_get /v1/slices | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')

  kill -9 "$PLUGIN_PID"
  create_claim gone 5Gi 10 "$DEVICE"
  GONE=$CLAIM_UID
  start_dra_plugin
  register_plugin
  prepare gone "$GONE"
  [ "$(claim_error "$GONE")" = "" ] || fail "gone: $OUT"
  prepare kept "$KEPT"  # the kubelet calls again after a plugin restart: the same slice
  [ "$(agent_get /v1/slices | grep -o "\"id\":\"$SLICE\"" | wc -l)" = 1 ] || fail "the kept slice changed"
  [ "$(agent_slices)" = 2 ] || fail "expected 2 slices, got $(agent_slices)"

  kill -9 "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null
  start_agent
  [ "$(agent_slices)" = 2 ] || fail "the agent's restart lost slices"
  prepare kept "$KEPT"
  [ "$(claim_error "$KEPT")" = "" ] || fail "kept after the agent's restart: $OUT"

  # A prepare slowed by the API server, with the kubelet re-registering the plugin meanwhile.
  control POST /faults '{"method":"GET","path_prefix":"/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/slow","count":1,"action":"delay","delay_ms":1500}' >/dev/null
  create_claim slow 5Gi 10 "$DEVICE"
  SLOW=$CLAIM_UID
  "$KUBELET" prepare --endpoint "$DRA_SOCKET" --api v1 --claim "team-a/slow/$SLOW" >"$SCRATCH/slow.json" 2>&1 &
  slow_prepare=$!
  sleep 0.3
  register_plugin
  wait $slow_prepare || fail "the slow prepare failed: $(cat "$SCRATCH/slow.json")"
  OUT=$(cat "$SCRATCH/slow.json")
  [ "$(claim_error "$SLOW")" = "" ] || fail "slow: $OUT"
  prepare slow "$SLOW"
  [ "$(agent_slices)" = 3 ] || fail "expected 3 slices after the retried prepare, got $(agent_slices)"

  # The claim is deleted while the plugin is down (the kubelet never unprepares it): the
  # restarted plugin's reconcile releases its slice and spec.
  kill -9 "$PLUGIN_PID"
  $KUBE delete /apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/gone >/dev/null || fail "cannot delete the claim"
  start_dra_plugin
  wait_for 50 "the reconcile's release" sh -c "[ \"\$(curl -sf --unix-socket $AGENT_SOCKET http://agent/v1/slices | grep -o '\"claim\":\"gone\"')\" = '' ]"
  [ "$(agent_slices)" = 2 ] || fail "expected 2 slices after the reconcile, got $(agent_slices)"
  [ ! -e "$SCRATCH/cdi/gpu.fgpu.io-$GONE.json" ] || fail "the gone claim's CDI spec is still there"
  grep -q 'reconciled.*released=1' "$SCRATCH/plugin.err" || fail "no reconcile line: $(cat "$SCRATCH/plugin.err")"
  echo "PASS: plugin and agent killed, the kubelet re-registered mid-prepare: nothing lost, nothing leaked"
}

# create_whole_claim NAME DEVICE: a claim allocated DEVICE whole (no consumedCapacity: a dynamic MIG
# GPU's placement is not shared), as kube-scheduler writes it; its uid in $CLAIM_UID.
create_whole_claim() {
  name=$1 device=$2
  printf '%s' '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"'"$name"'","namespace":"team-a"},
   "spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.fgpu.io"}}]}}}' >"$SCRATCH/claim-$name.json"
  $KUBE create /apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims "$SCRATCH/claim-$name.json" \
    >"$SCRATCH/created-$name.json" || fail "claim $name refused: $(cat "$SCRATCH/created-$name.json")"
  CLAIM_UID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["uid"])' "$SCRATCH/created-$name.json")
  python3 - "$SCRATCH/created-$name.json" "$device" >"$SCRATCH/allocated-$name.json" <<'PY'
import json, sys
claim, device = json.load(open(sys.argv[1])), sys.argv[2]
claim["status"] = {"allocation": {"devices": {"results": [{
    "request": "gpu", "driver": "gpu.fgpu.io", "pool": "node-a", "device": device}]}},
  "reservedFor": [{"resource": "pods", "name": claim["metadata"]["name"] + "-pod", "uid": "pod-" + claim["metadata"]["uid"]}]}
print(json.dumps(claim))
PY
  $KUBE put "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/$name/status" "$SCRATCH/allocated-$name.json" \
    >"$SCRATCH/status-$name.json" || fail "claim $name's allocation refused: $(cat "$SCRATCH/status-$name.json")"
}

# pool_objects: the node's ResourceSlices as "NAME GENERATION COUNT" lines, by name.
pool_objects() {
  $KUBE get "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3Dnode-a" | python3 -c '
import json, sys
for o in sorted(json.load(sys.stdin)["items"], key=lambda o: o["metadata"]["name"]):
    p = o["spec"]["pool"]
    print(o["metadata"]["name"], p["generation"], p["resourceSliceCount"])'
}

mig_instances() {  # the agent's MIG instances of GPU $1, as "PROFILE@START" lines
  agent_get /v1/gpus | python3 -c '
import json, sys
print("\n".join(sorted(g["mig_profile"] + "@" + str(g["mig_start"]) for g in json.load(sys.stdin) if g["parent_uuid"] == sys.argv[1])))' "$1"
}

# A dynamic MIG GPU (KEP-4815 partitionable devices): the node publishes its counter set and
# every placement in a pool of three objects the strict API server accepts; a claim allocated the
# 3g.40gb at slice 4 gets that instance made, whole (its workload sees 40 GiB), an overlapping
# placement is refused with the reason, and unprepare destroys the instance.
case_dynamic_mig_placements() {
  require_k8s
  start_apiserver
  printf '{"devices": [{}, {}]}\n' >"$SCRATCH/gpu.json"
  printf '{"gpus": [{"gpu": "1", "isolation": "mig", "mig": "dynamic"}]}\n' >"$SCRATCH/agent.json"
  AGENT_CONFIG=$SCRATCH/agent.json start_agent
  create_device_class
  start_dra_plugin
  register_plugin
  PARENT=$(GPU_UUID 1)
  BASE=$(device_of "$PARENT")
  want="node-a-gpu.fgpu.io 1 3
node-a-gpu.fgpu.io-counters-0 1 3
node-a-gpu.fgpu.io-mig-0 1 3"
  for _ in $(seq 50); do [ "$(pool_objects)" = "$want" ] && break; sleep 0.1; done
  [ "$(pool_objects)" = "$want" ] || fail "the pool: $(pool_objects) $(cat "$SCRATCH/plugin.err")"
  slice_published() { $KUBE field "/apis/resource.k8s.io/v1/resourceslices/$1" "$2"; }
  [ "$(slice_published node-a-gpu.fgpu.io-counters-0 'o["spec"]["sharedCounters"][0]["name"]')" = "\"$BASE-counters\"" ] ||
    fail "no counter set for the dynamic GPU"
  [ "$(slice_published node-a-gpu.fgpu.io-mig-0 '[d["name"] for d in o["spec"]["devices"]].count("'"$BASE"'-3g-40gb-4")')" = 1 ] ||
    fail "no 3g.40gb placement at slice 4"
  [ "$(slice_published node-a-gpu.fgpu.io 'len(o["spec"]["devices"])')" = 1 ] || fail "the dynamic GPU is published as a device itself"
  create_whole_claim three "$BASE-3g-40gb-4"
  THREE_UID=$CLAIM_UID
  prepare three "$THREE_UID"
  expect_status 0
  [ "$(claim_error "$THREE_UID")" = "" ] || fail "prepare failed: $OUT"
  [ "$(mig_instances "$PARENT")" = "3g.40gb@4" ] || fail "the instance was not made: $(mig_instances "$PARENT")"
  in_claim "$THREE_UID" "$PROBE" info
  expect_status 0
  expect_out_contains "\"total\":$((40448 * 1048576))"
  # A scheduler that ignored the counters: the overlapping placement is refused, nothing made.
  create_whole_claim two "$BASE-2g-20gb-4"
  TWO_UID=$CLAIM_UID
  prepare two "$TWO_UID"
  case "$(claim_error "$TWO_UID")" in *"overlaps an instance the GPU has"*) ;; *) fail "the overlap was not refused: $OUT" ;; esac
  [ "$(mig_instances "$PARENT")" = "3g.40gb@4" ] || fail "the refused claim changed the GPU: $(mig_instances "$PARENT")"
  # The pool is unchanged by claims (the scheduler counts them): still generation 1.
  [ "$(pool_objects)" = "$want" ] || fail "claims changed the pool: $(pool_objects)"
  unprepare three "$THREE_UID"
  expect_status 0
  for _ in $(seq 20); do [ -z "$(mig_instances "$PARENT")" ] && break; sleep 0.1; done
  [ -z "$(mig_instances "$PARENT")" ] || fail "the instance outlived its claim (2 s): $(mig_instances "$PARENT")"
  echo "PASS: a dynamic GPU published as counters and placements; a claim's placement made and destroyed with it"
}

run_case "$@"
