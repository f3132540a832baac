#include "agent/api.h"

#include <charconv>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>

#include "agent/dashboard.h"
#include "agent/metrics.h"
#include "core/units.h"
#include "slice/compute_spec.h"

namespace fgpu::agent {
namespace {

using nlohmann::json;

net::HttpResponse Json(int status, const json& body) {
  net::HttpResponse response;
  response.status = status;
  response.body = body.dump();
  return response;
}

net::HttpResponse NoContent() {
  net::HttpResponse response;
  response.status = 204;
  response.content_type.clear();
  return response;
}

net::HttpResponse Error(int status, const std::string& message) { return Json(status, json{{"error", message}}); }

int HttpStatusOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kResourceExhausted: return 409;
    default: return 500;
  }
}

net::HttpResponse ErrorOf(const Status& status) { return Error(HttpStatusOf(status), status.message()); }

json ToJson(const SliceRecord& slice, const WorkloadEnvironment& workload) {
  json env = json::object();
  for (const auto& [name, value] : workload.extra) env[name] = value;
  if (!workload.preload.empty()) env["LD_PRELOAD"] = workload.preload;
  env["FGPU_SLICE"] = slice.dir;
  env["CUDA_VISIBLE_DEVICES"] = slice.gpu_uuid;
  return json{{"id", slice.id},
              {"gpu", slice.gpu_uuid},
              {"memory_bytes", slice.memory_bytes},
              {"compute", slice.compute_share},
              {"compute_mode", slice::ToString(slice.compute_mode)},
              {"tier", slice::ToString(slice.tier)},
              {"tenant", slice.tenant},
              {"job", slice.labels.job},
              {"user", slice.labels.user},
              {"account", slice.labels.account},
              {"owner_uid", slice.owner_uid},
              {"owner_pid", slice.owner_pid},
              {"release_on_exit", slice.release_on_exit},
              {"dir", slice.dir},
              {"created_unix_ms", slice.created_unix_ms},
              {"env", std::move(env)}};
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

Result<std::string> StringField(const json& value, const char* name) {
  if (!value.is_string()) return Status::InvalidArgument(std::string(name) + " must be a string");
  return value.get<std::string>();
}

// The body as a JSON object whose keys are all in `known`.
Result<json> ObjectBody(const net::HttpRequest& request, std::initializer_list<const char*> known) {
  const std::string type = request.Header("content-type");
  if (!type.empty() && type.rfind("application/json", 0) != 0) {
    return Status::InvalidArgument("send Content-Type: application/json");
  }
  json body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return Status::InvalidArgument("the body is not valid JSON");
  if (!body.is_object()) return Status::InvalidArgument("the body must be a JSON object");
  for (const auto& [key, value] : body.items()) {
    if (std::find_if(known.begin(), known.end(), [&](const char* name) { return key == name; }) == known.end()) {
      return Status::InvalidArgument("unknown field \"" + key + "\"");
    }
  }
  return body;
}

// The limit fields both create and resize accept; absent ones stay unset.
Result<ResizeRequest> ParseLimits(const json& body) {
  ResizeRequest limits;
  if (body.contains("memory")) {
    Result<uint64_t> memory = MemoryField(body["memory"]);
    if (!memory.ok()) return memory.status();
    limits.memory_bytes = *memory;
  }
  if (body.contains("compute")) {
    Result<uint32_t> compute = ComputeField(body["compute"]);
    if (!compute.ok()) return compute.status();
    limits.compute_share = *compute;
  }
  if (body.contains("compute_mode")) {
    Result<std::string> text = StringField(body["compute_mode"], "compute_mode");
    if (!text.ok()) return text.status();
    Result<slice::ComputeMode> mode = slice::ParseComputeMode(*text);
    if (!mode.ok()) return mode.status();
    limits.compute_mode = *mode;
  }
  if (body.contains("tier")) {
    Result<std::string> text = StringField(body["tier"], "tier");
    if (!text.ok()) return text.status();
    Result<slice::Tier> tier = slice::ParseTier(*text);
    if (!tier.ok()) return tier.status();
    limits.tier = *tier;
  }
  return limits;
}

Result<CreateRequest> ParseCreate(const json& body) {
  Result<ResizeRequest> limits = ParseLimits(body);
  if (!limits.ok()) return limits.status();
  if (!limits->memory_bytes) return Status::InvalidArgument("memory is required");
  CreateRequest request;
  request.memory_bytes = *limits->memory_bytes;
  request.compute_share = limits->compute_share;
  request.compute_mode = limits->compute_mode.value_or(request.compute_mode);
  request.tier = limits->tier.value_or(request.tier);
  for (const char* name : {"release_on_exit", "wait"}) {
    if (!body.contains(name)) continue;
    if (!body[name].is_boolean()) return Status::InvalidArgument(std::string(name) + " must be true or false");
    (std::string(name) == "wait" ? request.wait : request.release_on_exit) = body[name].get<bool>();
  }
  const std::pair<const char*, std::string*> texts[] = {{"tenant", &request.tenant},
                                                       {"job", &request.labels.job},
                                                       {"user", &request.labels.user},
                                                       {"account", &request.labels.account}};
  for (const auto& [name, field] : texts) {
    if (!body.contains(name)) continue;
    Result<std::string> text = StringField(body[name], name);
    if (!text.ok()) return text.status();
    if (text->empty()) return Status::InvalidArgument(std::string(name) + " must not be empty (leave it out instead)");
    *field = *text;
  }
  if (body.contains("gpu")) {
    Result<std::string> gpu = StringField(body["gpu"], "gpu");
    if (!gpu.ok()) return gpu.status();
    request.gpu = *gpu;
  }
  return request;
}

}  // namespace

