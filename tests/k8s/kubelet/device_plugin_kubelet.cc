#include "device_plugin_kubelet.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "deviceplugin_v1beta1.grpc.pb.h"
#include "k8s/kubelet/unix_grpc_server.h"

namespace fgpu::k8s::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

grpc::Status Refuse(const std::string& why) { return {grpc::StatusCode::UNKNOWN, why}; }

nlohmann::json OptionsJson(const ::v1beta1::DevicePluginOptions& o) {
  return {{"pre_start_required", o.pre_start_required()},
          {"get_preferred_allocation_available", o.get_preferred_allocation_available()}};
}

// One registered plugin, followed on its own thread.
struct Plugin {
  std::string name, endpoint;
  nlohmann::json options = nullptr;
  nlohmann::json devices = nlohmann::json::array();
  int updates = 0;
  bool connected = false;
  std::string error;
  std::thread follower;
  std::mutex ctx_mu;
  bool cancelled = false;
  grpc::ClientContext* ctx = nullptr;  // the call in flight, to cancel

  void Cancel() {
    std::lock_guard lock(ctx_mu);
    cancelled = true;
    if (ctx) ctx->TryCancel();
  }
  bool Cancelled() {
    std::lock_guard lock(ctx_mu);
    return cancelled;
  }
  // Makes `c` the call Cancel() cancels; false when already cancelled.
  bool Track(grpc::ClientContext* c) {
    std::lock_guard lock(ctx_mu);
    ctx = c;
    return !cancelled;
  }
};

std::string DeviceProblem(const ::v1beta1::Device& d) {
  if (d.id().empty() || d.id().size() > 63) return "device ID '" + d.id() + "' is empty or longer than 63 characters";
  if (d.health() != "Healthy" && d.health() != "Unhealthy") {
    return "device " + d.id() + " has health '" + d.health() + "' (Healthy or Unhealthy)";
  }
  return "";
}

}  // namespace

std::string DefaultStatePath(const std::string& dir) { return dir + "/kubelet-state.json"; }

Status ValidateExtendedResourceName(const std::string& name) {
  static const std::regex subdomain(R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)");
  static const std::regex short_name(R"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)");
  size_t slash = name.find('/');
  if (slash == std::string::npos || name.find('/', slash + 1) != std::string::npos) {
    return Status::InvalidArgument("Invalid Extended Resource Name: " + name + " (want <domain>/<name>)");
  }
  std::string domain = name.substr(0, slash), rest = name.substr(slash + 1);
  if (domain == "kubernetes.io" || domain.ends_with(".kubernetes.io")) {
    return Status::InvalidArgument("Invalid Extended Resource Name: " + name + " (kubernetes.io is native)");
  }
  if (domain.size() > 253 || !std::regex_match(domain, subdomain) || rest.size() > 63 ||
      !std::regex_match(rest, short_name)) {
    return Status::InvalidArgument("Invalid Extended Resource Name: " + name);
  }
  return Status::Ok();
}

struct DevicePluginKubelet::Impl final : ::v1beta1::Registration::Service {
  std::string dir, state_file;
  std::unique_ptr<UnixGrpcServer> server;
  std::mutex register_mu;  // one Register at a time: replacing a plugin joins its follower
  mutable std::mutex mu;   // plugins, restarts, the state file
  std::map<std::string, std::unique_ptr<Plugin>> plugins;
  int restarts = 0;

  std::string KubeletSocket() const { return dir + "/kubelet.sock"; }

  nlohmann::json StateLocked() const {
    nlohmann::json resources = nlohmann::json::object();
    for (const auto& [name, p] : plugins) {
      resources[name] = {{"endpoint", p->endpoint}, {"options", p->options}, {"devices", p->devices},
                         {"updates", p->updates},   {"connected", p->connected}, {"error", p->error}};
    }
    return {{"kubelet_socket", KubeletSocket()}, {"restarts", restarts}, {"resources", resources}};
  }

