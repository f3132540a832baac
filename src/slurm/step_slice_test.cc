#include "slurm/step_slice.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "net/http_server.h"

namespace fgpu::slurm {
namespace {

using nlohmann::json;

SliceOptions Memory(const char* size) {
  SliceOptions options;
  EXPECT_TRUE(SetMemory(size, options).ok());
  return options;
}

StepFacts Step(std::optional<std::string> step_gpus) {
  return {.identity = {.job_id = 12, .step_id = 0, .user = "alice", .account = "physics"},
          .gpus = {.step_gpus = std::move(step_gpus), .job_gpus = std::nullopt, .cuda_visible_devices = std::nullopt}};
}

// An agent that answers every call with `status` and `body`, remembering what it was asked.
struct FakeAgent {
  int status = 201;
  std::string body;
  std::vector<std::string> calls;

  AgentCall Call() {
    return [this](const std::string& method, const std::string& target, const std::string& request) {
      calls.push_back(method + " " + target + " " + request);
      net::HttpResponse response;
      response.status = status;
      response.body = body;
      return Result<net::HttpResponse>(response);
    };
  }
};

TEST(StepSlice, PlanNamesTheStepTheGpuAndTheSize) {
  Result<StepPlan> plan = PlanStep(Memory("30GiB"), Step("1"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->label, "12.0");
  EXPECT_EQ(plan->gpu, "1");
  EXPECT_EQ(plan->summary, "30 GiB on GPU 1");
  EXPECT_EQ(json::parse(plan->body)["job"], "12.0");
}

TEST(StepSlice, PlanRefusesAStepWithoutOneGpu) {
  Result<StepPlan> none = PlanStep(Memory("1GiB"), Step(std::nullopt));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message().rfind("step 12.0: this step has no GPU from Slurm", 0), 0u)
      << none.status().message();
  EXPECT_NE(PlanStep(Memory("1GiB"), Step("0,1")).status().message().find("2 GPUs"), std::string::npos);
  SliceOptions tier_only;
  ASSERT_TRUE(SetTier("batch", tier_only).ok());
  EXPECT_NE(PlanStep(tier_only, Step("0")).status().message().find("needs --gpu-memory"), std::string::npos);
}

TEST(StepSlice, AcquireReturnsTheAgentsSlice) {
  FakeAgent agent{.status = 201, .body = R"({"id":"s1","gpu":"GPU-x","env":{"FGPU_SLICE":"/d/s1"}})", .calls = {}};
  Result<GrantedSlice> slice = AcquireSlice(*PlanStep(Memory("1GiB"), Step("0")), agent.Call(), "/run/a.sock");
  ASSERT_TRUE(slice.ok()) << slice.status().message();
  EXPECT_EQ(slice->id, "s1");
  ASSERT_EQ(agent.calls.size(), 1u);
  EXPECT_EQ(agent.calls[0].rfind("POST /v1/slices {", 0), 0u);
}

TEST(StepSlice, RefusalQuotesTheAgent) {
  FakeAgent agent{.status = 409, .body = R"({"error":"GPU 0 has 20 GiB free"})", .calls = {}};
  Result<GrantedSlice> slice = AcquireSlice(*PlanStep(Memory("30GiB"), Step("0")), agent.Call(), "/run/a.sock");
  ASSERT_FALSE(slice.ok());
  EXPECT_EQ(slice.status().message(),
            "step 12.0 was refused a slice of 30 GiB on GPU 0 by the node's fgpu agent: GPU 0 has 20 GiB free");
}

TEST(StepSlice, ASliceWithoutEnvIsGivenBack) {
  FakeAgent agent{.status = 201, .body = R"({"id":"s9","gpu":"GPU-x"})", .calls = {}};
  Result<GrantedSlice> slice = AcquireSlice(*PlanStep(Memory("1GiB"), Step("0")), agent.Call(), "/run/a.sock");
  ASSERT_FALSE(slice.ok());
  ASSERT_EQ(agent.calls.size(), 2u);
  EXPECT_EQ(agent.calls[1], "DELETE /v1/slices/s9 ");
}

TEST(StepSlice, ReleaseAcceptsGoneSlices) {
  FakeAgent agent{.status = 204, .body = "", .calls = {}};
  EXPECT_TRUE(ReleaseSlice("s1", agent.Call()).ok());
  agent.status = 404;
  EXPECT_TRUE(ReleaseSlice("s1", agent.Call()).ok());
  agent.status = 500;
  EXPECT_FALSE(ReleaseSlice("s1", agent.Call()).ok());
}

// The batch step's marker is honoured only by the same job on the same node.
TEST(StepSlice, AJobsStepsOnTheBatchNodeFindTheBatchSlice) {
  const std::string marker = JobSliceMarker(12, "node2", "s7");
  EXPECT_EQ(marker, "12@node2@s7");
  EXPECT_EQ(JobSliceOf(marker, 12, "node2"), "s7");
  EXPECT_EQ(JobSliceOf(marker, 13, "node2"), "") << "another job's marker";
  EXPECT_EQ(JobSliceOf(marker, 1, "node2"), "") << "a job id that is a prefix of another";
  EXPECT_EQ(JobSliceOf(marker, 12, "node3"), "") << "a step on another node gets its own slice";
  EXPECT_EQ(JobSliceOf(marker, 12, "node"), "");
  EXPECT_EQ(JobSliceOf("12@node2@", 12, "node2"), "");
  EXPECT_EQ(JobSliceOf("12@node2@../x", 12, "node2"), "") << "never a path";
}

TEST(StepSlice, AdoptReadsTheSliceAndAGoneSliceIsNotFound) {
  const StepIdentity step{.job_id = 12, .step_id = 0, .uid = 1001, .user = "alice", .account = ""};
  FakeAgent agent{.status = 200,
                  .body = R"({"id":"s7","gpu":"GPU-1","job":"12.batch","owner_uid":1001,)"
                          R"("env":{"FGPU_SLICE":"/d/s7","CUDA_VISIBLE_DEVICES":"GPU-1"}})",
                  .calls = {}};
  Result<GrantedSlice> slice = AdoptSlice("s7", step, agent.Call());
  ASSERT_TRUE(slice.ok()) << slice.status().message();
  EXPECT_EQ(slice->id, "s7");
  EXPECT_EQ(agent.calls.back().substr(0, 17), "GET /v1/slices/s7");
  agent.status = 404;
  agent.body = R"({"error":"no slice s7"})";
  EXPECT_EQ(AdoptSlice("s7", step, agent.Call()).status().code(), StatusCode::kNotFound);
}

// The marker is in the job's environment, which its user writes: it may name any slice.
TEST(StepSlice, AdoptRefusesASliceOfAnotherJobOrUser) {
  const StepIdentity step{.job_id = 12, .step_id = 0, .uid = 1001, .user = "alice", .account = ""};
  for (const char* body : {R"({"id":"s7","gpu":"G","job":"13.batch","owner_uid":1001,"env":{"FGPU_SLICE":"/d"}})",
                           R"({"id":"s7","gpu":"G","job":"123.batch","owner_uid":1001,"env":{"FGPU_SLICE":"/d"}})",
                           R"({"id":"s7","gpu":"G","job":"12.batch","owner_uid":1002,"env":{"FGPU_SLICE":"/d"}})",
                           R"({"id":"s7","gpu":"G","owner_uid":1001,"env":{"FGPU_SLICE":"/d"}})"}) {
    FakeAgent agent{.status = 200, .body = body, .calls = {}};
    EXPECT_EQ(AdoptSlice("s7", step, agent.Call()).status().code(), StatusCode::kPermissionDenied) << body;
  }
}

TEST(StepSlice, TheTaskJoinsItsSlice) {
  FakeAgent agent{.status = 200, .body = R"({"slice":"s7","pid":42,"cgroup":""})", .calls = {}};
  EXPECT_TRUE(JoinSlice("s7", agent.Call()).ok());
  EXPECT_EQ(agent.calls.back().substr(0, 24), "POST /v1/slices/s7/join ");
  agent.status = 403;
  EXPECT_FALSE(JoinSlice("s7", agent.Call()).ok());
}

class ScratchDir {
 public:
  ScratchDir() {
    char pattern[] = "/tmp/fgpu-slurm-test.XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

TEST(StepSlice, AMissingAgentIsNamedAtOnce) {
  ScratchDir dir;
  const auto start = std::chrono::steady_clock::now();
  Result<GrantedSlice> slice =
      AcquireSlice(*PlanStep(Memory("1GiB"), Step("0")), UnixAgent(dir / "agent.sock", 3000), dir / "agent.sock");
  ASSERT_FALSE(slice.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_NE(slice.status().message().find("the node's fgpu agent at " + (dir / "agent.sock") + " did not answer"),
            std::string::npos)
      << slice.status().message();
  EXPECT_NE(slice.status().message().find("is `fgpu agent` running"), std::string::npos);
  EXPECT_FALSE(ReleaseSlice("s1", UnixAgent(dir / "agent.sock", 3000)).ok());
}

// A stopped agent (SIGSTOP) still has its socket listening: the kernel accepts the connection
// into the backlog and nobody answers. The call must end at its timeout.
TEST(StepSlice, AnAgentThatDoesNotAnswerTimesOut) {
  ScratchDir dir;
  const std::string path = dir / "agent.sock";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(fd, 8), 0);
  const auto start = std::chrono::steady_clock::now();
  Result<GrantedSlice> slice = AcquireSlice(*PlanStep(Memory("1GiB"), Step("0")), UnixAgent(path, 300), path);
  const auto took = std::chrono::steady_clock::now() - start;
  close(fd);
  ASSERT_FALSE(slice.ok());
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_LT(took, std::chrono::seconds(2));
  EXPECT_NE(slice.status().message().find("in time"), std::string::npos) << slice.status().message();
}

TEST(StepSlice, TalksHttpToARealServer) {
  ScratchDir dir;
  std::string seen;
  net::HttpServer server(
      [&seen](const net::HttpRequest& request) {
        seen = request.method + " " + request.path + " " + request.body;
        net::HttpResponse response;
        response.status = 201;
        response.body = R"({"id":"s3","gpu":"GPU-y","env":{"FGPU_SLICE":"/d/s3","LD_PRELOAD":"/l/libfgpu.so"}})";
        return response;
      },
      {});
  ASSERT_TRUE(server.ListenUnix(dir / "agent.sock", 0666).ok());
  ASSERT_TRUE(server.Start().ok());
  Result<GrantedSlice> slice =
      AcquireSlice(*PlanStep(Memory("2GiB"), Step("1")), UnixAgent(dir / "agent.sock", 3000), dir / "agent.sock");
  ASSERT_TRUE(slice.ok()) << slice.status().message();
  EXPECT_EQ(slice->id, "s3");
  EXPECT_EQ(slice->env.size(), 2u);
  EXPECT_EQ(seen.rfind("POST /v1/slices {", 0), 0u) << seen;
  EXPECT_EQ(json::parse(seen.substr(seen.find('{')))["memory"], 2ull << 30);
}

}  // namespace
}  // namespace fgpu::slurm
