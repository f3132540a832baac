// Fuzzes the readers of a slice's two files (slice/slice_files.h, slice/slice.h): the agent's and
// `fgpu run`'s side (MapLimits, MapLedger, SliceAdmin::Open, Usage, Counters) and the hook's
// (Ledger::CountPassThrough, Ledger::Attach and the ledger operations after it). A workload may
// write anything into its ledger and truncate it; the limits are the creator's but may be damaged.
// Every reader must refuse or read, never crash, hang or trust a value it has not checked.
//
// Input: slice_input.h (the two files as leading bytes plus sizes, and what kind of file each
// is). The files go into a private directory under /dev/shm, rewritten for every input.
//
// Checked on every input:
// - A mapped limits file holds what MapLimits promises: 1..kMaxDevices devices, NUL-terminated
//   non-empty id and UUIDs, caps <= 1 PiB, shares 1..100, known modes and tiers; SliceAdmin's spec
//   is the same.
// - The readers agree: SliceAdmin::Open succeeds exactly when MapLimits does (the ledger being a
//   regular file); Usage() reads the ledger exactly when MapLedger accepts it, and says why when it
//   does not; CountPassThrough succeeds exactly when both map, and then counts one pass-through.
// - Usage() is consistent: one cap per device, one used and one charge per device, at most
//   kMaxProcesses processes, no counters without a ledger.
// - Ledger::Attach (when both files map) succeeds or finds no free slot, and then the ledger
//   works: the same Ledger on a second Attach, compute fields in range, a reserve that fits is
//   charged to this process and released to zero, a device is found by its own UUID.
//
// Attach never unmaps or frees what it attached (the hook keeps it for the life of the process),
// so it runs in a helper process (AttachHelper): a crash there (ASan, UBSan, a signal), a failed
// check or a hang (kAttachSeconds) aborts this process with the input saved. The helper's coverage
// does not reach libFuzzer; Usage() walks the same slots in this process.
#include <fcntl.h>
#include <poll.h>
#include <sanitizer/common_interface_defs.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "fuzz/slice_input.h"
#include "slice/layout.h"
#include "slice/slice.h"
#include "slice/slice_files.h"

namespace {

using fgpu::StatusCode;
using fgpu::fuzz::FileKind;
namespace slice = fgpu::slice;
namespace layout = fgpu::slice::layout;

constexpr int kAttachSeconds = 10;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "slice_files_fuzzer: %s %s\n", what, detail.c_str());
  std::abort();
}

void Expect(bool condition, const char* what, const std::string& detail = "") {
  if (!condition) Fail(what, detail);
}

