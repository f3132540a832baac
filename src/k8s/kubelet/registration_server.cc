#include "k8s/kubelet/registration_server.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <mutex>
#include <optional>

#include "k8s/kubelet/unix_grpc_server.h"
#include "pluginregistration.grpc.pb.h"

namespace fgpu::k8s {

std::string RegistrationSocketPath(const std::string& registry_dir, const std::string& name) {
  return registry_dir + "/" + name + "-reg.sock";
}

namespace {

class RegistrationService final : public ::pluginregistration::Registration::Service {
 public:
  RegistrationService(PluginInfo info, RegistrationServer::OnReport on_report)
      : info_(std::move(info)), on_report_(std::move(on_report)) {}

  grpc::Status GetInfo(grpc::ServerContext*, const ::pluginregistration::InfoRequest*,
                       ::pluginregistration::PluginInfo* out) override {
    out->set_type(info_.type);
    out->set_name(info_.name);
    out->set_endpoint(info_.endpoint);
    for (const auto& v : info_.supported_versions) out->add_supported_versions(v);
    std::lock_guard lock(mu_);
    ++info_requests_;
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*, const ::pluginregistration::RegistrationStatus* in,
                                        ::pluginregistration::RegistrationStatusResponse*) override {
    RegistrationReport report{in->plugin_registered(), in->error()};
    {
      std::lock_guard lock(mu_);
      report_ = report;
    }
    changed_.notify_all();
    if (on_report_) on_report_(report);
    return grpc::Status::OK;
  }

  Status Registered(std::chrono::milliseconds wait) const {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, wait, [&] { return report_.has_value(); });
    if (!report_) {
      return Status::Unavailable("no kubelet has registered plugin " + info_.name + " yet (no NotifyRegistrationStatus)");
    }
    if (!report_->registered) {
      return Status::InvalidArgument("the kubelet refused plugin " + info_.name + ": " +
                                     (report_->error.empty() ? "(no reason given)" : report_->error));
    }
    return Status::Ok();
  }

  int info_requests() const {
    std::lock_guard lock(mu_);
    return info_requests_;
  }

 private:
  const PluginInfo info_;
  const RegistrationServer::OnReport on_report_;
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  std::optional<RegistrationReport> report_;
  int info_requests_ = 0;
};

}  // namespace

struct RegistrationServer::Impl {
  std::string path;
  std::unique_ptr<RegistrationService> service;
  std::unique_ptr<UnixGrpcServer> server;
};

Result<std::unique_ptr<RegistrationServer>> RegistrationServer::Start(const std::string& registry_dir, PluginInfo info,
                                                                      OnReport on_report) {
  if (info.type.empty() || info.name.empty() || info.endpoint.empty()) {
    return Status::InvalidArgument("plugin info needs a type, a name and an endpoint");
  }
  if (info.name.find('/') != std::string::npos) {
    return Status::InvalidArgument("plugin name " + info.name + " would make a socket path outside " + registry_dir);
  }
  auto impl = std::make_unique<Impl>();
  impl->path = RegistrationSocketPath(registry_dir, info.name);
  impl->service = std::make_unique<RegistrationService>(std::move(info), std::move(on_report));
  auto server = UnixGrpcServer::Start(impl->path, {impl->service.get()});
  if (!server.ok()) return server.status();
  impl->server = std::move(server).value();
  return std::unique_ptr<RegistrationServer>(new RegistrationServer(std::move(impl)));
}

RegistrationServer::RegistrationServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RegistrationServer::~RegistrationServer() { Stop(); }

Status RegistrationServer::Registered() const { return impl_->service->Registered(std::chrono::milliseconds(0)); }
Status RegistrationServer::WaitRegistered(std::chrono::milliseconds timeout) const {
  return impl_->service->Registered(timeout);
}
int RegistrationServer::info_requests() const { return impl_->service->info_requests(); }
const std::string& RegistrationServer::socket_path() const { return impl_->path; }

void RegistrationServer::Stop() {
  if (impl_->server) impl_->server->Shutdown();
  impl_->server.reset();
}

}  // namespace fgpu::k8s
