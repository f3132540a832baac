#include "agent/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "slice/compute_spec.h"

namespace fgpu::agent {
namespace {

using nlohmann::json;

// A value as the file wrote it, shortened: what the error message quotes.
std::string Quoted(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

// Reads one object's keys with a parser each; a key without one is refused.
using FieldParser = std::function<Status(const json&)>;
Status ReadObject(const json& object, const std::string& where, const std::map<std::string, FieldParser>& fields) {
  if (!object.is_object()) return Status::InvalidArgument(where + " must be an object, not " + Quoted(object));
  for (const auto& [key, value] : object.items()) {
    const auto field = fields.find(key);
    if (field == fields.end()) {
      std::string known;
      for (const auto& [name, parser] : fields) known += (known.empty() ? "" : ", ") + name;
      return Status::InvalidArgument(where + "." + key + ": unknown key (known: " + known + ")");
    }
    if (Status status = field->second(value); !status.ok()) {
      // A nested object names its own bad key and value: pass its message on as it is.
      if (status.message().rfind(where + "." + key, 0) == 0) return status;
      return Status::InvalidArgument(where + "." + key + ": " + status.message() + ", not " + Quoted(value));
    }
  }
  return Status::Ok();
}

Status Seconds(const json& value, double minimum, int64_t* ms) {
  if (!value.is_number() || value.get<double>() < minimum) {
    char bound[32];
    std::snprintf(bound, sizeof(bound), "%g", minimum);
    return Status::InvalidArgument(std::string("a number of seconds >= ") + bound);
  }
  *ms = static_cast<int64_t>(value.get<double>() * 1000);
  return Status::Ok();
}

Status Strings(const json& value, std::vector<std::string>* out) {
  if (!value.is_array()) return Status::InvalidArgument("a list of strings");
  out->clear();
  for (const json& item : value) {
    if (!item.is_string() || item.get<std::string>().empty()) return Status::InvalidArgument("a list of strings");
    out->push_back(item.get<std::string>());
  }
  return Status::Ok();
}

Status ParseStopLoss(const json& object, const std::string& where, StopLossPolicy* policy) {
  return ReadObject(
      object, where,
      {{"bypass",
        [&](const json& v) {
          if (v != "evict" && v != "alert") return Status::InvalidArgument("\"evict\" or \"alert\"");
          policy->bypass = v == "evict" ? StopLossPolicy::Bypass::kEvict : StopLossPolicy::Bypass::kAlert;
          return Status::Ok();
        }},
       {"grace_s", [&](const json& v) { return Seconds(v, 0, &policy->grace_ms); }},
       {"unattributed",
        [&](const json& v) {
          if (v != "alert" && v != "kill") return Status::InvalidArgument("\"alert\" or \"kill\"");
          policy->unattributed =
              v == "kill" ? StopLossPolicy::Unattributed::kKill : StopLossPolicy::Unattributed::kAlert;
          return Status::Ok();
        }},
       {"overuse_margin",
        [&](const json& v) {
          if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 100) {
            return Status::InvalidArgument("percentage points 0..100");
          }
          policy->overuse_margin = static_cast<uint32_t>(v.get<int64_t>());
          return Status::Ok();
        }},
       {"overuse_checks",
        [&](const json& v) {
          if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 3600) {
            return Status::InvalidArgument("an integer 1..3600");
          }
          policy->overuse_ticks = static_cast<int>(v.get<int64_t>());
          return Status::Ok();
        }},
       {"min_free",
        [&](const json& v) {
          Result<uint64_t> bytes = v.is_string() ? ParseByteSize(v.get<std::string>())
                                                 : Result<uint64_t>(Status::InvalidArgument("a size"));
          if (!bytes.ok()) return Status::InvalidArgument("a size such as \"2GiB\"");
          policy->min_free_bytes = *bytes;
          return Status::Ok();
        }},
       {"starved_below",
        [&](const json& v) {
          if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1) return Status::InvalidArgument("0..1");
          policy->starved_below = v.get<double>();
          return Status::Ok();
        }},
       {"starve_window_s", [&](const json& v) { return Seconds(v, 1, &policy->starve_window_ms); }},
       {"starvation",
        [&](const json& v) {
          if (v != "report" && v != "evict") return Status::InvalidArgument("\"report\" or \"evict\"");
          policy->starvation = v == "evict" ? StopLossPolicy::StarvationAction::kEvict
                                            : StopLossPolicy::StarvationAction::kReport;
          return Status::Ok();
        }}});
}

