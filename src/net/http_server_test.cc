// The server through real sockets: both listeners, who the Unix peer is, bad and slow
// clients, many clients at once.
#include "net/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"
#include "net/socket_io.h"

namespace fgpu::net {
namespace {

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_path_ = "/tmp/fgpu-net-test-" + std::to_string(getpid()) + ".sock";
  }

  std::unique_ptr<HttpServer> StartServer(HttpServer::Handler handler, HttpServer::Options options = {}) {
    auto server = std::make_unique<HttpServer>(std::move(handler), options);
    Result<int> port = server->ListenTcp("127.0.0.1", 0);
    EXPECT_TRUE(port.ok()) << port.status().message();
    port_ = *port;
    EXPECT_TRUE(server->ListenUnix(socket_path_, 0600).ok());
    EXPECT_TRUE(server->Start().ok());
    return server;
  }

  Endpoint Tcp() const { return *ParseEndpoint("127.0.0.1:" + std::to_string(port_)); }
  Endpoint Unix() const { return *ParseEndpoint("unix:" + socket_path_); }

  // Sends raw bytes and returns everything the server answered.
  std::string Raw(const std::string& bytes, bool close_write = true) {
    Endpoint endpoint = Tcp();
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(endpoint.port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_TRUE(WriteAll(fd, bytes, NowMs() + 1000));
    if (close_write) shutdown(fd, SHUT_WR);
    std::string answer;
    char buffer[4096];
    long got = 0;
    while ((got = ReadSome(fd, buffer, sizeof(buffer), NowMs() + 10000)) > 0) answer.append(buffer, got);
    close(fd);
    return answer;
  }

  std::string socket_path_;
  int port_ = 0;
};

HttpResponse Echo(const HttpRequest& request) {
  HttpResponse response;
  response.body = request.method + " " + request.path + " " + request.body + " " +
                  (request.peer.unix_socket ? "unix " + std::to_string(request.peer.pid) + " " +
                                                  std::to_string(request.peer.uid)
                                            : "tcp");
  return response;
}

TEST_F(HttpServerTest, AnswersOnTcpAndOnTheUnixSocketWithThePeersCredentials) {
  auto server = StartServer(Echo);
  Result<HttpResponse> tcp = HttpCall(Tcp(), "POST", "/a", "{}", 2000);
  ASSERT_TRUE(tcp.ok()) << tcp.status().message();
  EXPECT_EQ(tcp->status, 200);
  EXPECT_EQ(tcp->body, "POST /a {} tcp");
  Result<HttpResponse> unix_call = HttpCall(Unix(), "GET", "/b", "", 2000);
  ASSERT_TRUE(unix_call.ok()) << unix_call.status().message();
  EXPECT_EQ(unix_call->body, "GET /b  unix " + std::to_string(getpid()) + " " + std::to_string(getuid()));
}

TEST_F(HttpServerTest, MalformedRequestsGetAClearError) {
  auto server = StartServer(Echo);
  const std::string answer = Raw("POST /x HTTP/1.1\r\nContent-Length: nope\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("{\"error\":\"malformed Content-Length\"}"), std::string::npos) << answer;
}

TEST_F(HttpServerTest, ASlowClientTimesOutWithoutHoldingTheServer) {
  HttpServer::Options options;
  options.workers = 1;
  options.read_timeout_ms = 300;
  auto server = StartServer(Echo, options);
  std::thread slow([&] { EXPECT_EQ(Raw("GET /slow HTTP/1.1\r\n", false).rfind("HTTP/1.1 408", 0), 0u); });
  slow.join();
  Result<HttpResponse> next = HttpCall(Tcp(), "GET", "/next", "", 2000);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->status, 200);
}

TEST_F(HttpServerTest, AHandlerThatThrowsIsA500) {
  auto server = StartServer([](const HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); });
  Result<HttpResponse> answer = HttpCall(Tcp(), "GET", "/", "", 2000);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->status, 500);
  EXPECT_NE(answer->body.find("boom"), std::string::npos);
}

