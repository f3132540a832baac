// User objects: a host pointer and its destructor, reference counted by the application and by
// graphs and executable graphs (cuGraphRetainUserObject), as the driver keeps resources that
// asynchronous graph work uses alive.
//
// The destructor is called once, when the last reference goes: on the releasing thread, or, when
// an executable graph whose launches have not ended drops the last reference, on a helper thread
// once they end. It must not call the CUDA API (as documented).
#include <algorithm>
#include <atomic>
#include <climits>
#include <mutex>

#include "core/abi/cuda_api.h"
#include "sim/cuda/graph_internal.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {

struct UserObject {
  void* ptr = nullptr;
  CUhostFn destroy = nullptr;
  std::atomic<long long> refs{0};
};

void RetainUserObject(UserObject* object, unsigned count) { object->refs.fetch_add(count); }

void ReleaseUserObject(UserObject* object, unsigned count) {
  if (object->refs.fetch_sub(count) != static_cast<long long>(count)) return;
  HandleRegistry::Get().Erase(object);
  object->destroy(object->ptr);
  delete object;
}

}  // namespace fgpu::sim::cuda

namespace {

using fgpu::sim::cuda::Graph;
using fgpu::sim::cuda::UserObject;

CUresult LookupUserObject(CUuserObject handle, UserObject** out) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  *out = fgpu::sim::cuda::HandleRegistry::Get().Lookup<UserObject>(handle, fgpu::sim::cuda::Kind::kUserObject);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

bool ValidCount(unsigned count) { return count > 0 && count <= INT_MAX; }

}  // namespace

extern "C" {

CUresult cuUserObjectCreate(CUuserObject* object_out, void* ptr, CUhostFn destroy, unsigned int initialRefcount,
                            unsigned int flags) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (object_out == nullptr || destroy == nullptr || !ValidCount(initialRefcount)) return CUDA_ERROR_INVALID_VALUE;
  // CU_USER_OBJECT_NO_DESTRUCTOR_SYNC is required in CUDA 13.0 ("must be ... currently").
  if (flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) return CUDA_ERROR_INVALID_VALUE;
  auto* object = new UserObject;
  object->ptr = ptr;
  object->destroy = destroy;
  object->refs.store(initialRefcount);
  fgpu::sim::cuda::HandleRegistry::Get().Insert(object, fgpu::sim::cuda::Kind::kUserObject);
  *object_out = reinterpret_cast<CUuserObject>(object);
  return CUDA_SUCCESS;
}

CUresult cuUserObjectRetain(CUuserObject object, unsigned int count) {
  UserObject* user = nullptr;
  if (CUresult rc = LookupUserObject(object, &user); rc != CUDA_SUCCESS) return rc;
  if (!ValidCount(count)) return CUDA_ERROR_INVALID_VALUE;
  fgpu::sim::cuda::RetainUserObject(user, count);
  return CUDA_SUCCESS;
}

CUresult cuUserObjectRelease(CUuserObject object, unsigned int count) {
  UserObject* user = nullptr;
  if (CUresult rc = LookupUserObject(object, &user); rc != CUDA_SUCCESS) return rc;
  if (!ValidCount(count) || user->refs.load() < static_cast<long long>(count)) return CUDA_ERROR_INVALID_VALUE;
  fgpu::sim::cuda::ReleaseUserObject(user, count);
  return CUDA_SUCCESS;
}

// The graph takes `count` references: new ones, or (CU_GRAPH_USER_OBJECT_MOVE) the caller's.
CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count, unsigned int flags) {
  Graph* target = nullptr;
  UserObject* user = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupGraph(graph, &target); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = LookupUserObject(object, &user); rc != CUDA_SUCCESS) return rc;
  if (!ValidCount(count) || (flags & ~static_cast<unsigned>(CU_GRAPH_USER_OBJECT_MOVE)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if ((flags & CU_GRAPH_USER_OBJECT_MOVE) == 0) fgpu::sim::cuda::RetainUserObject(user, count);
  std::lock_guard lock(target->mu);
  for (auto& [held, held_count] : target->user_objects) {
    if (held == user) {
      held_count += count;
      return CUDA_SUCCESS;
    }
  }
  target->user_objects.emplace_back(user, count);
  return CUDA_SUCCESS;
}

CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count) {
  Graph* target = nullptr;
  UserObject* user = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupGraph(graph, &target); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = LookupUserObject(object, &user); rc != CUDA_SUCCESS) return rc;
  if (!ValidCount(count)) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lock(target->mu);
    auto held = std::find_if(target->user_objects.begin(), target->user_objects.end(),
                             [&](const auto& entry) { return entry.first == user; });
    if (held == target->user_objects.end() || held->second < count) return CUDA_ERROR_INVALID_VALUE;
    held->second -= count;
    if (held->second == 0) target->user_objects.erase(held);
  }
  fgpu::sim::cuda::ReleaseUserObject(user, count);
  return CUDA_SUCCESS;
}

}  // extern "C"
