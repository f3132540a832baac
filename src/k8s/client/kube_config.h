// Where the API server is and how to prove who we are: in-cluster service-account config or a
// kubeconfig file. TLS is always verified: a kubeconfig with insecure-skip-tls-verify is refused.
#pragma once

#include <string>

#include "core/status.h"

namespace fgpu::k8s {

struct KubeConfig {
  std::string server{};       // https://host:port, no trailing slash
  std::string ca_file{};      // PEM bundle that signs the server's certificate
  std::string ca_data_pem{};  // or the bundle itself; neither: the system's CA store
  std::string token{};        // bearer token
  std::string token_file{};   // or a file holding it, re-read whenever it changes (projected tokens rotate)
  std::string client_cert_file, client_key_file;          // PEM client certificate and key
  std::string client_cert_data_pem, client_key_data_pem;  // or the PEM text (handed to libcurl as blobs)
  std::string user_agent = "fgpu";
  std::string default_namespace{};  // the context's or the service account's namespace, "" if none
};

// The service-account files a pod sees; tests point them elsewhere.
struct InClusterPaths {
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};

// From KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT and the service-account files.
// NotFound when not running in a pod (no env), Unavailable when the files are unreadable.
Result<KubeConfig> InClusterConfig(const InClusterPaths& paths = {});

// A kubeconfig file, YAML (the subset of yaml_subset.h) or JSON. `context` "" uses
// current-context. Relative file paths resolve against the kubeconfig's directory, as kubectl
// does. Refused (InvalidArgument): insecure-skip-tls-verify, exec and auth-provider plugins,
// a plain-http server.
Result<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// Standard base64 (padding optional, whitespace ignored), as kubeconfig *-data fields use.
Result<std::string> DecodeBase64(const std::string& text);

}  // namespace fgpu::k8s