  // Atomically: a reader never sees half a file.
  void WriteStateLocked() const {
    std::string tmp = state_file + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << StateLocked().dump(2) << "\n";
    }
    std::error_code ignored;
    fs::rename(tmp, state_file, ignored);
  }

  template <typename F>
  void Update(Plugin* p, F change) {
    std::lock_guard lock(mu);
    change(*p);
    WriteStateLocked();
  }

  grpc::Status Register(grpc::ServerContext*, const ::v1beta1::RegisterRequest* req, ::v1beta1::Empty*) override {
    if (req->version() != "v1beta1") {
      return Refuse("Requested device plugin version \"" + req->version() + "\" is not supported (v1beta1)");
    }
    if (Status s = ValidateExtendedResourceName(req->resource_name()); !s.ok()) return Refuse(s.message());
    if (req->endpoint().empty() || req->endpoint().find('/') != std::string::npos || req->endpoint() == "kubelet.sock") {
      return Refuse("endpoint '" + req->endpoint() + "' is not a socket file name in " + dir);
    }
    std::lock_guard serial(register_mu);
    std::unique_ptr<Plugin> old;
    {
      std::lock_guard lock(mu);
      auto it = plugins.find(req->resource_name());
      if (it != plugins.end()) {
        // A live plugin keeps its name; a dead one's successor takes it over.
        if (it->second->connected) return Refuse("resource name " + req->resource_name() + " is already registered");
        old = std::move(it->second);
        plugins.erase(it);
      }
    }
    if (old) {
      old->Cancel();
      if (old->follower.joinable()) old->follower.join();
    }
    auto p = std::make_unique<Plugin>();
    p->name = req->resource_name();
    p->endpoint = req->endpoint();
    Plugin* raw = p.get();
    {
      std::lock_guard lock(mu);
      plugins[p->name] = std::move(p);
      WriteStateLocked();
    }
    raw->follower = std::thread([this, raw] { Follow(raw); });
    return grpc::Status::OK;
  }

  // After Register returned, as the kubelet does: the plugin may start serving only then.
  void Follow(Plugin* p) {
    auto stub = ::v1beta1::DevicePlugin::NewStub(DialUnix(dir + "/" + p->endpoint));
    ::v1beta1::DevicePluginOptions options;
    grpc::Status st;
    for (auto until = std::chrono::steady_clock::now() + 10s;;) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 2s);
      if (!p->Track(&ctx)) return;
      st = stub->GetDevicePluginOptions(&ctx, {}, &options);
      p->Track(nullptr);
      if (st.ok() || st.error_code() != grpc::StatusCode::UNAVAILABLE || std::chrono::steady_clock::now() >= until) break;
      std::this_thread::sleep_for(50ms);
    }
    if (!st.ok()) {
      Update(p, [&](Plugin& q) { q.error = "GetDevicePluginOptions on " + q.endpoint + " failed: " + st.error_message(); });
      return;
    }
    Update(p, [&](Plugin& q) {
      q.options = OptionsJson(options);
      q.connected = true;
    });
    grpc::ClientContext ctx;
    if (!p->Track(&ctx)) return;
    auto reader = stub->ListAndWatch(&ctx, {});
    ::v1beta1::ListAndWatchResponse update;
    while (reader->Read(&update)) {
      Update(p, [&](Plugin& q) {
        q.devices = nlohmann::json::array();
        q.error.clear();
        for (const auto& d : update.devices()) {
          nlohmann::json dev{{"id", d.id()}, {"health", d.health()}};
          if (d.has_topology()) {
            for (const auto& n : d.topology().nodes()) dev["numa_nodes"].push_back(n.id());
          }
          q.devices.push_back(dev);
          if (std::string why = DeviceProblem(d); !why.empty()) q.error = why;
        }
        ++q.updates;
      });
    }
    st = reader->Finish();
    p->Track(nullptr);
    Update(p, [&](Plugin& q) {
      q.connected = false;
      if (!q.Cancelled()) q.error = "ListAndWatch ended: " + (st.ok() ? std::string("the plugin closed it") : st.error_message());
    });
  }

  void DropPlugins() {
    std::lock_guard serial(register_mu);
    std::map<std::string, std::unique_ptr<Plugin>> dropped;
    {
      std::lock_guard lock(mu);
      dropped.swap(plugins);
    }
    for (auto& [name, p] : dropped) p->Cancel();
    for (auto& [name, p] : dropped) {
      if (p->follower.joinable()) p->follower.join();
    }
  }

  Status Serve() {
    auto s = UnixGrpcServer::Start(KubeletSocket(), {this});
    if (!s.ok()) return s.status();
    server = std::move(s).value();
    return Status::Ok();
  }
};

Result<std::unique_ptr<DevicePluginKubelet>> DevicePluginKubelet::Start(const std::string& dir,
                                                                        const std::string& state_file) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound("device plugin directory " + dir + " does not exist");
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->state_file = state_file.empty() ? DefaultStatePath(dir) : state_file;
  {
    std::lock_guard lock(impl->mu);
    impl->WriteStateLocked();
  }
  if (Status s = impl->Serve(); !s.ok()) return s;
  return std::unique_ptr<DevicePluginKubelet>(new DevicePluginKubelet(std::move(impl)));
}

DevicePluginKubelet::DevicePluginKubelet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DevicePluginKubelet::~DevicePluginKubelet() { Stop(); }

void DevicePluginKubelet::Stop() {
  if (impl_->server) impl_->server->Shutdown(100ms);
  impl_->server.reset();
  impl_->DropPlugins();
}

Status DevicePluginKubelet::Restart() {
  Stop();
  // The kubelet empties its directory of sockets at start (the plugins must notice and serve again).
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(impl_->dir, ec)) {
    if (entry.is_socket()) fs::remove(entry.path(), ec);
  }
  {
    std::lock_guard lock(impl_->mu);
    ++impl_->restarts;
    impl_->WriteStateLocked();
  }
  return impl_->Serve();
}

nlohmann::json DevicePluginKubelet::State() const {
  std::lock_guard lock(impl_->mu);
  return impl_->StateLocked();
}

