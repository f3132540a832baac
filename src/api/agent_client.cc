#include "api/agent_client.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <utility>

#include "api/codec.h"

namespace fgpu::api {
namespace {

using nlohmann::json;

// The agent's {"error": "..."} text, else the body itself (shortened), else the status.
std::string ErrorText(const net::HttpResponse& response) {
  Result<ApiError> error = ParseText<ApiError>(response.body);
  if (error.ok()) return error->error;
  if (!response.body.empty()) return response.body.size() > 200 ? response.body.substr(0, 200) + "..." : response.body;
  return "HTTP status " + std::to_string(response.status);
}

// A 2xx body as T; Internal when it is not one (an agent of another version).
template <typename T>
Result<T> ReadBody(const net::HttpResponse& response, const char* what) {
  if (Status status = StatusOfReply(response); !status.ok()) return status;
  Result<T> parsed = ParseText<T>(response.body);
  if (!parsed.ok()) return Status::Internal(std::string("the agent's answer is not ") + what + ": " + parsed.status().message());
  return parsed;
}

// Ids and tickets go into the path as they are: refuse what would change the path's meaning.
Status CheckPathPart(const std::string& part, const char* what) {
  if (part.empty() || part.find_first_of("/?#% \t\r\n") != std::string::npos) {
    return Status::InvalidArgument(std::string("not a ") + what + ": '" + part + "'");
  }
  return Status::Ok();
}

}  // namespace

Status StatusOfReply(const net::HttpResponse& response) {
  if (response.status >= 200 && response.status < 300) return Status::Ok();
  const std::string text = ErrorText(response);
  switch (response.status) {
    case 400: return Status::InvalidArgument(text);
    case 403: return Status::PermissionDenied(text);
    case 404: return Status::NotFound(text);
    case 409: return Status::ResourceExhausted(text);
    case 503: return Status::Unavailable(text);
    default:
      return response.status >= 500 ? Status::Internal(text + " (HTTP " + std::to_string(response.status) + ")")
                                     : Status::InvalidArgument(text + " (HTTP " + std::to_string(response.status) + ")");
  }
}

Result<CreateReply> ReadCreateReply(const net::HttpResponse& response) {
  if (Status status = StatusOfReply(response); !status.ok()) return status;
  const json body = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  CreateReply reply;
  if (body.is_object() && body.contains("ticket") && !body.contains("id")) {
    Result<QueueTicket> ticket = Parse<QueueTicket>(body);
    if (!ticket.ok()) return Status::Internal("the agent's queue answer: " + ticket.status().message());
    reply.ticket = std::move(*ticket);
    return reply;
  }
  Result<Slice> slice = Parse<Slice>(body);
  if (!slice.ok()) return Status::Internal("the agent's answer is not a slice: " + slice.status().message());
  reply.slice = std::move(*slice);
  reply.existing = response.status == 200;
  return reply;
}

AgentClient::AgentClient(net::Endpoint endpoint, int timeout_ms)
    : transport_([endpoint = std::move(endpoint), timeout_ms](const std::string& method, const std::string& target,
                                                             const std::string& body) {
        return net::HttpCall(endpoint, method, target, body, timeout_ms);
      }) {}

AgentClient::AgentClient(Transport transport) : transport_(std::move(transport)) {}

Result<net::HttpResponse> AgentClient::Call(const std::string& method, const std::string& target,
                                            const std::string& body) const {
  // net::HttpCall's own errors pass as they are: Unavailable when nothing answers.
  return transport_(method, target, body);
}

Result<CreateReply> AgentClient::CreateSlice(const SliceRequest& request) const {
  Result<net::HttpResponse> response = Call("POST", "/v1/slices", ToJson(request).dump());
  if (!response.ok()) return response.status();
  return ReadCreateReply(*response);
}

Result<Slice> AgentClient::GetSlice(const std::string& id) const {
  if (Status valid = CheckPathPart(id, "slice id"); !valid.ok()) return valid;
  Result<net::HttpResponse> response = Call("GET", "/v1/slices/" + id, "");
  if (!response.ok()) return response.status();
  return ReadBody<Slice>(*response, "a slice");
}

Result<std::vector<Slice>> AgentClient::ListSlices(const SliceQuery& query) const {
  std::string target = "/v1/slices";
  std::string separator = "?";
  if (query.usage) target += std::exchange(separator, "&") + "usage=1";
  if (!query.idempotency_key.empty()) {
    if (Status valid = CheckIdempotencyKey(query.idempotency_key); !valid.ok()) return valid;
    // A key's characters ([A-Za-z0-9._:/-]) need no escaping in a query.
    target += std::exchange(separator, "&") + "idempotency_key=" + query.idempotency_key;
  }
  Result<net::HttpResponse> response = Call("GET", target, "");
  if (!response.ok()) return response.status();
  return ReadBody<std::vector<Slice>>(*response, "a list of slices");
}

Result<Slice> AgentClient::ResizeSlice(const std::string& id, const SliceResize& resize) const {
  if (Status valid = CheckPathPart(id, "slice id"); !valid.ok()) return valid;
  Result<net::HttpResponse> response = Call("PATCH", "/v1/slices/" + id, ToJson(resize).dump());
  if (!response.ok()) return response.status();
  return ReadBody<Slice>(*response, "a slice");
}

Status AgentClient::DeleteSlice(const std::string& id) const {
  if (Status valid = CheckPathPart(id, "slice id"); !valid.ok()) return valid;
  Result<net::HttpResponse> response = Call("DELETE", "/v1/slices/" + id, "");
  if (!response.ok()) return response.status();
  return StatusOfReply(*response);
}

Result<JoinReply> AgentClient::JoinSlice(const std::string& id) const {
  if (Status valid = CheckPathPart(id, "slice id"); !valid.ok()) return valid;
  Result<net::HttpResponse> response = Call("POST", "/v1/slices/" + id + "/join", "");
  if (!response.ok()) return response.status();
  return ReadBody<JoinReply>(*response, "a join answer");
}

Result<std::vector<Gpu>> AgentClient::ListGpus() const {
  Result<net::HttpResponse> response = Call("GET", "/v1/gpus", "");
  if (!response.ok()) return response.status();
  return ReadBody<std::vector<Gpu>>(*response, "a list of GPUs");
}

Result<std::vector<QueueItem>> AgentClient::Queue() const {
  Result<net::HttpResponse> response = Call("GET", "/v1/queue", "");
  if (!response.ok()) return response.status();
  return ReadBody<std::vector<QueueItem>>(*response, "the queue");
}

Result<std::vector<Quota>> AgentClient::Quotas() const {
  Result<net::HttpResponse> response = Call("GET", "/v1/quotas", "");
  if (!response.ok()) return response.status();
  return ReadBody<std::vector<Quota>>(*response, "the quotas");
}

Result<api::Health> AgentClient::Health() const {
  Result<net::HttpResponse> response = Call("GET", "/v1/health", "");
  if (!response.ok()) return response.status();
  return ReadBody<api::Health>(*response, "the agent's health");
}

Result<std::vector<UsageTotal>> AgentClient::Usage(const UsageQuery& query) const {
  const bool word = !query.by.empty() && std::all_of(query.by.begin(), query.by.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
  if (!word) return Status::InvalidArgument("not a usage grouping: '" + query.by + "'");
  std::string target = "/v1/usage?since=" + std::to_string(query.since_unix_ms) + "&by=" + query.by;
  if (query.until_unix_ms) target += "&until=" + std::to_string(*query.until_unix_ms);
  Result<net::HttpResponse> response = Call("GET", target, "");
  if (!response.ok()) return response.status();
  return ReadBody<std::vector<UsageTotal>>(*response, "a usage report");
}

Result<CreateReply> AgentClient::PollTicket(const std::string& ticket) const {
  if (Status valid = CheckPathPart(ticket, "queue ticket"); !valid.ok()) return valid;
  Result<net::HttpResponse> response = Call("GET", "/v1/queue/" + ticket, "");
  if (!response.ok()) return response.status();
  return ReadCreateReply(*response);
}

Status AgentClient::CancelTicket(const std::string& ticket) const {
  if (Status valid = CheckPathPart(ticket, "queue ticket"); !valid.ok()) return valid;
  Result<net::HttpResponse> response = Call("DELETE", "/v1/queue/" + ticket, "");
  if (!response.ok()) return response.status();
  return StatusOfReply(*response);
}

}  // namespace fgpu::api
