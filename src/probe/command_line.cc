#include "probe/command_line.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string_view>

#include "probe/byte_size.h"

namespace fgpu::probe {

namespace {

constexpr uint64_t kMaxCount = 100000;
constexpr uint64_t kMaxHoldMs = 24ull * 3600 * 1000;
constexpr uint64_t kMaxKernelUs = 10'000'000;
constexpr double kMaxSpinSeconds = 24 * 3600;
constexpr uint64_t kMaxSpinDepth = 1024;
constexpr uint64_t kMaxGraphKernels = 1024;
constexpr uint64_t kMaxWindowMs = 60'000;

// Splits `--name VALUE` / `--name=VALUE` pairs; rejects anything else.
bool ParseOptions(const std::vector<std::string>& args, size_t begin, size_t end,
                  std::map<std::string, std::string>* options, std::string* error) {
  for (size_t i = begin; i < end; ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      *error = "unexpected argument '" + arg + "'";
      return false;
    }
    std::string name = arg.substr(2);
    std::string value;
    if (const size_t equals = name.find('='); equals != std::string::npos) {
      value = name.substr(equals + 1);
      name.resize(equals);
    } else if (i + 1 < end) {
      value = args[++i];
    } else {
      *error = "option --" + name + " needs a value";
      return false;
    }
    if (!options->emplace(name, value).second) {
      *error = "option --" + name + " given twice";
      return false;
    }
  }
  return true;
}

// Reads and validates the options a command accepts, removing each one it reads;
// whatever is left over is unknown.
class OptionReader {
 public:
  OptionReader(std::map<std::string, std::string> options, std::string* error)
      : options_(std::move(options)), error_(error) {}

  bool Uint(const char* name, uint64_t min, uint64_t max, uint64_t* out) {
    std::string text;
    if (!Take(name, &text)) return true;
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 || value < min ||
        value > max) {
      return Fail(name, text, "an integer from " + std::to_string(min) + " to " + std::to_string(max));
    }
    *out = value;
    return true;
  }

  bool Double(const char* name, bool required, double min_exclusive, double max, double* out) {
    std::string text;
    if (!Take(name, &text)) return Missing(name, required);
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(value) || value <= min_exclusive || value > max) {
      return Fail(name, text, "a number above " + Number(min_exclusive) + " and at most " + Number(max));
    }
    *out = value;
    return true;
  }

  // 0 or 1.
  bool Flag(const char* name, bool* out) {
    std::string text;
    if (!Take(name, &text)) return true;
    if (text != "0" && text != "1") return Fail(name, text, "0 or 1");
    *out = text == "1";
    return true;
  }

  bool Size(const char* name, bool required, uint64_t* out) {
    std::string text;
    if (!Take(name, &text)) return Missing(name, required);
    uint64_t bytes = 0;
    if (!ParseSize(text, &bytes) || bytes == 0) {
      return Fail(name, text, "a positive size such as 4096, 512MiB, 1.5GiB or 1G");
    }
    *out = bytes;
    return true;
  }

  bool Api(AllocApi* out) {
    std::string text;
    if (!Take("api", &text)) return true;
    if (!ParseAllocApi(text, out)) return Fail("api", text, std::string(AllocApiChoices()));
    return true;
  }

  // --names fixed|all (the symbols command).
  bool Names(bool* all) {
    std::string text;
    if (!Take("names", &text)) return true;
    if (text != "fixed" && text != "all") return Fail("names", text, "fixed|all");
    *all = text == "all";
    return true;
  }

  bool Lookup(LookupMode* out) {
    std::string text;
    if (!Take("lookup", &text)) return true;
    if (!ParseLookupMode(text, out)) return Fail("lookup", text, "direct|dlsym|procaddress|procaddress_v2");
    return true;
  }

  // True when every option was consumed.
  bool Done() {
    if (options_.empty()) return true;
    *error_ = "unknown option --" + options_.begin()->first;
    return false;
  }

 private:
  bool Take(const char* name, std::string* value) {
    auto it = options_.find(name);
    if (it == options_.end()) return false;
    *value = it->second;
    options_.erase(it);
    return true;
  }

  bool Missing(const char* name, bool required) {
    if (required) *error_ = std::string("option --") + name + " is required";
    return !required;
  }

  bool Fail(const char* name, const std::string& text, const std::string& expected) {
    *error_ = std::string("--") + name + " '" + text + "': expected " + expected;
    return false;
  }

  static std::string Number(double value) {
    std::string text = std::to_string(value);
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
    return text;
  }

  std::map<std::string, std::string> options_;
  std::string* error_;
};

