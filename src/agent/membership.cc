#include "agent/membership.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fgpu::agent {
namespace {

// Deep enough for any launcher chain (srun → slurmstepd → task → shell → python → workers).
constexpr int kMaxAncestors = 64;

bool IsUnder(const std::string& path, const std::string& base) {
  return path == base || (path.size() > base.size() && path.compare(0, base.size(), base) == 0 && path[base.size()] == '/');
}

bool HasComponent(const std::string& path, const std::string& component) {
  std::size_t at = 0;
  while (at <= path.size()) {
    const std::size_t end = std::min(path.find('/', at), path.size());
    if (path.compare(at, end - at, component) == 0 && end - at == component.size()) return true;
    at = end + 1;
  }
  return false;
}

// The cgroup v2 mount point, from /proc/self/mountinfo ("... <mount point> ... - cgroup2 ...").
std::string CgroupV2Mount() {
  std::ifstream mounts("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mounts, line)) {
    const std::size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, device, root, mount_point;
    if (!(fields >> id >> parent >> device >> root >> mount_point)) continue;
    if (root != "/") continue;  // a bind of a subtree: paths in /proc/<pid>/cgroup would not match
    return mount_point;
  }
  return "";
}

bool MakeDirectory(const std::string& path) {
  return mkdir(path.c_str(), 0755) == 0 || errno == EEXIST;
}

}  // namespace

Membership::Membership(std::string cgroup_base, std::string cgroup_base_path)
    : cgroup_base_(std::move(cgroup_base)), cgroup_base_path_(std::move(cgroup_base_path)) {}

std::optional<std::pair<std::string, std::string>> Membership::CgroupBase(const std::string& instance) {
  const std::string mount = CgroupV2Mount();
  if (mount.empty()) return std::nullopt;
  // The agent's own cgroup as the kernel names it: the base goes beside the root, where the
  // agent (root) may create cgroups and move any process.
  const std::string relative = "/fgpu/" + instance;
  if (!MakeDirectory(mount + "/fgpu") || !MakeDirectory(mount + relative)) return std::nullopt;
  if (access((mount + relative + "/cgroup.procs").c_str(), W_OK) != 0) return std::nullopt;
  return std::make_pair(mount + relative, relative);
}

void Membership::Restore(const std::string& slice_id, std::vector<Member> members) {
  std::lock_guard<std::mutex> lock(mutex_);
  members_[slice_id] = std::move(members);
}

std::vector<pid_t> Membership::CgroupProcesses(const std::string& slice_id) const {
  std::vector<pid_t> pids;
  if (cgroup_base_.empty()) return pids;
  std::ifstream procs(cgroup_base_ + "/" + slice_id + "/cgroup.procs");
  for (long pid = 0; procs >> pid;) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

std::string Membership::CgroupPathOf(const std::string& slice_id) const {
  return cgroup_base_path_.empty() ? "" : cgroup_base_path_ + "/" + slice_id;
}

Status Membership::Join(const SliceRecord& slice, const ProcessFacts& process) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Member>& members = members_[slice.id];
    const Member member{process.pid, process.start_time};
    if (std::find(members.begin(), members.end(), member) == members.end()) members.push_back(member);
  }
  // A batch job's processes are in the batch system's cgroup, which accounts and contains them:
  // moving them out would break the batch system.
  if (cgroup_base_.empty() || !slice.labels.job.empty()) return Status::Ok();
  const std::string dir = cgroup_base_ + "/" + slice.id;
  if (!MakeDirectory(dir)) return Status::Unavailable("cannot create the cgroup " + dir + ": " + std::strerror(errno));
  std::ofstream procs(dir + "/cgroup.procs");
  procs << process.pid << std::flush;
  if (!procs) return Status::Unavailable("cannot move pid " + std::to_string(process.pid) + " into " + dir);
  return Status::Ok();
}

void Membership::Forget(const std::string& slice_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  members_.erase(slice_id);
  if (cgroup_base_.empty()) return;
  const std::string dir = cgroup_base_ + "/" + slice_id;
  if (rmdir(dir.c_str()) != 0 && errno != ENOENT) stale_cgroups_.push_back(dir);
}

std::vector<Member> Membership::Members(const std::string& slice_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = members_.find(slice_id);
  return found == members_.end() ? std::vector<Member>() : found->second;
}

void Membership::Prune() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [slice, members] : members_) {
    std::erase_if(members, [](const Member& member) {
      const std::optional<ProcessFacts> facts = ReadProcess(member.pid);
      return !facts || facts->start_time != member.start_time || facts->zombie;
    });
  }
  std::erase_if(stale_cgroups_, [](const std::string& dir) { return rmdir(dir.c_str()) == 0 || errno == ENOENT; });
  RemoveEmptyCgroups();
}