Status ParseRule(const json& object, const std::string& where, AccessRule* rule) {
  return ReadObject(
      object, where,
      {{"tiers",
        [&](const json& v) {
          std::vector<std::string> names;
          if (Status status = Strings(v, &names); !status.ok()) return status;
          rule->tiers.clear();
          for (const std::string& name : names) {
            Result<slice::Tier> tier = slice::ParseTier(name);
            if (!tier.ok()) return tier.status();
            rule->tiers.insert(*tier);
          }
          return Status::Ok();
        }},
       {"max_memory",
        [&](const json& v) {
          Result<uint64_t> bytes = v.is_string() ? ParseByteSize(v.get<std::string>())
                                                 : Result<uint64_t>(Status::InvalidArgument("a size"));
          if (!bytes.ok() || *bytes == 0) return Status::InvalidArgument("a size such as \"20GiB\"");
          rule->max_memory = *bytes;
          return Status::Ok();
        }},
       {"max_compute",
        [&](const json& v) {
          if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 100) {
            return Status::InvalidArgument("an integer percent 1..100");
          }
          rule->max_compute = static_cast<uint32_t>(v.get<int64_t>());
          return Status::Ok();
        }},
       {"gpus", [&](const json& v) { return Strings(v, &rule->gpus); }},
       {"isolations",
        [&](const json& v) {
          std::vector<std::string> names;
          if (Status status = Strings(v, &names); !status.ok()) return status;
          rule->isolations.clear();
          for (const std::string& name : names) {
            const std::optional<Isolation> isolation = ParseIsolation(name);
            if (!isolation) return Status::InvalidArgument("isolations among trusted, hard, exclusive");
            rule->isolations.insert(*isolation);
          }
          return Status::Ok();
        }},
       {"tenants", [&](const json& v) { return Strings(v, &rule->tenants); }},
       {"max_slices", [&](const json& v) {
          if (!v.is_number_integer() || v.get<int64_t>() < 0) return Status::InvalidArgument("an integer >= 0");
          rule->max_slices = static_cast<int>(v.get<int64_t>());
          return Status::Ok();
        }}});
}

Status ParseRules(const json& object, const std::string& where, const AccessRule& base,
                  std::map<std::string, AccessRule>* rules) {
  if (!object.is_object()) {
    return Status::InvalidArgument(where + " must be an object of name: rule, not " + Quoted(object));
  }
  for (const auto& [name, value] : object.items()) {
    AccessRule rule = base;  // what the entry leaves out is the default's
    if (Status status = ParseRule(value, where + "." + name, &rule); !status.ok()) return status;
    (*rules)[name] = rule;
  }
  return Status::Ok();
}

Status ParseAccess(const json& object, const std::string& where, AccessPolicy* access) {
  // "default" first: the users' and groups' entries start from it whatever the key order.
  if (object.is_object() && object.contains("default")) {
    if (Status status = ParseRule(object["default"], where + ".default", &access->defaults); !status.ok()) {
      return status;
    }
  }
  return ReadObject(object, where,
                    {{"admin_group",
                      [&](const json& v) {
                        if (!v.is_string()) return Status::InvalidArgument("a group name");
                        access->admin_group = v.get<std::string>();
                        return Status::Ok();
                      }},
                     {"default", [](const json&) { return Status::Ok(); }},
                     {"users", [&](const json& v) { return ParseRules(v, where + ".users", access->defaults, &access->users); }},
                     {"groups",
                      [&](const json& v) { return ParseRules(v, where + ".groups", access->defaults, &access->groups); }}});
}

Status NonNegativeSeconds(const json& value, double* seconds) {
  if (!value.is_number() || value.get<double>() < 0) return Status::InvalidArgument("a number of seconds >= 0");
  *seconds = value.get<double>();
  return Status::Ok();
}

Status Flag(const json& value, bool* flag) {
  if (!value.is_boolean()) return Status::InvalidArgument("true or false");
  *flag = value.get<bool>();
  return Status::Ok();
}

