// Unit test of the probe's driver-free logic: the command line (spin's options and
// the --cuda-version floor they set), the driver-entry lists and the spin windows.
// Plain asserts in a tiny executable, so it builds in the probe-only configuration
// too (no driver, no test framework).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/command_line.h"
#include "probe/driver_table.h"
#include "probe/host_wait.h"
#include "probe/spin_windows.h"

namespace {

using fgpu::probe::CommandLine;
using fgpu::probe::CommandName;
using fgpu::probe::DriverEntrySet;
using fgpu::probe::ParseOutcome;

int failures = 0;

void Expect(bool condition, const std::string& what) {
  if (condition) return;
  std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  ++failures;
}

std::string Joined(const std::vector<std::string>& args) {
  std::string text;
  for (const std::string& arg : args) text += (text.empty() ? "" : " ") + arg;
  return text;
}

// Parses `args`, expecting success; the parsed line in *line.
bool Parses(const std::vector<std::string>& args, CommandLine* line) {
  std::string error;
  const ParseOutcome outcome = fgpu::probe::ParseCommandLine(args, line, &error);
  Expect(outcome == ParseOutcome::kParsed, "parses: " + Joined(args) + " (" + error + ")");
  return outcome == ParseOutcome::kParsed;
}

// Expects a usage error whose message contains `message`.
void Rejects(const std::vector<std::string>& args, std::string_view message) {
  CommandLine line;
  std::string error;
  const ParseOutcome outcome = fgpu::probe::ParseCommandLine(args, &line, &error);
  Expect(outcome == ParseOutcome::kUsageError && error.find(message) != std::string::npos,
         "rejects: " + Joined(args) + " with '" + std::string(message) + "' (got '" + error + "')");
}

std::vector<std::string> Spin(std::vector<std::string> extra) {
  std::vector<std::string> args = {"spin", "--duty", "50", "--seconds", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

void TestSpinDefaults() {
  CommandLine line;
  if (!Parses(Spin({}), &line)) return;
  Expect(line.command == CommandName::kSpin, "spin command");
  Expect(line.spin.duty_percent == 50 && line.spin.seconds == 1 && line.spin.kernel_us == 1000, "spin basics");
  Expect(line.spin.depth == 2, "default depth 2");
  Expect(!line.spin.sync_each, "default sync-each 0");
  Expect(line.spin.graph_kernels == 0 && line.spin.KernelsPerLaunch() == 1, "default: no graph");
  Expect(line.spin.window_ms == 0, "default: no windows");
  Expect(line.session.entries == DriverEntrySet::kCore, "default: no graph entry points");
}

void TestSpinOptions() {
  CommandLine line;
  if (Parses(Spin({"--depth", "16"}), &line)) Expect(line.spin.depth == 16, "--depth 16");
  if (Parses(Spin({"--depth=1"}), &line)) Expect(line.spin.depth == 1, "--depth=1");
  if (Parses(Spin({"--depth", "1024"}), &line)) Expect(line.spin.depth == 1024, "--depth 1024");
  if (Parses(Spin({"--sync-each", "1"}), &line)) Expect(line.spin.sync_each, "--sync-each 1");
  if (Parses(Spin({"--sync-each=0"}), &line)) Expect(!line.spin.sync_each, "--sync-each=0");
  if (Parses(Spin({"--graph-kernels", "0"}), &line)) {
    Expect(line.spin.graph_kernels == 0 && line.session.entries == DriverEntrySet::kCore, "--graph-kernels 0");
  }
  if (Parses(Spin({"--graph-kernels", "4"}), &line)) {
    Expect(line.spin.graph_kernels == 4 && line.spin.KernelsPerLaunch() == 4, "--graph-kernels 4");
    Expect(line.session.entries == DriverEntrySet::kWithGraphs, "--graph-kernels asks for the graph entry points");
  }
  if (Parses(Spin({"--graph-kernels", "1024"}), &line)) Expect(line.spin.graph_kernels == 1024, "--graph-kernels 1024");
  if (Parses(Spin({"--window-ms", "0"}), &line)) Expect(line.spin.window_ms == 0, "--window-ms 0");
  if (Parses(Spin({"--window-ms", "250"}), &line)) Expect(line.spin.window_ms == 250, "--window-ms 250");
  if (Parses(Spin({"--window-ms", "60000"}), &line)) Expect(line.spin.window_ms == 60000, "--window-ms 60000");
  if (Parses(Spin({"--window-ms", "100", "--graph-kernels", "2", "--sync-each", "1", "--depth", "8", "--kernel-us",
                   "20"}),
             &line)) {
    Expect(line.spin.window_ms == 100 && line.spin.graph_kernels == 2 && line.spin.sync_each &&
               line.spin.depth == 8 && line.spin.kernel_us == 20,
           "all spin options together");
  }

  Rejects(Spin({"--depth", "0"}), "--depth '0': expected an integer from 1 to 1024");
  Rejects(Spin({"--depth", "1025"}), "--depth '1025'");
  Rejects(Spin({"--depth", "-1"}), "--depth '-1'");
  Rejects(Spin({"--depth", "2.5"}), "--depth '2.5'");
  Rejects(Spin({"--depth", "x"}), "--depth 'x'");
  Rejects(Spin({"--depth="}), "--depth ''");
  Rejects(Spin({"--depth"}), "option --depth needs a value");
  Rejects(Spin({"--depth", "2", "--depth", "3"}), "option --depth given twice");
  Rejects(Spin({"--sync-each", "2"}), "--sync-each '2': expected 0 or 1");
  Rejects(Spin({"--sync-each", "yes"}), "--sync-each 'yes'");
  Rejects(Spin({"--sync-each", "true"}), "--sync-each 'true'");
  Rejects(Spin({"--sync-each", "01"}), "--sync-each '01'");
  Rejects(Spin({"--sync-each="}), "--sync-each ''");
  Rejects(Spin({"--graph-kernels", "1025"}), "--graph-kernels '1025': expected an integer from 0 to 1024");
  Rejects(Spin({"--graph-kernels", "-1"}), "--graph-kernels '-1'");
  Rejects(Spin({"--graph-kernels", "four"}), "--graph-kernels 'four'");
  Rejects(Spin({"--window-ms", "60001"}), "--window-ms '60001': expected an integer from 0 to 60000");
  Rejects(Spin({"--window-ms", "1.5"}), "--window-ms '1.5'");
  Rejects(Spin({"--window-ms", "-250"}), "--window-ms '-250'");
  // Spin's options belong to spin.
  Rejects({"alloc", "--bytes", "1MiB", "--depth", "2"}, "unknown option --depth");
  Rejects({"info", "--graph-kernels", "1"}, "unknown option --graph-kernels");
  Rejects({"--depth", "2", "spin", "--duty", "50", "--seconds", "1"}, "unknown option --depth");
}

void TestSymbolsAndAttributes() {
  CommandLine line;
  if (Parses({"symbols"}, &line)) {
    Expect(line.command == CommandName::kSymbols && !line.symbols.all_names, "symbols: the fixed names");
  }
  if (Parses({"symbols", "--names", "all"}, &line)) Expect(line.symbols.all_names, "symbols --names all");
  if (Parses({"symbols", "--names=fixed"}, &line)) Expect(!line.symbols.all_names, "symbols --names=fixed");
  if (Parses({"attributes"}, &line)) Expect(line.command == CommandName::kAttributes, "attributes command");
  Rejects({"symbols", "--names", "every"}, "--names 'every': expected fixed|all");
  Rejects({"info", "--names", "all"}, "unknown option --names");
  Rejects({"attributes", "--names", "all"}, "unknown option --names");
}

void TestCudaVersionFloor() {
  Expect(fgpu::probe::MinimumCudaVersion(DriverEntrySet::kCore) == 11020, "core entry points need 11.2");
  Expect(fgpu::probe::MinimumCudaVersion() == 11020, "the default set is the core one");
  Expect(fgpu::probe::MinimumCudaVersion(DriverEntrySet::kWithGraphs) == 12000, "graph entry points need 12.0");

  CommandLine line;
  Parses({"--cuda-version", "11020", "info"}, &line);
  Parses({"--cuda-version", "11020", "spin", "--duty", "50", "--seconds", "1", "--depth", "4"}, &line);
  Parses({"--cuda-version", "12000", "spin", "--duty", "50", "--seconds", "1", "--graph-kernels", "1"}, &line);
  Rejects({"--cuda-version", "11010", "info"}, "is older than 11020");
  Rejects({"--cuda-version", "11080", "spin", "--duty", "50", "--seconds", "1", "--graph-kernels", "1"},
          "is older than 12000");
  Rejects({"--lookup", "procaddress", "--cuda-version", "11080", "spin", "--duty", "50", "--seconds", "1",
           "--graph-kernels", "2"},
          "is older than 12000");
  // Without a getter the version is not used.
  Parses({"--lookup", "dlsym", "--cuda-version", "11080", "spin", "--duty", "50", "--seconds", "1",
          "--graph-kernels", "2"},
         &line);
  Parses({"--lookup", "direct", "--cuda-version", "10000", "info"}, &line);
}

struct Symbol {
  std::string_view base;
  std::string_view exported;
  int version;
  int per_thread;
};

constexpr Symbol kSymbols[] = {
#define FGPU_CUDA_SYMBOL(base, exported, version, per_thread) {#base, #exported, version, per_thread},
#include "core/abi/cuda_symbols.inc"
#undef FGPU_CUDA_SYMBOL
};

void TestDriverEntries() {
  size_t core = 0;
  size_t all = 0;
  const fgpu::probe::DriverEntry* core_entries = fgpu::probe::DriverEntries(DriverEntrySet::kCore, &core);
  const fgpu::probe::DriverEntry* entries = fgpu::probe::DriverEntries(DriverEntrySet::kWithGraphs, &all);
  Expect(core_entries == entries && all == core + 6, "the graph set is the core set plus six graph entries");
  for (size_t i = 0; i < all; ++i) {
    const fgpu::probe::DriverEntry& entry = entries[i];
    const Symbol* known = nullptr;
    for (const Symbol& symbol : kSymbols) {
      if (symbol.exported == entry.exported && symbol.per_thread == 0) known = &symbol;
    }
    Expect(known != nullptr && known->base == entry.base,
           std::string(entry.exported) + " is an exported variant of " + entry.base + " in cuda_symbols.inc");
    if (known == nullptr) continue;
    // The probe may date an ABI-identical variant earlier (cuStreamDestroy_v2 behaves as
    // cuStreamDestroy), never later than the driver's own version for it.
    Expect(entry.since <= known->version, std::string(entry.exported) + " not newer than cuda_symbols.inc");
    if (i >= core) {
      Expect(entry.since == known->version, std::string(entry.exported) + " has cuda_symbols.inc's version");
    }
  }
}

void ExpectWindows(const std::vector<double>& got, const std::vector<double>& expected, const char* what) {
  bool same = got.size() == expected.size();
  for (size_t i = 0; same && i < got.size(); ++i) same = std::fabs(got[i] - expected[i]) < 1e-6;
  std::string text;
  for (double value : got) text += std::to_string(value) + " ";
  Expect(same, std::string(what) + ": got [" + text + "]");
}

void TestWindows() {
  using fgpu::probe::WindowDuties;
  std::vector<double> back_to_back;  // 1000 launches of 1 ms, each seen as it ends
  for (int i = 1; i <= 1000; ++i) back_to_back.push_back(i * 1e-3);
  ExpectWindows(WindowDuties(back_to_back, 1e-3, 0.25, 1.0), {100, 100, 100, 100}, "busy throughout");
  ExpectWindows(WindowDuties(back_to_back, 1e-3, 0.25, 0.999), {100, 100, 100}, "last incomplete window dropped");
  ExpectWindows(WindowDuties(back_to_back, 1e-3, 0.3, 1.0), {100, 100, 100}, "W not dividing the run");
  ExpectWindows(WindowDuties(back_to_back, 1e-3, 0, 1.0), {}, "no windows with W = 0");
  ExpectWindows(WindowDuties(back_to_back, 1e-3, 2.0, 1.0), {}, "no complete window");
  ExpectWindows(WindowDuties({}, 1e-3, 0.25, 0.6), {0, 0}, "nothing completed");

  std::vector<double> half;  // 1 ms of work every 2 ms
  for (int i = 1; i <= 500; ++i) half.push_back(i * 2e-3);
  ExpectWindows(WindowDuties(half, 1e-3, 0.1, 1.0), std::vector<double>(10, 50), "half duty");
  // Work only in the second half: a 4-kernel graph launch of 4 ms every 4 ms from 0.5 s.
  std::vector<double> late;
  for (int i = 1; i <= 125; ++i) late.push_back(0.5 + i * 4e-3);
  ExpectWindows(WindowDuties(late, 4e-3, 0.25, 1.0), {0, 0, 100, 100}, "busy second half");

  // A launch straddling a boundary is split between the two windows.
  ExpectWindows(WindowDuties({0.0105}, 1e-3, 0.01, 0.02), {5, 5}, "split across windows");
  // Time before the start is dropped.
  ExpectWindows(WindowDuties({0.0005}, 1e-3, 0.001, 0.001), {50}, "clipped at the start");
  // Two completions seen by one poll ran one after the other, not both in the last ms.
  ExpectWindows(WindowDuties({0.010, 0.010}, 1e-3, 0.001, 0.010),
                {0, 0, 0, 0, 0, 0, 0, 0, 100, 100}, "bunched observations do not overlap");
  // ... and a late observation followed by an exact one.
  ExpectWindows(WindowDuties({0.0035, 0.004}, 1e-3, 0.001, 0.004), {0, 0, 100, 100}, "late, then exact");
}

}  // namespace

void TestHostWait() {
  using fgpu::probe::ParseRunQueueWaitNs;
  Expect(ParseRunQueueWaitNs("199564 3233421 2\n") == std::optional<uint64_t>(3233421), "the second field");
  Expect(ParseRunQueueWaitNs("0 0 0") == std::optional<uint64_t>(0), "zeros, no newline");
  Expect(ParseRunQueueWaitNs("18446744073709551615 18446744073709551615 1\n") ==
             std::optional<uint64_t>(UINT64_MAX), "the largest value");
  for (const char* bad : {"", "1 2", "1 2 3 4", "1 -2 3", "1 x 3", "18446744073709551616 1 1", "1  2 3 junk"}) {
    Expect(!ParseRunQueueWaitNs(bad), std::string("refused: [") + bad + "]");
  }
  // This process's own threads: on Linux with schedstat, a number that never goes back.
  const std::optional<uint64_t> before = fgpu::probe::ProcessRunQueueWaitNs();
  const std::optional<uint64_t> after = fgpu::probe::ProcessRunQueueWaitNs();
  Expect(before.has_value() == after.has_value() && (!before || *after >= *before), "monotonic");
}

int main() {
  TestHostWait();
  TestSpinDefaults();
  TestSpinOptions();
  TestCudaVersionFloor();
  TestSymbolsAndAttributes();
  TestDriverEntries();
  TestWindows();
  if (failures != 0) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return EXIT_FAILURE;
  }
  std::puts("probe logic tests passed");
  return EXIT_SUCCESS;
}