void Membership::RemoveEmptyCgroups() const {
  if (cgroup_base_.empty()) return;
  DIR* base = opendir(cgroup_base_.c_str());
  if (base == nullptr) return;
  while (const dirent* entry = readdir(base)) {
    // Slice cgroups are named by slice id; the kernel's files are not directories.
    if (entry->d_type != DT_DIR || entry->d_name[0] == '.') continue;
    rmdir((cgroup_base_ + "/" + entry->d_name).c_str());  // fails, harmlessly, while processes are in it
  }
  closedir(base);
}

void Membership::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  RemoveEmptyCgroups();
  if (cgroup_base_.empty() || rmdir(cgroup_base_.c_str()) != 0) return;
  rmdir(cgroup_base_.substr(0, cgroup_base_.rfind('/')).c_str());  // ".../fgpu", when no other agent uses it
}

bool Membership::InJobCgroup(const ProcessFacts& process, const SliceRecord& slice) const {
  const std::string& job = slice.labels.job;
  if (job.empty()) return false;
  const std::size_t dot = job.find('.');
  const std::string job_component = "job_" + job.substr(0, dot);
  // A step's slice holds that step's processes; "batch" is Slurm's batch step.
  const std::string step_component = dot == std::string::npos ? "" : "step_" + job.substr(dot + 1);
  return std::any_of(process.all_cgroups.begin(), process.all_cgroups.end(), [&](const std::string& path) {
    return HasComponent(path, job_component) && (step_component.empty() || HasComponent(path, step_component));
  });
}

bool Membership::InPodCgroup(const ProcessFacts& process, const SliceRecord& slice) const {
  const std::string& uid = slice.kube.pod_uid;
  if (uid.empty()) return false;
  std::string underscored = uid;
  std::replace(underscored.begin(), underscored.end(), '-', '_');
  const std::string cgroupfs = "pod" + uid;
  const std::string systemd = "-pod" + underscored + ".slice";
  return std::any_of(process.all_cgroups.begin(), process.all_cgroups.end(), [&](const std::string& path) {
    // Only the kubelet's own tree, at the root (only root makes cgroups there): a user with a
    // delegated subtree can name a cgroup anything below it.
    if (path.rfind("/kubepods/", 0) != 0 && path.rfind("/kubepods.slice/", 0) != 0) return false;
    std::size_t start = 0;
    while (start < path.size()) {
      const std::size_t end = std::min(path.find('/', start), path.size());
      const std::string_view component(path.data() + start, end - start);
      if (component == cgroupfs) return true;
      if (component.size() > systemd.size() && component.rfind("kubepods", 0) == 0 &&
          component.substr(component.size() - systemd.size()) == systemd) {
        return true;
      }
      start = end + 1;
    }
    return false;
  });
}

bool Membership::DescendsFromMember(const ProcessFacts& process, const std::string& slice_id) const {
  const std::vector<Member> members = Members(slice_id);
  if (members.empty()) return false;
  ProcessFacts current = process;
  for (int depth = 0; depth < kMaxAncestors; ++depth) {
    if (std::find(members.begin(), members.end(), Member{current.pid, current.start_time}) != members.end()) return true;
    if (current.ppid <= 1) return false;
    const std::optional<ProcessFacts> parent = ReadProcess(current.ppid);
    // A parent younger than its child is a reused pid: the chain is broken.
    if (!parent || parent->start_time > current.start_time) return false;
    current = *parent;
  }
  return false;
}

bool Membership::BelongsTo(const ProcessFacts& process, const SliceRecord& slice) const {
  if (process.pid <= 1 || process.zombie) return false;
  if (slice.owner_uid >= 0 && !process.RunsAs(static_cast<uid_t>(slice.owner_uid))) return false;
  if (!cgroup_base_path_.empty() && IsUnder(process.cgroup, CgroupPathOf(slice.id))) return true;
  return InJobCgroup(process, slice) || InPodCgroup(process, slice) || DescendsFromMember(process, slice.id);
}

std::vector<ProcessFacts> Membership::ProcessesOf(const SliceRecord& slice, const std::vector<pid_t>& candidates) const {
  std::vector<ProcessFacts> found;
  const auto consider = [&](pid_t pid) {
    if (std::any_of(found.begin(), found.end(), [&](const ProcessFacts& f) { return f.pid == pid; })) return;
    const std::optional<ProcessFacts> facts = ReadProcess(pid);
    if (facts && BelongsTo(*facts, slice)) found.push_back(*facts);
  };
  for (pid_t pid : candidates) consider(pid);
  if (DIR* proc = opendir("/proc")) {
    while (const dirent* entry = readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(entry->d_name, &end, 10);
      if (end != entry->d_name && *end == '\0' && pid > 1) consider(static_cast<pid_t>(pid));
    }
    closedir(proc);
  }
  return found;
}

}  // namespace fgpu::agent
