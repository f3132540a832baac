#include "k8s/client/kube_client.h"

#include <sys/stat.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include <curl/curl.h>

#include "k8s/client/json_fields.h"

namespace fgpu::k8s {
namespace {

using std::chrono::milliseconds;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// One attempt's ending, before it is judged.
struct Exchange {
  CURLcode curl = CURLE_OK;
  std::string curl_error{};
  long http = 0;
  std::string body{};
  std::optional<milliseconds> retry_after;
  bool stopped = false;  // the stop token or the watch callback ended it: not a failure
};

// What an easy handle's callbacks write into.
struct Sink {
  Exchange* out = nullptr;
  CURL* handle = nullptr;
  // Streaming (watch): each complete line of a 200 response; false ends the transfer.
  std::function<bool(std::string_view)> on_line{};
  std::string pending{};
  bool callback_stopped = false;
};

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  std::string_view line(data, size * count);
  constexpr std::string_view kRetryAfter = "retry-after:";
  if (line.size() > kRetryAfter.size()) {
    std::string lower(line.substr(0, kRetryAfter.size()));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == kRetryAfter) {
      // Delay-seconds only; an HTTP-date falls back to our own backoff.
      std::string value(line.substr(kRetryAfter.size()));
      char* end = nullptr;
      long seconds = std::strtol(value.c_str(), &end, 10);
      if (end != value.c_str() && seconds >= 0) sink->out->retry_after = milliseconds(seconds * 1000);
    }
  }
  return size * count;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  size_t n = size * count;
  long code = 0;
  curl_easy_getinfo(sink->handle, CURLINFO_RESPONSE_CODE, &code);
  if (!sink->on_line || code != 200) {
    sink->out->body.append(data, n);
    return n;
  }
  sink->pending.append(data, n);
  size_t start = 0;
  for (size_t nl; (nl = sink->pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(sink->pending.data() + start, nl - start);
    if (line.empty()) continue;
    if (!sink->on_line(line)) {
      sink->callback_stopped = true;
      return 0;  // CURLE_WRITE_ERROR, read as a clean end
    }
  }
  sink->pending.erase(0, start);
  return n;
}

// curl_easy_perform, but through a multi handle polled every 50 ms so that a stop request ends
// an idle watch promptly (an easy handle's progress callback runs only about once a second
// while no data flows). A stop reads as CURLE_ABORTED_BY_CALLBACK.
CURLcode PerformStoppable(CURL* easy, const std::stop_token& stop) {
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) return CURLE_OUT_OF_MEMORY;
  curl_multi_add_handle(multi, easy);
  CURLcode result = CURLE_OK;
  for (bool done = false; !done;) {
    int running = 0;
    if (curl_multi_perform(multi, &running) != CURLM_OK) {
      result = CURLE_RECV_ERROR;
      break;
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE) {
        result = msg->data.result;
        done = true;
      }
    }
    if (done) break;
    if (stop.stop_requested()) {
      result = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    curl_multi_poll(multi, nullptr, 0, 50, nullptr);
  }
  curl_multi_remove_handle(multi, easy);
  curl_multi_cleanup(multi);
  return result;
}

const char* ReasonPhrase(long code) {
  switch (code) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
  }
}

// The error for an HTTP failure, with the meta.v1 Status message when the body is one.
Status HttpError(const std::string& what, long code, const std::string& body) {
  std::string reason;
  std::string message;
  auto status = nlohmann::json::parse(body, nullptr, false);
  if (StringMember(status, "kind") == "Status") {
    reason = StringMember(status, "reason");
    message = StringMember(status, "message");
  } else {
    message = body.substr(0, 512);
  }
  std::string text = what + ": HTTP " + std::to_string(code) + " " + (reason.empty() ? ReasonPhrase(code) : reason) +
                     (message.empty() ? "" : ": " + message);
  switch (code) {
    case 400:
    case 422:
    case 405:
    case 415:
      return Status::InvalidArgument(std::move(text));
    case 401:
    case 403:
      return Status::PermissionDenied(std::move(text));
    case 404:
      return Status::NotFound(std::move(text));
    case 409:
      if (reason == "AlreadyExists") return Status::InvalidArgument(std::move(text));
      return Status::VersionMismatch(std::move(text));
    case 410:
      return Status::VersionMismatch(std::move(text));
    case 429:
      return Status::ResourceExhausted(std::move(text));
    case 500:
      return Status::Internal(std::move(text));
    default:
      if (code >= 500) return Status::Unavailable(std::move(text));
      return Status::InvalidArgument(std::move(text));
  }
}

