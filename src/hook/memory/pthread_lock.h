// PthreadLock: holds a pthread mutex for a scope (the hook's slow paths lock pthread mutexes).
#pragma once

#include <pthread.h>

namespace fgpu::hook {

class PthreadLock {
 public:
  explicit PthreadLock(pthread_mutex_t* mu) : mu_(mu) { pthread_mutex_lock(mu_); }
  ~PthreadLock() { pthread_mutex_unlock(mu_); }
  PthreadLock(const PthreadLock&) = delete;
  PthreadLock& operator=(const PthreadLock&) = delete;

 private:
  pthread_mutex_t* mu_;
};

}  // namespace fgpu::hook
