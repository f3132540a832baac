#include "sim/cuda/host_calls.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "sim/cuda/runtime.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim::cuda {
namespace {

class HostCallExecutor {
 public:
  static HostCallExecutor& Get() {
    static auto* executor = new HostCallExecutor;  // never destroyed: its thread may still run at exit
    return *executor;
  }

  void Schedule(Stream& stream, uint64_t due_ns, std::function<void()> call) {
    std::lock_guard lock(mu_);
    stream.pending_host_calls.fetch_add(1);
    queue_.emplace(std::make_pair(due_ns, next_sequence_++), Item{&stream, std::move(call)});
    if (!started_) {
      started_ = true;
      std::thread([this] { Run(); }).detach();
    }
    wake_.notify_all();
  }

  void Wait(const Stream& stream) {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return stream.pending_host_calls.load() == 0; });
  }

 private:
  struct Item {
    Stream* stream;
    std::function<void()> call;
  };

  void Run() {
    std::unique_lock lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return !queue_.empty(); });
      const uint64_t due = queue_.begin()->first.first;
      if (SharedDevices::NowNs() < due) {
        lock.unlock();
        Runtime::SleepUntil(due);  // a newer, earlier item waits at most until this one is due
        lock.lock();
        continue;
      }
      Item item = std::move(queue_.begin()->second);
      queue_.erase(queue_.begin());
      lock.unlock();
      item.call();
      lock.lock();
      item.stream->pending_host_calls.fetch_sub(1);
      done_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::map<std::pair<uint64_t, uint64_t>, Item> queue_;
  uint64_t next_sequence_ = 0;
  bool started_ = false;
};

}  // namespace

void ScheduleHostCall(Stream& stream, uint64_t due_ns, std::function<void()> call) {
  HostCallExecutor::Get().Schedule(stream, due_ns, std::move(call));
}

void WaitHostCalls(const Stream& stream) {
  if (stream.pending_host_calls.load() == 0) return;
  HostCallExecutor::Get().Wait(stream);
}

}  // namespace fgpu::sim::cuda
