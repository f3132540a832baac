#include "net/worker_pool.h"

namespace fgpu::net {

void WorkerPool::Start(std::size_t workers) {
  for (std::size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
}

bool WorkerPool::HasRoom(bool privileged) {
  std::lock_guard<std::mutex> lock(mutex_);
  return privileged || queue_.size() < max_queued_;
}

void WorkerPool::Push(ReadyRequest request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string key = request.peer_key;
    queue_.Push(key, std::move(request));
  }
  ready_.notify_one();
}

void WorkerPool::Drain() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draining_ = true;
  }
  ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

void WorkerPool::Work() {
  for (;;) {
    ReadyRequest request;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return draining_ || !queue_.empty(); });
      if (queue_.empty()) return;  // draining, nothing left
      request = queue_.Pop();
    }
    serve_(request);
  }
}

}  // namespace fgpu::net
