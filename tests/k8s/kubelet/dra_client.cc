#include "dra_client.h"

#include <grpcpp/grpcpp.h>

#include "dra_v1.grpc.pb.h"
#include "dra_v1beta1.grpc.pb.h"
#include "k8s/kubelet/unix_grpc_server.h"

namespace fgpu::k8s::test {
namespace {

template <typename Repeated>
std::vector<std::string> Strings(const Repeated& r) {
  return {r.begin(), r.end()};
}

// v1 and v1beta1 have the same messages in different packages: one body for both.
template <typename Api>
struct Calls {
  template <typename Request>
  static void Fill(Request* req, const std::vector<ClaimRef>& claims) {
    for (const auto& c : claims) {
      auto* out = req->add_claims();
      out->set_namespace_(c.ns);
      out->set_name(c.name);
      out->set_uid(c.uid);
    }
  }

  static Status Missing(const nlohmann::json& response, const std::vector<ClaimRef>& claims, const char* rpc) {
    std::string missing;
    for (const auto& c : claims) {
      if (!response["claims"].contains(c.uid)) missing += (missing.empty() ? "" : ", ") + c.uid;
    }
    if (missing.empty()) return Status::Ok();
    return Status::Corrupt(std::string(rpc) + " response has no entry for claim(s) " + missing);
  }

  static Result<DraCall> Prepare(const std::string& endpoint, const std::vector<ClaimRef>& claims,
                                 std::chrono::milliseconds timeout) {
    auto stub = Api::DRAPlugin::NewStub(DialUnix(endpoint));
    typename Api::NodePrepareResourcesRequest req;
    Fill(&req, claims);
    typename Api::NodePrepareResourcesResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout);
    grpc::Status st = stub->NodePrepareResources(&ctx, req, &resp);
    if (!st.ok()) return Status::Unavailable("NodePrepareResources on " + endpoint + " failed: " + st.error_message());
    DraCall call{{{"claims", nlohmann::json::object()}}, Status::Ok()};
    std::string bad_device;
    for (const auto& [uid, claim] : resp.claims()) {
      nlohmann::json devices = nlohmann::json::array();
      for (const auto& d : claim.devices()) {
        devices.push_back({{"request_names", Strings(d.request_names())},
                           {"pool_name", d.pool_name()},
                           {"device_name", d.device_name()},
                           {"cdi_device_ids", Strings(d.cdi_device_ids())}});
        if (claim.error().empty() && (d.pool_name().empty() || d.device_name().empty())) bad_device = uid;
      }
      call.response["claims"][uid] = {{"devices", devices}, {"error", claim.error()}};
    }
    call.problem = Missing(call.response, claims, "NodePrepareResources");
    if (call.problem.ok() && !bad_device.empty()) {
      call.problem = Status::Corrupt("claim " + bad_device + " has a device without pool_name or device_name");
    }
    return call;
  }

  static Result<DraCall> Unprepare(const std::string& endpoint, const std::vector<ClaimRef>& claims,
                                   std::chrono::milliseconds timeout) {
    auto stub = Api::DRAPlugin::NewStub(DialUnix(endpoint));
    typename Api::NodeUnprepareResourcesRequest req;
    Fill(&req, claims);
    typename Api::NodeUnprepareResourcesResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout);
    grpc::Status st = stub->NodeUnprepareResources(&ctx, req, &resp);
    if (!st.ok()) return Status::Unavailable("NodeUnprepareResources on " + endpoint + " failed: " + st.error_message());
    DraCall call{{{"claims", nlohmann::json::object()}}, Status::Ok()};
    for (const auto& [uid, claim] : resp.claims()) call.response["claims"][uid] = {{"error", claim.error()}};
    call.problem = Missing(call.response, claims, "NodeUnprepareResources");
    return call;
  }
};

struct V1 {
  using DRAPlugin = ::k8s::io::kubelet::pkg::apis::dra::v1::DRAPlugin;
  using NodePrepareResourcesRequest = ::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = ::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = ::k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = ::k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesResponse;
};
struct V1beta1 {
  using DRAPlugin = ::k8s::io::kubelet::pkg::apis::dra::v1beta1::DRAPlugin;
  using NodePrepareResourcesRequest = ::k8s::io::kubelet::pkg::apis::dra::v1beta1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = ::k8s::io::kubelet::pkg::apis::dra::v1beta1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = ::k8s::io::kubelet::pkg::apis::dra::v1beta1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = ::k8s::io::kubelet::pkg::apis::dra::v1beta1::NodeUnprepareResourcesResponse;
};

}  // namespace

Result<ClaimRef> ParseClaim(const std::string& text) {
  size_t a = text.find('/');
  size_t b = a == std::string::npos ? a : text.find('/', a + 1);
  if (b == std::string::npos || text.find('/', b + 1) != std::string::npos || a == 0 || b == a + 1 ||
      b + 1 == text.size()) {
    return Status::InvalidArgument("claim '" + text + "' is not NAMESPACE/NAME/UID");
  }
  return ClaimRef{text.substr(0, a), text.substr(a + 1, b - a - 1), text.substr(b + 1)};
}

Result<DraApi> ParseDraApi(const std::string& text) {
  if (text == "v1") return DraApi::kV1;
  if (text == "v1beta1") return DraApi::kV1beta1;
  return Status::InvalidArgument("DRA API '" + text + "' is neither v1 nor v1beta1");
}

Result<DraCall> NodePrepareResources(const std::string& endpoint, DraApi api, const std::vector<ClaimRef>& claims,
                                     std::chrono::milliseconds timeout) {
  return api == DraApi::kV1 ? Calls<V1>::Prepare(endpoint, claims, timeout)
                            : Calls<V1beta1>::Prepare(endpoint, claims, timeout);
}

Result<DraCall> NodeUnprepareResources(const std::string& endpoint, DraApi api, const std::vector<ClaimRef>& claims,
                                       std::chrono::milliseconds timeout) {
  return api == DraApi::kV1 ? Calls<V1>::Unprepare(endpoint, claims, timeout)
                            : Calls<V1beta1>::Unprepare(endpoint, claims, timeout);
}

}  // namespace fgpu::k8s::test
