// FairQueue: requests waiting for a worker, served round-robin across peers, so a peer with
// many requests queued delays another peer's by at most one request of its own per turn
// instead of all of them (a FIFO would put root's request behind a whole flood).
//
// Contract
// - Push(key, item) appends to that key's FIFO. Pop() takes the oldest item of the key whose
//   turn it is; keys take turns in the order they last became non-empty. Pop() on an empty
//   queue is a bug (check empty()).
// - Not thread-safe: the owner holds its lock around every call.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>

namespace fgpu::net {

template <typename T>
class FairQueue {
 public:
  void Push(const std::string& key, T item) {
    std::deque<T>& items = by_key_[key];
    if (items.empty()) turns_.push_back(key);
    items.push_back(std::move(item));
    ++size_;
  }

  T Pop() {
    std::string key = std::move(turns_.front());
    turns_.pop_front();
    auto it = by_key_.find(key);
    T item = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) {
      by_key_.erase(it);
    } else {
      turns_.push_back(std::move(key));  // its next item waits for every other key's turn
    }
    --size_;
    return item;
  }

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

 private:
  std::unordered_map<std::string, std::deque<T>> by_key_;  // only keys with items
  std::deque<std::string> turns_;                          // each key in by_key_ once
  std::size_t size_ = 0;
};

}  // namespace fgpu::net