bool IsTlsVerifyFailure(CURLcode code) {
  return code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CERTPROBLEM || code == CURLE_SSL_CACERT_BADFILE ||
         code == CURLE_SSL_ISSUER_ERROR || code == CURLE_SSL_PINNEDPUBKEYNOTMATCH || code == CURLE_SSL_CRL_BADFILE;
}

AttemptOutcome Judge(const Exchange& ex) {
  if (ex.stopped) return AttemptOutcome::kDone;
  if (ex.curl != CURLE_OK) {
    switch (ex.curl) {
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_CONNECT:
      case CURLE_SSL_CONNECT_ERROR:  // handshake never completed: nothing was sent
        return AttemptOutcome::kNotSent;
      default:
        if (IsTlsVerifyFailure(ex.curl)) return AttemptOutcome::kDone;  // retrying cannot fix trust
        return AttemptOutcome::kMaybeProcessed;
    }
  }
  if (ex.http == 429 || ex.http == 503) return AttemptOutcome::kRejectedUnprocessed;
  if (ex.http == 500 || ex.http == 502 || ex.http == 504) return AttemptOutcome::kMaybeProcessed;
  return AttemptOutcome::kDone;
}

Status TransportError(const std::string& what, const Exchange& ex) {
  std::string detail = ex.curl_error.empty() ? curl_easy_strerror(ex.curl) : ex.curl_error;
  if (IsTlsVerifyFailure(ex.curl)) {
    return Status::Unavailable(what + ": TLS verification of the API server failed: " + detail);
  }
  return Status::Unavailable(what + ": " + detail);
}

std::string ContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge: return "application/merge-patch+json";
    case PatchType::kStrategicMerge: return "application/strategic-merge-patch+json";
    case PatchType::kJson: return "application/json-patch+json";
    case PatchType::kApply: return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

void AddQuery(std::string* url, const std::string& key, const std::string& value) {
  if (value.empty()) return;
  *url += (url->find('?') == std::string::npos ? '?' : '&');
  *url += key + "=" + UrlEncode(value);
}

}  // namespace

std::string UrlEncode(const std::string& value) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

int HttpStatusOf(const Status& status) {
  const std::string& m = status.message();
  size_t at = m.find(": HTTP ");
  if (at == std::string::npos || at + 10 > m.size()) return 0;
  int code = 0;
  for (size_t i = at + 7; i < at + 10; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(m[i]))) return 0;
    code = code * 10 + (m[i] - '0');
  }
  return code;
}

const char* WatchEventTypeName(WatchEvent::Type type) {
  switch (type) {
    case WatchEvent::Type::kAdded: return "ADDED";
    case WatchEvent::Type::kModified: return "MODIFIED";
    case WatchEvent::Type::kDeleted: return "DELETED";
    case WatchEvent::Type::kBookmark: return "BOOKMARK";
    case WatchEvent::Type::kError: return "ERROR";
  }
  return "?";
}

class KubeClient::Transport {
 public:
  Transport(KubeConfig config, ClientOptions options) : config_(std::move(config)), options_(std::move(options)) {}

  ~Transport() {
    for (CURL* h : idle_) curl_easy_cleanup(h);
  }

  const KubeConfig& config() const { return config_; }
  const ClientOptions& options() const { return options_; }

  struct Request {
    std::string method{};
    std::string url_path{};  // path and query
    std::optional<std::string> body{};
    std::string content_type{};
    bool idempotent = true;
    milliseconds timeout{0};  // 0: options_.request_timeout; negative: none
    std::function<bool(std::string_view)> on_line{};  // streaming
    std::stop_token stop{};
    // Streaming: set once a line was delivered, so a later failure is not retried.
    bool* delivered = nullptr;
  };

  // One request with the retry policy applied. Returns the last exchange (a 2xx, or the error
  // to report) or the transport error.
  Result<Exchange> Run(const Request& req) const {
    std::string what = req.method + " " + req.url_path;
    for (int attempt = 1;; ++attempt) {
      Exchange ex = Attempt(req);
      AttemptOutcome outcome = Judge(ex);
      if (req.delivered != nullptr && *req.delivered) outcome = AttemptOutcome::kDone;
      auto wait = RetryDelay(options_.retry, attempt, outcome, req.idempotent, ex.retry_after);
      if (!wait) {
        if (ex.curl != CURLE_OK && !ex.stopped) {
          if (req.delivered != nullptr && *req.delivered) return ex;  // the stream broke: caller resumes
          return TransportError(what, ex);
        }
        return ex;
      }
      for (auto until = std::chrono::steady_clock::now() + *wait; std::chrono::steady_clock::now() < until;) {
        if (req.stop.stop_requested()) {
          ex.stopped = true;
          return ex;
        }
        std::this_thread::sleep_for(std::min<milliseconds>(milliseconds(50), *wait));
      }
    }
  }

