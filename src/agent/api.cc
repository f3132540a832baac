#include "agent/api.h"

#include <pwd.h>

#include <charconv>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <variant>
#include <vector>

#include "agent/dashboard.h"
#include "agent/log.h"
#include "agent/metrics.h"
#include "api/codec.h"
#include "api/workload_env.h"
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

net::HttpResponse Error(int status, const std::string& message) { return Json(status, api::ToJson(api::ApiError{message})); }

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

// A slice as the API answers it: in full (`details`: its owner and admins) or its public
// fields (the dashboard's and /metrics' view), with the board's throttled time and stop-loss's
// verdict.
api::Slice ApiSlice(const SliceRecord& slice, const WorkloadEnvironment* full, uint64_t throttled_ns, bool starved) {
  api::Slice out;
  out.id = slice.id;
  out.gpu = slice.gpu_uuid;
  out.memory_bytes = slice.memory_bytes;
  out.compute = slice.compute_share;
  out.compute_mode = slice::ToString(slice.compute_mode);
  out.tier = slice::ToString(slice.tier);
  out.tenant = slice.tenant;
  out.isolation = std::string(ToString(slice.isolation));
  out.created_unix_ms = slice.created_unix_ms;
  out.compute_throttled_seconds = static_cast<double>(throttled_ns) / 1e9;
  out.starved = starved;
  out.labels.kube_namespace = slice.kube.kube_namespace;
  out.labels.pod = slice.kube.pod;
  out.labels.claim = slice.kube.claim;
  if (full != nullptr) {
    out.labels.job = slice.labels.job;
    out.labels.user = slice.labels.user;
    out.labels.account = slice.labels.account;
    out.labels.pod_uid = slice.kube.pod_uid;
    out.details = api::SliceDetails{slice.owner_uid,   slice.owner_pid,
                                    slice.release_on_exit, slice.dir,
                                    api::SliceEnv(*full, slice.dir, slice.gpu_uuid), slice.idempotency_key};
  }
  return out;
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

// The body as a JSON object (the codec's checks: valid JSON, an object, not nested deeper than
// Api::kMaxJsonDepth), sent as JSON.
Result<json> ObjectBody(const net::HttpRequest& request) {
  const std::string type = request.Header("content-type");
  if (!type.empty() && type.rfind("application/json", 0) != 0) {
    return Status::InvalidArgument("send Content-Type: application/json");
  }
  return api::ParseObject(request.body);
}

// A request body as T, strictly (api/codec.h).
template <typename T>
Result<T> Body(const net::HttpRequest& request) {
  Result<json> body = ObjectBody(request);
  if (!body.ok()) return body.status();
  return api::Parse<T>(*body);
}

// The limits create and resize share, in the agent's types (compute modes and tiers are the
// slice format's words).
Result<ResizeRequest> Limits(const api::SliceResize& limits) {
  ResizeRequest out;
  out.memory_bytes = limits.memory_bytes;
  out.compute_share = limits.compute;
  if (limits.compute_mode) {
    Result<slice::ComputeMode> mode = slice::ParseComputeMode(*limits.compute_mode);
    if (!mode.ok()) return mode.status();
    out.compute_mode = *mode;
  }
  if (limits.tier) {
    Result<slice::Tier> tier = slice::ParseTier(*limits.tier);
    if (!tier.ok()) return tier.status();
    out.tier = *tier;
  }
  return out;
}

// A uid, or a user name this machine knows.
Result<uid_t> OwnerOf(const std::variant<uint32_t, std::string>& owner) {
  if (const auto* uid = std::get_if<uint32_t>(&owner)) return static_cast<uid_t>(*uid);
  const std::string& name = std::get<std::string>(owner);
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) {
    return Status::InvalidArgument("owner: no user '" + name + "' on this machine");
  }
  return found->pw_uid;
}

Result<CreateRequest> CreateRequestOf(const api::SliceRequest& body) {
  api::SliceResize asked;
  asked.memory_bytes = body.memory_bytes;
  asked.compute = body.compute;
  asked.compute_mode = body.compute_mode;
  asked.tier = body.tier;
  Result<ResizeRequest> limits = Limits(asked);
  if (!limits.ok()) return limits.status();
  CreateRequest request;
  request.memory_bytes = body.memory_bytes;
  request.compute_share = limits->compute_share;
  request.compute_mode = limits->compute_mode.value_or(request.compute_mode);
  request.tier = limits->tier.value_or(request.tier);
  request.release_on_exit = body.release_on_exit;
  request.wait = body.wait;
  if (body.tenant) request.tenant = *body.tenant;
  request.labels = {body.labels.job, body.labels.user, body.labels.account};
  request.kube = {body.labels.kube_namespace, body.labels.pod, body.labels.claim, body.labels.pod_uid};
  request.idempotency_key = body.idempotency_key.value_or("");
  request.gpu = body.gpu;
  if (body.isolation) {
    const std::optional<Isolation> isolation = ParseIsolation(*body.isolation);
    if (!isolation) return Status::InvalidArgument("isolation must be trusted, hard or exclusive");
    request.isolation = *isolation;
  }
  request.mig_profile = body.mig_profile;
  request.mig_start = body.mig_start;
  request.gang = body.gang.value_or("");
  request.gang_size = body.gang_size.value_or(0);
  if (body.owner) {
    Result<uid_t> owner = OwnerOf(*body.owner);
    if (!owner.ok()) return owner.status();
    request.owner = *owner;
  }
  return request;
}


