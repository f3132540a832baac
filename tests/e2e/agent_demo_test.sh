#!/bin/sh
# The README's main job (scripts/agent-demo) with this build's binaries: the agent, four
# workloads through fgpu run, fgpu status, and the check that all four stayed within their caps.
. "$(dirname "$0")/lib.sh"
ASAN_OPTIONS=${ASAN_OPTIONS:-verify_asan_link_order=0} FGPU_BIN_DIR=$FGPU_BIN_DIR FGPU_DEMO_SECONDS=4 \
  bash "$(dirname "$0")/../../scripts/agent-demo"
