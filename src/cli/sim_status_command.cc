// fgpu sim status: the simulated devices as NVML would report them, read straight from
// the shared segment.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/sim_target.h"
#include "cli/status_report.h"

namespace fgpu::cli {

namespace {

// Attach() would create a missing segment; status looks first so that asking about the
// device leaves nothing behind in /dev/shm.
Result<bool> SegmentExists(const std::string& segment) {
  const int fd = shm_open(segment.c_str(), O_RDONLY, 0);
  if (fd >= 0) {
    close(fd);
    return true;
  }
  if (errno == ENOENT) return false;
  return Status::Unavailable("cannot open segment " + segment + ": " + std::strerror(errno));
}

StatusReport IdleReport(const SimTarget& target) {
  StatusReport report{target.segment, target.config_path, /*segment_exists=*/false, {}};
  for (size_t index = 0; index < target.config.devices.size(); ++index) {
    const sim::DeviceSpec& spec = target.config.devices[index];
    DeviceReport device;
    device.index = static_cast<int>(index);
    device.name = spec.name;
    device.uuid = spec.uuid;
    device.memory = {spec.total_bytes, 0, spec.total_bytes};
    report.devices.push_back(device);
  }
  return report;
}

Result<StatusReport> LiveReport(const SimTarget& target) {
  Result<std::unique_ptr<sim::SharedDevices>> attached =
      sim::SharedDevices::Attach(target.config, target.segment);
  if (!attached.ok()) return attached.status();
  sim::SharedDevices& devices = **attached;
  StatusReport report{target.segment, target.config_path, /*segment_exists=*/true, {}};
  for (int index = 0; index < devices.device_count(); ++index) {
    DeviceReport device;
    device.index = index;
    device.name = devices.spec(index).name;
    device.uuid = devices.spec(index).uuid;
    device.memory = devices.Memory(index);
    device.utilization_percent = devices.UtilizationPercent(index, devices.config().utilization_period_ns);
    device.processes = devices.Processes(index);
    report.devices.push_back(std::move(device));
  }
  return report;
}

}  // namespace

CLI::App* AddSimStatusFlags(CLI::App& sim, SimStatusOptions* options) {
  CLI::App* status =
      sim.add_subcommand("status", "Show the simulated devices: memory, utilization, processes");
  status->add_option("--config", options->config, "Simulated device configuration (JSON); default: one H100");
  status->add_option("--segment", options->segment, "Segment of the device state, e.g. /fgpu-sim-test");
  status->add_flag("--json", options->json, "Print one JSON document instead of a table");
  return status;
}

int RunSimStatus(const SimStatusOptions& options) {
  Result<SimTarget> target = ResolveSimTarget(options.config, options.segment);
  if (!target.ok()) {
    std::cerr << "fgpu sim status: " << target.status().message() << "\n";
    return kExitUsage;
  }
  Result<bool> exists = SegmentExists(target->segment);
  if (!exists.ok()) {
    std::cerr << "fgpu sim status: " << exists.status().message() << "\n";
    return kExitFailure;
  }
  Result<StatusReport> report = *exists ? LiveReport(*target) : Result<StatusReport>(IdleReport(*target));
  if (!report.ok()) {
    std::cerr << "fgpu sim status: segment " << target->segment << ": " << report.status().message() << "\n";
    if (report.status().code() == StatusCode::kInvalidArgument) {
      std::cerr << "fgpu sim status: pass the --config the programs on it use, or remove it with "
                   "`fgpu sim reset --segment "
                << target->segment << "`\n";
    }
    return kExitFailure;
  }
  if (options.json) {
    std::cout << StatusJson(*report).dump() << "\n";
  } else {
    std::cout << RenderStatusTable(*report);
  }
  return kExitOk;
}

}  // namespace fgpu::cli
