#include "api/codec.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <optional>
#include <type_traits>
#include <variant>

#include "core/units.h"

namespace fgpu::api {
namespace {

using nlohmann::json;

// How deeply `text` nests arrays and objects, counted without parsing (strings skipped), so that
// a hostile body is refused before the parser's recursion and allocations see it.
int JsonDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    if (c == ']' || c == '}') --depth;
  }
  return deepest;
}

Status OnlyKnownFields(const json& body, std::initializer_list<const char*> known) {
  if (!body.is_object()) return Status::InvalidArgument("the body must be a JSON object");
  // Keys by iterator, not a structured binding: Clang 14 (the fuzzers' compiler) cannot capture one.
  for (auto field = body.begin(); field != body.end(); ++field) {
    const std::string& key = field.key();
    if (std::none_of(known.begin(), known.end(), [&](const char* name) { return key == name; })) {
      return Status::InvalidArgument("unknown field \"" + key + "\"");
    }
  }
  return Status::Ok();
}

// The typed readers: an absent field leaves `out` as it is; a present one of another type is
// InvalidArgument naming the field.
Status ReadString(const json& object, const char* name, std::string* out) {
  const auto it = object.find(name);
  if (it == object.end()) return Status::Ok();
  if (!it->is_string()) return Status::InvalidArgument(std::string(name) + " must be a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status ReadBool(const json& object, const char* name, bool* out) {
  const auto it = object.find(name);
  if (it == object.end()) return Status::Ok();
  if (!it->is_boolean()) return Status::InvalidArgument(std::string(name) + " must be true or false");
  *out = it->get<bool>();
  return Status::Ok();
}

template <typename Int>
Status ReadInteger(const json& object, const char* name, Int* out) {
  const auto it = object.find(name);
  if (it == object.end()) return Status::Ok();
  const bool fits = std::is_signed_v<Int> ? it->is_number_integer() &&
                                                (!it->is_number_unsigned() || it->get<uint64_t>() <= uint64_t(INT64_MAX))
                                          : it->is_number_unsigned();
  if (!fits) return Status::InvalidArgument(std::string(name) + " must be an integer");
  if constexpr (std::is_signed_v<Int>) {
    const int64_t value = it->get<int64_t>();
    if (value < std::numeric_limits<Int>::min() || value > std::numeric_limits<Int>::max()) {
      return Status::InvalidArgument(std::string(name) + " is out of range");
    }
    *out = static_cast<Int>(value);
  } else {
    const uint64_t value = it->get<uint64_t>();
    if (value > std::numeric_limits<Int>::max()) return Status::InvalidArgument(std::string(name) + " is out of range");
    *out = static_cast<Int>(value);
  }
  return Status::Ok();
}

Status ReadNumber(const json& object, const char* name, double* out) {
  const auto it = object.find(name);
  if (it == object.end()) return Status::Ok();
  if (!it->is_number()) return Status::InvalidArgument(std::string(name) + " must be a number");
  *out = it->get<double>();
  return Status::Ok();
}

// ReadNumber for a field newer agents add: absent leaves `out` unset.
Status ReadOptionalNumber(const json& object, const char* name, std::optional<double>* out) {
  if (!object.contains(name)) return Status::Ok();
  double value = 0;
  if (Status read = ReadNumber(object, name, &value); !read.ok()) return read;
  *out = value;
  return Status::Ok();
}

// Runs the readers in order; the first failure wins.
Status All(std::initializer_list<Status> steps) {
  for (const Status& step : steps) {
    if (!step.ok()) return step;
  }
  return Status::Ok();
}

// "10GiB", "512MiB" or a number of bytes.
Result<uint64_t> MemoryField(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_string()) return ParseByteSize(value.get<std::string>());
  return Status::InvalidArgument("memory must be a byte count or a size such as \"10GiB\"");
}

Result<uint32_t> ComputeField(const json& value) {
  if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 100) {
    return Status::InvalidArgument("compute must be an integer percent 1..100");
  }
  return static_cast<uint32_t>(value.get<int64_t>());
}