// A query string's name=value pairs, values percent-decoded (a client may escape ':' and '/').
std::map<std::string, std::string> QueryOf(const std::string& text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::map<std::string, std::string> query;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('&', at), text.size());
    const std::string pair = text.substr(at, end - at);
    const std::size_t equals = pair.find('=');
    if (equals != std::string::npos) {
      std::string value;
      for (std::size_t i = equals + 1; i < pair.size(); ++i) {
        if (pair[i] == '%' && i + 2 < pair.size() && hex(pair[i + 1]) >= 0 && hex(pair[i + 2]) >= 0) {
          value += static_cast<char>(hex(pair[i + 1]) * 16 + hex(pair[i + 2]));
          i += 2;
        } else {
          value += pair[i];
        }
      }
      query[pair.substr(0, equals)] = value;
    }
    at = end + 1;
  }
  return query;
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

api::Slice Api::Describe(const SliceRecord& slice, bool full, uint64_t throttled_ns, bool starved) const {
  return ApiSlice(slice, full ? &workload_ : nullptr, throttled_ns, starved);
}

json Api::Describe(const SliceRecord& slice, bool full) {
  const bool starved = stop_loss_ != nullptr && stop_loss_->Starved().count(slice.id) != 0;
  return api::ToJson(Describe(slice, full, usage_.Compute(slice).throttled_ns, starved));
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
  if (path == "/v1/queue") return method == "GET" ? ListQueue(caller) : Error(405, "use GET");
  if (path == "/v1/quotas") return method == "GET" ? ListQuotas() : Error(405, "use GET");
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
  std::map<std::string, std::string> query = QueryOf(request.query);
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
  return Json(200, api::ToJson(api::Health{"ok", static_cast<int>(slices_->Rooms().size()),
                                            static_cast<int>(slices_->List().size())}));
}

net::HttpResponse Api::ListGpus() {
  std::vector<api::Gpu> gpus;
  for (const GpuRoom& room : slices_->Rooms()) {
    gpus.push_back(api::Gpu{static_cast<int>(room.gpu.index), room.gpu.uuid, room.gpu.name, room.gpu.memory_total,
                            room.memory_reserved, room.compute_reserved, room.exclusive, room.fenced, room.slices,
                            room.gpu.compute_capability, room.gpu.driver_version, room.gpu.mig_capable,
                            room.gpu.minor, std::string(ToString(room.gpu.isolation)), room.gpu.parent_uuid,
                            room.gpu.mig_profile, room.gpu.mig_start, room.gpu.mig_note, room.gpu.mig_dynamic});
  }
  return Json(200, api::ToJson(gpus));
}

// The queue as the Governor orders it, each with why it waits. Anyone who may read the API sees
// it (as the slice list); a ticket's first characters only to its owner and admins.
net::HttpResponse Api::ListQueue(const Caller& caller) {
  std::vector<api::QueueItem> items;
  for (const QueueEntry& entry : slices_->Queue()) {
    SliceRecord as_owned;
    as_owned.owner_uid = entry.owner_uid;
    const bool own = access_->MayManage(caller, as_owned).ok();
    items.push_back({entry.position, own ? entry.ticket_tag : std::string(), entry.owner_uid, entry.memory_bytes,
                     entry.compute_share, std::string(slice::ToString(entry.tier)), entry.tenant, entry.waited_ms,
                     entry.reason});
  }
  return Json(200, api::ToJson(items));
}

net::HttpResponse Api::ListQuotas() {
  std::vector<api::Quota> quotas;
  for (const QuotaUsage& quota : slices_->Quotas()) {
    quotas.push_back({quota.name, quota.parent, quota.memory_used, quota.memory_nominal, quota.memory_limit,
                      quota.compute_used, quota.compute_nominal, quota.compute_limit});
  }
  return Json(200, api::ToJson(quotas));
}

// {"exclusive": true|false}: the switch that takes a GPU out of sharing (no new placements).
net::HttpResponse Api::SetGpuMode(const net::HttpRequest& request, const Caller& caller, const std::string& gpu) {
  if (Status admin = access_->MayAdminister(caller, "switching a GPU's mode"); !admin.ok()) return ErrorOf(admin);
  Result<api::GpuMode> mode = Body<api::GpuMode>(request);
  if (!mode.ok()) return ErrorOf(mode.status());
  const Status set = slices_->SetExclusive(gpu, mode->exclusive);
  if (!set.ok()) return ErrorOf(set);
  return ListGpus();
}

