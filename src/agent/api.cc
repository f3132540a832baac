#include "agent/api.h"

#include <pwd.h>

#include <charconv>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "agent/dashboard.h"
#include "agent/log.h"
#include "agent/metrics.h"
#include "core/units.h"
#include "slice/compute_spec.h"

namespace fgpu::agent {
namespace {

using nlohmann::json;

net::HttpResponse Json(int status, const json& body) {
  net::HttpResponse response;
  response.status = status;
  // Replacing, not throwing: a message that quotes a client's bytes must never turn into a 500.
  response.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
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
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

net::HttpResponse ErrorOf(const Status& status) { return Error(HttpStatusOf(status), status.message()); }

// What anyone who may read the API sees of a slice (the dashboard's and /metrics' view).
json PublicJson(const SliceRecord& slice) {
  return json{{"id", slice.id},
              {"gpu", slice.gpu_uuid},
              {"memory_bytes", slice.memory_bytes},
              {"compute", slice.compute_share},
              {"compute_mode", slice::ToString(slice.compute_mode)},
              {"tier", slice::ToString(slice.tier)},
              {"tenant", slice.tenant},
              {"created_unix_ms", slice.created_unix_ms}};
}

// What the slice's owner and admins see: the public fields and who owns it, where it lives and
// what its workloads need.
json ToJson(const SliceRecord& slice, const WorkloadEnvironment& workload) {
  json env = json::object();
  for (const auto& [name, value] : workload.extra) env[name] = value;
  if (!workload.preload.empty()) env["LD_PRELOAD"] = workload.preload;
  env["FGPU_SLICE"] = slice.dir;
  env["CUDA_VISIBLE_DEVICES"] = slice.gpu_uuid;
  json full = PublicJson(slice);
  full.update(json{{"job", slice.labels.job},
                   {"user", slice.labels.user},
                   {"account", slice.labels.account},
                   {"owner_uid", slice.owner_uid},
                   {"owner_pid", slice.owner_pid},
                   {"release_on_exit", slice.release_on_exit},
                   {"dir", slice.dir},
                   {"env", std::move(env)}});
  return full;
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

// How deeply `text` nests arrays and objects, counted without parsing (strings skipped), so that
// a hostile body is refused before the parser's recursion and allocations see it.
int JsonDepth(const std::string& text) {
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

// Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool IsUtf8(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    int extra = 0;
    uint32_t code = 0;
    if (byte < 0x80) {
      ++i;
      continue;
    } else if ((byte & 0xe0) == 0xc0) {
      extra = 1, code = byte & 0x1f;
    } else if ((byte & 0xf0) == 0xe0) {
      extra = 2, code = byte & 0x0f;
    } else if ((byte & 0xf8) == 0xf0) {
      extra = 3, code = byte & 0x07;
    } else {
      return false;
    }
    if (i + static_cast<std::size_t>(extra) >= text.size()) return false;
    for (int k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
      if ((next & 0xc0) != 0x80) return false;
      code = code << 6 | (next & 0x3f);
    }
    static constexpr uint32_t kSmallest[] = {0, 0x80, 0x800, 0x10000};
    if (code < kSmallest[extra] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
    i += static_cast<std::size_t>(extra) + 1;
  }
  return true;
}

// The body as a JSON object whose keys are all in `known`.
Result<json> ObjectBody(const net::HttpRequest& request, std::initializer_list<const char*> known) {
  const std::string type = request.Header("content-type");
  if (!type.empty() && type.rfind("application/json", 0) != 0) {
    return Status::InvalidArgument("send Content-Type: application/json");
  }
  if (JsonDepth(request.body) > Api::kMaxJsonDepth) {
    return Status::InvalidArgument("the body nests deeper than " + std::to_string(Api::kMaxJsonDepth) + " levels");
  }
  json body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return Status::InvalidArgument("the body is not valid JSON");
  if (!body.is_object()) return Status::InvalidArgument("the body must be a JSON object");
  // Keys by iterator, not a structured binding: Clang 14 (the fuzzers' compiler) cannot capture one.
  for (auto field = body.begin(); field != body.end(); ++field) {
    const std::string& key = field.key();
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

// A uid, or a user name this machine knows.
Result<uid_t> OwnerField(const json& value) {
  if (value.is_number_unsigned() && value.get<uint64_t>() < static_cast<uint64_t>(static_cast<uid_t>(-1))) {
    return static_cast<uid_t>(value.get<uint64_t>());
  }
  if (!value.is_string()) return Status::InvalidArgument("owner must be a uid or a user name");
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (getpwnam_r(value.get<std::string>().c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr) {
    return Status::InvalidArgument("owner: no user '" + value.get<std::string>() + "' on this machine");
  }
  return found->pw_uid;
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
  if (body.contains("owner")) {
    Result<uid_t> owner = OwnerField(body["owner"]);
    if (!owner.ok()) return owner.status();
    request.owner = *owner;
  }
  return request;
}

// How loudly a refusal is logged: the agent's own failures are errors, a caller refused what it
// may not do is a warning, a change refused (no room, a bad field) is news, and a read of
// something missing (a client polling a slice just deleted) is only for debugging.
LogLevel RefusalLevel(const net::HttpRequest& request, int status) {
  if (status >= 500) return LogLevel::kError;
  if (status == 403) return LogLevel::kWarn;
  return request.method == "GET" ? LogLevel::kDebug : LogLevel::kInfo;
}

void LogRefusal(const net::HttpRequest& request, const net::HttpResponse& response) {
  const LogLevel level = RefusalLevel(request, response.status);
  if (!LogEnabled(level)) return;
  const json body = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  std::string reason = body.is_object() && body.contains("error") && body["error"].is_string()
                           ? body["error"].get<std::string>()
                           : std::string();
  LogFields fields = {{"status", std::to_string(response.status)},
                      {"method", request.method},
                      {"path", request.path}};
  if (request.peer.unix_socket) {
    fields.emplace_back("uid", std::to_string(request.peer.uid));
    fields.emplace_back("pid", std::to_string(request.peer.pid));
  } else {
    fields.emplace_back("peer", "tcp");
  }
  fields.emplace_back("reason", std::move(reason));
  Log(level, "refuse", fields);
}

}  // namespace

json Api::Describe(const SliceRecord& slice, bool full, uint64_t throttled_ns, bool starved) const {
  json body = full ? ToJson(slice, workload_) : PublicJson(slice);
  body["compute_throttled_seconds"] = static_cast<double>(throttled_ns) / 1e9;
  body["starved"] = starved;
  return body;
}

json Api::Describe(const SliceRecord& slice, bool full) {
  const bool starved = stop_loss_ != nullptr && stop_loss_->Starved().count(slice.id) != 0;
  return Describe(slice, full, usage_.Compute(slice).throttled_ns, starved);
}

Api::Api(SliceService* slices, std::shared_ptr<NvmlClient> nvml, std::string compute_dir)
    : slices_(slices), nvml_(std::move(nvml)), usage_(std::move(compute_dir)) {
  if (slices_ == nullptr) return;  // a page-only Api (tests)
  observer_ = slices_->AddObserver([this](const SliceRecord& slice, bool gone) {
    if (gone) usage_.Forget(slice.id);
  });
}

Api::~Api() {
  if (slices_ != nullptr) slices_->RemoveObserver(observer_);
}

net::HttpResponse Api::Handle(const net::HttpRequest& request) {
  net::HttpResponse response = Answer(request);
  if (response.status >= 400) LogRefusal(request, response);
  return response;
}

net::HttpResponse Api::Answer(const net::HttpRequest& request) {
  if (!IsUtf8(request.path) || !IsUtf8(request.query)) return Error(400, "the request target is not valid UTF-8");
  Result<Caller> caller = access_->Identify(request);
  if (!caller.ok()) return ErrorOf(caller.status());
  return Route(request, *caller);
}

net::HttpResponse Api::Route(const net::HttpRequest& request, const Caller& caller) {
  const std::string& path = request.path;
  const std::string& method = request.method;
  if (path == "/" || path == "/dashboard") return method == "GET" ? DashboardPage() : Error(405, "use GET");
  if (path == "/metrics") return method == "GET" ? Metrics() : Error(405, "use GET");
  if (path == "/v1/health") return method == "GET" ? Health() : Error(405, "use GET");
  if (path == "/v1/usage") return method == "GET" ? Usage(request, caller) : Error(405, "use GET");
  if (path == "/v1/gpus") return method == "GET" ? ListGpus() : Error(405, "use GET");
  const std::string gpus = "/v1/gpus/";
  if (path.rfind(gpus, 0) == 0 && path.size() > gpus.size() && path.find('/', gpus.size()) == std::string::npos) {
    return method == "PUT" ? SetGpuMode(request, caller, path.substr(gpus.size())) : Error(405, "use PUT");
  }
  if (path == "/v1/slices") {
    if (method == "GET") return ListSlices(request, caller);
    if (method == "POST") return CreateSlice(request, caller);
    return Error(405, "use GET or POST");
  }
  const std::string queue = "/v1/queue/";
  if (path.rfind(queue, 0) == 0 && path.size() > queue.size() && path.find('/', queue.size()) == std::string::npos) {
    return Queued(request, caller, path.substr(queue.size()));
  }
  const std::string prefix = "/v1/slices/";
  if (path.rfind(prefix, 0) == 0 && path.size() > prefix.size() && path.find('/', prefix.size()) == std::string::npos) {
    return OneSlice(request, caller, path.substr(prefix.size()));
  }
  const std::string join = "/join";
  if (path.rfind(prefix, 0) == 0 && path.size() > prefix.size() + join.size() &&
      path.compare(path.size() - join.size(), join.size(), join) == 0) {
    const std::string id = path.substr(prefix.size(), path.size() - prefix.size() - join.size());
    if (id.find('/') == std::string::npos) return method == "POST" ? Join(request, caller, id) : Error(405, "use POST");
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
  snapshot.disk_full_events = slices_->DiskFullEvents();
  snapshot.pending_releases = slices_->PendingReleases();
  if (http_stats_) snapshot.http = http_stats_();
  if (board_stats_) snapshot.boards_handed_out_refused = board_stats_();
  if (stop_loss_ != nullptr) snapshot.stop_loss = stop_loss_->Counters();
  net::HttpResponse response;
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
  response.body = RenderMetrics(snapshot);
  return response;
}

// ?since=<unix ms>&until=<unix ms>&by=tenant|slice|account|user|job (defaults: everything, now, tenant). Read-only:
// the closed records, so up to one accounting interval behind (dashboards poll this).
net::HttpResponse Api::Usage(const net::HttpRequest& request, const Caller& caller) {
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
  const std::string by = query.count("by") ? query["by"] : "tenant";
  // Tenants and slices are what /metrics shows anyone; a batch job's user, account and job id
  // are for admins.
  if (by != "tenant" && by != "slice") {
    if (Status admin = access_->MayAdminister(caller, "usage by " + by); !admin.ok()) return ErrorOf(admin);
  }
  Result<std::vector<UsageTotal>> totals = slices_->Totals(*since, *until, by);
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
net::HttpResponse Api::SetGpuMode(const net::HttpRequest& request, const Caller& caller, const std::string& gpu) {
  if (Status admin = access_->MayAdminister(caller, "switching a GPU's mode"); !admin.ok()) return ErrorOf(admin);
  Result<json> body = ObjectBody(request, {"exclusive"});
  if (!body.ok()) return ErrorOf(body.status());
  if (!body->contains("exclusive") || !(*body)["exclusive"].is_boolean()) {
    return Error(400, "exclusive must be true or false");
  }
  const Status set = slices_->SetExclusive(gpu, (*body)["exclusive"].get<bool>());
  if (!set.ok()) return ErrorOf(set);
  return ListGpus();
}

net::HttpResponse Api::ListSlices(const net::HttpRequest& request, const Caller& caller) {
  const std::vector<SliceRecord> records = slices_->List();
  // ?usage=1: also what each slice uses now (its ledger and compute board), as fgpu status shows.
  const bool with_usage = request.query.find("usage=1") != std::string::npos;
  const std::vector<SliceUsage> usage = with_usage ? usage_.Read(records) : std::vector<SliceUsage>();
  const std::set<std::string> starved = stop_loss_ != nullptr ? stop_loss_->Starved() : std::set<std::string>();
  json slices = json::array();
  for (std::size_t i = 0; i < records.size(); ++i) {
    const bool full = access_->MayManage(caller, records[i]).ok();
    const uint64_t throttled_ns = with_usage ? usage[i].throttled_ns : usage_.Compute(records[i]).throttled_ns;
    json slice = Describe(records[i], full, throttled_ns, starved.count(records[i].id) != 0);
    if (with_usage) {
      slice["memory_used_bytes"] = usage[i].memory_used;
      slice["processes"] = usage[i].processes;
      slice["compute_busy_seconds"] = static_cast<double>(usage[i].busy_ns) / 1e9;
      slice["ledger_readable"] = usage[i].ledger_readable;
      if (full && !usage[i].ledger_readable) slice["ledger_problem"] = usage[i].ledger_problem;
    }
    slices.push_back(std::move(slice));
  }
  return Json(200, slices);
}

net::HttpResponse Api::CreateSlice(const net::HttpRequest& request, const Caller& caller) {
  if (!caller.may_write()) return ErrorOf(access_->MayCreate(caller, CreateRequest{}, 0));
  Result<json> body =
      ObjectBody(request, {"memory", "compute", "compute_mode", "tier", "tenant", "gpu", "release_on_exit", "wait", "job",
                           "user", "account", "owner"});
  if (!body.ok()) return ErrorOf(body.status());
  Result<CreateRequest> create = ParseCreate(*body);
  if (!create.ok()) return ErrorOf(create.status());
  if (caller.role != Role::kAdmin || create->owner) {
    const uid_t owner = create->owner ? *create->owner : *caller.uid;
    const std::vector<SliceRecord> all = slices_->List();
    const int held = static_cast<int>(std::count_if(all.begin(), all.end(), [&](const SliceRecord& slice) {
      return slice.owner_uid == static_cast<int64_t>(owner);
    }));
    if (Status allowed = access_->MayCreate(caller, *create, held); !allowed.ok()) return ErrorOf(allowed);
    create->max_share = access_->RuleFor(owner).max_compute;
  }
  Result<QueueStatus> outcome = slices_->CreateOrQueue(*create, request.peer);
  if (!outcome.ok()) return ErrorOf(outcome.status());
  if (outcome->slice) return Json(201, Describe(*outcome->slice, /*full=*/true));
  return Json(202, json{{"ticket", outcome->ticket}, {"position", outcome->position}});
}

net::HttpResponse Api::Queued(const net::HttpRequest& request, const Caller& caller, const std::string& ticket) {
  if (request.method != "GET" && request.method != "DELETE") return Error(405, "use GET or DELETE");
  // A ticket is its creator's: another user learns nothing of it, not even that it exists.
  Result<int64_t> owner = slices_->TicketOwner(ticket);
  const bool mine = owner.ok() && (caller.role == Role::kAdmin ||
                                   (caller.role == Role::kUser && *owner == static_cast<int64_t>(*caller.uid)));
  if (!mine) return Error(404, "no queued request " + ticket + " of yours");
  if (request.method == "GET") {
    Result<QueueStatus> status = slices_->Poll(ticket);
    if (!status.ok()) return ErrorOf(status.status());
    if (status->slice) return Json(201, Describe(*status->slice, /*full=*/true));
    return Json(200, json{{"ticket", ticket}, {"position", status->position}});
  }
  const Status cancelled = slices_->Cancel(ticket);
  if (!cancelled.ok()) return ErrorOf(cancelled);
  return NoContent();
}

// The caller's own process joins the slice: the kernel names it (SO_PEERCRED), so nobody can
// make another's process a member, and the agent signals only members (membership.h).
net::HttpResponse Api::Join(const net::HttpRequest& request, const Caller& caller, const std::string& id) {
  if (!request.peer.unix_socket || request.peer.pid <= 1) {
    return Error(400, "joining a slice needs the Unix socket, where the kernel names the process that asks");
  }
  if (!request.body.empty() && request.body != "{}") return Error(400, "join takes no body: the caller joins");
  Result<SliceRecord> slice = slices_->Get(id);
  if (!slice.ok()) return ErrorOf(slice.status());
  if (Status allowed = access_->MayManage(caller, *slice); !allowed.ok()) return ErrorOf(allowed);
  Result<std::string> cgroup = slices_->Join(id, request.peer.pid);
  if (!cgroup.ok()) return ErrorOf(cgroup.status());
  return Json(200, json{{"slice", id}, {"pid", request.peer.pid}, {"cgroup", *cgroup}});
}

net::HttpResponse Api::OneSlice(const net::HttpRequest& request, const Caller& caller, const std::string& id) {
  Result<SliceRecord> slice = slices_->Get(id);
  if (!slice.ok()) return ErrorOf(slice.status());
  if (request.method == "GET") {
    return Json(200, Describe(*slice, access_->MayManage(caller, *slice).ok()));
  }
  if (request.method == "PATCH") {
    Result<json> body = ObjectBody(request, {"memory", "compute", "compute_mode", "tier"});
    if (!body.ok()) return ErrorOf(body.status());
    Result<ResizeRequest> resize = ParseLimits(*body);
    if (!resize.ok()) return ErrorOf(resize.status());
    if (Status allowed = access_->MayResize(caller, *slice, *resize); !allowed.ok()) return ErrorOf(allowed);
    Result<SliceRecord> resized = slices_->Resize(id, *resize);
    return resized.ok() ? Json(200, Describe(*resized, /*full=*/true)) : ErrorOf(resized.status());
  }
  if (request.method == "DELETE") {
    if (Status allowed = access_->MayManage(caller, *slice); !allowed.ok()) return ErrorOf(allowed);
    const Status deleted = slices_->Delete(id, request.peer.unix_socket
                                                   ? "requested by uid " + std::to_string(request.peer.uid)
                                                   : std::string("requested over TCP by an admin"));
    if (!deleted.ok()) return ErrorOf(deleted);
    return NoContent();
  }
  return Error(405, "use GET, PATCH or DELETE");
}

}  // namespace fgpu::agent
