// ListAndWatch: the informer loop. List a collection (all pages), hand the full state over, then
// watch from the list's resourceVersion, resuming each ended watch from the last
// resourceVersion seen (bookmarks included). When the server says that resourceVersion is gone
// (410 Expired, as an HTTP status or an ERROR event) it lists again. Failures back off with the
// client's RetryPolicy delays and are retried until stopped.
#pragma once

#include <functional>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "k8s/client/kube_client.h"

namespace fgpu::k8s {

struct ListWatchOptions {
  std::string label_selector{};
  std::string field_selector{};
  int64_t page_size = 500;
  int watch_timeout_seconds = 300;  // each watch request's length before it is resumed
  int max_consecutive_failures = 0;  // 0 = retry forever; else give up with the last error
};

struct ListWatchHandlers {
  // After every (re-)list: the complete list object (items and metadata.resourceVersion).
  // Replace your state with it: objects deleted while we were not watching are simply absent.
  std::function<void(const nlohmann::json& list)> on_sync{};
  // Each ADDED / MODIFIED / DELETED event after the list (bookmarks and errors are handled here).
  std::function<void(const WatchEvent& event)> on_event{};
  // Optional: each failure before it is retried (logging, metrics).
  std::function<void(const Status& error)> on_error{};
};

// Runs until `stop` is requested (then Ok, within about 50 ms) or, with
// max_consecutive_failures, until that many list/watch attempts failed in a row.
Status ListAndWatch(const KubeClient& client, const std::string& path, const ListWatchOptions& options,
                    const ListWatchHandlers& handlers, std::stop_token stop);

}  // namespace fgpu::k8s
