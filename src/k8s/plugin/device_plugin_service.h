// The v1beta1.DevicePlugin gRPC service over a ShareAllocator: the kubelet watches the share
// devices (ListAndWatch re-sends the whole list whenever the agent's GPUs change: one turning
// unhealthy or exclusive marks its shares Unhealthy), asks which shares to take
// (GetPreferredAllocation: one GPU, packed) and allocates them (Allocate: a slice, answered as
// environment, mounts and device nodes, which every container runtime applies).
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "deviceplugin_v1beta1.grpc.pb.h"
#include "k8s/deviceplugin/allocator.h"
#include "k8s/plugin/plugin_metrics.h"

namespace fgpu::k8s {

class DevicePluginService final : public ::v1beta1::DevicePlugin::Service {
 public:
  DevicePluginService(ShareAllocator* allocator, std::chrono::milliseconds poll = std::chrono::seconds(1));

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const ::v1beta1::Empty*,
                                      ::v1beta1::DevicePluginOptions* options) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const ::v1beta1::Empty*,
                            grpc::ServerWriter<::v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext*, const ::v1beta1::PreferredAllocationRequest* request,
                                      ::v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext*, const ::v1beta1::AllocateRequest* request,
                        ::v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext*, const ::v1beta1::PreStartContainerRequest*,
                                 ::v1beta1::PreStartContainerResponse*) override;

  // Ends every ListAndWatch stream open now (the server is stopping, or the kubelet restarted);
  // streams opened later run as usual.
  void EndStreams();
  const LatencyHistogram& allocate_seconds() const { return allocate_seconds_; }
  int64_t advertised() const { return advertised_.load(); }

 private:
  ShareAllocator* allocator_;
  const std::chrono::milliseconds poll_;
  LatencyHistogram allocate_seconds_;
  std::atomic<int64_t> advertised_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  uint64_t epoch_ = 0;  // bumped by EndStreams
};

}  // namespace fgpu::k8s
