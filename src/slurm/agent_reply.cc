#include "slurm/agent_reply.h"

#include <nlohmann/json.hpp>

namespace fgpu::slurm {
namespace {

using nlohmann::json;

// The agent's {"error": "..."} text, else the body itself (shortened), else the status.
std::string ErrorText(int status, const std::string& body) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_string()) {
    return parsed["error"].get<std::string>();
  }
  if (!body.empty()) return body.size() > 200 ? body.substr(0, 200) + "..." : body;
  return "HTTP status " + std::to_string(status);
}

Result<GrantedSlice> ParseSlice(const std::string& body) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("id") || !parsed["id"].is_string() ||
      parsed["id"].get<std::string>().empty()) {
    return Status::Internal("the agent's answer has no slice id: " + body.substr(0, 200));
  }
  GrantedSlice slice;
  slice.id = parsed["id"].get<std::string>();
  if (parsed.contains("gpu") && parsed["gpu"].is_string()) slice.gpu = parsed["gpu"].get<std::string>();
  if (!parsed.contains("env") || !parsed["env"].is_object() || parsed["env"].empty()) {
    return Status::Internal("the agent's answer for slice " + slice.id +
                            " has no \"env\" for the workload (is the agent older than this plugin?)");
  }
  for (const auto& [name, value] : parsed["env"].items()) {
    if (!value.is_string() || name.empty() || name.find('=') != std::string::npos) {
      return Status::Internal("the agent's answer for slice " + slice.id + " has a malformed env entry '" + name + "'");
    }
    slice.env.emplace_back(name, value.get<std::string>());
  }
  return slice;
}

}  // namespace

std::string SliceIdOf(const std::string& body) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("id") || !parsed["id"].is_string()) return {};
  return parsed["id"].get<std::string>();
}

Result<GrantedSlice> ParseGetReply(int status, const std::string& body) {
  return ParseCreateReply(status == 200 ? 201 : status, body);
}

Result<GrantedSlice> ParseCreateReply(int status, const std::string& body) {
  if (status == 201) return ParseSlice(body);
  const std::string text = ErrorText(status, body);
  if (status == 409) return Status::ResourceExhausted(text);
  if (status == 404) return Status::NotFound(text);
  return Status::InvalidArgument(text + " (HTTP " + std::to_string(status) + ")");
}

}  // namespace fgpu::slurm