  Result<std::string> Token() const {
    if (config_.token_file.empty()) return config_.token;
    std::lock_guard lock(token_mu_);
    struct stat st{};
    if (stat(config_.token_file.c_str(), &st) != 0) {
      if (!token_.empty()) return token_;  // mid-rotation: keep the last one
      return Status::Unavailable("cannot stat token file " + config_.token_file);
    }
    if (token_.empty() || st.st_mtim.tv_sec != token_mtime_.tv_sec || st.st_mtim.tv_nsec != token_mtime_.tv_nsec ||
        st.st_ino != token_ino_ || st.st_size != token_size_) {
      std::ifstream in(config_.token_file);
      std::stringstream text;
      text << in.rdbuf();
      std::string token = text.str();
      while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
      if (!in || token.empty()) {
        if (!token_.empty()) return token_;
        return Status::Unavailable("cannot read token file " + config_.token_file);
      }
      token_ = std::move(token);
      token_mtime_ = st.st_mtim;
      token_ino_ = st.st_ino;
      token_size_ = st.st_size;
    }
    return token_;
  }

 private:
  CURL* Acquire() const {
    {
      std::lock_guard lock(pool_mu_);
      if (!idle_.empty()) {
        CURL* h = idle_.back();
        idle_.pop_back();
        curl_easy_reset(h);  // keeps the connection and TLS session caches
        return h;
      }
    }
    return curl_easy_init();
  }

  void Release(CURL* h) const {
    std::lock_guard lock(pool_mu_);
    if (idle_.size() < 8) {
      idle_.push_back(h);
    } else {
      curl_easy_cleanup(h);
    }
  }

  Exchange Attempt(const Request& req) const {
    Exchange ex;
    auto token = Token();
    if (!token) {
      ex.curl = CURLE_LOGIN_DENIED;
      ex.curl_error = token.status().message();
      return ex;
    }
    CURL* h = Acquire();
    if (h == nullptr) {
      ex.curl = CURLE_FAILED_INIT;
      return ex;
    }
    Sink sink;
    sink.out = &ex;
    sink.handle = h;
    bool* delivered = req.delivered;
    if (req.on_line) {
      sink.on_line = [&req, delivered](std::string_view line) {
        if (delivered != nullptr) *delivered = true;
        return req.on_line(line);
      };
    }
    char errbuf[CURL_ERROR_SIZE] = {0};
    std::string url = config_.server + req.url_path;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_blob ca_blob{};
    if (!config_.ca_data_pem.empty()) {
      ca_blob = {const_cast<char*>(config_.ca_data_pem.data()), config_.ca_data_pem.size(), CURL_BLOB_NOCOPY};
      curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca_blob);
    } else if (!config_.ca_file.empty()) {
      curl_easy_setopt(h, CURLOPT_CAINFO, config_.ca_file.c_str());
    }
    curl_blob cert_blob{};
    curl_blob key_blob{};
    if (!config_.client_cert_data_pem.empty()) {
      cert_blob = {const_cast<char*>(config_.client_cert_data_pem.data()), config_.client_cert_data_pem.size(),
                   CURL_BLOB_NOCOPY};
      curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert_blob);
      curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (!config_.client_cert_file.empty()) {
      curl_easy_setopt(h, CURLOPT_SSLCERT, config_.client_cert_file.c_str());
      curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (!config_.client_key_data_pem.empty()) {
      key_blob = {const_cast<char*>(config_.client_key_data_pem.data()), config_.client_key_data_pem.size(),
                  CURL_BLOB_NOCOPY};
      curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key_blob);
      curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (!config_.client_key_file.empty()) {
      curl_easy_setopt(h, CURLOPT_SSLKEY, config_.client_key_file.c_str());
      curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Accept: application/json");
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    std::string auth = "Authorization: Bearer " + *token;
    if (!token->empty()) headers = curl_slist_append(headers, auth.c_str());
    std::string ctype = "Content-Type: " + req.content_type;
    if (req.body) headers = curl_slist_append(headers, ctype.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_USERAGENT, config_.user_agent.c_str());
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
    milliseconds timeout = req.timeout.count() == 0 ? options_.request_timeout : req.timeout;
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout.count() < 0 ? 0L : static_cast<long>(timeout.count()));
    if (req.method == "GET") {
      curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    }
    if (!req.idempotent) {
      // libcurl silently resends a request whose reused connection died before any reply; for a
      // POST that is exactly the repeat RetryDelay refuses. A fresh connection has no such resend.
      curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
    }
    if (req.body) {
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body->data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body->size()));
    }
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &sink);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    ex.curl = req.stop.stop_possible() ? PerformStoppable(h, req.stop) : curl_easy_perform(h);
    ex.curl_error = errbuf;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &ex.http);
    if ((ex.curl == CURLE_WRITE_ERROR && sink.callback_stopped) || ex.curl == CURLE_ABORTED_BY_CALLBACK) {
      ex.stopped = true;
    }
    curl_slist_free_all(headers);
    // A handle whose transfer was cut short may hold a half-read connection: do not reuse it.
    if (ex.curl == CURLE_OK) {
      Release(h);
    } else {
      curl_easy_cleanup(h);
    }
    return ex;
  }

  KubeConfig config_;
  ClientOptions options_;
  mutable std::mutex pool_mu_;
  mutable std::vector<CURL*> idle_;
  mutable std::mutex token_mu_;
  mutable std::string token_;
  mutable timespec token_mtime_{};
  mutable ino_t token_ino_ = 0;
  mutable off_t token_size_ = 0;
};

