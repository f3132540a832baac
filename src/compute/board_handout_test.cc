// The board handout's client (board_handout.h) against small servers in this process: what it
// accepts, and that every failure — no agent, a stopped one, a stranger listening, a refusal, a
// malformed answer — is an error within the timeout, with any descriptor it carried closed.
#include "compute/board_handout.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "compute/board.h"
#include "compute/sealed.h"

namespace fgpu::compute {
namespace {

constexpr char kHandoutGpu[] = "GPU-handout";

int OpenDescriptors() {
  int count = 0;
  for (int fd = 0; fd < 1024; ++fd) count += ::fcntl(fd, F_GETFD) >= 0 ? 1 : 0;
  return count;
}

class HandoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = "/tmp/fgpu-handout-" + std::to_string(::getpid()) + ".sock";
    ::unlink(path_.c_str());
  }
  void TearDown() override {
    if (server_.joinable()) server_.join();
    if (listener_ >= 0) ::close(listener_);
    ::unlink(path_.c_str());
  }

  void Listen() {
    listener_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    ASSERT_GE(listener_, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path_.c_str());
    ASSERT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    ASSERT_EQ(::listen(listener_, 8), 0);
  }
  // One connection: its request handed to `answer`, which replies.
  void Serve(std::function<void(int connection, const std::string& uuid)> answer) {
    Listen();
    server_ = std::thread([this, answer] {
      const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (connection < 0) return;
      Result<std::string> uuid = NotFoundYet();
      for (int i = 0; i < 200 && !uuid.ok() && uuid.status().code() == StatusCode::kNotFound; ++i) {
        uuid = ReadBoardRequest(connection);
        if (!uuid.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      answer(connection, uuid.ok() ? *uuid : "");
      ::close(connection);
    });
  }
  static Result<std::string> NotFoundYet() { return Status::NotFound("not yet"); }

  std::string path_;
  int listener_ = -1;
  std::thread server_;
};

TEST_F(HandoutTest, TheAgentsAnswerCarriesTheBoardAndTheReadOnlyPolicy) {
  Result<SealedPair> pair = CreateSealedPair(kHandoutGpu);
  ASSERT_TRUE(pair.ok());
  Result<int> read_only = ReopenReadOnly(pair->policy);
  ASSERT_TRUE(read_only.ok());
  std::string asked;
  Serve([&](int connection, const std::string& uuid) {
    asked = uuid;
    const SealedPair handout{pair->board, *read_only};
    EXPECT_TRUE(SendBoardReply(connection, HandoutCode::kOk, "", &handout));
  });
  Result<SealedPair> received = RequestBoard(path_, kHandoutGpu, 1000, ::geteuid());
  ASSERT_TRUE(received.ok()) << received.status().message();
  server_.join();
  EXPECT_EQ(asked, kHandoutGpu);
  EXPECT_EQ(::fcntl(received->policy, F_GETFL) & O_ACCMODE, O_RDONLY);
  EXPECT_NE(::fcntl(received->board, F_GETFD) & FD_CLOEXEC, 0) << "received descriptors are close-on-exec";
  Result<Board*> board = Board::Map(received->board, received->policy, kHandoutGpu, {.writable_policy = false, .owner = ::geteuid()});
  ASSERT_TRUE(board.ok()) << board.status().message();
  delete *board;
  ClosePair(&*received);
  ClosePair(&*pair);
  ::close(*read_only);
}

TEST_F(HandoutTest, NoAgentIsAnErrorAtOnce) {
  const auto started = std::chrono::steady_clock::now();
  Result<SealedPair> received = RequestBoard(path_, kHandoutGpu, 1000, ::geteuid());
  ASSERT_FALSE(received.ok());
  EXPECT_EQ(received.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(received.status().message().find(path_), std::string::npos) << received.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(500));
}

// A stopped agent: the kernel completes the connection and queues the request, nobody answers.
TEST_F(HandoutTest, AnAgentThatNeverAnswersCostsTheTimeoutNotAHang) {
  Listen();
  const auto started = std::chrono::steady_clock::now();
  Result<SealedPair> received = RequestBoard(path_, kHandoutGpu, 300, ::geteuid());
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(received.ok());
  EXPECT_EQ(received.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(received.status().message().find("did not answer within 300 ms"), std::string::npos)
      << received.status().message();
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_LT(took, std::chrono::milliseconds(1500));
}

TEST_F(HandoutTest, AServerOfAnotherUserIsNotAsked) {
  Listen();
  Result<SealedPair> received = RequestBoard(path_, kHandoutGpu, 300, ::geteuid() + 1);
  ASSERT_FALSE(received.ok());
  EXPECT_EQ(received.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(received.status().message().find("is served by uid"), std::string::npos) << received.status().message();
}

TEST_F(HandoutTest, ARefusalCarriesTheAgentsReasonAndNoDescriptor) {
  Serve([](int connection, const std::string&) {
    EXPECT_TRUE(SendBoardReply(connection, HandoutCode::kRefused, "uid 7 has no slice on GPU-handout", nullptr));
  });
  Result<SealedPair> received = RequestBoard(path_, kHandoutGpu, 1000, ::geteuid());
  ASSERT_FALSE(received.ok());
  EXPECT_EQ(received.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(received.status().message(), "the board socket " + path_ + ": uid 7 has no slice on GPU-handout");
}

TEST_F(HandoutTest, AMalformedAnswerIsRefusedAndItsDescriptorsClosed) {
  const int before = OpenDescriptors();
  Serve([](int connection, const std::string&) {
    // Three descriptors where the protocol has two.
    int fds[3] = {::dup(0), ::dup(0), ::dup(0)};
    char code = 0;
    iovec part{&code, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(fds))] = {};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(fds));
    std::memcpy(CMSG_DATA(header), fds, sizeof(fds));
    EXPECT_EQ(::sendmsg(connection, &message, MSG_NOSIGNAL), 1);
    for (int fd : fds) ::close(fd);
  });
  Result<SealedPair> received = RequestBoard(path_, kHandoutGpu, 1000, ::geteuid());
  server_.join();
  ASSERT_FALSE(received.ok());
  EXPECT_EQ(received.status().code(), StatusCode::kCorrupt);
  ::close(listener_);
  listener_ = -1;
  EXPECT_EQ(OpenDescriptors(), before) << "the three descriptors were closed";
}

TEST_F(HandoutTest, OnlyAUuidIsARequest) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  EXPECT_EQ(ReadBoardRequest(pair[1]).status().code(), StatusCode::kNotFound) << "nothing sent yet";
  for (const std::string& bad : {std::string("../etc"), std::string("GPU a"), std::string(64, 'x'), std::string("a\0b", 3)}) {
    ASSERT_EQ(::send(pair[0], bad.data(), bad.size(), 0), static_cast<ssize_t>(bad.size()));
    EXPECT_EQ(ReadBoardRequest(pair[1]).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  ASSERT_EQ(::send(pair[0], kHandoutGpu, sizeof(kHandoutGpu) - 1, 0), static_cast<ssize_t>(sizeof(kHandoutGpu) - 1));
  Result<std::string> uuid = ReadBoardRequest(pair[1]);
  ASSERT_TRUE(uuid.ok());
  EXPECT_EQ(*uuid, kHandoutGpu);
  ::close(pair[0]);
  EXPECT_EQ(ReadBoardRequest(pair[1]).status().code(), StatusCode::kUnavailable) << "hung up";
  ::close(pair[1]);
}

}  // namespace
}  // namespace fgpu::compute
