#include "cli/k8s_command.h"

#include <cstdlib>
#include <iostream>

#include "cli/exit_codes.h"
#include "core/units.h"
#include "k8s/dra/quantity.h"

namespace fgpu::cli {
namespace {

// "256Mi" (Kubernetes) or "256MiB" (fgpu): the same byte count.
Result<uint64_t> SizeOf(const std::string& text) {
  Result<uint64_t> quantity = k8s::ParseQuantity(text);
  if (quantity.ok()) return quantity;
  return ParseByteSize(text);
}

}  // namespace

CLI::App* AddK8sDraFlags(CLI::App& parent, K8sDraOptions* options) {
  CLI::App* command = parent.add_subcommand(
      "dra-plugin", "The DRA kubelet plugin for gpu.fgpu.io (run by the DaemonSet; docs/kubernetes.md)");
  k8s::DraPluginOptions& plugin = options->plugin;
  if (const char* node = std::getenv("NODE_NAME")) plugin.node_name = node;
  command->add_option("--node-name", plugin.node_name, "This node's name: its pool (default: $NODE_NAME)");
  command->add_option("--agent", plugin.agent, "The node agent's API")->capture_default_str();
  command->add_option("--kubeconfig", plugin.kubeconfig, "A kubeconfig file (default: the pod's service account)");
  command->add_option("--plugin-dir", plugin.plugin_dir, "Where dra.sock is served")->capture_default_str();
  command->add_option("--registry-dir", plugin.registry_dir, "The kubelet's plugin registration directory")
      ->capture_default_str();
  command->add_option("--cdi-dir", plugin.cdi_dir, "Where CDI specs are written")->capture_default_str();
  command->add_option("--metrics", plugin.metrics_listen, "Serve /metrics on HOST:PORT");
  command->add_option("--node-config", plugin.read_only_files,
                      "Files mounted read-only into every container of a claim")
      ->capture_default_str();
  command->add_option("--board-socket", options->board_socket,
                      "The agent's compute board socket, mounted into containers (node.conf's board_socket)");
  command->add_option("--default-owner-uid", plugin.default_owner_uid,
                      "The uid a slice's ledger is given when neither the pod nor the claim names one")
      ->capture_default_str();
  command->add_option("--claim-parameters", options->claim_parameters,
                      "The parameters a claim's own config may set; the rest only a DeviceClass may")
      ->delimiter(',')
      ->check(CLI::IsMember({"tier", "computeMode", "tenant", "runAsUser", "isolation"}))
      ->capture_default_str();
  command->add_option("--memory-min", options->memory_min, "The smallest memory a claim may consume")
      ->capture_default_str();
  command->add_option("--memory-step", options->memory_step, "Memory requests round up to this step")
      ->capture_default_str();
  return command;
}

int RunK8sDra(K8sDraOptions options) {
  Result<uint64_t> minimum = SizeOf(options.memory_min);
  Result<uint64_t> step = SizeOf(options.memory_step);
  if (!minimum.ok() || !step.ok() || *step == 0 || *minimum == 0) {
    std::cerr << "fgpu k8s dra-plugin: --memory-min and --memory-step must be sizes such as 256Mi, not '"
              << (!minimum.ok() || *minimum == 0 ? options.memory_min : options.memory_step) << "'\n";
    return kExitUsage;
  }
  options.plugin.claims.claim_may_set = {options.claim_parameters.begin(), options.claim_parameters.end()};
  options.plugin.policy.memory_min_bytes = *minimum;
  options.plugin.policy.memory_step_bytes = *step;
  if (!options.board_socket.empty()) options.plugin.read_only_files.push_back(options.board_socket);
  if (options.plugin.node_name.empty()) {
    std::cerr << "fgpu k8s dra-plugin: --node-name is required (the DaemonSet sets NODE_NAME from spec.nodeName)\n";
    return kExitUsage;
  }
  return k8s::RunDraPlugin(options.plugin) == 0 ? kExitOk : kExitFailure;
}

CLI::App* AddK8sDevicePluginFlags(CLI::App& parent, k8s::DevicePluginOptions* options) {
  CLI::App* command = parent.add_subcommand(
      "device-plugin", "The classic device plugin: each GPU as shares of fgpu.io/gpu (docs/kubernetes.md)");
  command->add_option("--agent", options->agent, "The node agent's API")->capture_default_str();
  command->add_option("--resource-name", options->resource_name, "The extended resource advertised")
      ->capture_default_str();
  command->add_option("--shares-per-gpu", options->shares_per_gpu, "Devices per GPU (100: one share is 1 %)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  command->add_option("--mig-strategy", options->mig_strategy,
                      "none: MIG instances are shared under --resource-name like GPUs; mixed: each MIG profile is "
                      "a resource of its own, fgpu.io/mig-<profile>, one device per instance (docs/mig.md)")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "mixed"}));
  command->add_option("--plugin-dir", options->plugin_dir, "The kubelet's device-plugin directory")
      ->capture_default_str();
  command->add_option("--endpoint", options->endpoint, "This plugin's socket name in --plugin-dir")
      ->capture_default_str();
  command->add_option("--metrics", options->metrics_listen, "Serve /metrics on HOST:PORT");
  command->add_option("--node-config", options->read_only_files, "Files mounted read-only into every container")
      ->capture_default_str();
  command->add_option("--owner-uid", options->owner_uid, "The uid the slices' ledgers are given")
      ->capture_default_str();
  return command;
}

int RunK8sDevicePlugin(const k8s::DevicePluginOptions& options) {
  return k8s::RunDevicePlugin(options) == 0 ? kExitOk : kExitFailure;
}

}  // namespace fgpu::cli