KubeClient::KubeClient(std::unique_ptr<Transport> transport) : transport_(std::move(transport)) {}
KubeClient::~KubeClient() = default;

Result<std::unique_ptr<KubeClient>> KubeClient::FromConfig(KubeConfig config, ClientOptions options) {
  GlobalInit();
  while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
  if (config.server.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("API server '" + config.server + "' is not https:// (TLS is always verified)");
  }
  for (const std::string* file : {&config.ca_file, &config.client_cert_file, &config.client_key_file}) {
    if (!file->empty() && !std::ifstream(*file)) return Status::Unavailable("cannot read " + *file);
  }
  bool has_cert = !config.client_cert_file.empty() || !config.client_cert_data_pem.empty();
  bool has_key = !config.client_key_file.empty() || !config.client_key_data_pem.empty();
  if (has_cert != has_key) return Status::InvalidArgument("a client certificate needs its key and the other way round");
  if (options.retry.max_attempts < 1) options.retry.max_attempts = 1;
  auto transport = std::make_unique<Transport>(std::move(config), std::move(options));
  if (!transport->config().token_file.empty()) {
    if (auto token = transport->Token(); !token) return token.status();
  }
  return std::unique_ptr<KubeClient>(new KubeClient(std::move(transport)));
}

const KubeConfig& KubeClient::config() const { return transport_->config(); }
const ClientOptions& KubeClient::options() const { return transport_->options(); }

namespace {

Result<nlohmann::json> JsonResult(const std::string& what, const Result<Exchange>& ex) {
  if (!ex) return ex.status();
  if (ex->http < 200 || ex->http >= 300) return HttpError(what, ex->http, ex->body);
  auto json = nlohmann::json::parse(ex->body, nullptr, false);
  if (json.is_discarded()) return Status::Corrupt(what + ": the server's reply is not JSON");
  return json;
}

}  // namespace

Result<nlohmann::json> KubeClient::Get(const std::string& path) const {
  Transport::Request req{.method = "GET", .url_path = path};
  return JsonResult("GET " + path, transport_->Run(req));
}

Result<nlohmann::json> KubeClient::List(const std::string& path, const ListOptions& options) const {
  std::string token = options.continue_token;
  nlohmann::json all;
  while (true) {
    std::string url = path;
    AddQuery(&url, "labelSelector", options.label_selector);
    AddQuery(&url, "fieldSelector", options.field_selector);
    if (token.empty()) AddQuery(&url, "resourceVersion", options.resource_version);
    if (options.limit > 0) AddQuery(&url, "limit", std::to_string(options.limit));
    AddQuery(&url, "continue", token);
    Transport::Request req{.method = "GET", .url_path = url};
    auto page = JsonResult("GET " + url, transport_->Run(req));
    if (!page) return page;
    if (!page->is_object()) return Status::Corrupt("GET " + url + ": the server's list is not an object");
    if (!options.all_pages) return page;
    const nlohmann::json* meta = Member(*page, "metadata");
    token = meta != nullptr ? StringMember(*meta, "continue") : "";
    if (all.is_null()) {
      all = std::move(*page);
      if (!all.contains("items") || !all["items"].is_array()) all["items"] = nlohmann::json::array();
    } else if (page->contains("items") && (*page)["items"].is_array()) {
      for (auto& item : (*page)["items"]) all["items"].push_back(std::move(item));
    }
    if (token.empty()) {
      if (all.contains("metadata") && all["metadata"].is_object()) all["metadata"].erase("continue");
      return all;
    }
  }
}

