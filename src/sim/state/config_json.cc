// ParseSimConfig and LoadSimConfig: the JSON device configuration (docs/sim-config.md).
//
// nlohmann::json is used only in its non-throwing forms (parse with allow_exceptions =
// false, type checks before every get), and the whole parse sits in a catch-all so
// that not even std::bad_alloc leaves this file: the result feeds C ABIs.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <set>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "sim/state/config_rules.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim {
namespace {

using Json = nlohmann::json;
using internal::FieldError;

constexpr size_t kMaxConfigBytes = 1 << 20;  // a config is a few hundred bytes; refuse to slurp a disk image

std::string Child(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Typo protection: a misspelt key must not silently fall back to a default.
Status CheckKeys(const Json& object, const std::string& path, std::initializer_list<std::string_view> allowed) {
  for (const auto& item : object.items()) {
    const std::string& key = item.key();
    bool known = false;
    std::string_view nearest;
    size_t nearest_distance = 3;  // suggest only close matches
    for (std::string_view candidate : allowed) {
      if (key == candidate) known = true;
      const size_t d = EditDistance(key, candidate);
      if (d < nearest_distance) {
        nearest_distance = d;
        nearest = candidate;
      }
    }
    if (known) continue;
    std::string problem = "unknown key";
    if (!nearest.empty()) {
      problem += " (did you mean \"" + std::string(nearest) + "\"?)";
    } else {
      problem += " (valid keys:";
      for (std::string_view candidate : allowed) problem.append(" ").append(candidate);
      problem += ")";
    }
    return FieldError(Child(path, key), problem);
  }
  return Status::Ok();
}

Result<uint64_t> ReadSize(const Json& v, const std::string& path) {
  if (v.is_string()) {
    Result<uint64_t> bytes = ParseByteSize(v.get_ref<const std::string&>());
    if (!bytes.ok()) return FieldError(path, bytes.status().message());
    return *bytes;
  }
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) return FieldError(path, "must not be negative");
  return FieldError(path, "must be a size string such as \"2MiB\" or a whole number of bytes");
}

Result<int64_t> ReadInteger(const Json& v, const std::string& path, int64_t lo, int64_t hi) {
  const std::string range = " (allowed: " + std::to_string(lo) + ".." + std::to_string(hi) + ")";
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi) || static_cast<int64_t>(u) < lo) {
      return FieldError(path, std::to_string(u) + " is out of range" + range);
    }
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) return FieldError(path, std::to_string(i) + " is out of range" + range);
    return i;
  }
  return FieldError(path, "must be an integer" + range);
}

// Microseconds (integer or fractional) to nanoseconds.
Result<uint64_t> ReadMicrosAsNs(const Json& v, const std::string& path) {
  constexpr uint64_t kMaxMicros = internal::kMaxKernelWaveNs / 1000;
  if (v.is_number_unsigned()) {
    const uint64_t us = v.get<uint64_t>();
    if (us > kMaxMicros) return FieldError(path, "longer than one hour");
    return us * 1000;
  }
  if (v.is_number_integer()) return FieldError(path, "must not be negative");
  if (v.is_number_float()) {
    const double us = v.get<double>();
    if (!std::isfinite(us) || us < 0) return FieldError(path, "must be a non-negative number of microseconds");
    if (us > static_cast<double>(kMaxMicros)) return FieldError(path, "longer than one hour");
    return static_cast<uint64_t>(std::llround(us * 1000.0));
  }
  return FieldError(path, "must be a number of microseconds");
}

Result<std::string> ReadString(const Json& v, const std::string& path) {
  if (!v.is_string()) return FieldError(path, "must be a string");
  return v.get<std::string>();
}

// "9.0" -> (9, 0). A JSON number is refused: 8.10 and 8.1 would be the same number.
Status ReadComputeCapability(const Json& v, const std::string& path, DeviceSpec* spec) {
  if (!v.is_string()) return FieldError(path, "must be a string such as \"9.0\"");
  const std::string& s = v.get_ref<const std::string&>();
  const size_t dot = s.find('.');
  auto all_digits = [](std::string_view t) {
    return !t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos;
  };
  const std::string_view major = std::string_view(s).substr(0, dot);
  const std::string_view minor = dot == std::string::npos ? std::string_view() : std::string_view(s).substr(dot + 1);
  if (dot == std::string::npos || !all_digits(major) || major.size() > 2 || !all_digits(minor) || minor.size() != 1) {
    return FieldError(path, "\"" + s + "\" is not of the form \"M.m\" (e.g. \"9.0\")");
  }
  spec->cc_major = std::stoi(std::string(major));  // digits only, at most two: cannot throw
  spec->cc_minor = minor[0] - '0';
  return Status::Ok();
}

