// Writes the slice fuzzer's starting inputs: real slices made by SliceAdmin::Create (one, two and
// sixteen devices; live and dead processes planted; compute changed), in slice_input.h's form.
//
//   slice_seeds OUT_DIR     writes OUT_DIR/<name> for each slice below
//
// fuzz/corpus/slice_files/ began as its output; run it again after a format change, then merge.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/slice_input.h"
#include "slice/process_liveness.h"
#include "slice/slice.h"
#include "slice/slice_files.h"

namespace {

namespace slice = fgpu::slice;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

slice::SliceSpec Spec(const std::string& id, int devices) {
  slice::SliceSpec spec;
  spec.id = id;
  for (int index = 0; index < devices; ++index) {
    char uuid[64];
    std::snprintf(uuid, sizeof(uuid), "GPU-%08x-1111-2222-3333-444444444444", index);
    spec.devices.push_back(slice::DeviceLimit{uuid, (uint64_t{1} << 30) * static_cast<uint64_t>(index + 1),
                                              static_cast<uint32_t>(10 + index), slice::ComputeMode::kShare,
                                              slice::Tier::kStandard});
  }
  return spec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string out = argv[1];
  const std::string work = "/dev/shm/fgpu-slice-seeds-" + std::to_string(::getpid());
  std::filesystem::create_directories(out);
  std::filesystem::create_directories(work);
  const int32_t self = ::getpid();
  const uint64_t start = slice::ReadStartTime(self);

  struct Seed {
    const char* name;
    int devices;
    int live;  // planted processes that are this one (alive)
    int dead;  // planted processes with a pid that cannot exist
    bool compute;
  };
  const Seed seeds[] = {
      {"fresh-1", 1, 0, 0, false},   {"fresh-2", 2, 0, 0, false},  {"fresh-16", 16, 0, 0, false},
      {"charged-1", 1, 1, 0, false}, {"dead-1", 1, 0, 2, false},   {"mixed-2", 2, 1, 3, true},
      {"compute-1", 1, 0, 0, true},  {"mixed-16", 16, 1, 1, true},
  };
  int status = 0;
  for (const Seed& seed : seeds) {
    const std::string dir = work + "/" + seed.name;
    fgpu::Result<slice::SliceAdmin> admin = slice::SliceAdmin::Create(dir, Spec(seed.name, seed.devices));
    if (!admin.ok()) {
      std::fprintf(stderr, "%s: %s\n", seed.name, admin.status().message().c_str());
      status = 1;
      continue;
    }
    std::vector<uint64_t> charge(static_cast<size_t>(seed.devices), uint64_t{1} << 20);
    for (int index = 0; index < seed.live; ++index) (void)admin->TEST_PlantProcess(self, start, charge);
    for (int index = 0; index < seed.dead; ++index)
      (void)admin->TEST_PlantProcess(0x3ffffff0 + index, 12345, charge);
    if (seed.compute) (void)admin->SetCompute(0, 55, slice::ComputeMode::kCap, slice::Tier::kLatency);
    const std::string limits = ReadFile(dir + "/" + slice::kLimitsFileName);
    const std::string ledger = ReadFile(dir + "/" + slice::kLedgerFileName);
    std::ofstream(out + "/" + seed.name, std::ios::binary) << fgpu::fuzz::EncodeSliceInput(limits, ledger);
  }
  std::error_code ignored;
  std::filesystem::remove_all(work, ignored);
  return status;
}
