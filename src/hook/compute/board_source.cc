// The board a gate uses: the node agent's sealed one on a managed node with board_socket, else
// the file in compute_dir (see board_source.h).
#include "hook/compute/board_source.h"

#include "compute/board_handout.h"
#include "compute/sealed.h"
#include "slice/node_config.h"

namespace fgpu::hook {

Result<compute::Board*> OpenComputeBoard(const Options& options, const char* uuid, compute::Policy* policy) {
  Result<slice::NodePolicy> node = slice::LoadNodePolicy(options.node_config_set ? options.node_config : nullptr);
  if (!node.ok()) return Status::Unavailable("cannot read the node configuration: " + node.status().message());
  // An unmanaged node has no administrator to choose strict priority: never strict there.
  policy->strict_priority = node->managed && slice::StrictPriorityFor(node->config, uuid);
  if (!node->managed || node->config.board_socket.empty()) return compute::Board::Open(options.compute_dir, uuid);
  Result<compute::SealedPair> received = compute::RequestBoard(node->config.board_socket, uuid);
  if (!received.ok()) return received.status();
  // Root's memfds only (the agent's): a descriptor from anyone else could be a table they write.
  Result<compute::Board*> board =
      compute::Board::Map(received->board, received->policy, uuid, compute::MapOptions{.writable_policy = false, .owner = 0});
  compute::ClosePair(&*received);  // the mappings stay; nothing else needs the descriptors
  return board;
}

}  // namespace fgpu::hook