net::HttpResponse Api::Handle(const net::HttpRequest& request) {
  const std::string& path = request.path;
  const std::string& method = request.method;
  if (path == "/" || path == "/dashboard") return method == "GET" ? DashboardPage() : Error(405, "use GET");
  if (path == "/metrics") return method == "GET" ? Metrics() : Error(405, "use GET");
  if (path == "/v1/health") return method == "GET" ? Health() : Error(405, "use GET");
  if (path == "/v1/usage") return method == "GET" ? Usage(request) : Error(405, "use GET");
  if (path == "/v1/gpus") return method == "GET" ? ListGpus() : Error(405, "use GET");
  const std::string gpus = "/v1/gpus/";
  if (path.rfind(gpus, 0) == 0 && path.size() > gpus.size() && path.find('/', gpus.size()) == std::string::npos) {
    return method == "PUT" ? SetGpuMode(request, path.substr(gpus.size())) : Error(405, "use PUT");
  }
  if (path == "/v1/slices") {
    if (method == "GET") return ListSlices(request);
    if (method == "POST") return CreateSlice(request);
    return Error(405, "use GET or POST");
  }
  const std::string queue = "/v1/queue/";
  if (path.rfind(queue, 0) == 0 && path.size() > queue.size() && path.find('/', queue.size()) == std::string::npos) {
    return Queued(request, path.substr(queue.size()));
  }
  const std::string prefix = "/v1/slices/";
  if (path.rfind(prefix, 0) == 0 && path.size() > prefix.size() && path.find('/', prefix.size()) == std::string::npos) {
    return OneSlice(request, path.substr(prefix.size()));
  }
  return Error(404, "no such endpoint: " + method + " " + path);
}

net::HttpResponse Api::Metrics() {
  MetricsSnapshot snapshot;
  if (nvml_ != nullptr) {
    Result<std::vector<GpuState>> gpus = nvml_->Gpus();
    if (gpus.ok()) snapshot.gpus = *gpus;
  }
  snapshot.rooms = slices_->Rooms();
  snapshot.slices = slices_->List();
  snapshot.usage = usage_.Read(snapshot.slices);
  snapshot.queued = slices_->QueueLength();
  if (stop_loss_ != nullptr) snapshot.stop_loss = stop_loss_->Counters();
  net::HttpResponse response;
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
  response.body = RenderMetrics(snapshot);
  return response;
}

// ?since=<unix ms>&until=<unix ms>&by=tenant|slice|account|user|job (defaults: everything, now, tenant). Read-only:
// the closed records, so up to one accounting interval behind (dashboards poll this).
net::HttpResponse Api::Usage(const net::HttpRequest& request) {
  std::map<std::string, std::string> query;
  std::size_t at = 0;
  while (at < request.query.size()) {
    const std::size_t end = std::min(request.query.find('&', at), request.query.size());
    const std::string pair = request.query.substr(at, end - at);
    const std::size_t equals = pair.find('=');
    if (equals != std::string::npos) query[pair.substr(0, equals)] = pair.substr(equals + 1);
    at = end + 1;
  }
  const auto number = [&](const char* name, int64_t fallback) -> Result<int64_t> {
    if (query.count(name) == 0) return fallback;
    const std::string& text = query[name];
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0) {
      return Status::InvalidArgument(std::string(name) + " must be a time in Unix milliseconds");
    }
    return value;
  };
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  Result<int64_t> since = number("since", 0);
  Result<int64_t> until = number("until", now);
  if (!since.ok()) return ErrorOf(since.status());
  if (!until.ok()) return ErrorOf(until.status());
  Result<std::vector<UsageTotal>> totals = slices_->Totals(*since, *until, query.count("by") ? query["by"] : "tenant");
  if (!totals.ok()) return ErrorOf(totals.status());
  json rows = json::array();
  for (const UsageTotal& total : *totals) {
    rows.push_back(json{{"key", total.key},
                        {"reserved_gpu_seconds", total.reserved_gpu_seconds},
                        {"memory_gib_hours", total.memory_gib_hours},
                        {"busy_gpu_seconds", total.busy_gpu_seconds},
                        {"records", total.records}});
  }
  return Json(200, rows);
}

