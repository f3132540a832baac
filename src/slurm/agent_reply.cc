#include "slurm/agent_reply.h"

#include <nlohmann/json.hpp>

#include "api/agent_client.h"
#include "api/codec.h"

namespace fgpu::slurm {
namespace {

Result<GrantedSlice> ParseSlice(const std::string& body) {
  const nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("id")) {
    return Status::Internal("the agent's answer has no slice id: " + body.substr(0, 200));
  }
  Result<api::Slice> slice = api::Parse<api::Slice>(parsed);
  if (!slice.ok()) return Status::Internal("the agent's answer is not a slice this plugin reads: " + slice.status().message());
  if (!slice->details || slice->details->env.empty()) {
    return Status::Internal("the agent's answer for slice " + slice->id +
                            " has no \"env\" for the workload (is the agent older than this plugin?)");
  }
  return GrantedSlice{slice->id, slice->gpu, slice->details->env};
}

}  // namespace

std::string SliceIdOf(const std::string& body) {
  const nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("id") || !parsed["id"].is_string()) return {};
  return parsed["id"].get<std::string>();
}

Result<GrantedSlice> ParseGetReply(int status, const std::string& body) {
  return ParseCreateReply(status == 200 ? 201 : status, body);
}

Result<GrantedSlice> ParseCreateReply(int status, const std::string& body) {
  if (status == 201) return ParseSlice(body);
  net::HttpResponse response;
  response.status = status;
  response.body = body;
  Status refused = api::StatusOfReply(response);
  if (refused.ok()) refused = Status::Internal("the agent answered HTTP " + std::to_string(status) + ", not a new slice");
  return refused;
}

}  // namespace fgpu::slurm