TEST_F(HttpServerTest, AHundredConcurrentClientsAreEachAnsweredOnce) {
  std::atomic<int> handled{0};
  HttpServer::Options options;
  options.max_connections_per_peer = 128;  // every client here is this process's uid: one peer
  auto server = StartServer(
      [&](const HttpRequest& request) {
        handled.fetch_add(1);
        HttpResponse response;
        response.body = request.body;
        return response;
      },
      options);
  std::vector<std::thread> clients;
  std::vector<std::string> bodies(100);
  for (int i = 0; i < 100; ++i) {
    clients.emplace_back([&, i] {
      Result<HttpResponse> answer = HttpCall(i % 2 == 0 ? Tcp() : Unix(), "POST", "/n", std::to_string(i), 10000);
      if (answer.ok() && answer->status == 200) bodies[i] = answer->body;
    });
  }
  for (std::thread& client : clients) client.join();
  std::set<std::string> distinct(bodies.begin(), bodies.end());
  EXPECT_EQ(distinct.size(), 100u);
  EXPECT_EQ(handled.load(), 100);
}

TEST_F(HttpServerTest, AStaleSocketFileIsReplacedALiveOneIsNot) {
  {
    auto first = StartServer(Echo);
    HttpServer second(Echo, {});
    EXPECT_FALSE(second.ListenUnix(socket_path_, 0600).ok()) << "a live server owns it";
  }
  // The first server removed its file; a leftover socket file nobody accepts on is replaced.
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", socket_path_.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  close(fd);  // bound, never listened: stale
  HttpServer third(Echo, {});
  EXPECT_TRUE(third.ListenUnix(socket_path_, 0600).ok());
}

TEST(EndpointTest, Parses) {
  EXPECT_TRUE(ParseEndpoint("unix:/run/x.sock")->unix_socket);
  EXPECT_EQ(ParseEndpoint("/run/x.sock")->path, "/run/x.sock");
  EXPECT_EQ(ParseEndpoint("127.0.0.1:7070")->port, 7070);
  EXPECT_FALSE(ParseEndpoint("127.0.0.1:0").ok());
  EXPECT_FALSE(ParseEndpoint("127.0.0.1:x").ok());
  EXPECT_FALSE(ParseEndpoint("nohost").ok());
  EXPECT_FALSE(ParseEndpoint("unix:").ok());
}

TEST(EndpointTest, NothingListeningIsUnavailable) {
  Result<HttpResponse> answer = HttpCall(*ParseEndpoint("unix:/tmp/fgpu-nothing-here.sock"), "GET", "/", "", 500);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), StatusCode::kUnavailable);
}

// A listener that accepts nothing (a stopped server) with its backlog full: the call gives up at
// its timeout instead of blocking in connect().
TEST(EndpointTest, AListenerThatAcceptsNothingTimesOutInConnect) {
  const std::string path = "/tmp/fgpu-net-full-" + std::to_string(getpid()) + ".sock";
  unlink(path.c_str());
  const int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 0), 0);
  std::vector<int> fillers;
  for (int i = 0; i < 64; ++i) {  // until the kernel refuses more (backlog full)
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      close(fd);
      break;
    }
    fillers.push_back(fd);
  }
  const int64_t started = NowMs();
  Result<HttpResponse> answer = HttpCall(*ParseEndpoint("unix:" + path), "GET", "/", "", 300);
  const int64_t took = NowMs() - started;
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), StatusCode::kUnavailable);
  EXPECT_GE(took, 250);
  EXPECT_LT(took, 3000) << "bounded by the call's timeout";
  EXPECT_NE(answer.status().message().find("cannot connect"), std::string::npos) << answer.status().message();
  for (int fd : fillers) close(fd);
  close(listener);
  unlink(path.c_str());
}

}  // namespace
}  // namespace fgpu::net
