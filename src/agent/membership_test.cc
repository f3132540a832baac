// Membership and exact signals: what makes a process a slice's, and that nothing else is signalled.
#include "agent/membership.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "agent/processes.h"

namespace fgpu::agent {
namespace {

// A child that waits to be killed; with `uid`, it first becomes that user.
pid_t Sleeper(uid_t uid = getuid()) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (uid != getuid() && (setgid(uid) != 0 || setuid(uid) != 0)) _exit(1);
    for (;;) pause();
  }
  // Until the child has become who it will be, /proc shows the parent's credentials.
  for (int i = 0; i < 200; ++i) {
    const std::optional<ProcessFacts> facts = ReadProcess(pid);
    if (facts && facts->real_uid == uid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pid;
}

void Reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

SliceRecord Slice(const std::string& id, int64_t owner_uid) {
  SliceRecord slice;
  slice.id = id;
  slice.owner_uid = owner_uid;
  return slice;
}

TEST(ProcessesTest, FactsOfThisProcess) {
  const std::optional<ProcessFacts> self = ReadProcess(getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->real_uid, getuid());
  EXPECT_EQ(self->ppid, getppid());
  EXPECT_GT(self->start_time, 0u);
  EXPECT_FALSE(self->all_cgroups.empty());
  EXPECT_FALSE(ReadProcess(0).has_value());
  EXPECT_FALSE(ReadProcess(-1).has_value());
}

TEST(ProcessesTest, SignalExactlyReachesTheRecordedProcessOnly) {
  EXPECT_FALSE(SignalExactly(1, ReadProcess(1) ? ReadProcess(1)->start_time : 1, 0)) << "never init";
  EXPECT_FALSE(SignalExactly(0, 1, SIGTERM));
  EXPECT_FALSE(SignalExactly(-1, 1, SIGTERM)) << "never every process";
  const pid_t child = Sleeper();
  const uint64_t start = ReadProcess(child)->start_time;
  EXPECT_FALSE(SignalExactly(child, start + 1, SIGKILL)) << "another start time: a reused pid";
  EXPECT_EQ(kill(child, 0), 0) << "still alive";
  EXPECT_TRUE(SignalExactly(child, start, SIGKILL));
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_FALSE(SignalExactly(child, start, SIGKILL)) << "gone";
}

TEST(MembershipTest, AJoinedProcessAndItsDescendantsBelongNobodyElse) {
  Membership membership("", "");
  const SliceRecord slice = Slice("s1", getuid());
  const std::optional<ProcessFacts> self = ReadProcess(getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_FALSE(membership.BelongsTo(*self, slice));
  const pid_t stranger = Sleeper();
  ASSERT_TRUE(membership.Join(slice, *self).ok());  // as fgpu run joins, then starts its workload
  const pid_t child = Sleeper();
  EXPECT_TRUE(membership.BelongsTo(*self, slice));
  EXPECT_TRUE(membership.BelongsTo(*ReadProcess(child), slice)) << "a child of a member";
  EXPECT_TRUE(membership.BelongsTo(*ReadProcess(stranger), slice)) << "also a child of this (member) process";
  EXPECT_FALSE(membership.BelongsTo(*ReadProcess(getppid()), slice)) << "the member's parent is not one";
  EXPECT_FALSE(membership.BelongsTo(*self, Slice("s2", getuid()))) << "a member of s1 only";
  const std::vector<ProcessFacts> members = membership.ProcessesOf(slice, {1, 0, -5});
  EXPECT_EQ(members.size(), 3u);
  for (const ProcessFacts& member : members) EXPECT_GT(member.pid, 1);
  membership.Forget(slice.id);
  EXPECT_FALSE(membership.BelongsTo(*ReadProcess(child), slice));
  Reap(child);
  Reap(stranger);
}

TEST(MembershipTest, AnotherUsersProcessNeverBelongs) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to start a process as another user";
  Membership membership("", "");
  const pid_t other = Sleeper(65534);
  const std::optional<ProcessFacts> facts = ReadProcess(other);
  ASSERT_TRUE(facts.has_value());
  ASSERT_EQ(facts->real_uid, 65534u);
  const SliceRecord roots = Slice("s1", 0);
  ASSERT_TRUE(membership.Join(roots, *facts).ok());  // even recorded by mistake
  EXPECT_FALSE(membership.BelongsTo(*facts, roots)) << "it runs as another user than the slice's";
  EXPECT_TRUE(membership.BelongsTo(*facts, Slice("s1", 65534)));
  Reap(other);
}

TEST(MembershipTest, ABatchJobsCgroupHoldsItsSteps) {
  Membership membership("", "");
  SliceRecord slice = Slice("s1", getuid());
  ProcessFacts task = *ReadProcess(getpid());
  task.all_cgroups = {"/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0"};
  slice.labels.job = "1234.0";
  EXPECT_TRUE(membership.BelongsTo(task, slice));
  slice.labels.job = "1234";  // the job's slice: every step
  EXPECT_TRUE(membership.BelongsTo(task, slice));
  slice.labels.job = "1234.1";
  EXPECT_FALSE(membership.BelongsTo(task, slice)) << "another step";
  slice.labels.job = "123";
  EXPECT_FALSE(membership.BelongsTo(task, slice)) << "a component, not a prefix";
  task.all_cgroups = {"/slurm/uid_0/job_1234/step_batch"};  // cgroup v1 layout
  slice.labels.job = "1234.batch";
  EXPECT_TRUE(membership.BelongsTo(task, slice));
}

TEST(MembershipTest, APodsCgroupHoldsItsContainersWithEitherCgroupDriver) {
  Membership membership("", "");
  SliceRecord slice = Slice("s1", getuid());
  ProcessFacts container = *ReadProcess(getpid());
  const std::string uid = "0b5e1c7a-1111-2222-3333-444455556666";
  container.all_cgroups = {"/kubepods/burstable/pod" + uid + "/cri-containerd-abc"};  // cgroupfs
  EXPECT_FALSE(membership.BelongsTo(container, slice)) << "no pod named: not a member";
  slice.kube.pod_uid = uid;
  EXPECT_TRUE(membership.BelongsTo(container, slice));
  container.all_cgroups = {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0b5e1c7a_1111_2222_3333_"
                           "444455556666.slice/cri-containerd-abc.scope"};  // systemd
  EXPECT_TRUE(membership.BelongsTo(container, slice));
  container.all_cgroups = {"/kubepods.slice/kubepods-pod0b5e1c7a_1111_2222_3333_444455556666.slice/x.scope"};
  EXPECT_TRUE(membership.BelongsTo(container, slice)) << "a Guaranteed pod";
  container.all_cgroups = {"/kubepods/burstable/pod0b5e1c7a-1111-2222-3333-444455556667/c"};
  EXPECT_FALSE(membership.BelongsTo(container, slice)) << "another pod";
  container.all_cgroups = {"/user.slice/user-1000.slice/user@1000.service/kubepods.slice/"
                           "kubepods-pod0b5e1c7a_1111_2222_3333_444455556666.slice"};
  EXPECT_FALSE(membership.BelongsTo(container, slice)) << "a user's delegated subtree, not the kubelet's root";
  container.all_cgroups = {"/kubepods/burstable/pod" + uid + "x/c"};
  EXPECT_FALSE(membership.BelongsTo(container, slice)) << "a component, not a prefix";
}

TEST(MembershipTest, TheSlicesCgroupHoldsAProcessThatLeftTheTree) {
  const auto base = Membership::CgroupBase("membership-test-" + std::to_string(getpid()));
  if (!base) GTEST_SKIP() << "no writable cgroup v2 hierarchy";
  Membership membership(base->first, base->second);
  const SliceRecord slice = Slice("s1", getuid());
  // A daemon: a grandchild whose parent exits, so it is reparented out of any joined tree.
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t middle = fork();
  if (middle == 0) {
    const pid_t daemon = fork();
    if (daemon == 0) {
      for (;;) pause();
    }
    (void)!write(pipe_fds[1], &daemon, sizeof(daemon));
    _exit(0);
  }
  // The middle process joins first (as a workload would), then its child is born in the cgroup.
  pid_t daemon = 0;
  ASSERT_EQ(read(pipe_fds[0], &daemon, sizeof(daemon)), static_cast<ssize_t>(sizeof(daemon)));
  waitpid(middle, nullptr, 0);
  std::optional<ProcessFacts> facts = ReadProcess(daemon);
  ASSERT_TRUE(facts.has_value());
  EXPECT_FALSE(membership.BelongsTo(*facts, slice)) << "not joined, not in the cgroup";
  ASSERT_TRUE(membership.Join(slice, *facts).ok());
  facts = ReadProcess(daemon);
  EXPECT_EQ(facts->cgroup, membership.CgroupPathOf(slice.id));
  Membership after_restart(base->first, base->second);  // no joined records: the cgroup alone
  EXPECT_TRUE(after_restart.BelongsTo(*facts, slice));
  EXPECT_EQ(after_restart.CgroupProcesses(slice.id), std::vector<pid_t>{daemon});
  kill(daemon, SIGKILL);  // not our child: its new parent reaps it
  for (int i = 0; i < 400 && !membership.CgroupProcesses(slice.id).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  membership.Forget(slice.id);
  // An exited process leaves its cgroup only once its new parent has reaped it: Prune retries.
  for (int i = 0; i < 400 && std::filesystem::exists(base->first + "/" + slice.id); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    membership.Prune();
  }
  EXPECT_FALSE(std::filesystem::exists(base->first + "/" + slice.id));
  rmdir(base->first.c_str());
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

}  // namespace
}  // namespace fgpu::agent
