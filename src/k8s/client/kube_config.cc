#include "k8s/client/kube_config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "k8s/client/yaml_subset.h"

namespace fgpu::k8s {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Unavailable("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// A named entry of a kubeconfig list (clusters, users, contexts): its inner object.
Result<nlohmann::json> Named(const nlohmann::json& doc, const std::string& list, const std::string& field,
                             const std::string& name) {
  if (doc.contains(list) && doc[list].is_array()) {
    for (const auto& entry : doc[list]) {
      if (entry.is_object() && entry.value("name", nlohmann::json()) == name) {
        auto inner = entry.value(field, nlohmann::json::object());
        if (!inner.is_object()) return Status::InvalidArgument(list + " '" + name + "': '" + field + "' is not a mapping");
        return inner;
      }
    }
  }
  return Status::NotFound("kubeconfig has no " + field + " named '" + name + "'");
}

Result<std::string> String(const nlohmann::json& obj, const std::string& key) {
  if (!obj.contains(key) || obj[key].is_null()) return std::string();
  if (!obj[key].is_string()) return Status::InvalidArgument("kubeconfig field '" + key + "' is not a string");
  return obj[key].get<std::string>();
}

bool Truthy(const nlohmann::json& obj, const std::string& key) {
  if (!obj.contains(key)) return false;
  const auto& v = obj[key];
  return (v.is_boolean() && v.get<bool>()) || (v.is_string() && v.get<std::string>() == "true");
}

std::string Resolve(const std::string& dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || dir.empty()) return path;
  return dir + "/" + path;
}

// *-data (base64 PEM) or the file path, resolved.
Status FileOrData(const nlohmann::json& obj, const std::string& file_key, const std::string& dir,
                  std::string* file, std::string* data) {
  auto encoded = String(obj, file_key + "-data");
  if (!encoded) return encoded.status();
  if (!encoded->empty()) {
    auto pem = DecodeBase64(*encoded);
    if (!pem) return Status::InvalidArgument(file_key + "-data: " + pem.status().message());
    *data = std::move(*pem);
    return Status::Ok();
  }
  auto path = String(obj, file_key);
  if (!path) return path.status();
  *file = Resolve(dir, *path);
  return Status::Ok();
}

}  // namespace

Result<std::string> DecodeBase64(const std::string& text) {
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') { padding = true; continue; }
    else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    else return Status::InvalidArgument("invalid base64 character");
    if (padding) return Status::InvalidArgument("base64 data after padding");
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  if (bits >= 6) return Status::InvalidArgument("truncated base64 data");
  return out;
}

Result<KubeConfig> InClusterConfig(const InClusterPaths& paths) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == 0 || *port == 0) {
    return Status::NotFound("not in a cluster: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset");
  }
  KubeConfig config;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6 literal
  config.server = "https://" + h + ":" + port;
  auto token = ReadFile(paths.token_file);  // read now so a pod without a token fails at startup
  if (!token) return token.status();
  if (Trim(*token).empty()) return Status::Unavailable(paths.token_file + " is empty");
  config.token_file = paths.token_file;
  std::ifstream ca(paths.ca_file);
  if (!ca) return Status::Unavailable("cannot read " + paths.ca_file);
  config.ca_file = paths.ca_file;
  if (auto ns = ReadFile(paths.namespace_file)) config.default_namespace = Trim(*ns);
  return config;
}

Result<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadFile(path);
  if (!text) return text.status();
  nlohmann::json doc;
  std::string trimmed = Trim(*text);
  if (!trimmed.empty() && trimmed[0] == '{') {
    doc = nlohmann::json::parse(trimmed, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return Status::InvalidArgument(path + ": not valid JSON");
  } else {
    auto parsed = ParseYamlSubset(*text);
    if (!parsed) return Status::InvalidArgument(path + ": " + parsed.status().message());
    doc = std::move(*parsed);
  }
  if (!doc.is_object()) return Status::InvalidArgument(path + ": not a kubeconfig mapping");
  auto current = String(doc, "current-context");
  if (!current) return current.status();
  std::string ctx_name = context.empty() ? *current : context;
  if (ctx_name.empty()) return Status::InvalidArgument(path + ": no context given and no current-context");
  auto ctx = Named(doc, "contexts", "context", ctx_name);
  if (!ctx) return ctx.status();
  auto cluster_name = String(*ctx, "cluster");
  auto user_name = String(*ctx, "user");
  if (!cluster_name || !user_name) return Status::InvalidArgument(path + ": context '" + ctx_name + "' is malformed");
  auto cluster = Named(doc, "clusters", "cluster", *cluster_name);
  if (!cluster) return cluster.status();
  nlohmann::json user = nlohmann::json::object();
  if (!user_name->empty()) {
    auto found = Named(doc, "users", "user", *user_name);
    if (!found) return found.status();
    user = std::move(*found);
  }

  std::string dir;
  if (size_t slash = path.rfind('/'); slash != std::string::npos) dir = path.substr(0, slash);
  KubeConfig config;
  if (auto ns = String(*ctx, "namespace")) config.default_namespace = *ns;
  auto server = String(*cluster, "server");
  if (!server) return server.status();
  config.server = *server;
  while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
  if (config.server.rfind("https://", 0) != 0) {
    return Status::InvalidArgument(path + ": cluster '" + *cluster_name + "' server '" + config.server +
                                   "' is not https:// (fgpu talks to the API server over verified TLS only)");
  }
  if (Truthy(*cluster, "insecure-skip-tls-verify")) {
    return Status::InvalidArgument(path + ": cluster '" + *cluster_name +
                                   "' sets insecure-skip-tls-verify; fgpu always verifies the API server's "
                                   "certificate (give certificate-authority or certificate-authority-data)");
  }
  if (Status s = FileOrData(*cluster, "certificate-authority", dir, &config.ca_file, &config.ca_data_pem); !s.ok()) {
    return s;
  }
  if (user.contains("exec") || user.contains("auth-provider")) {
    return Status::InvalidArgument(path + ": user '" + *user_name +
                                   "' uses an exec or auth-provider plugin, which fgpu does not run");
  }
  if (Status s = FileOrData(user, "client-certificate", dir, &config.client_cert_file, &config.client_cert_data_pem);
      !s.ok()) {
    return s;
  }
  if (Status s = FileOrData(user, "client-key", dir, &config.client_key_file, &config.client_key_data_pem); !s.ok()) {
    return s;
  }
  auto token = String(user, "token");
  auto token_file = String(user, "tokenFile");
  if (!token || !token_file) return Status::InvalidArgument(path + ": user '" + *user_name + "' is malformed");
  config.token = *token;
  config.token_file = Resolve(dir, *token_file);
  bool has_cert = !config.client_cert_file.empty() || !config.client_cert_data_pem.empty();
  bool has_key = !config.client_key_file.empty() || !config.client_key_data_pem.empty();
  if (has_cert != has_key) {
    return Status::InvalidArgument(path + ": user '" + *user_name + "' has a client certificate without its key or "
                                   "the other way round");
  }
  return config;
}

}  // namespace fgpu::k8s
