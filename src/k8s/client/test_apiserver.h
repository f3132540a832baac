// Test support: the fake API server (tests/k8s/apiserver/fake_apiserver.py) on a free port over
// real TLS, with a throwaway PKI made by `openssl` in a temp dir, and its control endpoint.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "k8s/client/kube_config.h"

namespace fgpu::k8s::testing {

// Why a test cannot run here (python3, openssl or the reference schemas missing), "" if it can.
std::string MissingPrerequisite();

struct TestPki {
  std::string dir{};
  std::string ca_crt, ca_key;              // the CA the client trusts
  std::string server_crt, server_key;      // localhost / 127.0.0.1, signed by the CA
  std::string rogue_crt, rogue_key;        // the same names, signed by a CA nobody trusts
  std::string client_crt, client_key;      // CN=fgpu-test, signed by the CA
  std::string token_file{};                  // holds the bearer token
  std::string token = "test-token-1";
};

struct ServerOptions {
  bool rogue_certificate = false;  // serve a certificate the client's CA did not sign
  bool client_cert_auth = false;   // also accept client certificates from the CA
  double bookmark_interval = 0.3;
  int history = 1000;
};

class TestApiServer {
 public:
  static Result<std::unique_ptr<TestApiServer>> Start(const ServerOptions& options = {});
  ~TestApiServer();

  // A config that trusts the CA and sends the token (https://127.0.0.1:port).
  KubeConfig Config() const;
  const TestPki& pki() const { return pki_; }
  int port() const { return port_; }

  // The control endpoint (plain HTTP on loopback): method, path, JSON body -> JSON reply.
  Result<nlohmann::json> Control(const std::string& method, const std::string& path,
                                 const nlohmann::json& body = nullptr) const;
  // Fails the next `count` requests matching method + path prefix (see fake_apiserver.py).
  Status Fault(const std::string& method, const std::string& path_prefix, int count, const std::string& action,
               int status = 500, int retry_after = -1) const;
  // Answers the next `count` requests matching method + path prefix with `status` and exactly `body`.
  Status Reply(const std::string& method, const std::string& path_prefix, int count, int status,
               const std::string& body) const;
  // The API requests the server saw since the last ClearRequests.
  Result<nlohmann::json> Requests() const { return Control("GET", "/requests"); }
  Status ClearRequests() const;

 private:
  TestApiServer() = default;
  TestPki pki_;
  pid_t pid_ = -1;
  int port_ = 0;
  int control_port_ = 0;
};

// Makes the PKI in a fresh temp dir.
Result<TestPki> MakeTestPki();

}  // namespace fgpu::k8s::testing