Result<nlohmann::json> AllocateFromPlugin(const AllocateArgs& a) {
  std::string state_file = a.state_file.empty() ? DefaultStatePath(a.dir) : a.state_file;
  std::ifstream in(state_file);
  if (!in) return Status::NotFound("no kubelet state file " + state_file);
  nlohmann::json state = nlohmann::json::parse(in, nullptr, false);
  if (state.is_discarded() || !state["resources"].contains(a.resource)) {
    return Status::NotFound("resource " + a.resource + " is not registered (" + state_file + ")");
  }
  const nlohmann::json& r = state["resources"][a.resource];
  if (!r["options"].is_object()) return Status::Unavailable("the kubelet never reached " + a.resource + "'s plugin");
  auto healthy = [&](const std::string& id) {
    for (const auto& d : r["devices"]) {
      if (d["id"] == id) return d["health"] == "Healthy";
    }
    return false;
  };
  auto stub = ::v1beta1::DevicePlugin::NewStub(DialUnix(a.dir + "/" + r["endpoint"].get<std::string>()));
  auto deadline = [](std::chrono::seconds s) { return std::chrono::system_clock::now() + s; };

  nlohmann::json out{{"resource", a.resource}, {"preferred", nullptr}, {"pre_start_called", false}};
  std::vector<std::string> devices = a.devices;
  if (!a.preferred_from.empty() && r["options"]["get_preferred_allocation_available"] == true) {
    ::v1beta1::PreferredAllocationRequest req;
    auto* c = req.add_container_requests();
    for (const auto& id : a.preferred_from) c->add_available_deviceids(id);
    c->set_allocation_size(a.size);
    ::v1beta1::PreferredAllocationResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline(10s));
    grpc::Status st = stub->GetPreferredAllocation(&ctx, req, &resp);
    if (!st.ok()) return Status::Unavailable("GetPreferredAllocation failed: " + st.error_message());
    if (resp.container_responses_size() != 1) {
      return Status::Corrupt("GetPreferredAllocation answered " + std::to_string(resp.container_responses_size()) +
                             " containers for 1");
    }
    std::vector<std::string> preferred(resp.container_responses(0).deviceids().begin(),
                                       resp.container_responses(0).deviceids().end());
    for (const auto& id : preferred) {
      if (std::find(a.preferred_from.begin(), a.preferred_from.end(), id) == a.preferred_from.end()) {
        return Status::Corrupt("GetPreferredAllocation preferred " + id + ", which was not available");
      }
    }
    out["preferred"] = preferred;
    if (devices.empty()) devices = preferred;
  }
  if (devices.empty()) return Status::InvalidArgument("no devices to allocate");
  for (const auto& id : devices) {
    if (!healthy(id)) return Status::InvalidArgument("device " + id + " is not a healthy device of " + a.resource);
  }
  ::v1beta1::AllocateRequest req;
  auto* c = req.add_container_requests();
  for (const auto& id : devices) c->add_devices_ids(id);
  ::v1beta1::AllocateResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline(10s));
  grpc::Status st = stub->Allocate(&ctx, req, &resp);
  if (!st.ok()) return Status::Unavailable("Allocate failed: " + st.error_message());
  if (resp.container_responses_size() != 1) {
    return Status::Corrupt("Allocate answered " + std::to_string(resp.container_responses_size()) + " containers for 1");
  }
  const auto& cr = resp.container_responses(0);
  out["allocated"] = devices;
  out["envs"] = std::map<std::string, std::string>(cr.envs().begin(), cr.envs().end());
  out["annotations"] = std::map<std::string, std::string>(cr.annotations().begin(), cr.annotations().end());
  out["mounts"] = nlohmann::json::array();
  for (const auto& m : cr.mounts()) {
    out["mounts"].push_back({{"container_path", m.container_path()}, {"host_path", m.host_path()}, {"read_only", m.read_only()}});
  }
  out["devices"] = nlohmann::json::array();
  for (const auto& d : cr.devices()) {
    out["devices"].push_back(
        {{"container_path", d.container_path()}, {"host_path", d.host_path()}, {"permissions", d.permissions()}});
  }
  out["cdi_devices"] = nlohmann::json::array();
  for (const auto& d : cr.cdi_devices()) out["cdi_devices"].push_back(d.name());

  if (r["options"]["pre_start_required"] == true) {
    ::v1beta1::PreStartContainerRequest pre;
    for (const auto& id : devices) pre.add_devices_ids(id);
    ::v1beta1::PreStartContainerResponse pre_out;
    grpc::ClientContext pre_ctx;
    pre_ctx.set_deadline(deadline(30s));  // KubeletPreStartContainerRPCTimeoutInSecs
    st = stub->PreStartContainer(&pre_ctx, pre, &pre_out);
    if (!st.ok()) return Status::Unavailable("PreStartContainer failed: " + st.error_message());
    out["pre_start_called"] = true;
  }
  return out;
}

}  // namespace fgpu::k8s::test