template <typename T>
Status Assign(Result<T> r, T* out) {
  if (!r.ok()) return r.status();
  *out = std::move(r).value();
  return Status::Ok();
}

// One entry of "devices": fills `spec` and `count`.
Status ParseDeviceEntry(const Json& entry, const std::string& path, DeviceSpec* spec, int64_t* count) {
  if (!entry.is_object()) return FieldError(path, "must be an object");
  Status s = CheckKeys(entry, path,
                       {"name", "count", "uuid", "pci_bus_id", "memory", "sm_count", "compute_capability",
                        "granularity", "context_overhead", "mig"});
  if (!s.ok()) return s;
  for (const auto& item : entry.items()) {
    const std::string& key = item.key();
    const Json& v = item.value();
    const std::string field = Child(path, key);
    if (key == "name") {
      s = Assign(ReadString(v, field), &spec->name);
    } else if (key == "count") {
      s = Assign(ReadInteger(v, field, 1, kMaxSimDevices), count);
    } else if (key == "uuid") {
      s = Assign(ReadString(v, field), &spec->uuid);
      if (s.ok() && spec->uuid.empty()) s = FieldError(field, "must not be empty (omit it to derive one)");
    } else if (key == "pci_bus_id") {
      s = Assign(ReadString(v, field), &spec->pci_bus_id);
      if (s.ok() && spec->pci_bus_id.empty()) s = FieldError(field, "must not be empty (omit it to derive one)");
    } else if (key == "memory") {
      s = Assign(ReadSize(v, field), &spec->total_bytes);
    } else if (key == "granularity") {
      s = Assign(ReadSize(v, field), &spec->granularity);
    } else if (key == "context_overhead") {
      s = Assign(ReadSize(v, field), &spec->context_overhead);
    } else if (key == "sm_count") {
      int64_t sm = 0;
      s = Assign(ReadInteger(v, field, 1, internal::kMaxSmCount), &sm);
      spec->sm_count = static_cast<int>(sm);
    } else if (key == "compute_capability") {
      s = ReadComputeCapability(v, field, spec);
    } else if (key == "mig") {
      if (!v.is_array()) {
        s = FieldError(field, "must be an array of MIG profile names, like [\"3g.40gb\", \"2g.20gb\"]");
      }
      for (size_t i = 0; s.ok() && i < v.size(); ++i) {
        std::string profile;
        s = Assign(ReadString(v[i], field + "[" + std::to_string(i) + "]"), &profile);
        if (s.ok()) spec->mig.push_back(std::move(profile));
      }
    }
    if (!s.ok()) return s;
  }
  if (*count > 1 && (!spec->uuid.empty() || !spec->pci_bus_id.empty())) {
    return FieldError(path, "\"uuid\" and \"pci_bus_id\" are allowed only when \"count\" is 1");
  }
  return internal::ValidateDeviceFields(*spec, path);
}

Status ParseDevices(const Json& devices, SimConfig* config, std::vector<std::string>* paths) {
  if (!devices.is_array()) return FieldError("devices", "must be an array of device objects");
  if (devices.empty()) return FieldError("devices", "at least one device is required");
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string path = "devices[" + std::to_string(i) + "]";
    DeviceSpec spec;
    int64_t count = 1;
    Status s = ParseDeviceEntry(devices[i], path, &spec, &count);
    if (!s.ok()) return s;
    if (config->devices.size() + static_cast<size_t>(count) > static_cast<size_t>(kMaxSimDevices)) {
      return FieldError(path + ".count", "the configuration would have more than " +
                                             std::to_string(kMaxSimDevices) + " devices");
    }
    for (int64_t k = 0; k < count; ++k) {
      config->devices.push_back(spec);
      paths->push_back(path);
    }
  }
  return Status::Ok();
}

Status ParseKernels(const Json& kernels, SimConfig* config) {
  if (!kernels.is_object()) return FieldError("kernels", "must be an object mapping kernel names to {\"wave_us\": N}");
  for (const auto& item : kernels.items()) {
    const std::string path = "kernels." + item.key();
    if (item.key().empty()) return FieldError("kernels", "a kernel name must not be empty");
    if (!item.value().is_object()) return FieldError(path, "must be an object such as {\"wave_us\": 250}");
    Status s = CheckKeys(item.value(), path, {"wave_us"});
    if (!s.ok()) return s;
    uint64_t ns = config->default_kernel_wave_ns;
    if (item.value().contains("wave_us")) {
      s = Assign(ReadMicrosAsNs(item.value()["wave_us"], path + ".wave_us"), &ns);
      if (!s.ok()) return s;
    }
    config->kernel_wave_ns[item.key()] = ns;
  }
  return Status::Ok();
}

