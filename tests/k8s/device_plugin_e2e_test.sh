# The classic device plugin end to end on the simulated GPU: the node agent,
# `fgpu k8s device-plugin` and the test kubelet's device-plugin side (Registration, ListAndWatch,
# GetPreferredAllocation, Allocate), through the real binaries.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib_k8s.sh"
GIB=1073741824

start_node() {
  require_k8s
  start_agent
  start_device_plugin_kubelet
  start_device_plugin
  shares=$((100 * ${GPUS:-1}))
  wait_for 100 "$shares share devices" sh -c "[ \"\$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))[\"resources\"][\"fgpu.io/gpu\"][\"devices\"]))' $DP_STATE 2>/dev/null)\" = $shares ]"
  GPU=$(GPU_UUID 0)
}

# allocate SIZE [--devices IDS]: the kubelet's preferred SIZE shares (or IDS), answer in $SCRATCH/alloc.json
allocate() {
  size=$1
  shift
  available=$(dp_state '",".join(d["id"] for d in s["resources"]["fgpu.io/gpu"]["devices"])' | tr -d '"')
  STATUS=0
  "$KUBELET" allocate --dir "$SCRATCH/device-plugins" --state "$DP_STATE" --resource fgpu.io/gpu \
    --preferred-from "$available" --size "$size" "$@" >"$SCRATCH/alloc.json" || STATUS=$?
}

# 25 shares of a 40 GiB GPU: a 10 GiB slice at 25 % compute; the container's environment sees
# 10 GiB and gets out-of-memory past it; its shares allocated again release the old slice.
case_allocate_runs_a_capped_workload() {
  start_node
  allocate 25
  [ "$STATUS" = 0 ] || fail "allocate: $(cat "$SCRATCH/alloc.json") $(cat "$SCRATCH/dp.err")"
  grep -q '"FGPU_SLICE"' "$SCRATCH/alloc.json" || fail "no slice in the answer: $(cat "$SCRATCH/alloc.json")"
  agent_get /v1/slices | grep -q '"compute":25' || fail "not a 25 % slice: $(agent_get /v1/slices)"
  in_env "$SCRATCH/alloc.json" "$PROBE" info
  expect_status 0
  expect_out_contains "\"total\":$((10 * GIB))"
  in_env "$SCRATCH/alloc.json" "$PROBE" alloc --bytes 11GiB
  expect_status 1
  expect_out_contains '"result":"CUDA_ERROR_OUT_OF_MEMORY"'
  first=$(python3 -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))["allocated"]))' "$SCRATCH/alloc.json")
  cp "$SCRATCH/alloc.json" "$SCRATCH/first.json"
  allocate 25 --devices "$first"  # the first container ended; the kubelet hands its shares out again
  [ "$STATUS" = 0 ] || fail "second allocate: $(cat "$SCRATCH/alloc.json")"
  [ "$(agent_slices)" = 1 ] || fail "the previous holder's slice was not released: $(agent_get /v1/slices)"
  echo "PASS: 25 shares = 10 GiB and 25 %, OOM past it, the previous holder's slice released on reuse"
}

# Shares on two GPUs for one container are refused with the reason; an exclusive GPU's shares go
# Unhealthy; a kubelet restart re-registers the plugin and its devices come back.
case_refusals_health_and_kubelet_restart() {
  GPUS=2
  start_node
  SECOND=$(GPU_UUID 1)
  allocate 2 --devices "$GPU-s0,$SECOND-s0"
  [ "$STATUS" != 0 ] || fail "shares of two GPUs were allocated"
  grep -q "must come from one GPU" "$SCRATCH/alloc.json" || fail "no clear refusal: $(cat "$SCRATCH/alloc.json")"
  [ "$(agent_slices)" = 0 ] || fail "a refused allocation made a slice"
  curl -sf --unix-socket "$AGENT_SOCKET" -X PUT -H 'Content-Type: application/json' -d '{"exclusive": true}' \
    http://agent/v1/gpus/1 >/dev/null || fail "cannot make GPU 1 exclusive"
  wait_for 50 "GPU 1's shares Unhealthy" sh -c "python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))[\"resources\"][\"fgpu.io/gpu\"][\"devices\"]; sys.exit(0 if sum(x[\"health\"]==\"Unhealthy\" for x in d)==100 else 1)' $DP_STATE"
  kill -HUP "$DP_KUBELET_PID"
  wait_for 100 "the plugin registered again" sh -c "python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s[\"restarts\"]>=1 and len(s[\"resources\"].get(\"fgpu.io/gpu\",{}).get(\"devices\",[]))==200 else 1)' $DP_STATE"
  allocate 10
  [ "$STATUS" = 0 ] || fail "allocate after the kubelet's restart: $(cat "$SCRATCH/alloc.json")"
  echo "PASS: cross-GPU shares refused, exclusive GPU's shares Unhealthy, re-registered after a kubelet restart"
}

# The mixed MIG strategy: GPU 0 shared as fgpu.io/gpu, GPU 1 in MIG mode (3g.40gb + 2 × 2g.20gb)
# as fgpu.io/mig-3g.40gb (one device) and fgpu.io/mig-2g.20gb (two); a container given a 2g.20gb
# device gets a slice with that whole instance and sees all of its memory.
case_mig_mixed_strategy() {
  require_k8s
  printf '{"devices": [{}, {"mig": ["3g.40gb", "2g.20gb", "2g.20gb"]}]}\n' >"$SCRATCH/gpu.json"
  start_agent
  start_device_plugin_kubelet
  DP_FLAGS="--mig-strategy mixed" start_device_plugin
  count() { python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["resources"][sys.argv[2]]["devices"]))' "$DP_STATE" "$1" 2>/dev/null; }
  wait_for 100 "the MIG resources" sh -c "[ \"\$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[\"resources\"]; print(len(r.get(\"fgpu.io/mig-2g.20gb\", {}).get(\"devices\", [])), len(r.get(\"fgpu.io/mig-3g.40gb\", {}).get(\"devices\", [])), len(r.get(\"fgpu.io/gpu\", {}).get(\"devices\", [])))' $DP_STATE 2>/dev/null)\" = '2 1 100' ]"
  two=$(dp_state 's["resources"]["fgpu.io/mig-2g.20gb"]["devices"][0]["id"]' | tr -d '"')
  case "$two" in MIG-*-s0) ;; *) fail "not a MIG instance's device: $two" ;; esac
  STATUS=0
  "$KUBELET" allocate --dir "$SCRATCH/device-plugins" --state "$DP_STATE" --resource fgpu.io/mig-2g.20gb \
    --devices "$two" >"$SCRATCH/alloc.json" || STATUS=$?
  [ "$STATUS" = 0 ] || fail "allocate: $(cat "$SCRATCH/alloc.json") $(cat "$SCRATCH/dp.err")"
  agent_get /v1/slices | grep -q '"isolation":"hard"' || fail "not a whole-instance slice: $(agent_get /v1/slices)"
  in_env "$SCRATCH/alloc.json" "$PROBE" info
  expect_status 0
  expect_out_contains "\"total\":$((20096 * 1048576))"
  : "$(count fgpu.io/gpu)"
  echo "PASS: fgpu.io/gpu for GPU 0, one resource per MIG profile, a 2g.20gb device is its whole instance"
}

run_case "$@"