// The limit fields create and resize share; absent ones stay unset.
Status ReadLimits(const json& body, SliceResize* limits) {
  if (body.contains("memory")) {
    Result<uint64_t> memory = MemoryField(body["memory"]);
    if (!memory.ok()) return memory.status();
    limits->memory_bytes = *memory;
  }
  if (body.contains("compute")) {
    Result<uint32_t> compute = ComputeField(body["compute"]);
    if (!compute.ok()) return compute.status();
    limits->compute = *compute;
  }
  for (const auto& [name, field] : {std::pair{"compute_mode", &limits->compute_mode}, std::pair{"tier", &limits->tier}}) {
    if (!body.contains(name)) continue;
    std::string text;
    if (Status read = ReadString(body, name, &text); !read.ok()) return read;
    *field = text;
  }
  return Status::Ok();
}

void WriteLimits(const SliceResize& limits, json* body) {
  if (limits.memory_bytes) (*body)["memory"] = *limits.memory_bytes;
  if (limits.compute) (*body)["compute"] = *limits.compute;
  if (limits.compute_mode) (*body)["compute_mode"] = *limits.compute_mode;
  if (limits.tier) (*body)["tier"] = *limits.tier;
}

bool KubeChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'; }

bool KeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == ':' || c == '/' || c == '-';
}

template <typename T>
Result<std::vector<T>> ParseArray(const json& value, const char* what) {
  if (!value.is_array()) return Status::InvalidArgument(std::string(what) + " must be a JSON array");
  std::vector<T> items;
  items.reserve(value.size());
  for (const json& item : value) {
    Result<T> parsed = Parse<T>(item);
    if (!parsed.ok()) return parsed.status();
    items.push_back(std::move(*parsed));
  }
  return items;
}

}  // namespace

Result<json> ParseObject(std::string_view text) {
  if (JsonDepth(text) > kMaxJsonDepth) {
    return Status::InvalidArgument("the body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return Status::InvalidArgument("the body is not valid JSON");
  if (!body.is_object()) return Status::InvalidArgument("the body must be a JSON object");
  return body;
}

Status CheckIdempotencyKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxIdempotencyKey || !std::all_of(key.begin(), key.end(), KeyChar)) {
    return Status::InvalidArgument("idempotency_key must be 1-128 of A-Z a-z 0-9 . _ : / -");
  }
  return Status::Ok();
}

Status CheckKubeLabel(std::string_view field, std::string_view value) {
  if (value.size() > kMaxKubeLabel || !std::all_of(value.begin(), value.end(), KubeChar)) {
    return Status::InvalidArgument(std::string(field) + " must be at most 253 of a-z 0-9 . - (a Kubernetes name)");
  }
  return Status::Ok();
}

json ToJson(const Env& env) {
  json object = json::object();
  for (const auto& [name, value] : env) object[name] = value;
  return object;
}

json ToJson(const SliceRequest& request) {
  json body = json::object();
  body["memory"] = request.memory_bytes;
  SliceResize limits;
  limits.compute = request.compute;
  limits.compute_mode = request.compute_mode;
  limits.tier = request.tier;
  WriteLimits(limits, &body);
  if (request.tenant) body["tenant"] = *request.tenant;
  if (request.gpu) body["gpu"] = *request.gpu;
  if (request.isolation) body["isolation"] = *request.isolation;
  if (request.mig_profile) body["mig_profile"] = *request.mig_profile;
  if (request.mig_start) body["mig_start"] = *request.mig_start;
  // Only when asked: over TCP the agent refuses either (nobody vouches for the pid there).
  if (request.release_on_exit) body["release_on_exit"] = true;
  if (request.wait) body["wait"] = true;
  const std::pair<const char*, const std::string*> labels[] = {
      {"job", &request.labels.job},
      {"user", &request.labels.user},
      {"account", &request.labels.account},
      {"namespace", &request.labels.kube_namespace},
      {"pod", &request.labels.pod},
      {"claim", &request.labels.claim},
      {"pod_uid", &request.labels.pod_uid}};
  for (const auto& [name, value] : labels) {
    if (!value->empty()) body[name] = *value;
  }
  if (request.owner) {
    if (const auto* uid = std::get_if<uint32_t>(&*request.owner)) {
      body["owner"] = *uid;
    } else {
      body["owner"] = std::get<std::string>(*request.owner);
    }
  }
  if (request.gang) body["gang"] = *request.gang;
  if (request.gang_size) body["gang_size"] = *request.gang_size;
  if (request.idempotency_key) body["idempotency_key"] = *request.idempotency_key;
  return body;
}

