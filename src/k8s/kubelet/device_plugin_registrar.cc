#include "k8s/kubelet/device_plugin_registrar.h"

#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "deviceplugin_v1beta1.grpc.pb.h"
#include "k8s/kubelet/unix_grpc_server.h"

namespace fgpu::k8s {

Status ValidateRegistration(const DevicePluginRegistration& r) {
  if (r.endpoint.empty() || r.endpoint.find('/') != std::string::npos || r.endpoint == kKubeletSocketName) {
    return Status::InvalidArgument("device plugin endpoint '" + r.endpoint +
                                   "' must be a socket file name inside the device plugin directory");
  }
  size_t slash = r.resource_name.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == r.resource_name.size()) {
    return Status::InvalidArgument("resource name '" + r.resource_name + "' must be <domain>/<name>");
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(r.plugin_dir, ec)) {
    return Status::NotFound("device plugin directory " + r.plugin_dir + " does not exist");
  }
  if (!FitsUnixSocketPath(r.plugin_dir + "/" + r.endpoint)) {
    return Status::InvalidArgument("socket path " + r.plugin_dir + "/" + r.endpoint + " is too long");
  }
  return Status::Ok();
}

Status RegisterDevicePlugin(const DevicePluginRegistration& r, std::chrono::milliseconds timeout) {
  if (Status s = ValidateRegistration(r); !s.ok()) return s;
  const std::string kubelet = r.plugin_dir + "/" + kKubeletSocketName;
  auto stub = ::v1beta1::Registration::NewStub(DialUnix(kubelet));
  ::v1beta1::RegisterRequest req;
  req.set_version(kDevicePluginApiVersion);
  req.set_endpoint(r.endpoint);
  req.set_resource_name(r.resource_name);
  req.mutable_options()->set_pre_start_required(r.pre_start_required);
  req.mutable_options()->set_get_preferred_allocation_available(r.get_preferred_allocation_available);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  ::v1beta1::Empty out;
  grpc::Status st = stub->Register(&ctx, req, &out);
  if (st.ok()) return Status::Ok();
  if (st.error_code() == grpc::StatusCode::UNAVAILABLE || st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return Status::Unavailable("no kubelet answers on " + kubelet + ": " + st.error_message());
  }
  return Status::InvalidArgument("the kubelet refused device plugin " + r.resource_name + " (endpoint " + r.endpoint +
                                 "): " + st.error_message());
}

namespace {

// Retries while the kubelet is not listening yet (its socket file appears at bind, a moment
// before it accepts).
Status RegisterWithin(const DevicePluginRegistration& r, std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    Status s = RegisterDevicePlugin(r, std::max(left, std::chrono::milliseconds(100)));
    if (s.code() != StatusCode::kUnavailable || std::chrono::steady_clock::now() >= until) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

struct DevicePluginRegistrar::Impl {
  DevicePluginRegistration reg;
  Hooks hooks;
  std::chrono::milliseconds timeout{};
  int inotify = -1;
  int stop = -1;  // eventfd: wakes the watcher to exit
  std::thread watcher;
  mutable std::mutex mu;
  Status last;
  int registrations = 0;

  ~Impl() {
    if (inotify >= 0) close(inotify);
    if (stop >= 0) close(stop);
  }

  void Record(const Status& s, bool report) {
    {
      std::lock_guard lock(mu);
      last = s;
      if (s.ok()) ++registrations;
    }
    if (report && hooks.on_register) hooks.on_register(s);
  }

  bool EndpointExists() const {
    std::error_code ec;
    return std::filesystem::exists(reg.plugin_dir + "/" + reg.endpoint, ec);
  }

  void Recreate() {
    if (EndpointExists()) return;
    Status s = hooks.recreate_endpoint
                   ? hooks.recreate_endpoint()
                   : Status::Unavailable("socket " + reg.plugin_dir + "/" + reg.endpoint +
                                         " was deleted and nothing serves it again");
    if (!s.ok()) Record(s, true);
  }

  void Watch() {
    alignas(inotify_event) char buf[16 * 1024];
    for (;;) {
      pollfd fds[2] = {{inotify, POLLIN, 0}, {stop, POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        Record(Status::Internal(std::string("watching the device plugin directory: ") + std::strerror(errno)), true);
        return;
      }
      if (fds[1].revents != 0) return;
      ssize_t n = read(inotify, buf, sizeof buf);
      if (n <= 0) continue;
      bool kubelet_started = false, ours_deleted = false;
      for (char* p = buf; p < buf + n;) {
        auto* ev = reinterpret_cast<inotify_event*>(p);
        std::string name = ev->len > 0 ? ev->name : "";
        if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && name == kKubeletSocketName) kubelet_started = true;
        if ((ev->mask & (IN_DELETE | IN_MOVED_FROM)) && name == reg.endpoint) ours_deleted = true;
        if (ev->mask & IN_Q_OVERFLOW) kubelet_started = ours_deleted = true;  // events lost: assume the worst
        if (ev->mask & (IN_IGNORED | IN_DELETE_SELF)) {
          Record(Status::Unavailable("device plugin directory " + reg.plugin_dir + " was removed"), true);
          return;
        }
        p += sizeof(inotify_event) + ev->len;
      }
      if (ours_deleted) Recreate();
      if (kubelet_started) {
        Recreate();
        Record(RegisterWithin(reg, timeout), true);
      }
    }
  }
};

Result<std::unique_ptr<DevicePluginRegistrar>> DevicePluginRegistrar::Start(DevicePluginRegistration r, Hooks hooks,
                                                                            std::chrono::milliseconds timeout) {
  if (Status s = ValidateRegistration(r); !s.ok()) return s;
  auto impl = std::make_unique<Impl>();
  impl->reg = std::move(r);
  impl->hooks = std::move(hooks);
  impl->timeout = timeout;
  impl->inotify = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  impl->stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl->inotify < 0 || impl->stop < 0 ||
      inotify_add_watch(impl->inotify, impl->reg.plugin_dir.c_str(),
                        IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF) < 0) {
    return Status::Unavailable("cannot watch " + impl->reg.plugin_dir + ": " + std::strerror(errno));
  }
  // Watching before the first Register: a kubelet restart in between is not missed.
  Status first = RegisterWithin(impl->reg, timeout);
  if (!first.ok()) return first;
  impl->Record(first, false);
  Impl* raw = impl.get();
  impl->watcher = std::thread([raw] { raw->Watch(); });
  return std::unique_ptr<DevicePluginRegistrar>(new DevicePluginRegistrar(std::move(impl)));
}

DevicePluginRegistrar::DevicePluginRegistrar(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DevicePluginRegistrar::~DevicePluginRegistrar() { Stop(); }

Status DevicePluginRegistrar::last_status() const {
  std::lock_guard lock(impl_->mu);
  return impl_->last;
}

int DevicePluginRegistrar::registrations() const {
  std::lock_guard lock(impl_->mu);
  return impl_->registrations;
}

void DevicePluginRegistrar::Stop() {
  if (!impl_->watcher.joinable()) return;
  uint64_t one = 1;
  (void)!write(impl_->stop, &one, sizeof one);
  impl_->watcher.join();
}

}  // namespace fgpu::k8s