Status Bytes(const json& value, int64_t* bytes) {
  Result<uint64_t> parsed =
      value.is_string() ? ParseByteSize(value.get<std::string>()) : Result<uint64_t>(Status::InvalidArgument("a size"));
  if (!parsed.ok()) return Status::InvalidArgument("a size such as \"40GiB\"");
  *bytes = static_cast<int64_t>(std::min<uint64_t>(*parsed, static_cast<uint64_t>(sched::kUnlimited)));
  return Status::Ok();
}

// Compute as percent of one GPU (300: three GPUs), kept in milli-GPU.
Status Percent(const json& value, int64_t* milli) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > 100'000'000) {
    return Status::InvalidArgument("an integer percent of one GPU >= 0 (300: three GPUs)");
  }
  *milli = value.get<int64_t>() * 10;
  return Status::Ok();
}

Status ParseQuota(const json& object, const std::string& where, sched::QuotaSpec* quota) {
  quota->nominal = sched::Amount{};
  Status status = ReadObject(
      object, where,
      {{"name",
        [&](const json& v) {
          if (!v.is_string() || v.get<std::string>().empty()) return Status::InvalidArgument("a name");
          quota->name = v.get<std::string>();
          return Status::Ok();
        }},
       {"parent",
        [&](const json& v) {
          if (!v.is_string()) return Status::InvalidArgument("a quota's name");
          quota->parent = v.get<std::string>();
          return Status::Ok();
        }},
       {"memory", [&](const json& v) { return Bytes(v, &quota->nominal->gpu_memory_bytes); }},
       {"compute", [&](const json& v) { return Percent(v, &quota->nominal->gpu_milli); }},
       {"borrowing_memory", [&](const json& v) { return Bytes(v, &quota->borrowing_limit.gpu_memory_bytes); }},
       {"borrowing_compute", [&](const json& v) { return Percent(v, &quota->borrowing_limit.gpu_milli); }},
       {"lending_memory", [&](const json& v) { return Bytes(v, &quota->lending_limit.gpu_memory_bytes); }},
       {"lending_compute", [&](const json& v) { return Percent(v, &quota->lending_limit.gpu_milli); }}});
  if (!status.ok()) return status;
  if (quota->name.empty()) return Status::InvalidArgument(where + ": a quota needs a name");
  return Status::Ok();
}

