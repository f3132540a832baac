#include "k8s/dra/cdi_spec.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fgpu::k8s {
namespace {

using nlohmann::json;

constexpr const char* kSpecPrefix = "gpu.fgpu.io-";
constexpr const char* kSpecSuffix = ".json";

json EditsOf(const CdiDevice& device) {
  json env = json::array();
  for (const auto& [name, value] : device.env) env.push_back(name + "=" + value);
  json mounts = json::array();
  for (const CdiMount& mount : device.mounts) {
    json options = json::array({mount.read_only ? "ro" : "rw", "nosuid", "nodev", "rbind"});
    mounts.push_back(json{{"hostPath", mount.path}, {"containerPath", mount.path}, {"options", std::move(options)}});
  }
  json nodes = json::array();
  for (const std::string& path : device.device_nodes) nodes.push_back(json{{"path", path}});
  json edits = {{"env", std::move(env)}, {"mounts", std::move(mounts)}};
  if (!nodes.empty()) edits["deviceNodes"] = std::move(nodes);
  return edits;
}

Status Errno(const std::string& what, const std::string& path) {
  return Status::Internal(what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

std::string CdiIdOf(const std::string& device_name) { return std::string(kCdiVendorClass) + "=" + device_name; }

json BuildCdiSpec(const std::vector<CdiDevice>& devices) {
  json list = json::array();
  for (const CdiDevice& device : devices) list.push_back(json{{"name", device.name}, {"containerEdits", EditsOf(device)}});
  return json{{"cdiVersion", "0.6.0"}, {"kind", kCdiVendorClass}, {"devices", std::move(list)}};
}

std::string CdiSpecPath(const std::string& dir, const std::string& claim_uid) {
  return dir + "/" + kSpecPrefix + claim_uid + kSpecSuffix;
}

Status WriteCdiSpec(const std::string& path, const json& spec) { return WriteJsonAtomically(path, spec, 0644); }

Status WriteJsonAtomically(const std::string& path, const json& object, unsigned mode) {
  const std::string text = object.dump(2) + "\n";
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Errno("cannot create", temporary);
  ::fchmod(fd, static_cast<mode_t>(mode));
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const Status status = Errno("cannot write", temporary);
      ::close(fd);
      ::unlink(temporary.c_str());
      return status;
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const Status status = Errno("cannot flush", temporary);
    ::unlink(temporary.c_str());
    return status;
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const Status status = Errno("cannot rename to", path);
    ::unlink(temporary.c_str());
    return status;
  }
  return Status::Ok();
}

Status RemoveCdiSpec(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("cannot remove", path);
  return Status::Ok();
}

std::vector<std::string> ListCdiSpecClaims(const std::string& dir) {
  std::vector<std::string> claims;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return claims;
  const std::string prefix = kSpecPrefix, suffix = kSpecSuffix;
  while (const dirent* entry = ::readdir(handle)) {
    const std::string name = entry->d_name;
    if (name.size() > prefix.size() + suffix.size() && name.rfind(prefix, 0) == 0 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      claims.push_back(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
    }
  }
  ::closedir(handle);
  return claims;
}

}  // namespace fgpu::k8s
