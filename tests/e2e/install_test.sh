#!/bin/sh
# `cmake --install` of this build into a scratch prefix (docs/operations.md "Install"): the
# layout, the systemd unit naming the installed binary, and the README's main job (agent-demo)
# run from the installed tree alone.
. "$(dirname "$0")/lib.sh"
: "${FGPU_BUILD_DIR:?run this through ctest (FGPU_BUILD_DIR is not set)}"
PREFIX=$SCRATCH/prefix
cmake --install "$FGPU_BUILD_DIR" --prefix "$PREFIX" >"$SCRATCH/install.log" 2>&1 ||
  fail "cmake --install failed: $(cat "$SCRATCH/install.log")"
for file in bin/fgpu bin/fgpu-probe lib/fgpu/libfgpu.so lib/fgpu/sim/libcuda.so.1 lib/fgpu/sim/libnvidia-ml.so.1 \
            lib/systemd/system/fgpu-agent.service share/fgpu/examples/node.conf share/fgpu/examples/agent.json \
            share/fgpu/examples/slurm/plugstack.conf share/fgpu/agent-demo share/bash-completion/completions/fgpu \
            share/zsh/site-functions/_fgpu share/man/man1/fgpu.1; do
  [ -e "$PREFIX/$file" ] || fail "$file is not installed"
done
grep -qx "ExecStart=$PREFIX/bin/fgpu agent --state /var/lib/fgpu \$FGPU_AGENT_OPTIONS" \
  "$PREFIX/lib/systemd/system/fgpu-agent.service" || fail "the unit does not start the installed agent:
$(grep ExecStart "$PREFIX/lib/systemd/system/fgpu-agent.service")"
bash -n "$PREFIX/share/bash-completion/completions/fgpu" || fail "the bash completion is not valid bash"
grep -q "slice" "$PREFIX/share/bash-completion/completions/fgpu" || fail "the bash completion lacks 'slice'"
grep -q '^\.TH' "$PREFIX/share/man/man1/fgpu.1" || fail "the man page has no .TH header"
[ ! -e "$PREFIX/etc/fgpu/node.conf" ] || fail "an active node.conf was installed (it makes the node managed)"
"$PREFIX/bin/fgpu" version >/dev/null || fail "the installed fgpu does not run"
# The demo finds <prefix>/bin from <prefix>/share/fgpu and the simulated driver beside it.
run_demo() {
  ASAN_OPTIONS=${ASAN_OPTIONS:-verify_asan_link_order=0} FGPU_DEMO_SECONDS=3 \
    bash "$PREFIX/share/fgpu/agent-demo" >"$SCRATCH/demo.log" 2>&1
}
# A 3-second wall-clock share can fall short on a loaded machine (CI once saw training at 44 % of
# a 50 % share, its latency neighbour's p99 at 25 ms: the host, not the GPU, stalled). One rerun
# when the only misses are measured shares; a layout or cap failure fails at once.
if ! run_demo; then
  misses=$(grep -c "FAILED" "$SCRATCH/demo.log")
  share_misses=$(grep "FAILED" "$SCRATCH/demo.log" | grep -c "GPU busy")
  [ "$misses" -gt 0 ] && [ "$misses" = "$share_misses" ] || fail "the installed demo failed:
$(cat "$SCRATCH/demo.log")"
  echo "the demo's measured shares fell short once; rerunning it:"
  grep "FAILED" "$SCRATCH/demo.log"
  run_demo || fail "the installed demo failed twice:
$(cat "$SCRATCH/demo.log")"
fi
grep -q "all four ran together within their caps" "$SCRATCH/demo.log" || fail "$(cat "$SCRATCH/demo.log")"
