// The uid behind a loopback TCP connection, through real sockets.
#include "net/tcp_owner.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net_test_support.h"

namespace fgpu::net {
namespace {

struct Accepted {
  int listener = -1;
  int client = -1;
  int server = -1;
  sockaddr_storage local{};   // the server's end
  sockaddr_storage remote{};  // the client's, as the server sees it
  ~Accepted() {
    for (int fd : {listener, client, server}) {
      if (fd >= 0) close(fd);
    }
  }
};

// A listener on 127.0.0.1, one connection made by `connect_fd()` and its accepted end.
void Accept(Accepted* out, const std::function<int(int port)>& connect_fd) {
  out->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(out->listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(out->listener, 8), 0);
  socklen_t size = sizeof(address);
  getsockname(out->listener, reinterpret_cast<sockaddr*>(&address), &size);
  out->client = connect_fd(ntohs(address.sin_port));
  ASSERT_GE(out->client, 0);
  size = sizeof(out->remote);
  out->server = accept(out->listener, reinterpret_cast<sockaddr*>(&out->remote), &size);
  ASSERT_GE(out->server, 0);
  size = sizeof(out->local);
  getsockname(out->server, reinterpret_cast<sockaddr*>(&out->local), &size);
}

TEST(TcpOwnerTest, FindsTheUidOfTheClientEnd) {
  Accepted connection;
  Accept(&connection, [](int port) { return testing::ConnectTcp(port); });
  TcpOwnerLookup owners;
  Result<uid_t> owner = owners.Owner(connection.local, connection.remote);
  ASSERT_TRUE(owner.ok()) << owner.status().message();
  EXPECT_EQ(*owner, geteuid());
  // The socket is kept open between lookups.
  EXPECT_EQ(*owners.Owner(connection.local, connection.remote), geteuid());
}

TEST(TcpOwnerTest, FindsAnotherUsersSocketAsThatUser) {
  if (!testing::RunAsUid(65534, [] {})) GTEST_SKIP() << "needs root to make a socket as another user";
  Accepted connection;
  Accept(&connection, [](int port) {
    int fd = -1;
    testing::RunAsUid(65534, [&] { fd = testing::ConnectTcp(port); });
    return fd;
  });
  TcpOwnerLookup owners;
  Result<uid_t> owner = owners.Owner(connection.local, connection.remote);
  ASSERT_TRUE(owner.ok()) << owner.status().message();
  EXPECT_EQ(*owner, 65534u);
}

// Regression: the kernel reports a closed (orphaned) socket's uid as 0; a user closing its end
// before the server's lookup was charged to root.
TEST(TcpOwnerTest, AClientThatClosedItsEndIsNotFoundNotRoot) {
  Accepted connection;
  Accept(&connection, [](int port) { return testing::ConnectTcp(port); });
  close(connection.client);
  connection.client = -1;
  TcpOwnerLookup owners;
  Result<uid_t> owner = owners.Owner(connection.local, connection.remote);
  ASSERT_FALSE(owner.ok()) << "read as uid " << *owner;
  EXPECT_EQ(owner.status().code(), StatusCode::kNotFound);
  // Orphaned (no inode) while its FIN is in flight, or already gone once the server acked it and
  // the kernel turned it into a time-wait entry: the timing is the kernel's, either is right.
  const std::string why = owner.status().message();
  EXPECT_TRUE(why.find("closed") != std::string::npos || why.find("no such socket") != std::string::npos) << why;
}

TEST(TcpOwnerTest, AConnectionThatIsGoneIsNotFound) {
  Accepted connection;
  Accept(&connection, [](int port) { return testing::ConnectTcp(port); });
  auto* remote = reinterpret_cast<sockaddr_in*>(&connection.remote);
  remote->sin_port = htons(static_cast<uint16_t>(ntohs(remote->sin_port) ^ 0x5a5a));  // nobody's port
  TcpOwnerLookup owners;
  Result<uid_t> owner = owners.Owner(connection.local, connection.remote);
  ASSERT_FALSE(owner.ok());
  EXPECT_EQ(owner.status().code(), StatusCode::kNotFound) << owner.status().message();
}

}  // namespace
}  // namespace fgpu::net
