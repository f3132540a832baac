// The DRAPlugin gRPC service, v1 and v1beta1 (the same messages under two packages, so one
// template serves both): each claim of a request is prepared or unprepared by the DraDriver, and
// every claim gets an entry in the response, its error in the entry, as the kubelet requires.
#pragma once

#include <grpcpp/grpcpp.h>

#include "dra_v1.grpc.pb.h"
#include "dra_v1beta1.grpc.pb.h"
#include "k8s/dra/driver.h"
#include "k8s/plugin/plugin_metrics.h"

namespace fgpu::k8s {

struct DraServiceStats {
  LatencyHistogram prepare_seconds;
  LatencyHistogram unprepare_seconds;
};

// The generated types of one API version.
template <typename Service, typename PrepareRequest, typename PrepareResponse, typename UnprepareRequest,
          typename UnprepareResponse>
struct DraApi {
  using ServiceBase = Service;
  using NodePrepareResourcesRequest = PrepareRequest;
  using NodePrepareResourcesResponse = PrepareResponse;
  using NodeUnprepareResourcesRequest = UnprepareRequest;
  using NodeUnprepareResourcesResponse = UnprepareResponse;
};

namespace dra_v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace dra_v1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
using DraV1 = DraApi<dra_v1::DRAPlugin::Service, dra_v1::NodePrepareResourcesRequest,
                     dra_v1::NodePrepareResourcesResponse, dra_v1::NodeUnprepareResourcesRequest,
                     dra_v1::NodeUnprepareResourcesResponse>;
using DraV1beta1 = DraApi<dra_v1beta1::DRAPlugin::Service, dra_v1beta1::NodePrepareResourcesRequest,
                          dra_v1beta1::NodePrepareResourcesResponse, dra_v1beta1::NodeUnprepareResourcesRequest,
                          dra_v1beta1::NodeUnprepareResourcesResponse>;

template <typename Api>
class DraService final : public Api::ServiceBase {
 public:
  DraService(DraDriver* driver, DraServiceStats* stats) : driver_(driver), stats_(stats) {}

  grpc::Status NodePrepareResources(grpc::ServerContext*, const typename Api::NodePrepareResourcesRequest* request,
                                    typename Api::NodePrepareResourcesResponse* response) override {
    for (const auto& claim : request->claims()) {
      const auto started = std::chrono::steady_clock::now();
      const PrepareOutcome outcome = driver_->Prepare({claim.namespace_(), claim.name(), claim.uid()});
      auto& entry = (*response->mutable_claims())[claim.uid()];
      if (!outcome.error.empty()) {
        entry.set_error(outcome.error);
      } else {
        for (const PreparedDevice& prepared : outcome.devices) {
          auto* device = entry.add_devices();
          device->add_request_names(prepared.request);
          device->set_pool_name(prepared.pool);
          device->set_device_name(prepared.device);
          device->add_cdi_device_ids(prepared.cdi_id);
        }
      }
      stats_->prepare_seconds.Observe(std::chrono::steady_clock::now() - started);
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext*, const typename Api::NodeUnprepareResourcesRequest* request,
                                      typename Api::NodeUnprepareResourcesResponse* response) override {
    for (const auto& claim : request->claims()) {
      const auto started = std::chrono::steady_clock::now();
      const Status released = driver_->Unprepare({claim.namespace_(), claim.name(), claim.uid()});
      auto& entry = (*response->mutable_claims())[claim.uid()];
      if (!released.ok()) entry.set_error(released.message());
      stats_->unprepare_seconds.Observe(std::chrono::steady_clock::now() - started);
    }
    return grpc::Status::OK;
  }

 private:
  DraDriver* driver_;
  DraServiceStats* stats_;
};

using DraServiceV1 = DraService<DraV1>;
using DraServiceV1beta1 = DraService<DraV1beta1>;

}  // namespace fgpu::k8s