class Scratch {
 public:
  Scratch() : root_("/dev/shm/fgpu-fuzz-slice-" + std::to_string(::getpid())), slice_(root_ + "/slice") {
    std::filesystem::create_directories(root_);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  const std::string& slice() const { return slice_; }
  std::string limits() const { return slice_ + "/" + slice::kLimitsFileName; }
  std::string ledger() const { return slice_ + "/" + slice::kLedgerFileName; }

  // A fresh slice directory holding the two files the input describes.
  void Write(const fgpu::fuzz::SliceInput& input) const {
    std::error_code ignored;
    std::filesystem::remove_all(slice_, ignored);
    Expect(::mkdir(slice_.c_str(), 0755) == 0, "mkdir", std::strerror(errno));
    Make(limits(), input.limits_kind, input.limits_bytes, input.limits_size, /*link_target=*/"");
    Make(ledger(), input.ledger_kind, input.ledger_bytes, input.ledger_size, limits());
  }

 private:
  static void Make(const std::string& path, FileKind kind, std::string_view lead, uint32_t size,
                   const std::string& link_target) {
    switch (kind) {
      case FileKind::kMissing:
        return;
      case FileKind::kFifo:
        Expect(::mkfifo(path.c_str(), 0600) == 0, "mkfifo", std::strerror(errno));
        return;
      case FileKind::kOtherLink:
        if (link_target.empty()) {
          Expect(::mkdir(path.c_str(), 0755) == 0, "mkdir", std::strerror(errno));
        } else {
          Expect(::symlink(link_target.c_str(), path.c_str()) == 0, "symlink", std::strerror(errno));
        }
        return;
      case FileKind::kRegular:
        break;
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    Expect(fd >= 0, "open", std::strerror(errno));
    const size_t written = std::min<size_t>(lead.size(), size);
    Expect(::write(fd, lead.data(), written) == static_cast<ssize_t>(written), "write", std::strerror(errno));
    // The zero tail is a hole: tmpfs allocates nothing for it.
    Expect(::ftruncate(fd, size) == 0, "ftruncate", std::strerror(errno));
    ::close(fd);
  }

  std::string root_;
  std::string slice_;
};

void CheckSpec(const slice::SliceSpec& spec) {
  Expect(!spec.id.empty() && spec.id.size() < slice::kIdBytes, "slice id length");
  Expect(!spec.devices.empty() && spec.devices.size() <= static_cast<size_t>(slice::kMaxDevices),
         "device count");
  for (const slice::DeviceLimit& device : spec.devices) {
    Expect(!device.uuid.empty() && device.uuid.size() < slice::kUuidBytes, "uuid length", device.uuid);
    Expect(device.memory_cap <= layout::kMaxBytes, "cap over 1 PiB");
    Expect(slice::ValidateCompute(device.compute_share, device.compute_mode, device.tier).ok(),
           "compute fields");
  }
}

bool SameSpec(const slice::SliceSpec& a, const slice::SliceSpec& b) {
  if (a.id != b.id || a.devices.size() != b.devices.size()) return false;
  for (size_t index = 0; index < a.devices.size(); ++index) {
    const slice::DeviceLimit& x = a.devices[index];
    const slice::DeviceLimit& y = b.devices[index];
    if (x.uuid != y.uuid || x.memory_cap != y.memory_cap || x.compute_share != y.compute_share ||
        x.compute_mode != y.compute_mode || x.tier != y.tier)
      return false;
  }
  return true;
}

void CheckUsage(const slice::UsageSnapshot& usage, const slice::SliceSpec& spec, bool ledger_maps) {
  const size_t devices = spec.devices.size();
  Expect(usage.caps.size() == devices, "one cap per device");
  for (size_t device = 0; device < devices; ++device)
    Expect(usage.caps[device] == spec.devices[device].memory_cap, "cap");
  if (usage.used.empty()) {
    Expect(!ledger_maps, "Usage() refused a ledger MapLedger accepts:", usage.problem);
    Expect(!usage.problem.empty(), "Usage() read nothing and says not why");
    Expect(usage.counters == slice::LedgerCounters{} && usage.processes.empty(), "counters without a ledger");
    return;
  }
  Expect(ledger_maps, "Usage() read a ledger MapLedger refuses");
  Expect(usage.problem.empty(), "a problem with a ledger that was read", usage.problem);
  Expect(usage.used.size() == devices, "one used per device");
  Expect(usage.processes.size() <= static_cast<size_t>(slice::kMaxProcesses), "too many processes");
  for (const slice::ProcessUsage& process : usage.processes) {
    Expect(process.charged.size() == devices, "one charge per device");
  }
}

// The hook's side, run in the helper (below). Returns on success; a failed check ends the helper.
void AttachAndUse(const std::string& dir, uint32_t device_count) {
  const auto check = [](bool condition, const char* what) {
    if (condition) return;
    std::fprintf(stderr, "slice_files_fuzzer (attach helper): %s\n", what);
    std::_Exit(3);
  };
  const fgpu::Result<slice::Ledger*> attached = slice::Ledger::Attach(dir.c_str());
  if (!attached.ok()) {
    check(attached.status().code() == StatusCode::kResourceExhausted, "Attach refused files that map");
    return;
  }
  slice::Ledger* ledger = *attached;
  const fgpu::Result<slice::Ledger*> again = slice::Ledger::Attach(dir.c_str());
  check(again.ok() && *again == ledger, "a second Attach gave another Ledger");
  check(ledger->device_count() == static_cast<int>(device_count), "device_count");
  for (int device = 0; device < ledger->device_count(); ++device) {
    check(ledger->FindDevice(ledger->device_uuid(device)) <= device, "a device not found by its own UUID");
    const uint32_t share = ledger->ComputeShare(device);
    check(share >= 1 && share <= 100, "compute share out of range");
    check(static_cast<uint8_t>(ledger->GetComputeMode(device)) <= layout::kMaxComputeMode, "mode");
    check(static_cast<uint8_t>(ledger->GetTier(device)) <= layout::kMaxTier, "tier");
    check(ledger->ChargedByThisProcess(device) == 0, "a new slot holds a charge");
    if (ledger->Used(device) < ledger->Cap(device) && ledger->Reserve(device, 1)) {
      check(ledger->ChargedByThisProcess(device) == 1, "a reserve not charged to this process");
      check(ledger->Used(device) >= 1, "a reserve not in the device total");
      ledger->Release(device, 1);
      check(ledger->ChargedByThisProcess(device) == 0, "a release not taken from this process");
    }
  }
  ledger->ReapDeadProcesses();
  ledger->CountOomRefusal();
  (void)ledger->Counters();
  (void)ledger->LimitsGeneration();
}

// A process that attaches slices for this one. Attach keeps what it attached for the life of the
// process, so that cannot happen here; a fork per input costs ten times the rest of the input, so
// one helper serves kHelperUses inputs and is then replaced (its mappings and slots go with it).
// Each request is a line "<device count> <dir>"; the answer is one byte once the checks passed.
// A crash, a failed check (the helper exits) or no answer within kAttachSeconds aborts this
// process, and libFuzzer saves the input.
class AttachHelper {
 public:
  ~AttachHelper() { Stop(); }

  void Check(const std::string& dir, uint32_t device_count) {
    if (pid_ < 0 || uses_ == kHelperUses) Start();
    ++uses_;
    const std::string request = std::to_string(device_count) + " " + dir + "\n";
    // A helper that died leaves EPIPE here (SIGPIPE is ignored) and EOF below, which reports it.
    (void)!::write(to_helper_, request.data(), request.size());
    pollfd ready{from_helper_, POLLIN, 0};
    int polled = 0;
    do {
      polled = ::poll(&ready, 1, kAttachSeconds * 1000);
    } while (polled < 0 && errno == EINTR);
    if (polled == 0) {
      ::kill(pid_, SIGKILL);
      Fail("Ledger::Attach or an operation after it hung for", std::to_string(kAttachSeconds) + " s");
    }
    char answer = 0;
    if (::read(from_helper_, &answer, 1) == 1) return;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    if (WIFSIGNALED(status)) Fail("the attach helper died of signal", std::to_string(WTERMSIG(status)));
    Fail("the attach helper failed (its report is above); exit", std::to_string(WEXITSTATUS(status)));
  }

 private:
  static constexpr int kHelperUses = 256;

  void Start() {
    Stop();
    std::signal(SIGPIPE, SIG_IGN);
    int to[2];
    int from[2];
    Expect(::pipe2(to, O_CLOEXEC) == 0 && ::pipe2(from, O_CLOEXEC) == 0, "pipe2", std::strerror(errno));
    std::fflush(nullptr);
    pid_ = ::fork();
    Expect(pid_ >= 0, "fork", std::strerror(errno));
    if (pid_ == 0) {
      ::close(to[1]);
      ::close(from[0]);
      Serve(to[0], from[1]);
    }
    ::close(to[0]);
    ::close(from[1]);
    to_helper_ = to[1];
    from_helper_ = from[0];
    uses_ = 0;
  }

  void Stop() {
    if (pid_ < 0) return;
    ::close(to_helper_);  // EOF: the helper exits
    ::close(from_helper_);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  [[noreturn]] static void Serve(int requests, int answers) {
    // libFuzzer's death callback would save the input it had when this process was forked, not
    // the one that crashed it: the parent saves the right one.
    __sanitizer_set_death_callback(nullptr);
    for (int signal : {SIGALRM, SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGXFSZ}) std::signal(signal, SIG_DFL);
    std::string line;
    char c = 0;
    while (::read(requests, &c, 1) == 1) {
      if (c != '\n') {
        line += c;
        continue;
      }
      const size_t space = line.find(' ');
      AttachAndUse(line.substr(space + 1), static_cast<uint32_t>(std::stoul(line.substr(0, space))));
      line.clear();
      if (::write(answers, "k", 1) != 1) break;
    }
    std::_Exit(0);
  }

  pid_t pid_ = -1;
  int to_helper_ = -1;
  int from_helper_ = -1;
  int uses_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Scratch scratch;
  const fgpu::fuzz::SliceInput input =
      fgpu::fuzz::DecodeSliceInput(std::string_view(reinterpret_cast<const char*>(data), size));
  scratch.Write(input);
  const bool regular = input.limits_kind == FileKind::kRegular && input.ledger_kind == FileKind::kRegular;

  // The hook's view: exactly the calls Attach makes before it touches the slots.
  uint32_t device_count = 0;
  bool limits_map = false;
  bool ledger_maps = false;
  slice::SliceSpec spec;
  {
    const fgpu::Result<slice::MappedFile> limits =
        slice::MapLimits(scratch.limits(), /*writable=*/false, /*keep_fd=*/false);
    if (limits.ok()) {
      limits_map = true;
      spec = slice::SpecFromLimits(*limits);
      CheckSpec(spec);
      device_count = static_cast<uint32_t>(spec.devices.size());
      const fgpu::Result<slice::MappedFile> ledger =
          slice::MapLedger(scratch.ledger(), device_count, /*keep_fd=*/false);
      ledger_maps = ledger.ok();
      if (!ledger.ok()) Expect(!ledger.status().message().empty(), "a refusal without a message");
    } else {
      Expect(limits.status().message().find(scratch.limits()) != std::string::npos,
             "an error that names no file:", limits.status().message());
    }
  }

  // The admin's view.
  fgpu::Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(scratch.slice());
  if (regular)
    Expect(admin.ok() == limits_map, "SliceAdmin::Open and MapLimits disagree:", admin.status().message());
  fgpu::Result<slice::LedgerCounters> before = fgpu::Status::NotFound("no admin");
  if (admin.ok()) {
    Expect(SameSpec(admin->spec(), spec), "SliceAdmin's spec is not the limits file's");
    const slice::UsageSnapshot usage = admin->Usage();
    if (input.ledger_kind == FileKind::kRegular) CheckUsage(usage, spec, ledger_maps);
    before = admin->Counters();
    Expect(before.ok() == !usage.used.empty(), "Counters() and Usage() disagree");
    if (before.ok()) Expect(*before == usage.counters, "Counters() and Usage() read different counters");
  }

  const bool passed = slice::Ledger::CountPassThrough(scratch.slice().c_str());
  if (regular) Expect(passed == (limits_map && ledger_maps), "CountPassThrough and the mappings disagree");
  if (passed && before.ok()) {
    const fgpu::Result<slice::LedgerCounters> after = admin->Counters();
    Expect(after.ok() && after->pass_through == before->pass_through + 1,
           "CountPassThrough counted no pass-through");
  }

  static AttachHelper helper;
  if (limits_map && ledger_maps) helper.Check(scratch.slice(), device_count);
  return 0;
}
