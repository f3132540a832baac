#include "k8s/dra/resource_slice.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "core/mig_profiles.h"
#include "k8s/dra/quantity.h"

namespace fgpu::k8s {
namespace {

using nlohmann::json;

json StringAttribute(const std::string& value) { return json{{"string", value}}; }

json DeviceOf(const PublishedGpu& gpu, const CapacityPolicy& policy) {
  json attributes = {
      {"uuid", StringAttribute(gpu.uuid)},
      {"index", json{{"int", gpu.index}}},
      {"productName", StringAttribute(gpu.product)},
      {"migCapable", json{{"bool", gpu.mig_capable}}},
      {"type", StringAttribute(gpu.parent_uuid.empty() ? "gpu" : "mig")},
  };
  if (!gpu.parent_uuid.empty()) {  // a MIG instance: selected by profile, grouped by its GPU
    attributes["migProfile"] = StringAttribute(gpu.mig_profile);
    attributes["parentUUID"] = StringAttribute(gpu.parent_uuid);
    attributes["migStart"] = json{{"int", gpu.mig_start}};
  }
  if (const std::string version = SemverOf(gpu.driver_version); !version.empty()) {
    attributes["driverVersion"] = json{{"version", version}};
  }
  if (const std::string capability = SemverOf(gpu.compute_capability); !capability.empty()) {
    attributes["cudaComputeCapability"] = json{{"version", capability}};
  }
  const uint64_t memory = PublishedMemory(gpu.memory_bytes, policy);
  // A request that names no amount takes the whole GPU (the policy's default), as a device of a
  // driver without shares would.
  json capacity = {
      {"memory",
       {{"value", FormatQuantity(memory, true)},
        {"requestPolicy",
         {{"default", FormatQuantity(memory, true)},
          {"validRange",
           {{"min", FormatQuantity(policy.memory_min_bytes, true)},
            {"max", FormatQuantity(memory, true)},
            {"step", FormatQuantity(policy.memory_step_bytes, true)}}}}}}},
      {"compute",
       {{"value", "100"},
        {"requestPolicy",
         {{"default", "100"},
          {"validRange",
           {{"min", std::to_string(policy.compute_min_percent)}, {"max", "100"}, {"step", "1"}}}}}}},
  };
  return json{{"name", DeviceNameOf(gpu.uuid)},
              {"attributes", std::move(attributes)},
              {"capacity", std::move(capacity)},
              {"allowMultipleAllocations", true}};
}

// "1g.10gb+me" → "1g-10gb-me": a profile's name as part of a DNS label.
std::string LabelOf(std::string_view profile) {
  std::string label;
  for (char c : profile) label += (std::isalnum(static_cast<unsigned char>(c)) != 0) ? c : '-';
  return label;
}

// `base` + `suffix`, `base` shortened so the whole stays a DNS label (63).
std::string Suffixed(std::string base, const std::string& suffix) {
  if (base.size() + suffix.size() > 63) base.resize(63 - suffix.size());
  while (!base.empty() && base.back() == '-') base.pop_back();
  return base + suffix;
}

const mig::ModelInfo* DynamicModelOf(const PublishedGpu& gpu) {
  if (!gpu.mig_dynamic || !gpu.parent_uuid.empty() || !gpu.healthy) return nullptr;
  return mig::ModelOfProduct(gpu.product, gpu.memory_bytes);
}

std::string MemorySliceCounter(int slot) { return "memory-slice-" + std::to_string(slot); }
constexpr const char* kMediaCounter = "media-extensions";

json CounterSetOf(const PublishedGpu& gpu, const mig::ModelInfo& model) {
  json counters = json::object();
  for (int slot = 0; slot < mig::kMemorySlices; ++slot) {
    const bool foreign = ((gpu.mig_foreign_slices >> slot) & 1U) != 0;
    counters[MemorySliceCounter(slot)] = json{{"value", foreign ? "0" : "1"}};
  }
  const bool has_media = std::any_of(model.profiles.begin(), model.profiles.end(), [](const mig::Profile& p) { return p.media; });
  if (has_media) counters[kMediaCounter] = json{{"value", "1"}};
  return json{{"name", CounterSetNameOf(gpu.uuid)}, {"counters", std::move(counters)}};
}

json PlacementDeviceOf(const PublishedGpu& gpu, const mig::Profile& profile, int start) {
  json attributes = {
      {"type", StringAttribute("mig")},
      {"index", json{{"int", gpu.index}}},
      {"productName", StringAttribute(gpu.product)},
      {"migCapable", json{{"bool", true}}},
      {"migProfile", StringAttribute(std::string(profile.name))},
      {"parentUUID", StringAttribute(gpu.uuid)},
      {"migStart", json{{"int", start}}},
      {"migDynamic", json{{"bool", true}}},
  };
  if (const std::string version = SemverOf(gpu.driver_version); !version.empty()) {
    attributes["driverVersion"] = json{{"version", version}};
  }
  if (const std::string capability = SemverOf(gpu.compute_capability); !capability.empty()) {
    attributes["cudaComputeCapability"] = json{{"version", capability}};
  }
  json counters = json::object();
  for (int slot = start; slot < start + profile.memory_slices; ++slot) counters[MemorySliceCounter(slot)] = json{{"value", "1"}};
  if (profile.media) counters[kMediaCounter] = json{{"value", "1"}};
  // Not shared: the instance is the claim's whole (its slice has all of it).
  return json{{"name", Suffixed(DeviceNameOf(gpu.uuid), "-" + LabelOf(profile.name) + "-" + std::to_string(start))},
              {"attributes", std::move(attributes)},
              {"capacity", {{"memory", {{"value", FormatQuantity(profile.memory_bytes, true)}}}, {"compute", {{"value", "100"}}}}},
              {"consumesCounters", json::array({json{{"counterSet", CounterSetNameOf(gpu.uuid)}, {"counters", std::move(counters)}}})}};
}

json PoolObject(const std::string& node, const std::string& suffix, int64_t generation) {
  return json{{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceSlice"},
              {"metadata", {{"name", ResourceSliceName(node, suffix)}, {"labels", {{"app.kubernetes.io/managed-by", "fgpu"}}}}},
              {"spec",
               {{"driver", kDriverName},
                {"nodeName", node},
                {"pool", {{"name", node}, {"generation", generation}, {"resourceSliceCount", 1}}}}}};
}

uint64_t Fnv1a(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

}  // namespace

std::string DeviceNameOf(const std::string& uuid) {
  std::string name = "gpu-";
  std::string_view rest = uuid;
  if (rest.rfind("GPU-", 0) == 0) rest.remove_prefix(4);
  if (rest.rfind("MIG-", 0) == 0) {
    rest.remove_prefix(4);
    name = "mig-";
  }
  for (char c : rest) {
    const auto lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    name += (std::isalnum(static_cast<unsigned char>(lower)) != 0) ? lower : '-';
  }
  if (name.size() > 63) name.resize(63);
  while (!name.empty() && name.back() == '-') name.pop_back();
  return name;
}

std::string SemverOf(const std::string& text) {
  // "535.104.05", "12.4", "580.00.00-fgpu-sim": numbers without leading zeros, and a pre-release
  // part kept as it is when it is made of semver's characters.
  const std::size_t dash = text.find('-');
  const std::string dotted = text.substr(0, dash);
  const std::string prerelease = dash == std::string::npos ? "" : text.substr(dash + 1);
  for (char c : prerelease) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-' && c != '.') return {};
  }
  if (dash != std::string::npos && (prerelease.empty() || prerelease.front() == '.' || prerelease.back() == '.')) return {};
  std::vector<uint64_t> parts;
  std::size_t start = 0;
  while (start <= dotted.size()) {
    const std::size_t dot = std::min(dotted.find('.', start), dotted.size());
    uint64_t number = 0;
    const char* first = dotted.data() + start;
    const char* last = dotted.data() + dot;
    const auto [end, error] = std::from_chars(first, last, number);
    if (first == last || error != std::errc() || end != last) return {};
    parts.push_back(number);
    start = dot + 1;
  }
  if (parts.size() == 2) parts.push_back(0);
  if (parts.size() != 3) return {};
  return std::to_string(parts[0]) + "." + std::to_string(parts[1]) + "." + std::to_string(parts[2]) +
         (prerelease.empty() ? "" : "-" + prerelease);
}

uint64_t PublishedMemory(uint64_t memory_bytes, const CapacityPolicy& policy) {
  const uint64_t step = std::max<uint64_t>(policy.memory_step_bytes, 1);
  // The range's max and default must be min + k × step.
  if (memory_bytes < policy.memory_min_bytes) return 0;
  return policy.memory_min_bytes + (memory_bytes - policy.memory_min_bytes) / step * step;
}

nlohmann::json BuildResourceSlice(const std::string& node, int64_t generation, const std::vector<PublishedGpu>& gpus,
                                  const CapacityPolicy& policy) {
  // A dynamic MIG GPU's instances come and go with claims: its placements stand for them.
  std::vector<std::string> dynamic;
  for (const PublishedGpu& gpu : gpus) {
    if (gpu.mig_dynamic && gpu.parent_uuid.empty()) dynamic.push_back(gpu.uuid);
  }
  std::vector<const PublishedGpu*> published;
  for (const PublishedGpu& gpu : gpus) {
    const bool of_dynamic = gpu.mig_dynamic || std::find(dynamic.begin(), dynamic.end(), gpu.parent_uuid) != dynamic.end();
    if (!of_dynamic && gpu.healthy && gpu.shareable && PublishedMemory(gpu.memory_bytes, policy) > 0) {
      published.push_back(&gpu);
    }
  }
  std::sort(published.begin(), published.end(), [](auto* a, auto* b) { return a->index < b->index; });
  json devices = json::array();
  for (const PublishedGpu* gpu : published) {
    if (devices.size() == 128) break;  // ResourceSliceSpec.devices: at most 128
    devices.push_back(DeviceOf(*gpu, policy));
  }
  return json{{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceSlice"},
              {"metadata",
               {{"name", ResourceSliceName(node)}, {"labels", {{"app.kubernetes.io/managed-by", "fgpu"}}}}},
              {"spec",
               {{"driver", kDriverName},
                {"nodeName", node},
                {"pool", {{"name", node}, {"generation", generation}, {"resourceSliceCount", 1}}},
                {"devices", std::move(devices)}}}};
}

std::string ResourceSliceName(const std::string& node, const std::string& suffix) {
  const std::string tail = std::string(kDriverName) + (suffix.empty() ? "" : "-" + suffix);
  const std::string name = node + "-" + tail;
  if (name.size() <= 253) return name;
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(Fnv1a(node)));
  return node.substr(0, 253 - 1 - 16 - 1 - tail.size()) + "-" + hash + "-" + tail;
}

std::string CounterSetNameOf(const std::string& gpu_uuid) { return Suffixed(DeviceNameOf(gpu_uuid), "-counters"); }

std::vector<MigPlacement> PlacementsOf(const PublishedGpu& gpu) {
  const mig::ModelInfo* model = DynamicModelOf(gpu);
  if (model == nullptr) return {};
  std::vector<MigPlacement> placements;
  for (const mig::Profile& profile : model->profiles) {
    for (int start = 0; start < mig::kMemorySlices; ++start) {
      if (!profile.CanStartAt(start)) continue;
      const std::string device = Suffixed(DeviceNameOf(gpu.uuid), "-" + LabelOf(profile.name) + "-" + std::to_string(start));
      placements.push_back({device, gpu.uuid, std::string(profile.name), start, profile.memory_bytes});
    }
  }
  return placements;
}

std::vector<nlohmann::json> BuildResourcePool(const std::string& node, int64_t generation,
                                              const std::vector<PublishedGpu>& gpus, const CapacityPolicy& policy) {
  std::vector<json> pool = {BuildResourceSlice(node, generation, gpus, policy)};
  std::vector<const PublishedGpu*> dynamic;
  for (const PublishedGpu& gpu : gpus) {
    if (DynamicModelOf(gpu) != nullptr) dynamic.push_back(&gpu);
  }
  std::sort(dynamic.begin(), dynamic.end(), [](auto* a, auto* b) { return a->index < b->index; });
  // Counter sets, 8 to an object (ResourceSliceSpec.sharedCounters' limit).
  for (std::size_t first = 0; first < dynamic.size(); first += 8) {
    json object = PoolObject(node, "counters-" + std::to_string(first / 8), generation);
    json sets = json::array();
    for (std::size_t i = first; i < std::min(first + 8, dynamic.size()); ++i) {
      sets.push_back(CounterSetOf(*dynamic[i], *DynamicModelOf(*dynamic[i])));
    }
    object["spec"]["sharedCounters"] = std::move(sets);
    pool.push_back(std::move(object));
  }
  // Placements, 64 to an object (the devices' limit when they consume counters).
  json devices = json::array();
  int device_objects = 0;
  const auto flush = [&] {
    json object = PoolObject(node, "mig-" + std::to_string(device_objects++), generation);
    object["spec"]["devices"] = std::move(devices);
    pool.push_back(std::move(object));
    devices = json::array();
  };
  for (const PublishedGpu* gpu : dynamic) {
    const mig::ModelInfo& model = *DynamicModelOf(*gpu);
    for (const mig::Profile& profile : model.profiles) {
      for (int start = 0; start < mig::kMemorySlices; ++start) {
        if (!profile.CanStartAt(start)) continue;
        devices.push_back(PlacementDeviceOf(*gpu, profile, start));
        if (devices.size() == 64) flush();
      }
    }
  }
  if (!devices.empty()) flush();
  for (json& object : pool) object["spec"]["pool"]["resourceSliceCount"] = static_cast<int64_t>(pool.size());
  return pool;
}

}  // namespace fgpu::k8s
