// fgpu-test-kubelet: the kubelet's side of its gRPC contracts, strictly, as a command for shell
// end-to-end tests (there is no kubelet on these machines). JSON on stdout; exit 0 when the
// kubelet would be satisfied, 1 when it would not, 2 on a usage error.
//
//   register --registry DIR --name N [--type DRAPlugin] [--timeout S]
//   watch-registry --registry DIR --events FILE [--name N] [--type DRAPlugin]
//   prepare|unprepare --endpoint SOCK --api v1|v1beta1 --claim NS/NAME/UID... [--timeout-ms N]
//   device-plugin-kubelet --dir DIR [--state FILE]     (SIGHUP: a kubelet restart)
//   allocate --dir DIR --resource NAME [--devices a,b] [--preferred-from a,b,c --size N] [--state FILE]
#include <signal.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <sstream>

#include "device_plugin_kubelet.h"
#include "dra_client.h"
#include "plugin_watcher.h"

namespace {

using namespace fgpu::k8s::test;
using fgpu::Status;

int Fail(const Status& s) {
  std::cout << nlohmann::json{{"error", s.message()}}.dump() << std::endl;
  return 1;
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int Register(const std::string& registry, const std::string& type, const std::string& name, double timeout_s) {
  auto timeout = std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  auto socket = WaitForRegistrationSocket(registry, name, timeout);
  if (!socket.ok()) return Fail(socket.status());
  auto r = RegisterPlugin(*socket, type, name, timeout);
  if (!r.ok()) return Fail(r.status());
  std::cout << r->ToJson().dump() << std::endl;
  return r->registered ? 0 : 1;
}

int Dra(bool prepare, const std::string& endpoint, const std::string& api_text,
        const std::vector<std::string>& claim_texts, long timeout_ms) {
  auto api = ParseDraApi(api_text);
  if (!api.ok()) return Fail(api.status());
  std::vector<ClaimRef> claims;
  for (const auto& t : claim_texts) {
    auto c = ParseClaim(t);
    if (!c.ok()) return Fail(c.status());
    claims.push_back(*c);
  }
  auto timeout = std::chrono::milliseconds(timeout_ms);
  auto call = prepare ? NodePrepareResources(endpoint, *api, claims, timeout)
                      : NodeUnprepareResources(endpoint, *api, claims, timeout);
  if (!call.ok()) return Fail(call.status());
  nlohmann::json out = call->response;
  if (!call->problem.ok()) out["error"] = call->problem.message();
  std::cout << out.dump() << std::endl;
  return call->problem.ok() ? 0 : 1;
}

int DevicePluginKubeletCommand(const std::string& dir, const std::string& state) {
  // Blocked before any thread starts, so only sigwait below sees them.
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGHUP, SIGTERM, SIGINT}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  auto kubelet = DevicePluginKubelet::Start(dir, state);
  if (!kubelet.ok()) return Fail(kubelet.status());
  std::cout << nlohmann::json{{"serving", dir + "/kubelet.sock"}}.dump() << std::endl;
  for (;;) {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig != SIGHUP) break;
    if (Status s = (*kubelet)->Restart(); !s.ok()) return Fail(s);
    std::cout << nlohmann::json{{"restarted", dir + "/kubelet.sock"}}.dump() << std::endl;
  }
  (*kubelet)->Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fgpu-test-kubelet: the kubelet's side of the plugin gRPC contracts, for tests"};
  app.require_subcommand(1);

  std::string registry, type = "DRAPlugin", name, events;
  double timeout_s = 10;
  auto* reg = app.add_subcommand("register", "Register one plugin from the registry directory, as the kubelet does");
  reg->add_option("--registry", registry, "plugin registry directory")->required();
  reg->add_option("--type", type, "plugin type this kubelet handles")->capture_default_str();
  reg->add_option("--name", name, "expected plugin name")->required();
  reg->add_option("--timeout", timeout_s, "seconds to wait for the socket")->capture_default_str();

  auto* watch = app.add_subcommand("watch-registry", "Register every plugin socket that appears, until killed");
  watch->add_option("--registry", registry, "plugin registry directory")->required();
  watch->add_option("--type", type, "plugin type this kubelet handles")->capture_default_str();
  watch->add_option("--name", name, "only plugins of this name (default: all)");
  watch->add_option("--events", events, "JSON-lines file of registration events")->required();

  std::string endpoint, api;
  std::vector<std::string> claims;
  long timeout_ms = 10000;
  CLI::App* dra[2];
  for (int i = 0; i < 2; ++i) {
    dra[i] = app.add_subcommand(i == 0 ? "prepare" : "unprepare",
                                i == 0 ? "NodePrepareResources" : "NodeUnprepareResources");
    dra[i]->add_option("--endpoint", endpoint, "the driver's DRA socket")->required();
    dra[i]->add_option("--api", api, "v1 or v1beta1")->required();
    dra[i]->add_option("--claim", claims, "NAMESPACE/NAME/UID (repeatable)")->required();
    dra[i]->add_option("--timeout-ms", timeout_ms, "RPC deadline")->capture_default_str();
  }

  std::string dir, state, resource, devices, preferred_from;
  int size = 0;
  auto* dpk = app.add_subcommand("device-plugin-kubelet",
                                 "Serve kubelet.sock and follow registered device plugins, until killed");
  dpk->add_option("--dir", dir, "device plugin directory")->required();
  dpk->add_option("--state", state, "JSON state file (default DIR/kubelet-state.json)");

  auto* alloc = app.add_subcommand("allocate", "Allocate devices of a registered device plugin for one container");
  alloc->add_option("--dir", dir, "device plugin directory")->required();
  alloc->add_option("--state", state, "the device-plugin-kubelet's state file (default DIR/kubelet-state.json)");
  alloc->add_option("--resource", resource, "resource name")->required();
  alloc->add_option("--devices", devices, "device IDs, comma-separated");
  alloc->add_option("--preferred-from", preferred_from, "GetPreferredAllocation's available IDs, comma-separated");
  alloc->add_option("--size", size, "GetPreferredAllocation's allocation size");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (reg->parsed()) return Register(registry, type, name, timeout_s);
  if (watch->parsed()) {
    std::cout << nlohmann::json{{"watching", registry}}.dump() << std::endl;
    return Fail(WatchRegistry(registry, type, name, events));
  }
  if (dra[0]->parsed() || dra[1]->parsed()) return Dra(dra[0]->parsed(), endpoint, api, claims, timeout_ms);
  if (dpk->parsed()) return DevicePluginKubeletCommand(dir, state);
  AllocateArgs args{dir, state, resource, SplitCommas(devices), SplitCommas(preferred_from), size};
  auto out = AllocateFromPlugin(args);
  if (!out.ok()) return Fail(out.status());
  std::cout << out->dump() << std::endl;
  return 0;
}
