#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include "api/agent_client.h"
#include "api/codec.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_agent.h"

namespace fgpu::cli {
namespace {

// "24h", "30m", "7d", "90s", "all", or Unix seconds → Unix milliseconds.
Result<int64_t> SinceMs(const std::string& text) {
  if (text == "all") return int64_t{0};
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::size_t used = 0;
  long long value = -1;
  try {
    value = std::stoll(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || value < 0) {
    return Status::InvalidArgument("--since wants 24h, 30m, 7d, 90s, all, or Unix seconds; got '" + text + "'");
  }
  const std::string unit = text.substr(used);
  if (unit.empty()) return static_cast<int64_t>(value) * 1000;
  const int64_t scale = unit == "s" ? 1000 : unit == "m" ? 60'000 : unit == "h" ? 3'600'000 : unit == "d" ? 86'400'000 : 0;
  if (scale == 0) return Status::InvalidArgument("unknown unit '" + unit + "' in --since (s, m, h, d)");
  return now_ms - static_cast<int64_t>(value) * scale;
}

std::string Fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

}  // namespace

CLI::App* AddReportFlags(CLI::App& root, ReportOptions* options) {
  CLI::App* report = root.add_subcommand("report", "Chargeback: usage per tenant, slice, account, user or job, from the agent's records");
  report->add_option("--since", options->since, "24h, 30m, 7d, all, or Unix seconds")->capture_default_str();
  report->add_option("--by", options->by, "tenant, slice, or a batch job's account, user or job (Slurm)")
      ->check(CLI::IsMember({"tenant", "slice", "account", "user", "job"}))
      ->capture_default_str();
  report->add_option("--format", options->format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  report->add_option("--agent", options->agent, kAgentFlagHelp);
  return report;
}

int RunReport(const ReportOptions& options) {
  Result<int64_t> since = SinceMs(options.since);
  if (!since.ok()) {
    std::cerr << "fgpu report: " << since.status().message() << "\n";
    return kExitUsage;
  }
  api::UsageQuery query;
  query.since_unix_ms = *since;
  query.by = options.by;
  Result<net::Endpoint> agent = RunningAgent(options.agent);
  // Summing a long history may take the agent a while.
  Result<std::vector<api::UsageTotal>> rows = agent.ok() ? ReadingClient(*agent, 30000).Usage(query)
                                                         : Result<std::vector<api::UsageTotal>>(agent.status());
  if (!rows.ok()) {
    std::cerr << "fgpu report: " << rows.status().message() << "\n";
    return ExitCodeOf(rows.status());
  }
  if (options.format == "json") {
    std::cout << api::ToJson(*rows).dump(2) << "\n";
    return kExitOk;
  }
  const bool csv = options.format == "csv";
  std::cout << (csv ? options.by + ",reserved_gpu_hours,memory_gib_hours,busy_gpu_hours,records\n"
                    : options.by + "\tRESERVED GPU-h\tMEMORY GiB-h\tBUSY GPU-h\tRECORDS\n");
  for (const api::UsageTotal& row : *rows) {
    const std::string separator = csv ? "," : "\t";
    // Slices made without a batch job have no account, user or job.
    std::cout << (row.key.empty() && !csv ? "(none)" : row.key) << separator
              << Fixed(row.reserved_gpu_seconds / 3600, 4) << separator << Fixed(row.memory_gib_hours, 4) << separator
              << Fixed(row.busy_gpu_seconds / 3600, 4) << separator << row.records << "\n";
  }
  return kExitOk;
}

}  // namespace fgpu::cli
