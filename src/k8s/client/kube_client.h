// KubeClient: a Kubernetes API client over libcurl with verified TLS, retries with backoff, and
// streaming watches. Paths are API paths ("/api/v1/namespaces/ns/pods/name",
// "/apis/resource.k8s.io/v1/resourceslices"); bodies and results are JSON objects.
//
// Errors carry the server's meta.v1 Status message: "<VERB> <path>: HTTP <code> <reason>:
// <message>". Codes: 400/422 InvalidArgument, 401/403 PermissionDenied, 404 NotFound,
// 409 Conflict and 410 Gone/Expired VersionMismatch (re-read and retry; IsConflict / IsGone tell
// them apart), 409 AlreadyExists InvalidArgument (IsAlreadyExists), 429 ResourceExhausted,
// 500 Internal, other 5xx and transport failures Unavailable. HttpStatusOf gives the number.
//
// Thread-safe: every method may be called from many threads at once. Each call borrows a
// libcurl easy handle from a small pool (so connections and TLS sessions are reused).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "k8s/client/kube_config.h"
#include "k8s/client/retry.h"

namespace fgpu::k8s {

struct ClientOptions {
  RetryPolicy retry;
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds request_timeout{30'000};  // whole request; watches use their own
};

struct ListOptions {
  std::string label_selector{};
  std::string field_selector{};
  std::string resource_version{};
  int64_t limit = 0;  // page size; 0 = the server's choice (all)
  std::string continue_token{};
  // Follow `continue` to the end and return one list holding every page's items, with the
  // first page's resourceVersion.
  bool all_pages = false;
};

enum class PatchType {
  kMerge,           // application/merge-patch+json
  kStrategicMerge,  // application/strategic-merge-patch+json
  kJson,            // application/json-patch+json (not idempotent: never retried once sent)
  kApply,           // application/apply-patch+yaml (server-side apply; needs a field manager)
};

struct WatchOptions {
  std::string resource_version{};  // "" = current state as ADDED events first, then changes
  std::string label_selector{};
  std::string field_selector{};
  bool allow_bookmarks = true;
  int timeout_seconds = 0;  // server-side watch length; 0 = the server's default
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type;
  nlohmann::json object{};  // the object, or for kError a meta.v1 Status
};
const char* WatchEventTypeName(WatchEvent::Type type);

// Called for each event in order; return false to end the watch.
using WatchCallback = std::function<bool(const WatchEvent&)>;

class KubeClient {
 public:
  // Checks the config (https server, readable CA/cert files) without contacting the server.
  static Result<std::unique_ptr<KubeClient>> FromConfig(KubeConfig config, ClientOptions options = {});
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  Result<nlohmann::json> Get(const std::string& path) const;
  Result<nlohmann::json> List(const std::string& path, const ListOptions& options = {}) const;
  Result<nlohmann::json> Create(const std::string& path, const nlohmann::json& object) const;  // POST
  Result<nlohmann::json> Update(const std::string& path, const nlohmann::json& object) const;  // PUT
  Result<nlohmann::json> Patch(const std::string& path, const nlohmann::json& patch, PatchType type,
                               const std::string& field_manager = "") const;
  Result<nlohmann::json> Delete(const std::string& path) const;

  // Streams watch events of a collection to `callback` until the server ends the watch
  // (timeout_seconds), the callback returns false, or `stop` is requested (noticed within
  // 50 ms). Returns the last resourceVersion seen (bookmarks included; the one asked for if
  // none arrived): resume from it. An ERROR event is passed to the callback and then returned as
  // an error (410 Expired: IsGone, re-list). Retries failures to start (before any event) as
  // List does; once events flowed, a broken stream just returns the resourceVersion reached.
  Result<std::string> Watch(const std::string& path, const WatchOptions& options, const WatchCallback& callback,
                            std::stop_token stop = {}) const;

  const KubeConfig& config() const;
  const ClientOptions& options() const;

  class Transport;  // libcurl details (kube_client.cc)

 private:
  KubeClient(std::unique_ptr<Transport> transport);
  std::unique_ptr<Transport> transport_;
};

// The HTTP status in an error this client returned, 0 when it never got one.
int HttpStatusOf(const Status& status);
inline bool IsConflict(const Status& s) { return s.code() == StatusCode::kVersionMismatch && HttpStatusOf(s) == 409; }
inline bool IsGone(const Status& s) { return s.code() == StatusCode::kVersionMismatch && HttpStatusOf(s) == 410; }
inline bool IsAlreadyExists(const Status& s) { return s.code() == StatusCode::kInvalidArgument && HttpStatusOf(s) == 409; }

// Percent-encodes a query value (selectors, continue tokens).
std::string UrlEncode(const std::string& value);

}  // namespace fgpu::k8s
