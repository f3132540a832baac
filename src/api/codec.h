// The one JSON codec of the agent's API (types.h): ToJson for every request and reply, and
// Parse<T> back. Requests (SliceRequest, SliceResize, GpuMode) are parsed strictly — an unknown
// field, or a field of the wrong type, is InvalidArgument naming the field — because a field
// the agent ignored would be a limit silently dropped. Replies are parsed leniently about
// fields they do not know (a newer agent may add some) but strictly about the types of those
// they do. The messages are the agent's 400 texts (docs/agent.md "API").
//
// Syntax is checked here (sizes, percent ranges, label and key characters); what needs the
// machine (a user name, the tenant rules, compute_mode and tier words) is the agent's.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/types.h"
#include "core/status.h"

namespace fgpu::api {

// A request body nested deeper is refused before it is parsed (the API's bodies are flat).
inline constexpr int kMaxJsonDepth = 8;
inline constexpr std::size_t kMaxIdempotencyKey = 128;
inline constexpr std::size_t kMaxKubeLabel = 253;

// A request body: valid JSON, an object, nested at most kMaxJsonDepth (counted before parsing,
// so a hostile body never reaches the parser's recursion).
Result<nlohmann::json> ParseObject(std::string_view text);

// 1..128 of [A-Za-z0-9._:/-].
Status CheckIdempotencyKey(std::string_view key);
// Up to 253 of [a-z0-9.-] (a DNS subdomain's characters); empty is allowed (not set). `field`
// names it in the message.
Status CheckKubeLabel(std::string_view field, std::string_view value);

nlohmann::json ToJson(const SliceRequest& request);
nlohmann::json ToJson(const SliceResize& resize);
nlohmann::json ToJson(const Slice& slice);
nlohmann::json ToJson(const QueueTicket& ticket);
nlohmann::json ToJson(const Gpu& gpu);
nlohmann::json ToJson(const GpuMode& mode);
nlohmann::json ToJson(const Health& health);
nlohmann::json ToJson(const JoinReply& join);
nlohmann::json ToJson(const ApiError& error);
nlohmann::json ToJson(const UsageTotal& total);
nlohmann::json ToJson(const QueueItem& item);
nlohmann::json ToJson(const Quota& quota);
nlohmann::json ToJson(const Env& env);
// A list (GET /v1/slices, GET /v1/gpus): an array of ToJson(item).
template <typename T>
nlohmann::json ToJson(const std::vector<T>& items) {
  nlohmann::json array = nlohmann::json::array();
  for (const T& item : items) array.push_back(ToJson(item));
  return array;
}

template <typename T>
Result<T> Parse(const nlohmann::json& json);

template <> Result<SliceRequest> Parse<SliceRequest>(const nlohmann::json& json);
template <> Result<SliceResize> Parse<SliceResize>(const nlohmann::json& json);
template <> Result<Slice> Parse<Slice>(const nlohmann::json& json);
template <> Result<std::vector<Slice>> Parse<std::vector<Slice>>(const nlohmann::json& json);
template <> Result<QueueTicket> Parse<QueueTicket>(const nlohmann::json& json);
template <> Result<Gpu> Parse<Gpu>(const nlohmann::json& json);
template <> Result<std::vector<Gpu>> Parse<std::vector<Gpu>>(const nlohmann::json& json);
template <> Result<GpuMode> Parse<GpuMode>(const nlohmann::json& json);
template <> Result<Health> Parse<Health>(const nlohmann::json& json);
template <> Result<JoinReply> Parse<JoinReply>(const nlohmann::json& json);
template <> Result<ApiError> Parse<ApiError>(const nlohmann::json& json);
template <> Result<Env> Parse<Env>(const nlohmann::json& json);
template <> Result<UsageTotal> Parse<UsageTotal>(const nlohmann::json& json);
template <> Result<std::vector<UsageTotal>> Parse<std::vector<UsageTotal>>(const nlohmann::json& json);
template <> Result<QueueItem> Parse<QueueItem>(const nlohmann::json& json);
template <> Result<std::vector<QueueItem>> Parse<std::vector<QueueItem>>(const nlohmann::json& json);
template <> Result<Quota> Parse<Quota>(const nlohmann::json& json);
template <> Result<std::vector<Quota>> Parse<std::vector<Quota>>(const nlohmann::json& json);

// JSON text, then Parse<T>: InvalidArgument when the text is not JSON.
template <typename T>
Result<T> ParseText(std::string_view text) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Status::InvalidArgument("not valid JSON");
  return Parse<T>(json);
}

}  // namespace fgpu::api