Status ParseGovernance(const json& object, const std::string& where, Governance* governance) {
  sched::GovernorOptions& options = governance->options;
  Status status = ReadObject(
      object, where,
      {{"queueing",
        [&](const json& v) {
          if (v == "backfill") options.queueing = sched::Queueing::kBackfill;
          else if (v == "greedy") options.queueing = sched::Queueing::kGreedy;
          else if (v == "strict") options.queueing = sched::Queueing::kStrict;
          else return Status::InvalidArgument("\"backfill\", \"greedy\" or \"strict\"");
          return Status::Ok();
        }},
       {"tiers", [&](const json& v) { return Flag(v, &options.tiers); }},
       {"strict_tiers", [&](const json& v) { return Flag(v, &options.strict_tiers); }},
       {"preemption", [&](const json& v) { return Flag(v, &options.preemption); }},
       {"protected_in_quota", [&](const json& v) { return Flag(v, &options.protected_in_quota); }},
       {"preemptible_tiers",
        [&](const json& v) {
          std::vector<std::string> names;
          if (Status listed = Strings(v, &names); !listed.ok()) return listed;
          options.preemptible = 0;
          for (const std::string& name : names) {
            Result<slice::Tier> tier = slice::ParseTier(name);
            if (!tier.ok() || *tier == slice::Tier::kLatency) return Status::InvalidArgument("tiers among batch, standard");
            options.preemptible |= static_cast<uint8_t>(1U << (*tier == slice::Tier::kBatch ? 0 : 1));
          }
          return Status::Ok();
        }},
       {"preemption_delay_s", [&](const json& v) { return NonNegativeSeconds(v, &options.preemption_delay); }},
       {"preemption_exempt_after_s", [&](const json& v) { return NonNegativeSeconds(v, &options.preemption_exempt_after); }},
       {"preemption_escalation_s", [&](const json& v) { return NonNegativeSeconds(v, &options.preemption_escalation); }},
       {"wait_for_room_s", [&](const json& v) { return NonNegativeSeconds(v, &options.wait_for_room); }},
       {"preemption_budget",
        [&](const json& v) {
          if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1'000'000) {
            return Status::InvalidArgument("an integer >= 0 (0: no limit)");
          }
          options.preemption_budget = static_cast<int>(v.get<int64_t>());
          return Status::Ok();
        }},
       {"preemption_window_s", [&](const json& v) { return NonNegativeSeconds(v, &options.preemption_window); }},
       {"preemption_searches_per_second",
        [&](const json& v) {
          if (!v.is_number() || v.get<double>() < 0) return Status::InvalidArgument("a number >= 0");
          options.preemption_searches_per_second = v.get<double>();
          return Status::Ok();
        }},
       {"reclaim",
        [&](const json& v) {
          if (v == "none") options.reclaim = sched::ReclaimTiers::kNone;
          else if (v == "lower") options.reclaim = sched::ReclaimTiers::kLower;
          else if (v == "lower_or_equal") options.reclaim = sched::ReclaimTiers::kLowerOrEqual;
          else return Status::InvalidArgument("\"none\", \"lower\" or \"lower_or_equal\"");
          return Status::Ok();
        }},
       {"fair_share", [&](const json& v) { return Flag(v, &options.fair_share); }},
       {"fair_share_half_life_h",
        [&](const json& v) {
          if (!v.is_number() || v.get<double>() <= 0) return Status::InvalidArgument("a number of hours > 0");
          options.fair_share_half_life = v.get<double>() * 3600;
          return Status::Ok();
        }},
       {"default_duration_s", [&](const json& v) { return NonNegativeSeconds(v, &options.default_duration); }},
       {"gang_timeout_s", [&](const json& v) { return NonNegativeSeconds(v, &options.gang_timeout); }},
       {"segregation",
        [&](const json& v) {
          if (!v.is_number() || v.get<double>() < 0) return Status::InvalidArgument("a weight >= 0");
          options.segregation = v.get<double>();
          return Status::Ok();
        }},
       {"quotas",
        [&](const json& v) {
          if (!v.is_array()) return Status::InvalidArgument("a list of quotas");
          governance->quotas.clear();
          for (size_t i = 0; i < v.size(); ++i) {
            sched::QuotaSpec quota;
            if (Status parsed = ParseQuota(v[i], where + ".quotas[" + std::to_string(i) + "]", &quota); !parsed.ok()) {
              return parsed;
            }
            governance->quotas.push_back(std::move(quota));
          }
          return Status::Ok();
        }},
       {"default_quota", [&](const json& v) {
          if (!v.is_string()) return Status::InvalidArgument("a leaf quota's name");
          governance->default_quota = v.get<std::string>();
          return Status::Ok();
        }}});
  if (!status.ok()) return status;
  if (Status valid = ValidateGovernance(*governance); !valid.ok()) return Status::InvalidArgument(where + ": " + valid.message());
  return Status::Ok();
}

Status ParseGpuClass(const json& object, const std::string& where, GpuClassConfig* gpu) {
  bool named = false;
  Status status = ReadObject(
      object, where,
      {{"gpu", [&](const json& v) {
          if (!v.is_string() || v.get<std::string>().empty()) return Status::InvalidArgument("an NVML index or a UUID");
          gpu->gpu = v.get<std::string>();
          named = true;
          return Status::Ok();
        }},
       {"isolation", [&](const json& v) {
          const std::optional<IsolationClass> isolation =
              v.is_string() ? ParseIsolationClass(v.get<std::string>()) : std::nullopt;
          if (!isolation) return Status::InvalidArgument("shared, exclusive or mig");
          gpu->isolation = *isolation;
          return Status::Ok();
        }},
       {"mig", [&](const json& v) {
          if (v.is_string() && v.get<std::string>() == "dynamic") {
            gpu->dynamic = true;
            return Status::Ok();
          }
          if (!v.is_array()) return Status::InvalidArgument("a list of profiles, or \"dynamic\"");
          if (Status listed = Strings(v, &gpu->mig); !listed.ok()) return listed;
          if (gpu->mig.size() > 7) return Status::InvalidArgument("at most 7 instances (a GPU has 7 compute slices)");
          return Status::Ok();
        }},
       {"drain", [&](const json& v) {
          if (!v.is_boolean()) return Status::InvalidArgument("true or false");
          gpu->drain = v.get<bool>();
          return Status::Ok();
        }}});
  if (!status.ok()) return status;
  if (!named) return Status::InvalidArgument(where + ".gpu: missing (an NVML index or a UUID)");
  if ((!gpu->mig.empty() || gpu->drain || gpu->dynamic) && gpu->isolation != IsolationClass::kMig) {
    return Status::InvalidArgument(where + ": a geometry (mig, drain) needs \"isolation\": \"mig\"");
  }
  if (gpu->dynamic && gpu->drain) {
    return Status::InvalidArgument(where + ": a dynamic GPU has no geometry to drain for (drain is for a listed geometry)");
  }
  return Status::Ok();
}