// nlohmann's DOM parser keeps the last of two equal keys without a word; a config with
// "memory" twice is a mistake worth reporting. This callback tracks the keys of each
// open object.
class DuplicateKeyFinder {
 public:
  bool operator()(int /*depth*/, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) {
      open_objects_.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      if (!open_objects_.empty()) open_objects_.pop_back();
    } else if (event == Json::parse_event_t::key && parsed.is_string() && !open_objects_.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open_objects_.back().insert(key).second && duplicate_.empty()) duplicate_ = key;
    }
    return true;
  }
  const std::string& duplicate() const { return duplicate_; }

 private:
  std::vector<std::set<std::string>> open_objects_;
  std::string duplicate_;
};

// Re-parses text that failed, through SAX, to learn where and why (the DOM parser
// without exceptions says only "discarded").
class SyntaxErrorReader : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    message_ = ex.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix.
    const size_t bracket = message_.find("] ");
    if (message_.rfind("[json.exception", 0) == 0 && bracket != std::string::npos) message_.erase(0, bracket + 2);
    return false;
  }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

Result<SimConfig> ParseUnguarded(const std::string& text) {
  DuplicateKeyFinder duplicates;
  Json root = Json::parse(text, std::ref(duplicates), /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    SyntaxErrorReader reader;
    (void)Json::sax_parse(text, &reader);
    return Status::InvalidArgument("config: invalid JSON: " +
                                   (reader.message().empty() ? std::string("cannot parse") : reader.message()));
  }
  if (!duplicates.duplicate().empty()) {
    return Status::InvalidArgument("config: key \"" + duplicates.duplicate() + "\" appears twice in one object");
  }
  if (!root.is_object()) return Status::InvalidArgument("config: the top level must be a JSON object");
  Status s = CheckKeys(root, "", {"devices", "kernels", "default_kernel_wave_us", "utilization_period_ms"});
  if (!s.ok()) return s;

  SimConfig config;
  std::vector<std::string> paths;
  if (root.contains("devices")) {
    s = ParseDevices(root["devices"], &config, &paths);
    if (!s.ok()) return s;
  } else {
    config.devices.emplace_back();
    paths.emplace_back("devices[0] (default)");
  }
  if (root.contains("default_kernel_wave_us")) {
    s = Assign(ReadMicrosAsNs(root["default_kernel_wave_us"], "default_kernel_wave_us"), &config.default_kernel_wave_ns);
    if (!s.ok()) return s;
  }
  if (root.contains("kernels")) {
    s = ParseKernels(root["kernels"], &config);
    if (!s.ok()) return s;
  }
  if (root.contains("utilization_period_ms")) {
    int64_t ms = 0;
    s = Assign(ReadInteger(root["utilization_period_ms"], "utilization_period_ms", 1,
                           static_cast<int64_t>(internal::kMaxUtilizationPeriodNs / 1'000'000)),
               &ms);
    if (!s.ok()) return s;
    config.utilization_period_ns = static_cast<uint64_t>(ms) * 1'000'000;
  }
  s = internal::CompleteDeviceIdentities(&config.devices, paths);
  if (!s.ok()) return s;
  s = internal::ValidateTimings(config);
  if (!s.ok()) return s;
  return config;
}

}  // namespace

Result<SimConfig> ParseSimConfig(const std::string& json_text) {
  try {
    return ParseUnguarded(json_text);
  } catch (...) {  // only std::bad_alloc is possible; it must not cross the C ABI above us
    return Status::Internal("config: out of memory while parsing");
  }
}

Result<SimConfig> LoadSimConfig(const std::string& path) {
  if (path.empty()) return DefaultSimConfig();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string msg = "config file " + path + ": " + std::strerror(err);
    if (err == ENOENT) return Status::NotFound(std::move(msg));
    return Status::Unavailable(std::move(msg));
  }
  std::string text;
  char buffer[4096];
  Status status;
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = Status::Unavailable("config file " + path + ": " + std::strerror(errno));
      break;
    }
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > kMaxConfigBytes) {
      status = Status::InvalidArgument("config file " + path + ": larger than 1 MiB; is this the right file?");
      break;
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!status.ok()) return status;
  Result<SimConfig> config = ParseSimConfig(text);
  if (!config.ok()) {
    return Status(config.status().code() == StatusCode::kInvalidArgument
                      ? Status::InvalidArgument(path + ": " + config.status().message())
                      : config.status());
  }
  return config;
}

}  // namespace fgpu::sim
