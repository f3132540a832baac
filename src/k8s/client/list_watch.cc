#include "k8s/client/list_watch.h"

#include <condition_variable>
#include <mutex>

#include "k8s/client/json_fields.h"
#include "k8s/client/retry.h"

namespace fgpu::k8s {
namespace {

// Sleeps `wait`, waking at once when stop is requested. False when stopped.
bool SleepUnlessStopped(std::chrono::milliseconds wait, const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  return !cv.wait_for(lock, stop, wait, [] { return false; });
}

}  // namespace

Status ListAndWatch(const KubeClient& client, const std::string& path, const ListWatchOptions& options,
                    const ListWatchHandlers& handlers, std::stop_token stop) {
  int failures = 0;
  auto failed = [&](const Status& error) -> bool {  // true: keep going
    if (handlers.on_error) handlers.on_error(error);
    ++failures;
    if (options.max_consecutive_failures > 0 && failures >= options.max_consecutive_failures) return false;
    return SleepUnlessStopped(Backoff(client.options().retry, failures), stop);
  };
  while (!stop.stop_requested()) {
    ListOptions list_options{.label_selector = options.label_selector,
                             .field_selector = options.field_selector,
                             .limit = options.page_size,
                             .all_pages = true};
    auto list = client.List(path, list_options);
    if (!list) {
      if (!failed(list.status())) return stop.stop_requested() ? Status::Ok() : list.status();
      continue;
    }
    failures = 0;
    const nlohmann::json* metadata = Member(*list, "metadata");
    std::string rv = metadata != nullptr ? StringMember(*metadata, "resourceVersion") : "";
    if (handlers.on_sync) handlers.on_sync(*list);
    // Watch, resume, watch: until the resourceVersion is gone or the watch keeps failing.
    while (!stop.stop_requested()) {
      WatchOptions watch_options{.resource_version = rv,
                                 .label_selector = options.label_selector,
                                 .field_selector = options.field_selector,
                                 .allow_bookmarks = true,
                                 .timeout_seconds = options.watch_timeout_seconds};
      bool progressed = false;
      auto next = client.Watch(
          path, watch_options,
          [&](const WatchEvent& event) {
            progressed = true;
            if (event.type != WatchEvent::Type::kBookmark && event.type != WatchEvent::Type::kError &&
                handlers.on_event) {
              handlers.on_event(event);
            }
            return !stop.stop_requested();
          },
          stop);
      if (next) {
        if (progressed) failures = 0;
        rv = *next;
        continue;
      }
      if (IsGone(next.status())) break;  // re-list without delay: the server has moved on
      if (!failed(next.status())) return stop.stop_requested() ? Status::Ok() : next.status();
      break;  // after a failed watch, re-list: events may have been missed
    }
  }
  return Status::Ok();
}

}  // namespace fgpu::k8s