Status ParseGpuClasses(const json& list, const std::string& where, std::vector<GpuClassConfig>* gpus) {
  if (!list.is_array()) return Status::InvalidArgument(where + " must be a list of {gpu, isolation, mig}, not " + Quoted(list));
  gpus->clear();
  for (size_t i = 0; i < list.size(); ++i) {
    GpuClassConfig gpu;
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (Status parsed = ParseGpuClass(list[i], at, &gpu); !parsed.ok()) return parsed;
    const bool repeated = std::any_of(gpus->begin(), gpus->end(), [&](const GpuClassConfig& g) { return g.gpu == gpu.gpu; });
    if (repeated) return Status::InvalidArgument(at + ".gpu: GPU '" + gpu.gpu + "' is listed twice");
    gpus->push_back(std::move(gpu));
  }
  return Status::Ok();
}

}  // namespace

Result<AgentConfig> LoadConfig(const std::string& path) {
  AgentConfig config;
  if (path.empty()) return config;
  std::ifstream file(path);
  if (!file) return Status::NotFound("cannot read the configuration " + path);
  const json root = json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return Status::InvalidArgument(path + " is not a JSON object");
  Status status = ReadObject(
      root, path,
      {{"stop_loss", [&](const json& v) { return ParseStopLoss(v, path + ".stop_loss", &config.stop_loss); }},
       {"governance", [&](const json& v) { return ParseGovernance(v, path + ".governance", &config.governance); }},
       {"access", [&](const json& v) { return ParseAccess(v, path + ".access", &config.access); }},
       {"gpus", [&](const json& v) { return ParseGpuClasses(v, path + ".gpus", &config.gpus); }},
       {"usage_retention_days", [&](const json& v) {
          if (!v.is_number() || v.get<double>() < 0) return Status::InvalidArgument("a number of days >= 0 (0: keep all)");
          config.usage_retention_ms = static_cast<int64_t>(v.get<double>() * 24 * 3600 * 1000);
          return Status::Ok();
        }},
       {"log_level", [&](const json& v) {
          Result<LogLevel> level = v.is_string() ? ParseLogLevel(v.get<std::string>())
                                                 : Result<LogLevel>(Status::InvalidArgument(""));
          if (!level.ok()) return Status::InvalidArgument("debug, info, warn or error");
          config.log_level = *level;
          return Status::Ok();
        }}});
  if (!status.ok()) return status;
  return config;
}

Result<std::string> LoadToken(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return Status::NotFound("cannot open the token file " + path);
  struct stat info {};
  std::string token;
  Status status = Status::Ok();
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    status = Status::InvalidArgument(path + " is not a regular file");
  } else if (info.st_uid != geteuid() || (info.st_mode & 077) != 0) {
    status = Status::InvalidArgument(path + " must be owned by this user with mode 0600 (anyone else who can read "
                                            "it is an admin)");
  } else {
    char buffer[512];
    const ssize_t got = read(fd, buffer, sizeof(buffer));
    token.assign(buffer, got > 0 ? static_cast<std::size_t>(got) : 0);
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    if (token.size() < 16 || token.find_first_of(" \t\r\n") != std::string::npos) {
      status = Status::InvalidArgument(path + " must hold one token of 16 to 500 characters, without spaces");
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return token;
}

}  // namespace fgpu::agent