Result<nlohmann::json> KubeClient::Create(const std::string& path, const nlohmann::json& object) const {
  Transport::Request req{.method = "POST", .url_path = path, .body = object.dump(),
                         .content_type = "application/json", .idempotent = false};
  return JsonResult("POST " + path, transport_->Run(req));
}

Result<nlohmann::json> KubeClient::Update(const std::string& path, const nlohmann::json& object) const {
  // PUT is safe to repeat: with a resourceVersion a repeat conflicts instead of overwriting.
  Transport::Request req{.method = "PUT", .url_path = path, .body = object.dump(), .content_type = "application/json"};
  return JsonResult("PUT " + path, transport_->Run(req));
}

Result<nlohmann::json> KubeClient::Patch(const std::string& path, const nlohmann::json& patch, PatchType type,
                                         const std::string& field_manager) const {
  if (type == PatchType::kApply && field_manager.empty()) {
    return Status::InvalidArgument("PATCH " + path + ": server-side apply needs a field manager");
  }
  std::string url = path;
  AddQuery(&url, "fieldManager", field_manager);
  Transport::Request req{.method = "PATCH", .url_path = url, .body = patch.dump(), .content_type = ContentType(type),
                         .idempotent = type != PatchType::kJson};
  return JsonResult("PATCH " + url, transport_->Run(req));
}

Result<nlohmann::json> KubeClient::Delete(const std::string& path) const {
  Transport::Request req{.method = "DELETE", .url_path = path};
  return JsonResult("DELETE " + path, transport_->Run(req));
}

Result<std::string> KubeClient::Watch(const std::string& path, const WatchOptions& options,
                                      const WatchCallback& callback, std::stop_token stop) const {
  std::string url = path;
  AddQuery(&url, "watch", "1");
  AddQuery(&url, "resourceVersion", options.resource_version);
  AddQuery(&url, "labelSelector", options.label_selector);
  AddQuery(&url, "fieldSelector", options.field_selector);
  if (options.allow_bookmarks) AddQuery(&url, "allowWatchBookmarks", "true");
  if (options.timeout_seconds > 0) AddQuery(&url, "timeoutSeconds", std::to_string(options.timeout_seconds));
  std::string what = "GET " + url;

  std::string last_rv = options.resource_version;
  std::optional<Status> error;
  bool delivered = false;
  auto on_line = [&](std::string_view line) {
    auto doc = nlohmann::json::parse(line, nullptr, false);
    if (!doc.is_object() || !doc.contains("type") || !doc["type"].is_string()) {
      error = Status::Corrupt(what + ": undecodable watch event: " + std::string(line.substr(0, 200)));
      return false;
    }
    WatchEvent event{WatchEvent::Type::kError, doc.contains("object") ? std::move(doc["object"]) : nlohmann::json()};
    std::string type = doc["type"].get<std::string>();
    if (type == "ADDED") event.type = WatchEvent::Type::kAdded;
    else if (type == "MODIFIED") event.type = WatchEvent::Type::kModified;
    else if (type == "DELETED") event.type = WatchEvent::Type::kDeleted;
    else if (type == "BOOKMARK") event.type = WatchEvent::Type::kBookmark;
    else if (type != "ERROR") {
      error = Status::Corrupt(what + ": unknown watch event type " + type);
      return false;
    }
    if (event.type == WatchEvent::Type::kError) {
      const long code = static_cast<long>(IntegerMember(event.object, "code").value_or(500));
      error = HttpError(what + " (watch event)", code, event.object.dump());
      callback(event);
      return false;
    }
    if (const nlohmann::json* metadata = Member(event.object, "metadata")) {
      std::string rv = StringMember(*metadata, "resourceVersion");
      if (!rv.empty()) last_rv = std::move(rv);
    }
    return callback(event);
  };
  // A watch lasts as long as the server keeps it; the client's own limit only catches a server
  // that went silent without closing.
  milliseconds timeout = options.timeout_seconds > 0 ? milliseconds((options.timeout_seconds + 30) * 1000LL)
                                                     : milliseconds(-1);
  Transport::Request req{.method = "GET", .url_path = url, .timeout = timeout, .on_line = on_line, .stop = stop,
                         .delivered = &delivered};
  auto ex = transport_->Run(req);
  if (error) return *error;
  if (!ex) return ex.status();
  if (!ex->stopped && ex->curl == CURLE_OK && ex->http != 200) return HttpError(what, ex->http, ex->body);
  return last_rv;
}

}  // namespace fgpu::k8s
