#include "plugin_watcher.h"

#include <grpcpp/grpcpp.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "k8s/kubelet/unix_grpc_server.h"
#include "pluginregistration.grpc.pb.h"

namespace fgpu::k8s::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

bool IsSocket(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

std::chrono::system_clock::time_point Deadline(std::chrono::milliseconds timeout) {
  return std::chrono::system_clock::now() + timeout;
}

// GetInfo, retried while the socket exists but does not accept yet.
Result<pluginregistration::PluginInfo> GetInfo(const std::string& socket, std::chrono::milliseconds timeout) {
  auto stub = pluginregistration::Registration::NewStub(DialUnix(socket));
  auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(1s));
    pluginregistration::PluginInfo info;
    grpc::Status st = stub->GetInfo(&ctx, {}, &info);
    if (st.ok()) return info;
    if (st.error_code() != grpc::StatusCode::UNAVAILABLE || std::chrono::steady_clock::now() >= until) {
      return Status::Unavailable("GetInfo on " + socket + " failed: " + st.error_message());
    }
    std::this_thread::sleep_for(50ms);
  }
}

Status Notify(const std::string& socket, bool registered, const std::string& error) {
  auto stub = pluginregistration::Registration::NewStub(DialUnix(socket));
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(5s));
  pluginregistration::RegistrationStatus in;
  in.set_plugin_registered(registered);
  in.set_error(error);
  pluginregistration::RegistrationStatusResponse out;
  grpc::Status st = stub->NotifyRegistrationStatus(&ctx, in, &out);
  if (!st.ok()) return Status::Unavailable("NotifyRegistrationStatus on " + socket + " failed: " + st.error_message());
  return Status::Ok();
}

// The kubelet connects to the endpoint it was given before it reports success.
Status Dial(const std::string& endpoint, std::chrono::milliseconds timeout) {
  auto channel = DialUnix(endpoint);
  if (!channel->WaitForConnected(Deadline(timeout))) {
    return Status::Unavailable("cannot connect to endpoint " + endpoint);
  }
  return Status::Ok();
}

void AppendLine(const std::string& file, const nlohmann::json& line) {
  std::ofstream out(file, std::ios::app);
  out << line.dump() << "\n";
}

std::string Now() {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
}

}  // namespace

nlohmann::json PluginRegistration::ToJson() const {
  nlohmann::json j{{"registered", registered}, {"socket", socket}, {"type", type},
                   {"name", name},             {"endpoint", endpoint}, {"versions", versions}};
  if (!registered) j["error"] = error;
  return j;
}

Status ValidatePluginInfo(const pluginregistration::PluginInfo& info, const std::string& want_type,
                          const std::string& want_name) {
  if (info.type() != want_type) {
    return Status::InvalidArgument("no handler registered for plugin type: " + info.type() + " (this kubelet handles " +
                                   want_type + ")");
  }
  if (info.name().empty()) return Status::InvalidArgument("plugin name is empty");
  if (!want_name.empty() && info.name() != want_name) {
    return Status::InvalidArgument("plugin name " + info.name() + " is not the expected " + want_name);
  }
  const std::string& endpoint = info.endpoint();
  if (endpoint.empty() || endpoint[0] != '/') {
    return Status::InvalidArgument("endpoint '" + endpoint + "' is not an absolute path");
  }
  if (!IsSocket(endpoint)) return Status::InvalidArgument("endpoint " + endpoint + " is not an existing socket");
  std::vector<std::string> accepted = want_type == "DRAPlugin" ? std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin"}
                                                               : std::vector<std::string>{"v1beta1"};
  for (const auto& v : info.supported_versions()) {
    for (const auto& a : accepted) {
      if (v == a) return Status::Ok();
    }
  }
  std::string listed;
  for (const auto& v : info.supported_versions()) listed += (listed.empty() ? "" : ", ") + v;
  return Status::InvalidArgument("none of the plugin's supported versions [" + listed +
                                 "] is supported by this kubelet");
}

Result<PluginRegistration> RegisterPlugin(const std::string& socket, const std::string& want_type,
                                          const std::string& want_name, std::chrono::milliseconds timeout) {
  auto info = GetInfo(socket, timeout);
  if (!info.ok()) return info.status();
  PluginRegistration r{false, socket, info->type(), info->name(), info->endpoint(),
                       {info->supported_versions().begin(), info->supported_versions().end()}, ""};
  Status valid = ValidatePluginInfo(*info, want_type, want_name);
  if (valid.ok()) valid = Dial(info->endpoint(), timeout);
  r.registered = valid.ok();
  r.error = valid.message();
  if (Status s = Notify(socket, r.registered, r.error); !s.ok()) return s;
  return r;
}

Result<std::string> WaitForRegistrationSocket(const std::string& dir, const std::string& name,
                                              std::chrono::milliseconds timeout) {
  const std::string own = dir + "/" + name + "-reg.sock";
  auto until = std::chrono::steady_clock::now() + timeout;
  do {
    if (IsSocket(own)) return own;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::string path = entry.path().string();
      if (!IsSocket(path)) continue;
      auto info = GetInfo(path, 0ms);
      if (info.ok() && info->name() == name) return path;
    }
    std::this_thread::sleep_for(50ms);
  } while (std::chrono::steady_clock::now() < until);
  return Status::NotFound("no registration socket for " + name + " appeared in " + dir + " within " +
                          std::to_string(timeout.count()) + " ms");
}

Status WatchRegistry(const std::string& dir, const std::string& want_type, const std::string& name,
                     const std::string& events_file) {
  int fd = inotify_init1(IN_CLOEXEC);
  if (fd < 0 || inotify_add_watch(fd, dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM) < 0) {
    return Status::Unavailable("cannot watch " + dir + ": " + std::strerror(errno));
  }
  std::set<std::string> registered;  // sockets we registered: their removal is an event
  auto handle = [&](const std::string& path) {
    // The kubelet skips dot-files (fgpu binds its sockets in a dot-directory before renaming).
    if (fs::path(path).filename().string().starts_with(".") || !IsSocket(path)) return;
    auto info = GetInfo(path, 5s);
    if (!info.ok()) {
      AppendLine(events_file, {{"event", "failed"}, {"socket", path}, {"error", info.status().message()}, {"ms", Now()}});
      return;
    }
    if (!name.empty() && info->name() != name) return;  // another plugin's
    auto r = RegisterPlugin(path, want_type, name, 5s);
    nlohmann::json line = r.ok() ? r->ToJson() : nlohmann::json{{"socket", path}, {"error", r.status().message()}};
    line["event"] = !r.ok() ? "failed" : r->registered ? "registered" : "refused";
    line["ms"] = Now();
    AppendLine(events_file, line);
    if (r.ok() && r->registered) registered.insert(path);
  };
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) handle(entry.path().string());
  alignas(inotify_event) char buf[16 * 1024];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return Status::Unavailable("watching " + dir + ": " + std::strerror(errno));
    }
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      if (ev->len == 0) continue;
      std::string path = dir + "/" + ev->name;
      if (ev->mask & (IN_CREATE | IN_MOVED_TO)) handle(path);
      if ((ev->mask & (IN_DELETE | IN_MOVED_FROM)) && registered.erase(path) > 0) {
        AppendLine(events_file, {{"event", "removed"}, {"socket", path}, {"ms", Now()}});
      }
    }
  }
}

}  // namespace fgpu::k8s::test
