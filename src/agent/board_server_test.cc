// Who gets a GPU's sealed board from the agent (board_server.h): root, and a user who owns a
// slice on that GPU; not a user without one, nor anyone for a GPU the node lacks. What a user
// receives cannot be truncated, and its policy table cannot be written or mapped writable. A
// client that connects and says nothing, or many of them, delays nobody. The users are made-up
// uids in forked children (root only: setresuid).
#include "agent/board_server.h"

#include <fcntl.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent/slice_service.h"
#include "agent/store.h"
#include "compute/board_handout.h"
#include "compute/board_layout.h"
#include "core/units.h"

namespace fgpu::agent {
namespace {

constexpr char kBoardGpuA[] = "GPU-aaaa";
constexpr char kBoardGpuB[] = "GPU-bbbb";
constexpr uid_t kOwner = 4242;
constexpr uid_t kStranger = 4243;

class BoardServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the agent's boards are root's, its clients other uids: run as root";
    dir_ = "/tmp/fgpu-board-server-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
    socket_ = "/tmp/fgpu-board-server-" + std::to_string(getpid()) + ".sock";
    Result<std::unique_ptr<Store>> store = Store::Open(dir_ + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    std::vector<GpuState> gpus = {{0, kBoardGpuA, "H100", 80 * kGiB, 0, 0}, {1, kBoardGpuB, "H100", 80 * kGiB, 0, 0}};
    service_ = std::make_unique<SliceService>(store_.get(), gpus, dir_ + "/slices");
    ASSERT_TRUE(service_->Restore().ok());
    Result<std::unique_ptr<BoardRegistry>> registry = BoardRegistry::Open({kBoardGpuA, kBoardGpuB}, {}, 0);
    ASSERT_TRUE(registry.ok()) << registry.status().message();
    registry_ = std::move(*registry);
    BoardRegistry* boards = registry_.get();
    service_->SetObserver([boards](const SliceRecord& slice, bool gone) { boards->Observe(slice, gone); });
    server_ = std::make_unique<BoardServer>(registry_.get(), SliceOwnersOn(service_.get()));
    ASSERT_TRUE(server_->Listen(socket_).ok());
    ASSERT_TRUE(server_->Start().ok());
    // The owner's slice on GPU A.
    CreateRequest request;
    request.gpu = kBoardGpuA;
    request.memory_bytes = kGiB;
    request.compute_share = 30;
    request.owner = kOwner;
    Result<SliceRecord> created = service_->Create(request, net::Peer{});
    ASSERT_TRUE(created.ok()) << created.status().message();
    slice_ = *created;
  }
  void TearDown() override {
    server_.reset();
    if (service_) service_->SetObserver(nullptr);
    registry_.reset();
    service_.reset();
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // As `uid` (a forked child, no groups): asks for `gpu`'s board, and with it tries what an
  // attacker would. One line back: the outcome, or "ok" and each attempt's errno.
  std::string AskAs(uid_t uid, const char* gpu) {
    int out[2];
    EXPECT_EQ(pipe(out), 0);
    const pid_t child = fork();
    if (child == 0) {
      close(out[0]);
      std::string line;
      if (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) {
        line = "setresuid failed";
      } else {
        line = Attack(gpu);
      }
      (void)!write(out[1], line.data(), line.size());
      _exit(0);
    }
    close(out[1]);
    std::string line;
    char buffer[512];
    for (ssize_t got; (got = read(out[0], buffer, sizeof(buffer))) > 0;) line.append(buffer, static_cast<size_t>(got));
    close(out[0]);
    int status = 0;
    waitpid(child, &status, 0);
    return line;
  }

  // The server counts after it has sent: the client may have its answer first.
  static uint64_t Settled(const std::function<uint64_t()>& counter, uint64_t expected) {
    for (int i = 0; i < 100 && counter() < expected; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return counter();
  }

  std::string Attack(const char* gpu) {
    Result<compute::SealedPair> fds = compute::RequestBoard(socket_, gpu, 1000, 0);
    if (!fds.ok()) return "refused: " + fds.status().message();
    std::string line = "ok";
    const auto attempt = [&line](const char* what, bool failed) {
      line += std::string(" ") + what + "=" + (failed ? std::strerror(errno) : "succeeded");
    };
    errno = 0;
    attempt("truncate_board", ftruncate(fds->board, 0) != 0);
    attempt("grow_board", ftruncate(fds->board, 1 << 20) != 0);
    attempt("truncate_policy", ftruncate(fds->policy, 0) != 0);
    void* writable = mmap(nullptr, compute::layout::PolicyFileSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fds->policy, 0);
    attempt("map_policy_writable", writable == MAP_FAILED);
    const std::string self = "/proc/self/fd/" + std::to_string(fds->policy);
    const int reopened = open(self.c_str(), O_RDWR | O_CLOEXEC);
    attempt("reopen_policy_rw", reopened < 0);
    Result<compute::Board*> board = compute::Board::Map(fds->board, fds->policy, gpu, {.writable_policy = false, .owner = 0});
    line += board.ok() ? " map=ok" : " map=" + board.status().message();
    compute::ClosePair(&*fds);
    return line;
  }

  std::string dir_, socket_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<SliceService> service_;
  std::unique_ptr<BoardRegistry> registry_;
  std::unique_ptr<BoardServer> server_;
  SliceRecord slice_;
};

TEST_F(BoardServerTest, RootGetsEveryBoard) {
  for (const char* gpu : {kBoardGpuA, kBoardGpuB}) {
    Result<compute::SealedPair> fds = compute::RequestBoard(socket_, gpu, 1000, 0);
    ASSERT_TRUE(fds.ok()) << fds.status().message();
    compute::ClosePair(&*fds);
  }
  EXPECT_EQ(Settled([this] { return server_->handed_out(); }, 2), 2u);
}

TEST_F(BoardServerTest, TheOwnerOfASliceGetsItsGpusBoardAndCannotBreakIt) {
  const std::string line = AskAs(kOwner, kBoardGpuA);
  EXPECT_EQ(line,
            "ok truncate_board=Operation not permitted grow_board=Operation not permitted "
            "truncate_policy=Invalid argument map_policy_writable=Permission denied "
            "reopen_policy_rw=Permission denied map=ok");
  // Not the other GPU, where it has no slice.
  EXPECT_EQ(AskAs(kOwner, kBoardGpuB), "refused: the board socket " + socket_ + ": uid 4242 has no slice on GPU " + kBoardGpuB +
                                      ": its compute board is not handed out");
}

TEST_F(BoardServerTest, AUserWithoutASliceOnTheGpuIsRefused) {
  EXPECT_EQ(AskAs(kStranger, kBoardGpuA), "refused: the board socket " + socket_ + ": uid 4243 has no slice on GPU " + kBoardGpuA +
                                         ": its compute board is not handed out");
  EXPECT_EQ(AskAs(kStranger, "GPU-none"), "refused: the board socket " + socket_ + ": no GPU GPU-none on this node");
  // Once its slice is gone, the owner is a stranger too.
  ASSERT_TRUE(service_->Delete(slice_.id).ok());
  EXPECT_NE(AskAs(kOwner, kBoardGpuA).find("has no slice on GPU"), std::string::npos);
  EXPECT_EQ(Settled([this] { return server_->refused(); }, 3), 3u);
  EXPECT_EQ(server_->handed_out(), 0u);
}

// A user that opens more connections than it may and says nothing on any leaves root and the
// owner answered at once.
TEST_F(BoardServerTest, SilentConnectionsDelayNobody) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t holder = fork();
  if (holder == 0) {
    close(ready[0]);
    if (setgroups(0, nullptr) != 0 || setresgid(kStranger, kStranger, kStranger) != 0 ||
        setresuid(kStranger, kStranger, kStranger) != 0) {
      _exit(1);
    }
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", socket_.c_str());
    for (int i = 0; i < BoardServer::kMaxPerUid + 8; ++i) {
      const int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
      if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) _exit(2);
    }
    (void)!write(ready[1], "r", 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1) << "the silent user could not connect";
  close(ready[0]);
  const auto started = std::chrono::steady_clock::now();
  Result<compute::SealedPair> fds = compute::RequestBoard(socket_, kBoardGpuA, 1000, 0);
  ASSERT_TRUE(fds.ok()) << fds.status().message();
  compute::ClosePair(&*fds);
  EXPECT_EQ(AskAs(kOwner, kBoardGpuA).substr(0, 2), "ok");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(900));
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
}

}  // namespace
}  // namespace fgpu::agent