net::HttpResponse Api::Health() {
  return Json(200, json{{"status", "ok"}, {"gpus", slices_->Rooms().size()}, {"slices", slices_->List().size()}});
}

net::HttpResponse Api::ListGpus() {
  json gpus = json::array();
  for (const GpuRoom& room : slices_->Rooms()) {
    gpus.push_back(json{{"index", room.gpu.index},
                        {"uuid", room.gpu.uuid},
                        {"name", room.gpu.name},
                        {"memory_total", room.gpu.memory_total},
                        {"memory_reserved", room.memory_reserved},
                        {"compute_reserved", room.compute_reserved},
                        {"exclusive", room.exclusive},
                        {"fenced", room.fenced},
                        {"slices", room.slices}});
  }
  return Json(200, gpus);
}

// {"exclusive": true|false}: the switch that takes a GPU out of sharing (no new placements).
net::HttpResponse Api::SetGpuMode(const net::HttpRequest& request, const std::string& gpu) {
  Result<json> body = ObjectBody(request, {"exclusive"});
  if (!body.ok()) return ErrorOf(body.status());
  if (!body->contains("exclusive") || !(*body)["exclusive"].is_boolean()) {
    return Error(400, "exclusive must be true or false");
  }
  const Status set = slices_->SetExclusive(gpu, (*body)["exclusive"].get<bool>());
  if (!set.ok()) return ErrorOf(set);
  return ListGpus();
}

net::HttpResponse Api::ListSlices(const net::HttpRequest& request) {
  const std::vector<SliceRecord> records = slices_->List();
  // ?usage=1: also what each slice uses now (its ledger and compute board), as fgpu status shows.
  const bool with_usage = request.query.find("usage=1") != std::string::npos;
  const std::vector<SliceUsage> usage = with_usage ? usage_.Read(records) : std::vector<SliceUsage>();
  json slices = json::array();
  for (std::size_t i = 0; i < records.size(); ++i) {
    json slice = ToJson(records[i], workload_);
    if (with_usage) {
      slice["memory_used_bytes"] = usage[i].memory_used;
      slice["processes"] = usage[i].processes;
      slice["compute_busy_seconds"] = static_cast<double>(usage[i].busy_ns) / 1e9;
      slice["compute_throttled_seconds"] = static_cast<double>(usage[i].throttled_ns) / 1e9;
    }
    slices.push_back(std::move(slice));
  }
  return Json(200, slices);
}

net::HttpResponse Api::CreateSlice(const net::HttpRequest& request) {
  Result<json> body =
      ObjectBody(request, {"memory", "compute", "compute_mode", "tier", "tenant", "gpu", "release_on_exit", "wait", "job",
                           "user", "account"});
  if (!body.ok()) return ErrorOf(body.status());
  Result<CreateRequest> create = ParseCreate(*body);
  if (!create.ok()) return ErrorOf(create.status());
  Result<QueueStatus> outcome = slices_->CreateOrQueue(*create, request.peer);
  if (!outcome.ok()) return ErrorOf(outcome.status());
  if (outcome->slice) return Json(201, ToJson(*outcome->slice, workload_));
  return Json(202, json{{"ticket", outcome->ticket}, {"position", outcome->position}});
}

net::HttpResponse Api::Queued(const net::HttpRequest& request, const std::string& ticket) {
  if (request.method == "GET") {
    Result<QueueStatus> status = slices_->Poll(ticket);
    if (!status.ok()) return ErrorOf(status.status());
    if (status->slice) return Json(201, ToJson(*status->slice, workload_));
    return Json(200, json{{"ticket", ticket}, {"position", status->position}});
  }
  if (request.method == "DELETE") {
    const Status cancelled = slices_->Cancel(ticket);
    if (!cancelled.ok()) return ErrorOf(cancelled);
    return NoContent();
  }
  return Error(405, "use GET or DELETE");
}

net::HttpResponse Api::OneSlice(const net::HttpRequest& request, const std::string& id) {
  if (request.method == "GET") {
    Result<SliceRecord> slice = slices_->Get(id);
    return slice.ok() ? Json(200, ToJson(*slice, workload_)) : ErrorOf(slice.status());
  }
  if (request.method == "PATCH") {
    Result<json> body = ObjectBody(request, {"memory", "compute", "compute_mode", "tier"});
    if (!body.ok()) return ErrorOf(body.status());
    Result<ResizeRequest> resize = ParseLimits(*body);
    if (!resize.ok()) return ErrorOf(resize.status());
    Result<SliceRecord> slice = slices_->Resize(id, *resize);
    return slice.ok() ? Json(200, ToJson(*slice, workload_)) : ErrorOf(slice.status());
  }
  if (request.method == "DELETE") {
    const Status deleted = slices_->Delete(id);
    if (!deleted.ok()) return ErrorOf(deleted);
    return NoContent();
  }
  return Error(405, "use GET, PATCH or DELETE");
}

}  // namespace fgpu::agent