net::HttpResponse Api::ListSlices(const net::HttpRequest& request, const Caller& caller) {
  std::map<std::string, std::string> query = QueryOf(request.query);
  // ?idempotency_key=K: the slice made for K, to whoever may read it in full (the key is its
  // owner's: anyone else finds nothing).
  const auto key = query.find("idempotency_key");
  if (key != query.end()) {
    if (Status valid = api::CheckIdempotencyKey(key->second); !valid.ok()) return ErrorOf(valid);
  }
  std::vector<SliceRecord> records;
  std::vector<bool> full;
  for (SliceRecord& record : slices_->List()) {
    const bool readable = access_->MayManage(caller, record).ok();
    if (key != query.end() && (!readable || record.idempotency_key != key->second)) continue;
    full.push_back(readable);
    records.push_back(std::move(record));
  }
  // ?usage=1: also what each slice uses now (its ledger and compute board), as fgpu status shows.
  const bool with_usage = query["usage"] == "1";
  const std::vector<SliceUsage> usage = with_usage ? usage_.Read(records) : std::vector<SliceUsage>();
  const std::set<std::string> starved = stop_loss_ != nullptr ? stop_loss_->Starved() : std::set<std::string>();
  std::vector<api::Slice> slices;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const uint64_t throttled_ns = with_usage ? usage[i].throttled_ns : usage_.Compute(records[i]).throttled_ns;
    api::Slice slice = Describe(records[i], full[i], throttled_ns, starved.count(records[i].id) != 0);
    if (with_usage) {
      slice.usage = api::SliceUsage{usage[i].memory_used, static_cast<int>(usage[i].processes),
                                    static_cast<double>(usage[i].busy_ns) / 1e9, usage[i].ledger_readable,
                                    full[i] && !usage[i].ledger_readable ? usage[i].ledger_problem : std::string()};
    }
    slices.push_back(std::move(slice));
  }
  return Json(200, api::ToJson(slices));
}

net::HttpResponse Api::CreateSlice(const net::HttpRequest& request, const Caller& caller) {
  if (!caller.may_write()) return ErrorOf(access_->MayCreate(caller, CreateRequest{}, 0));
  Result<api::SliceRequest> body = Body<api::SliceRequest>(request);
  if (!body.ok()) return ErrorOf(body.status());
  Result<CreateRequest> create = CreateRequestOf(*body);
  if (!create.ok()) return ErrorOf(create.status());
  if (caller.role != Role::kAdmin || create->owner) {
    const uid_t owner = create->owner ? *create->owner : *caller.uid;
    const std::vector<SliceRecord> all = slices_->List();
    // A retry of a create that made its slice is not one more slice (max_slices).
    const int held = static_cast<int>(std::count_if(all.begin(), all.end(), [&](const SliceRecord& slice) {
      return slice.owner_uid == static_cast<int64_t>(owner) &&
             (create->idempotency_key.empty() || slice.idempotency_key != create->idempotency_key);
    }));
    if (Status allowed = access_->MayCreate(caller, *create, held); !allowed.ok()) return ErrorOf(allowed);
    create->max_share = access_->RuleFor(owner).max_compute;
  }
  // Hard isolation on MIG GPUs goes through the MIG manager: it may make the instance first.
  Result<QueueStatus> outcome = mig_ != nullptr ? mig_->CreateOrQueue(*create, request.peer)
                                                : slices_->CreateOrQueue(*create, request.peer);
  if (!outcome.ok()) return ErrorOf(outcome.status());
  // 200: the slice an earlier request with the same idempotency key made.
  if (outcome->slice) return Json(outcome->existing ? 200 : 201, Describe(*outcome->slice, /*full=*/true));
  return Json(202, api::ToJson(api::QueueTicket{outcome->ticket, outcome->position}));
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
    return Json(200, api::ToJson(api::QueueTicket{ticket, status->position}));
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
  return Json(200, api::ToJson(api::JoinReply{id, request.peer.pid, *cgroup}));
}

net::HttpResponse Api::OneSlice(const net::HttpRequest& request, const Caller& caller, const std::string& id) {
  Result<SliceRecord> slice = slices_->Get(id);
  if (!slice.ok()) return ErrorOf(slice.status());
  if (request.method == "GET") {
    return Json(200, Describe(*slice, access_->MayManage(caller, *slice).ok()));
  }
  if (request.method == "PATCH") {
    Result<api::SliceResize> body = Body<api::SliceResize>(request);
    if (!body.ok()) return ErrorOf(body.status());
    Result<ResizeRequest> resize = Limits(*body);
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
