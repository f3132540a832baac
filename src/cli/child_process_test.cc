#include "cli/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

namespace fgpu::cli {
namespace {

using std::chrono::milliseconds;

ChildProcess StartShell(const std::string& script) {
  Result<ChildProcess> child = ChildProcess::Spawn({"/bin/sh", "-c", script});
  EXPECT_TRUE(child.ok()) << child.status().message();
  return std::move(child).value();
}

std::vector<std::string> ReadAll(ChildProcess& child) {
  std::vector<std::string> lines;
  while (true) {
    Result<std::optional<std::string>> line = child.ReadLine(DeadlineIn(milliseconds(10'000)));
    EXPECT_TRUE(line.ok()) << line.status().message();
    if (!line.ok() || !line->has_value()) return lines;
    lines.push_back(**line);
  }
}

TEST(ChildProcessTest, ReadsLinesIncludingAnUnterminatedLastOne) {
  ChildProcess child = StartShell("echo first; echo; printf 'second\\nlast'");
  EXPECT_EQ(ReadAll(child), (std::vector<std::string>{"first", "", "second", "last"}));
  Result<int> status = child.Wait(DeadlineIn(milliseconds(10'000)));
  ASSERT_TRUE(status.ok()) << status.status().message();
  EXPECT_EQ(*status, 0);
}

TEST(ChildProcessTest, ReportsExitStatusAndSignalsLikeAShell) {
  ChildProcess exits = StartShell("exit 7");
  EXPECT_EQ(*exits.Wait(DeadlineIn(milliseconds(10'000))), 7);
  ChildProcess killed = StartShell("kill -KILL $$");
  EXPECT_EQ(*killed.Wait(DeadlineIn(milliseconds(10'000))), 128 + SIGKILL);
}

TEST(ChildProcessTest, PidStaysKnownAfterWait) {
  ChildProcess child = StartShell("exit 0");
  const pid_t pid = child.pid();
  EXPECT_GT(pid, 0);
  ASSERT_TRUE(child.Wait(DeadlineIn(milliseconds(10'000))).ok());
  EXPECT_EQ(child.pid(), pid);
  EXPECT_FALSE(child.Wait(DeadlineIn(milliseconds(10))).ok());
}

TEST(ChildProcessTest, ReadLineGivesUpAtTheDeadline) {
  ChildProcess child = StartShell("exec sleep 30");
  Result<std::optional<std::string>> line = child.ReadLine(DeadlineIn(milliseconds(100)));
  ASSERT_FALSE(line.ok());
  EXPECT_EQ(line.status().code(), StatusCode::kUnavailable);
}

TEST(ChildProcessTest, WaitKillsAChildThatOutlivesTheDeadline) {
  ChildProcess child = StartShell("exec sleep 30");
  const auto started = std::chrono::steady_clock::now();
  Result<int> status = child.Wait(DeadlineIn(milliseconds(100)));
  EXPECT_FALSE(status.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_NE(kill(child.pid(), 0), 0) << "the child should be gone";
}

TEST(ChildProcessTest, DestroyingARunningChildKillsIt) {
  pid_t pid = 0;
  {
    ChildProcess child = StartShell("exec sleep 30");
    pid = child.pid();
  }
  EXPECT_NE(kill(pid, 0), 0) << "the child should have been killed and reaped";
}

TEST(ChildProcessTest, SiblingsDoNotKeepEachOthersOutputOpen) {
  // Were the first child's write end still open anywhere but in the first child (our
  // process, the second child), its output would never end while the second sleeps.
  ChildProcess first = StartShell("echo done");
  ChildProcess second = StartShell("exec sleep 30");
  EXPECT_EQ(ReadAll(first), (std::vector<std::string>{"done"}));
}

TEST(ChildProcessTest, MissingProgramIsUnavailable) {
  Result<ChildProcess> child = ChildProcess::Spawn({"/nonexistent/program"});
  ASSERT_FALSE(child.ok());
  EXPECT_NE(child.status().message().find("/nonexistent/program"), std::string::npos);
  EXPECT_FALSE(ChildProcess::Spawn({}).ok());
}

}  // namespace
}  // namespace fgpu::cli