template <>
Result<SliceRequest> Parse<SliceRequest>(const json& body) {
  if (Status known = OnlyKnownFields(body, {"memory", "compute", "compute_mode", "tier", "tenant", "gpu",
                                            "release_on_exit", "wait", "job", "user", "account", "owner",
                                            "idempotency_key", "namespace", "pod", "claim", "pod_uid", "gang",
                                            "gang_size", "isolation", "mig_profile", "mig_start"});
      !known.ok()) {
    return known;
  }
  SliceResize limits;
  if (Status read = ReadLimits(body, &limits); !read.ok()) return read;
  if (!limits.memory_bytes) return Status::InvalidArgument("memory is required");
  SliceRequest request;
  request.memory_bytes = *limits.memory_bytes;
  request.compute = limits.compute;
  request.compute_mode = limits.compute_mode;
  request.tier = limits.tier;
  if (Status read = All({ReadBool(body, "release_on_exit", &request.release_on_exit),
                         ReadBool(body, "wait", &request.wait)});
      !read.ok()) {
    return read;
  }
  // Present means meant: an empty tenant or job label would bill under "" by accident.
  const std::pair<const char*, std::string*> texts[] = {{"tenant", nullptr},
                                                       {"job", &request.labels.job},
                                                       {"user", &request.labels.user},
                                                       {"account", &request.labels.account}};
  for (const auto& [name, field] : texts) {
    if (!body.contains(name)) continue;
    std::string text;
    if (Status read = ReadString(body, name, &text); !read.ok()) return read;
    if (text.empty()) return Status::InvalidArgument(std::string(name) + " must not be empty (leave it out instead)");
    if (field != nullptr) {
      *field = text;
    } else {
      request.tenant = text;
    }
  }
  const std::pair<const char*, std::string*> kube[] = {{"namespace", &request.labels.kube_namespace},
                                                      {"pod", &request.labels.pod},
                                                      {"claim", &request.labels.claim}};
  for (const auto& [name, field] : kube) {
    if (Status read = ReadString(body, name, field); !read.ok()) return read;
    if (Status valid = CheckKubeLabel(name, *field); !valid.ok()) return valid;
  }
  if (Status read = ReadString(body, "pod_uid", &request.labels.pod_uid); !read.ok()) return read;
  if (request.labels.pod_uid.size() > 64 ||
      !std::all_of(request.labels.pod_uid.begin(), request.labels.pod_uid.end(),
                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-'; })) {
    return Status::InvalidArgument("pod_uid must be at most 64 of A-Z a-z 0-9 - (a pod's metadata.uid)");
  }
  if (body.contains("gpu")) {
    std::string gpu;
    if (Status read = ReadString(body, "gpu", &gpu); !read.ok()) return read;
    request.gpu = gpu;
  }
  if (body.contains("isolation")) {
    std::string isolation;
    if (Status read = ReadString(body, "isolation", &isolation); !read.ok()) return read;
    if (isolation != "trusted" && isolation != "hard" && isolation != "exclusive") {
      return Status::InvalidArgument("isolation must be trusted, hard or exclusive");
    }
    request.isolation = isolation;
  }
  if (body.contains("mig_profile")) {
    std::string profile;
    if (Status read = ReadString(body, "mig_profile", &profile); !read.ok()) return read;
    // "1g.10gb", "1g.10gb+me": a profile's name, checked against the GPU's model by the agent.
    const bool shaped = !profile.empty() && profile.size() <= 16 &&
                        std::all_of(profile.begin(), profile.end(), [](char c) {
                          return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '+';
                        });
    if (!shaped) return Status::InvalidArgument("mig_profile must be a MIG profile's name, like 3g.40gb");
    request.mig_profile = profile;
  }
  if (body.contains("mig_start")) {
    const json& start = body["mig_start"];
    if (!start.is_number_integer() || start.get<int64_t>() < 0 || start.get<int64_t>() > 7) {
      return Status::InvalidArgument("mig_start must be a memory slice, 0..7");
    }
    request.mig_start = start.get<int>();
  }
  if (request.mig_start && !request.mig_profile) {
    return Status::InvalidArgument("mig_start places an instance of mig_profile: name the profile too");
  }
  if (request.mig_profile && request.isolation != std::optional<std::string>("hard")) {
    return Status::InvalidArgument("mig_profile takes a MIG instance whole: it needs isolation hard");
  }
  if (body.contains("owner")) {
    const json& owner = body["owner"];
    if (owner.is_number_unsigned() && owner.get<uint64_t>() < uint64_t{UINT32_MAX}) {
      request.owner = static_cast<uint32_t>(owner.get<uint64_t>());
    } else if (owner.is_string()) {
      request.owner = owner.get<std::string>();
    } else {
      return Status::InvalidArgument("owner must be a uid or a user name");
    }
  }
  if (body.contains("idempotency_key")) {
    std::string key;
    if (Status read = ReadString(body, "idempotency_key", &key); !read.ok()) return read;
    if (Status valid = CheckIdempotencyKey(key); !valid.ok()) return valid;
    request.idempotency_key = key;
  }
  if (body.contains("gang") || body.contains("gang_size")) {
    std::string gang;
    int size = 0;
    if (Status read = All({ReadString(body, "gang", &gang), ReadInteger(body, "gang_size", &size)}); !read.ok()) return read;
    if (Status valid = CheckIdempotencyKey(gang); !valid.ok()) {
      return Status::InvalidArgument("gang must be 1..128 of [A-Za-z0-9._:/-]");
    }
    if (size < 2 || size > 64) return Status::InvalidArgument("gang_size must be 2..64 (with gang)");
    request.gang = gang;
    request.gang_size = size;
  }
  return request;
}

json ToJson(const SliceResize& resize) {
  json body = json::object();
  WriteLimits(resize, &body);
  return body;
}

template <>
Result<SliceResize> Parse<SliceResize>(const json& body) {
  if (Status known = OnlyKnownFields(body, {"memory", "compute", "compute_mode", "tier"}); !known.ok()) return known;
  SliceResize resize;
  if (Status read = ReadLimits(body, &resize); !read.ok()) return read;
  return resize;
}

json ToJson(const Slice& slice) {
  json body = {{"id", slice.id},
               {"gpu", slice.gpu},
               {"memory_bytes", slice.memory_bytes},
               {"compute", slice.compute},
               {"compute_mode", slice.compute_mode},
               {"tier", slice.tier},
               {"tenant", slice.tenant},
               {"isolation", slice.isolation},
               {"created_unix_ms", slice.created_unix_ms},
               {"starved", slice.starved},
               {"namespace", slice.labels.kube_namespace},
               {"pod", slice.labels.pod},
               {"claim", slice.labels.claim}};
  if (slice.compute_throttled_seconds) body["compute_throttled_seconds"] = *slice.compute_throttled_seconds;
  if (slice.details) {
    const SliceDetails& details = *slice.details;
    body.update(json{{"job", slice.labels.job},
                     {"user", slice.labels.user},
                     {"account", slice.labels.account},
                     {"pod_uid", slice.labels.pod_uid},
                     {"owner_uid", details.owner_uid},
                     {"owner_pid", details.owner_pid},
                     {"release_on_exit", details.release_on_exit},
                     {"dir", details.dir},
                     {"env", ToJson(details.env)},
                     {"idempotency_key", details.idempotency_key}});
  }
  if (slice.usage) {
    const SliceUsage& usage = *slice.usage;
    body["memory_used_bytes"] = usage.memory_used_bytes;
    body["processes"] = usage.processes;
    body["compute_busy_seconds"] = usage.compute_busy_seconds;
    body["ledger_readable"] = usage.ledger_readable;
    if (!usage.ledger_problem.empty()) body["ledger_problem"] = usage.ledger_problem;
  }
  return body;
}

template <>
Result<Env> Parse<Env>(const json& value) {
  if (!value.is_object()) return Status::InvalidArgument("env must be an object of strings");
  Env env;
  for (auto entry = value.begin(); entry != value.end(); ++entry) {
    const std::string& name = entry.key();
    if (!entry->is_string() || name.empty() || name.find('=') != std::string::npos) {
      return Status::InvalidArgument("env has a malformed entry '" + name + "'");
    }
    env.emplace_back(name, entry->get<std::string>());
  }
  return env;
}

template <>
Result<Slice> Parse<Slice>(const json& body) {
  if (!body.is_object()) return Status::InvalidArgument("a slice must be a JSON object");
  Slice slice;
  if (Status read = ReadString(body, "id", &slice.id); !read.ok()) return read;
  if (slice.id.empty()) return Status::InvalidArgument("the slice has no id");
  Status read = All({ReadString(body, "gpu", &slice.gpu), ReadInteger(body, "memory_bytes", &slice.memory_bytes),
                     ReadInteger(body, "compute", &slice.compute), ReadString(body, "compute_mode", &slice.compute_mode),
                     ReadString(body, "tier", &slice.tier), ReadString(body, "tenant", &slice.tenant),
                     ReadString(body, "isolation", &slice.isolation),
                     ReadInteger(body, "created_unix_ms", &slice.created_unix_ms),
                     ReadOptionalNumber(body, "compute_throttled_seconds", &slice.compute_throttled_seconds),
                     ReadBool(body, "starved", &slice.starved), ReadString(body, "job", &slice.labels.job),
                     ReadString(body, "user", &slice.labels.user), ReadString(body, "account", &slice.labels.account),
                     ReadString(body, "namespace", &slice.labels.kube_namespace),
                     ReadString(body, "pod", &slice.labels.pod), ReadString(body, "claim", &slice.labels.claim),
                     ReadString(body, "pod_uid", &slice.labels.pod_uid)});
  if (!read.ok()) return Status::InvalidArgument("slice " + slice.id + ": " + read.message());
  if (body.contains("owner_uid") || body.contains("dir") || body.contains("env")) {
    SliceDetails details;
    read = All({ReadInteger(body, "owner_uid", &details.owner_uid), ReadInteger(body, "owner_pid", &details.owner_pid),
                ReadBool(body, "release_on_exit", &details.release_on_exit), ReadString(body, "dir", &details.dir),
                ReadString(body, "idempotency_key", &details.idempotency_key)});
    if (read.ok() && body.contains("env")) {
      Result<Env> env = Parse<Env>(body["env"]);
      if (env.ok()) details.env = std::move(*env);
      read = env.status();
    }
    if (!read.ok()) return Status::InvalidArgument("slice " + slice.id + ": " + read.message());
    slice.details = std::move(details);
  }
  if (body.contains("memory_used_bytes")) {
    SliceUsage usage;
    read = All({ReadInteger(body, "memory_used_bytes", &usage.memory_used_bytes),
                ReadInteger(body, "processes", &usage.processes),
                ReadNumber(body, "compute_busy_seconds", &usage.compute_busy_seconds),
                ReadBool(body, "ledger_readable", &usage.ledger_readable),
                ReadString(body, "ledger_problem", &usage.ledger_problem)});
    if (!read.ok()) return Status::InvalidArgument("slice " + slice.id + ": " + read.message());
    slice.usage = std::move(usage);
  }
  return slice;
}

template <>
Result<std::vector<Slice>> Parse<std::vector<Slice>>(const json& value) {
  return ParseArray<Slice>(value, "the slice list");
}

json ToJson(const QueueTicket& ticket) { return json{{"ticket", ticket.ticket}, {"position", ticket.position}}; }

template <>
Result<QueueTicket> Parse<QueueTicket>(const json& body) {
  if (!body.is_object()) return Status::InvalidArgument("a queue ticket must be a JSON object");
  QueueTicket ticket;
  if (Status read = All({ReadString(body, "ticket", &ticket.ticket), ReadInteger(body, "position", &ticket.position)});
      !read.ok()) {
    return read;
  }
  if (ticket.ticket.empty()) return Status::InvalidArgument("the queue answer has no ticket");
  return ticket;
}

json ToJson(const Gpu& gpu) {
  return json{{"index", gpu.index},
              {"uuid", gpu.uuid},
              {"name", gpu.name},
              {"memory_total", gpu.memory_total},
              {"memory_reserved", gpu.memory_reserved},
              {"compute_reserved", gpu.compute_reserved},
              {"exclusive", gpu.exclusive},
              {"fenced", gpu.fenced},
              {"slices", gpu.slices},
              {"compute_capability", gpu.compute_capability},
              {"driver_version", gpu.driver_version},
              {"mig_capable", gpu.mig_capable},
              {"minor_number", gpu.minor_number},
              {"isolation", gpu.isolation},
              {"parent_uuid", gpu.parent_uuid},
              {"mig_profile", gpu.mig_profile},
              {"mig_start", gpu.mig_start},
              {"mig_note", gpu.mig_note},
              {"mig_dynamic", gpu.mig_dynamic}};
}

template <>
Result<Gpu> Parse<Gpu>(const json& body) {
  if (!body.is_object()) return Status::InvalidArgument("a GPU must be a JSON object");
  Gpu gpu;
  Status read = All({ReadInteger(body, "index", &gpu.index), ReadString(body, "uuid", &gpu.uuid),
                     ReadString(body, "name", &gpu.name), ReadInteger(body, "memory_total", &gpu.memory_total),
                     ReadInteger(body, "memory_reserved", &gpu.memory_reserved),
                     ReadInteger(body, "compute_reserved", &gpu.compute_reserved),
                     ReadBool(body, "exclusive", &gpu.exclusive), ReadString(body, "fenced", &gpu.fenced),
                     ReadInteger(body, "slices", &gpu.slices),
                     ReadString(body, "compute_capability", &gpu.compute_capability),
                     ReadString(body, "driver_version", &gpu.driver_version),
                     ReadBool(body, "mig_capable", &gpu.mig_capable),
                     ReadInteger(body, "minor_number", &gpu.minor_number),
                     ReadString(body, "isolation", &gpu.isolation), ReadString(body, "parent_uuid", &gpu.parent_uuid),
                     ReadString(body, "mig_profile", &gpu.mig_profile), ReadInteger(body, "mig_start", &gpu.mig_start),
                     ReadString(body, "mig_note", &gpu.mig_note), ReadBool(body, "mig_dynamic", &gpu.mig_dynamic)});
  if (!read.ok()) return Status::InvalidArgument("GPU " + gpu.uuid + ": " + read.message());
  return gpu;
}

template <>
Result<std::vector<Gpu>> Parse<std::vector<Gpu>>(const json& value) {
  return ParseArray<Gpu>(value, "the GPU list");
}

json ToJson(const GpuMode& mode) { return json{{"exclusive", mode.exclusive}}; }

template <>
Result<GpuMode> Parse<GpuMode>(const json& body) {
  if (Status known = OnlyKnownFields(body, {"exclusive"}); !known.ok()) return known;
  if (!body.contains("exclusive") || !body["exclusive"].is_boolean()) {
    return Status::InvalidArgument("exclusive must be true or false");
  }
  return GpuMode{body["exclusive"].get<bool>()};
}

json ToJson(const Health& health) {
  return json{{"status", health.status}, {"gpus", health.gpus}, {"slices", health.slices}};
}

template <>
Result<Health> Parse<Health>(const json& body) {
  if (!body.is_object()) return Status::InvalidArgument("health must be a JSON object");
  Health health;
  if (Status read = All({ReadString(body, "status", &health.status), ReadInteger(body, "gpus", &health.gpus),
                         ReadInteger(body, "slices", &health.slices)});
      !read.ok()) {
    return read;
  }
  return health;
}

json ToJson(const JoinReply& join) { return json{{"slice", join.slice}, {"pid", join.pid}, {"cgroup", join.cgroup}}; }

template <>
Result<JoinReply> Parse<JoinReply>(const json& body) {
  if (!body.is_object()) return Status::InvalidArgument("a join answer must be a JSON object");
  JoinReply join;
  if (Status read = All({ReadString(body, "slice", &join.slice), ReadInteger(body, "pid", &join.pid),
                         ReadString(body, "cgroup", &join.cgroup)});
      !read.ok()) {
    return read;
  }
  return join;
}

json ToJson(const UsageTotal& total) {
  return json{{"key", total.key},
              {"reserved_gpu_seconds", total.reserved_gpu_seconds},
              {"memory_gib_hours", total.memory_gib_hours},
              {"busy_gpu_seconds", total.busy_gpu_seconds},
              {"records", total.records}};
}

template <>
Result<UsageTotal> Parse<UsageTotal>(const json& body) {
  if (!body.is_object()) return Status::InvalidArgument("a usage row must be a JSON object");
  UsageTotal total;
  Status read = All({ReadString(body, "key", &total.key),
                     ReadNumber(body, "reserved_gpu_seconds", &total.reserved_gpu_seconds),
                     ReadNumber(body, "memory_gib_hours", &total.memory_gib_hours),
                     ReadNumber(body, "busy_gpu_seconds", &total.busy_gpu_seconds),
                     ReadInteger(body, "records", &total.records)});
  if (!read.ok()) return Status::InvalidArgument("usage of '" + total.key + "': " + read.message());
  return total;
}

template <>
Result<std::vector<UsageTotal>> Parse<std::vector<UsageTotal>>(const json& value) {
  return ParseArray<UsageTotal>(value, "the usage report");
}

json ToJson(const QueueItem& item) {
  json out{{"position", item.position}, {"ticket", item.ticket},         {"owner_uid", item.owner_uid},
           {"memory_bytes", item.memory_bytes}, {"tier", item.tier}, {"tenant", item.tenant},
           {"waited_ms", item.waited_ms},       {"reason", item.reason}};
  if (item.compute) out["compute"] = *item.compute;
  return out;
}

template <>
Result<QueueItem> Parse<QueueItem>(const json& body) {
  if (!body.is_object()) return Status::InvalidArgument("a queued request must be a JSON object");
  QueueItem item;
  uint32_t compute = 0;
  Status read = All({ReadInteger(body, "position", &item.position), ReadString(body, "ticket", &item.ticket),
                     ReadInteger(body, "owner_uid", &item.owner_uid), ReadInteger(body, "memory_bytes", &item.memory_bytes),
                     ReadInteger(body, "compute", &compute), ReadString(body, "tier", &item.tier),
                     ReadString(body, "tenant", &item.tenant), ReadInteger(body, "waited_ms", &item.waited_ms),
                     ReadString(body, "reason", &item.reason)});
  if (!read.ok()) return Status::InvalidArgument("queued request " + std::to_string(item.position) + ": " + read.message());
  if (body.contains("compute")) item.compute = compute;
  return item;
}

template <>
Result<std::vector<QueueItem>> Parse<std::vector<QueueItem>>(const json& value) {
  return ParseArray<QueueItem>(value, "the queue");
}

json ToJson(const Quota& quota) {
  return json{{"name", quota.name},
              {"parent", quota.parent},
              {"memory_used", quota.memory_used},
              {"memory_nominal", quota.memory_nominal},
              {"memory_limit", quota.memory_limit},
              {"compute_used", quota.compute_used},
              {"compute_nominal", quota.compute_nominal},
              {"compute_limit", quota.compute_limit}};
}

template <>
Result<Quota> Parse<Quota>(const json& body) {
  if (!body.is_object()) return Status::InvalidArgument("a quota must be a JSON object");
  Quota quota;
  Status read = All({ReadString(body, "name", &quota.name), ReadString(body, "parent", &quota.parent),
                     ReadInteger(body, "memory_used", &quota.memory_used),
                     ReadInteger(body, "memory_nominal", &quota.memory_nominal),
                     ReadInteger(body, "memory_limit", &quota.memory_limit),
                     ReadInteger(body, "compute_used", &quota.compute_used),
                     ReadInteger(body, "compute_nominal", &quota.compute_nominal),
                     ReadInteger(body, "compute_limit", &quota.compute_limit)});
  if (!read.ok()) return Status::InvalidArgument("quota '" + quota.name + "': " + read.message());
  return quota;
}

template <>
Result<std::vector<Quota>> Parse<std::vector<Quota>>(const json& value) {
  return ParseArray<Quota>(value, "the quotas");
}

json ToJson(const ApiError& error) { return json{{"error", error.error}}; }

template <>
Result<ApiError> Parse<ApiError>(const json& body) {
  if (!body.is_object() || !body.contains("error") || !body["error"].is_string()) {
    return Status::InvalidArgument("not an error answer");
  }
  return ApiError{body["error"].get<std::string>()};
}

}  // namespace fgpu::api