bool ParseCommandOptions(OptionReader* reader, CommandLine* line) {
  switch (line->command) {
    case CommandName::kInfo:
    case CommandName::kAttributes:
      break;
    case CommandName::kSymbols:
      if (!reader->Names(&line->symbols.all_names)) return false;
      break;
    case CommandName::kAlloc:
      if (!reader->Size("bytes", true, &line->alloc.bytes) || !reader->Api(&line->alloc.api) ||
          !reader->Uint("count", 1, kMaxCount, &line->alloc.count) ||
          !reader->Uint("hold-ms", 0, kMaxHoldMs, &line->alloc.hold_ms)) {
        return false;
      }
      break;
    case CommandName::kFill:
      if (!reader->Api(&line->fill.api) || !reader->Size("chunk", false, &line->fill.chunk) ||
          !reader->Uint("hold-ms", 0, kMaxHoldMs, &line->fill.hold_ms)) {
        return false;
      }
      break;
    case CommandName::kSpin: {
      // --duty and --seconds are required: a default would hide a typo in a share measurement.
      if (!reader->Double("duty", true, 0, 100, &line->spin.duty_percent) ||
          !reader->Double("seconds", true, 0, kMaxSpinSeconds, &line->spin.seconds) ||
          !reader->Uint("kernel-us", 1, kMaxKernelUs, &line->spin.kernel_us) ||
          !reader->Uint("depth", 1, kMaxSpinDepth, &line->spin.depth) ||
          !reader->Flag("sync-each", &line->spin.sync_each) ||
          !reader->Uint("graph-kernels", 0, kMaxGraphKernels, &line->spin.graph_kernels) ||
          !reader->Uint("window-ms", 0, kMaxWindowMs, &line->spin.window_ms)) {
        return false;
      }
      // Graph launches need the graph entry points, looked up only then (driver_table.h).
      if (line->spin.graph_kernels > 0) line->session.entries = DriverEntrySet::kWithGraphs;
      break;
    }
  }
  return reader->Done();
}

bool ParseCommandName(const std::string& text, CommandName* out) {
  static const std::map<std::string, CommandName> kNames = {
      {"info", CommandName::kInfo}, {"alloc", CommandName::kAlloc},     {"fill", CommandName::kFill},
      {"spin", CommandName::kSpin}, {"symbols", CommandName::kSymbols}, {"attributes", CommandName::kAttributes},
  };
  auto it = kNames.find(text);
  if (it == kNames.end()) return false;
  *out = it->second;
  return true;
}

}  // namespace

