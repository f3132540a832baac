// The event log: one line per event, a level word, fields a reader (or a parser) can trust.
#include "agent/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace fgpu::agent {
namespace {

// Log's output while it lives, through a pipe.
class CapturedLog {
 public:
  CapturedLog() {
    EXPECT_EQ(pipe(fds_), 0);
    SetLogDescriptor(fds_[1]);
  }
  ~CapturedLog() {
    SetLogDescriptor(STDERR_FILENO);
    SetLogLevel(LogLevel::kInfo);
    close(fds_[0]);
    close(fds_[1]);
  }
  std::string Take() {
    SetLogDescriptor(STDERR_FILENO);
    close(fds_[1]);
    fds_[1] = -1;
    std::string text;
    char buffer[4096];
    for (ssize_t got; (got = read(fds_[0], buffer, sizeof(buffer))) > 0;) text.append(buffer, static_cast<size_t>(got));
    return text;
  }

 private:
  int fds_[2] = {-1, -1};
};

TEST(LogTest, ALineIsTheLevelTheEventAndItsFields) {
  EXPECT_EQ(FormatLogLine(LogLevel::kInfo, "create", {{"slice", "s7"}, {"memory", CompactBytes(uint64_t{1} << 30)}}),
            "fgpu agent: info create slice=s7 memory=1GiB");
  EXPECT_EQ(FormatLogLine(LogLevel::kWarn, "refuse", {{"reason", "no GPU has \"room\""}, {"uid", ""}}),
            "fgpu agent: warn refuse reason=\"no GPU has \\\"room\\\"\" uid=\"\"");
}

// A reason may quote a client's bytes: a newline must not start a forged line of its own, nor
// an '=' or a quote forge a field.
TEST(LogTest, ControlCharactersAndQuotesCannotForgeALineOrAField) {
  const std::string line =
      FormatLogLine(LogLevel::kWarn, "refuse", {{"reason", "unknown field \"x\nfgpu agent: info delete slice=s1\\"}});
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line, "fgpu agent: warn refuse reason=\"unknown field \\\"x\\x0afgpu agent: info delete slice=s1\\\\\"");
  EXPECT_EQ(FormatLogLine(LogLevel::kInfo, "e", {{"k", "a=b"}}), "fgpu agent: info e k=\"a=b\"");
}

TEST(LogTest, EventsBelowTheLevelAreDropped) {
  CapturedLog captured;
  SetLogLevel(LogLevel::kWarn);
  EXPECT_FALSE(LogEnabled(LogLevel::kInfo));
  Log(LogLevel::kInfo, "create", {{"slice", "s1"}});
  Log(LogLevel::kWarn, "evict", {{"slice", "s2"}});
  Log(LogLevel::kError, "account", {{"reason", "disk"}});
  EXPECT_EQ(captured.Take(), "fgpu agent: warn evict slice=s2\nfgpu agent: error account reason=disk\n");
}

TEST(LogTest, LevelsByName) {
  EXPECT_EQ(*ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("info"), LogLevel::kInfo);
  EXPECT_EQ(*ParseLogLevel("warning"), LogLevel::kWarn);
  EXPECT_EQ(*ParseLogLevel("error"), LogLevel::kError);
  Result<LogLevel> loud = ParseLogLevel("loud");
  ASSERT_FALSE(loud.ok());
  EXPECT_NE(loud.status().message().find("debug, info, warn or error"), std::string::npos);
}

}  // namespace
}  // namespace fgpu::agent
