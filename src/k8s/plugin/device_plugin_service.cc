#include "k8s/plugin/device_plugin_service.h"

namespace fgpu::k8s {

DevicePluginService::DevicePluginService(ShareAllocator* allocator, std::chrono::milliseconds poll)
    : allocator_(allocator), poll_(poll) {}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*, const ::v1beta1::Empty*,
                                                         ::v1beta1::DevicePluginOptions* options) {
  options->set_pre_start_required(false);
  options->set_get_preferred_allocation_available(true);
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::ListAndWatch(grpc::ServerContext* context, const ::v1beta1::Empty*,
                                               grpc::ServerWriter<::v1beta1::ListAndWatchResponse>* writer) {
  std::vector<ShareDevice> sent;
  bool first = true;
  uint64_t epoch = 0;
  {
    std::lock_guard lock(mutex_);
    epoch = epoch_;
  }
  while (!context->IsCancelled()) {
    Result<std::vector<ShareDevice>> devices = allocator_->Devices();
    // An agent that cannot be reached keeps the last list: the shares' holders still run.
    if (devices.ok() && (first || *devices != sent)) {
      ::v1beta1::ListAndWatchResponse response;
      for (const ShareDevice& share : *devices) {
        auto* device = response.add_devices();
        device->set_id(share.id);
        device->set_health(share.healthy ? "Healthy" : "Unhealthy");
      }
      if (!writer->Write(response)) break;
      sent = std::move(*devices);
      first = false;
      advertised_.store(static_cast<int64_t>(sent.size()));
    }
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, poll_, [&] { return epoch_ != epoch; })) break;
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::GetPreferredAllocation(grpc::ServerContext*,
                                                         const ::v1beta1::PreferredAllocationRequest* request,
                                                         ::v1beta1::PreferredAllocationResponse* response) {
  for (const auto& container : request->container_requests()) {
    const std::vector<std::string> available(container.available_deviceids().begin(),
                                             container.available_deviceids().end());
    const std::vector<std::string> must(container.must_include_deviceids().begin(),
                                        container.must_include_deviceids().end());
    auto* answer = response->add_container_responses();
    for (const std::string& id : allocator_->Prefer(available, must, container.allocation_size())) {
      answer->add_deviceids(id);
    }
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*, const ::v1beta1::AllocateRequest* request,
                                           ::v1beta1::AllocateResponse* response) {
  const auto started = std::chrono::steady_clock::now();
  for (const auto& container : request->container_requests()) {
    const std::vector<std::string> ids(container.devices_ids().begin(), container.devices_ids().end());
    Result<CdiDevice> edits = allocator_->Allocate(ids);
    if (!edits.ok()) {
      allocate_seconds_.Observe(std::chrono::steady_clock::now() - started);
      // The kubelet fails the pod's admission with this text (kubectl describe pod shows it).
      return grpc::Status(edits.status().code() == StatusCode::kResourceExhausted ? grpc::StatusCode::RESOURCE_EXHAUSTED
                                                                                  : grpc::StatusCode::FAILED_PRECONDITION,
                          "fgpu: " + edits.status().message());
    }
    auto* answer = response->add_container_responses();
    for (const auto& [name, value] : edits->env) (*answer->mutable_envs())[name] = value;
    for (const CdiMount& mount : edits->mounts) {
      auto* added = answer->add_mounts();
      added->set_container_path(mount.path);
      added->set_host_path(mount.path);
      added->set_read_only(mount.read_only);
    }
    for (const std::string& node : edits->device_nodes) {
      auto* device = answer->add_devices();
      device->set_container_path(node);
      device->set_host_path(node);
      device->set_permissions("rw");
    }
    (*answer->mutable_annotations())["gpu.fgpu.io/slice"] = edits->name;
  }
  allocate_seconds_.Observe(std::chrono::steady_clock::now() - started);
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext*, const ::v1beta1::PreStartContainerRequest*,
                                                    ::v1beta1::PreStartContainerResponse*) {
  return grpc::Status::OK;
}

void DevicePluginService::EndStreams() {
  {
    std::lock_guard lock(mutex_);
    ++epoch_;
  }
  wake_.notify_all();
}

}  // namespace fgpu::k8s