const char* UsageText() {
  return "usage: fgpu-probe [--device N] [--lookup direct|dlsym|procaddress|procaddress_v2]\n"
         "                  [--cuda-version V] COMMAND [ARGS]\n"
         "\n"
         "Exercises a CUDA driver (the real libcuda.so.1 or fgpu's simulated one) through the\n"
         "driver API only, printing one JSON object per line on stdout.\n"
         "\n"
         "global options:\n"
         "  --device N          CUDA device ordinal (default 0)\n"
         "  --lookup MODE       how every driver entry point is obtained (default procaddress_v2)\n"
         "  --cuda-version V    cudaVersion passed to cuGetProcAddress (default 12000, minimum 11020;\n"
         "                      12000 for spin --graph-kernels)\n"
         "\n"
         "commands:\n"
         "  info                                  device, memory and NVML facts\n"
         "  alloc --bytes SIZE [--api API] [--count K] [--hold-ms T]\n"
         "                                        allocate K blocks, hold T ms, free them\n"
         "  fill [--api API] [--chunk SIZE] [--hold-ms T]\n"
         "                                        allocate chunks (default 256MiB) until the first failure\n"
         "  spin --duty PCT --seconds S [--kernel-us K] [--depth N] [--sync-each 0|1]\n"
         "       [--graph-kernels G] [--window-ms W]\n"
         "                                        launch K-us kernels (default 1000) at PCT% duty for S s,\n"
         "                                        at most N launches in flight (default 2, max 1024);\n"
         "                                        --sync-each 1: cuStreamSynchronize after every launch;\n"
         "                                        G >= 1: each launch is a CUDA graph of G chained kernels\n"
         "                                        (max 1024); W > 0: duty of every W-ms window (max 60000)\n"
         "  symbols [--names fixed|all]           what cuGetProcAddress returns for a fixed list of names,\n"
         "                                        or for every name fgpu declares (all)\n"
         "  attributes                            every device attribute fgpu declares\n"
         "\n"
         "API: mem_alloc (default), pitch, managed, vmm, async, pool, array, array3d, mipmapped, external\n"
         "SIZE: 4096, 4KiB, 512MiB, 1.5GiB, 1G (K/M/G/T are powers of 1024), 1GB (powers of 1000)\n"
         "exit status: 0 success, 1 CUDA error (an \"error\" line names the call), 2 bad usage\n";
}

ParseOutcome ParseCommandLine(const std::vector<std::string>& args, CommandLine* line, std::string* error) {
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") return ParseOutcome::kHelp;
  }
  *line = CommandLine{};
  size_t command_at = 0;
  while (command_at < args.size() && args[command_at].compare(0, 2, "--") == 0) {
    // A global option and, unless written --name=value, its value.
    command_at += args[command_at].find('=') == std::string::npos ? 2 : 1;
  }
  if (command_at >= args.size()) {
    *error = args.empty() ? "no command given" : "no command given after the global options";
    return ParseOutcome::kUsageError;
  }
  std::map<std::string, std::string> global_options;
  if (!ParseOptions(args, 0, command_at, &global_options, error)) return ParseOutcome::kUsageError;
  OptionReader globals(std::move(global_options), error);
  uint64_t device = 0;
  uint64_t cuda_version = line->session.cuda_version;
  if (!globals.Uint("device", 0, 1023, &device) || !globals.Lookup(&line->session.lookup) ||
      !globals.Uint("cuda-version", 1000, 1'000'000, &cuda_version) || !globals.Done()) {
    return ParseOutcome::kUsageError;
  }
  line->session.device = static_cast<int>(device);
  line->session.cuda_version = static_cast<int>(cuda_version);

  if (!ParseCommandName(args[command_at], &line->command)) {
    *error = "unknown command '" + args[command_at] + "'";
    return ParseOutcome::kUsageError;
  }
  std::map<std::string, std::string> command_options;
  if (!ParseOptions(args, command_at + 1, args.size(), &command_options, error)) return ParseOutcome::kUsageError;
  OptionReader reader(std::move(command_options), error);
  if (!ParseCommandOptions(&reader, line)) return ParseOutcome::kUsageError;

  // Checked once the command has chosen its entry points (the graph ones need 12.0).
  const bool uses_getter = line->session.lookup == LookupMode::kProcAddress ||
                           line->session.lookup == LookupMode::kProcAddressV2;
  const int minimum = MinimumCudaVersion(line->session.entries);
  if (uses_getter && line->session.cuda_version < minimum) {
    // Below this the driver hands out older ABIs (or nothing) for entry points we call.
    *error = "--cuda-version " + std::to_string(cuda_version) + " is older than " + std::to_string(minimum) +
             ", the first version with every entry point the probe calls" +
             (line->session.entries == DriverEntrySet::kWithGraphs ? " (with graphs)" : "");
    return ParseOutcome::kUsageError;
  }
  return ParseOutcome::kParsed;
}

}  // namespace fgpu::probe
