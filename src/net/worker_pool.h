// WorkerPool: the threads that run the handler. They see only complete requests (the event
// loop in request_reader.h reads them), take them round-robin across peers (fair_queue.h) and
// write the response themselves, bounded by the server's write timeout.
//
// Contract
// - HasRoom(privileged): fewer than `max_queued` requests wait, or the peer is privileged (uid
//   0; its own connection limit bounds it).
// - `serve` runs on a worker for each pushed request and owns it: it answers, closes the fd and
//   gives the connection back to the limits.
// - Drain() (also the destructor): the workers run every request already queued, then exit
//   and are joined. Push() after Drain() is a bug.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "net/fair_queue.h"
#include "net/request_reader.h"

namespace fgpu::net {

class WorkerPool final : public RequestSink {
 public:
  using Serve = std::function<void(ReadyRequest&)>;

  WorkerPool(std::size_t max_queued, Serve serve) : max_queued_(max_queued), serve_(std::move(serve)) {}
  ~WorkerPool() override { Drain(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Start(std::size_t workers);
  bool HasRoom(bool privileged) override;
  void Push(ReadyRequest request) override;
  void Drain();

 private:
  void Work();

  const std::size_t max_queued_;
  const Serve serve_;
  std::mutex mutex_;
  std::condition_variable ready_;
  FairQueue<ReadyRequest> queue_;  // guarded by mutex_
  bool draining_ = false;          // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace fgpu::net
