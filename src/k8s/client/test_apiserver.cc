#include "k8s/client/test_apiserver.h"

#include <poll.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <curl/curl.h>

namespace fgpu::k8s::testing {
namespace {

bool Executable(const char* path) { return path[0] != 0 && access(path, X_OK) == 0; }

Status Shell(const std::string& script) {
  int rc = std::system(("/bin/sh -ec '" + script + "' >/dev/null 2>&1").c_str());
  if (rc != 0) return Status::Internal("test PKI: command failed (" + std::to_string(rc) + "): " + script);
  return Status::Ok();
}

size_t Collect(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

}  // namespace

std::string MissingPrerequisite() {
  if (!Executable(FGPU_PYTHON3)) return "python3 not found";
  if (!Executable(FGPU_OPENSSL)) return "openssl not found";
  if (!std::filesystem::exists(std::string(FGPU_K8S_REFERENCE) + "/resource.k8s.io-v1.schema.json")) {
    return std::string("reference schemas absent at ") + FGPU_K8S_REFERENCE;
  }
  return "";
}

Result<TestPki> MakeTestPki() {
  char tmpl[] = "/tmp/fgpu-k8s-pki-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Status::Unavailable("mkdtemp failed");
  TestPki pki;
  pki.dir = tmpl;
  const std::string d = pki.dir + "/";
  const std::string o = FGPU_OPENSSL;
  pki.ca_crt = d + "ca.crt";
  pki.ca_key = d + "ca.key";
  pki.server_crt = d + "server.crt";
  pki.server_key = d + "server.key";
  pki.rogue_crt = d + "rogue.crt";
  pki.rogue_key = d + "rogue.key";
  pki.client_crt = d + "client.crt";
  pki.client_key = d + "client.key";
  pki.token_file = d + "token";
  {
    std::ofstream ext(d + "server.ext");
    ext << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
  }
  auto ca = [&](const std::string& name) {
    return o + " req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=" + name +
           " -keyout " + d + name + ".key -out " + d + name + ".crt";
  };
  auto leaf = [&](const std::string& name, const std::string& cn, const std::string& signer, bool server) {
    return o + " req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=" + cn + " -keyout " + d + name +
           ".key -out " + d + name + ".csr && " + o + " x509 -req -days 2 -in " + d + name + ".csr -CA " + d +
           signer + ".crt -CAkey " + d + signer + ".key -CAcreateserial -out " + d + name + ".crt" +
           (server ? " -extfile " + d + "server.ext" : "");
  };
  for (const std::string& step :
       {ca("ca"), ca("rogue-ca"), leaf("server", "localhost", "ca", true), leaf("rogue", "localhost", "rogue-ca", true),
        leaf("client", "fgpu-test", "ca", false)}) {
    if (Status s = Shell(step); !s.ok()) return s;
  }
  std::ofstream(pki.token_file) << pki.token << "\n";
  return pki;
}

Result<std::unique_ptr<TestApiServer>> TestApiServer::Start(const ServerOptions& options) {
  auto pki = MakeTestPki();
  if (!pki) return pki.status();
  std::unique_ptr<TestApiServer> server(new TestApiServer());
  server->pki_ = *pki;
  std::vector<std::string> args = {FGPU_PYTHON3,
                                   FGPU_FAKE_APISERVER,
                                   "--cert", options.rogue_certificate ? pki->rogue_crt : pki->server_crt,
                                   "--key", options.rogue_certificate ? pki->rogue_key : pki->server_key,
                                   "--token-file", pki->token_file,
                                   "--reference", FGPU_K8S_REFERENCE,
                                   "--port", "0",
                                   "--bookmark-interval", std::to_string(options.bookmark_interval),
                                   "--history", std::to_string(options.history)};
  if (options.client_cert_auth) {
    args.push_back("--client-ca");
    args.push_back(pki->ca_crt);
  }
  int out[2];
  if (pipe(out) != 0) return Status::Unavailable("pipe failed");
  pid_t pid = fork();
  if (pid < 0) return Status::Unavailable("fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // a crashed or killed test leaves no server behind
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  server->pid_ = pid;
  // First line: {"port": P, "control_port": C}
  std::string line;
  pollfd pfd{out[0], POLLIN, 0};
  while (line.find('\n') == std::string::npos) {
    if (poll(&pfd, 1, 20'000) <= 0) break;
    char buf[256];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  auto ports = nlohmann::json::parse(line.substr(0, line.find('\n')), nullptr, false);
  if (!ports.is_object() || !ports.contains("port")) {
    return Status::Unavailable("fake API server did not start (first line: '" + line + "')");
  }
  server->port_ = ports["port"].get<int>();
  server->control_port_ = ports["control_port"].get<int>();
  return server;
}

TestApiServer::~TestApiServer() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (!pki_.dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(pki_.dir, ec);
  }
}

KubeConfig TestApiServer::Config() const {
  KubeConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(port_);
  config.ca_file = pki_.ca_crt;
  config.token_file = pki_.token_file;
  config.user_agent = "fgpu-test";
  return config;
}

Result<nlohmann::json> TestApiServer::Control(const std::string& method, const std::string& path,
                                              const nlohmann::json& body) const {
  CURL* h = curl_easy_init();
  std::string url = "http://127.0.0.1:" + std::to_string(control_port_) + path;
  std::string reply;
  std::string payload = body.is_null() ? "" : body.dump();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method != "GET") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(payload.size()));
  }
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10'000L);
  CURLcode rc = curl_easy_perform(h);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(h);
  if (rc != CURLE_OK || code != 200) {
    return Status::Unavailable("control " + method + " " + path + " failed: " + curl_easy_strerror(rc) + " " + reply);
  }
  return nlohmann::json::parse(reply, nullptr, false);
}

Status TestApiServer::Fault(const std::string& method, const std::string& path_prefix, int count,
                            const std::string& action, int status, int retry_after) const {
  nlohmann::json spec = {{"method", method}, {"path_prefix", path_prefix}, {"count", count}, {"action", action},
                         {"status", status}};
  if (retry_after >= 0) spec["retry_after"] = retry_after;
  return Control("POST", "/faults", spec).status();
}

Status TestApiServer::Reply(const std::string& method, const std::string& path_prefix, int count, int status,
                            const std::string& body) const {
  const nlohmann::json spec = {{"method", method}, {"path_prefix", path_prefix}, {"count", count},
                               {"action", "reply"},  {"status", status},           {"body", body}};
  return Control("POST", "/faults", spec).status();
}

Status TestApiServer::ClearRequests() const { return Control("DELETE", "/requests").status(); }

}  // namespace fgpu::k8s::testing
