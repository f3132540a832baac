// Fuzzes what `fgpu simulate` reads: the CSV reader (simulate/csv.h) and the trace loader on top
// of it (simulate/trace.h), through Scenario::Load, which also builds the cluster and the typical
// workload from what was read; a small trace is then replayed once, as `fgpu simulate` would.
//
// Input: the node list, a line "%%", the pod list (the form of fuzz/corpus/trace_csv/). Without
// the "%%" line the whole input is both files. The files are written to a private directory under
// /dev/shm, since the readers take paths.
//
// Checked on every input:
// - ReadCsv: every row has the header's width, and rows come in line order after the header.
// - An accepted trace keeps the promises of trace.h: at least one node, distinct non-empty
//   names, positive CPU and RAM, 0..kMaxGpusPerNode GPUs with a model; at least one pod, each a
//   valid sched::Request; never_fit <= pods, at most five warnings.
// - A refusal is InvalidArgument naming the file (never Unavailable: the files are there).
// - The replay of a small accepted trace succeeds and accounts for every arrival.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <string_view>

#include "sched/request.h"
#include "simulate/csv.h"
#include "simulate/replay.h"
#include "simulate/trace.h"

namespace {

using fgpu::StatusCode;
namespace simulate = fgpu::simulate;
namespace sched = fgpu::sched;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "trace_csv_fuzzer: %s %s\n", what, detail.c_str());
  std::abort();
}

void Expect(bool condition, const char* what, const std::string& detail = "") {
  if (!condition) Fail(what, detail);
}

// Where the two files go: one directory per fuzzer process, removed at exit.
struct Scratch {
  Scratch() {
    dir = "/dev/shm/fgpu-fuzz-trace-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  std::string Write(const char* name, std::string_view bytes) const {
    const std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }
  std::string dir;
};

void CheckCsv(const std::string& path) {
  const fgpu::Result<simulate::CsvTable> table = simulate::ReadCsv(path);
  if (!table.ok()) {
    Expect(table.status().code() == StatusCode::kInvalidArgument, "ReadCsv:", table.status().message());
    Expect(table.status().message().starts_with(path),
           "a CSV error that does not name the file:", table.status().message());
    return;
  }
  Expect(!table->header.empty(), "a table without a header");
  int previous = 0;
  for (const simulate::CsvRow& row : table->rows) {
    Expect(row.fields.size() == table->header.size(), "a row not of the header's width", table->Where(row));
    Expect(row.line > previous && row.line >= 2, "rows out of line order", table->Where(row));
    previous = row.line;
  }
}

void CheckScenario(const simulate::Scenario& scenario) {
  const simulate::NodeList& nodes = scenario.nodes;
  Expect(!nodes.nodes.empty(), "a trace without nodes");
  std::set<std::string> names;
  for (const sched::NodeSpec& node : nodes.nodes) {
    Expect(!node.name.empty() && names.insert(node.name).second, "an empty or repeated node name", node.name);
    Expect(node.cpu_milli > 0 && node.memory_mib > 0, "a node without CPU or RAM", node.name);
    Expect(node.gpu_count >= 0 && node.gpu_count <= sched::kMaxGpusPerNode, "a node's GPU count", node.name);
    Expect(node.gpu_count == 0 || (node.model >= 0 && node.model < nodes.models.size()), "a node's model",
           node.name);
  }
  const simulate::PodList& pods = scenario.pods;
  Expect(!pods.pods.empty(), "a trace without pods");
  for (const simulate::Pod& pod : pods.pods) {
    const fgpu::Status valid = sched::Validate(pod.request);
    Expect(valid.ok(), "LoadPods accepted an invalid request:", pod.name + ": " + valid.message());
  }
  Expect(pods.never_fit >= 0 && static_cast<size_t>(pods.never_fit) <= pods.pods.size(),
         "never_fit out of range");
  Expect(pods.warnings.size() <= 5 && pods.warnings.size() <= static_cast<size_t>(pods.never_fit),
         "warnings");
}

// Small enough to replay within the fuzzer's time per input: the arrival order tops the pods up
// to 1.3 times the cluster's GPU capacity, one pod of at least `kMinMilli` at a time.
bool SmallEnoughToReplay(const simulate::Scenario& scenario) {
  constexpr int64_t kMinMilli = 100;
  if (scenario.nodes.nodes.size() > 16 || scenario.pods.pods.size() > 64) return false;
  if (scenario.cluster.total_gpu_milli() > 16 * sched::kMilliPerGpu) return false;
  for (const simulate::Pod& pod : scenario.pods.pods) {
    const int64_t milli = pod.request.TotalGpuMilli();
    if (milli > 0 && milli < kMinMilli) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Scratch scratch;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view node_bytes = input;
  std::string_view pod_bytes = input;
  if (const size_t split = input.find("\n%%\n"); split != std::string_view::npos) {
    node_bytes = input.substr(0, split + 1);
    pod_bytes = input.substr(split + 4);
  }
  const std::string nodes_path = scratch.Write("nodes.csv", node_bytes);
  const std::string pods_path = scratch.Write("pods.csv", pod_bytes);
  CheckCsv(nodes_path);
  CheckCsv(pods_path);

  const fgpu::Result<simulate::Scenario> scenario = simulate::Scenario::Load(nodes_path, pods_path);
  if (!scenario.ok()) {
    const std::string message = scenario.status().message();
    Expect(scenario.status().code() == StatusCode::kInvalidArgument, "Scenario::Load:", message);
    Expect(message.starts_with(nodes_path) || message.starts_with(pods_path),
           "an error that names no file:", message);
    return 0;
  }
  CheckScenario(*scenario);
  if (!SmallEnoughToReplay(*scenario)) return 0;
  const fgpu::Result<simulate::RunResult> run =
      simulate::Replay(*scenario, simulate::RunSpec{.policy = "FGD"});
  Expect(run.ok(), "Replay refused a loaded trace:", run.status().message());
  Expect(run->placed + run->failed == run->arrivals &&
             run->arrivals >= static_cast<int64_t>(scenario->pods.pods.size()),
         "Replay lost arrivals");
  return 0;
}
