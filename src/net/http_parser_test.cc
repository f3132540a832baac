// The request parser: what it accepts, and the status it answers everything else with.
#include "net/http_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace fgpu::net {
namespace {

HttpParser Parse(const std::string& bytes, std::size_t max_body = 1024) {
  HttpParser parser(max_body);
  parser.Feed(bytes);
  return parser;
}

TEST(HttpParserTest, ParsesARequestWithABody) {
  const HttpParser parser =
      Parse("POST /v1/slices?wait=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\nX-Thing:  a b \r\n\r\n{\"a\":1}");
  ASSERT_EQ(parser.state(), HttpParser::State::kDone);
  EXPECT_EQ(parser.request().method, "POST");
  EXPECT_EQ(parser.request().path, "/v1/slices");
  EXPECT_EQ(parser.request().query, "wait=1");
  EXPECT_EQ(parser.request().Header("x-thing"), "a b");
  EXPECT_EQ(parser.request().body, "{\"a\":1}");
}

TEST(HttpParserTest, WaitsForTheWholeRequestAcrossFeeds) {
  HttpParser parser(1024);
  const std::string request = "PUT /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
  for (char c : request.substr(0, request.size() - 1)) {
    ASSERT_EQ(parser.Feed(std::string(1, c)), HttpParser::State::kNeedMore);
  }
  EXPECT_EQ(parser.Feed("o"), HttpParser::State::kDone);
  EXPECT_EQ(parser.request().body, "hello");
}

TEST(HttpParserTest, AGetNeedsNoLength) {
  EXPECT_EQ(Parse("GET /metrics HTTP/1.0\r\n\r\n").state(), HttpParser::State::kDone);
}

struct Bad {
  const char* bytes;
  int status;
};

TEST(HttpParserTest, MalformedRequestsGetTheirStatus) {
  const Bad cases[] = {
      {"GARBAGE\r\n\r\n", 400},
      {"GET  /x HTTP/1.1\r\n\r\n", 400},
      {"GET x HTTP/1.1\r\n\r\n", 400},
      {"GET /x HTTP/2\r\n\r\n", 505},
      {"G(T /x HTTP/1.1\r\n\r\n", 400},
      {"GET /x HTTP/1.1\r\nno colon\r\n\r\n", 400},
      {"GET /x HTTP/1.1\r\nX: a\x01" "b\r\n\r\n", 400},
      {"POST /x HTTP/1.1\r\n\r\n", 411},
      {"POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST /x HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", 400},
      {"POST /x HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", 400},
      {"POST /x HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400},
      {"POST /x HTTP/1.1\r\nContent-Length: 2048\r\n\r\n", 413},
      {"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
  };
  for (const Bad& bad : cases) {
    const HttpParser parser = Parse(bad.bytes);
    EXPECT_EQ(parser.state(), HttpParser::State::kError) << bad.bytes;
    EXPECT_EQ(parser.error_status(), bad.status) << bad.bytes;
    EXPECT_FALSE(parser.error_message().empty());
  }
}

// Found by fuzz/http_parser_fuzzer: a head of exactly kMaxHeadBytes was refused with 431 when a
// read ended inside its terminator, and accepted when the terminator came in the same read.
TEST(HttpParserTest, AHeadAtTheLimitIsAcceptedWhereverTheReadsEnd) {
  std::string head = "GET /x HTTP/1.1\r\n";
  for (int i = 0; i < 40; ++i) head += "X-Filler-" + std::to_string(i) + ": " + std::string(300, 'a') + "\r\n";
  head += "X-Last: ";
  head += std::string(HttpParser::kMaxHeadBytes - head.size(), 'b');
  ASSERT_EQ(head.size(), HttpParser::kMaxHeadBytes);
  const std::string request = head + "\r\n\r\n";
  for (std::size_t cut = HttpParser::kMaxHeadBytes - 2; cut < request.size(); ++cut) {
    HttpParser parser(1024);
    EXPECT_EQ(parser.Feed(request.substr(0, cut)), HttpParser::State::kNeedMore) << "cut at " << cut;
    EXPECT_EQ(parser.Feed(request.substr(cut)), HttpParser::State::kDone) << "cut at " << cut;
  }
  // One byte more is over the limit, in one read or byte by byte.
  const std::string over = head + "c\r\n\r\n";
  EXPECT_EQ(Parse(over).error_status(), 431);
  HttpParser parser(1024);
  HttpParser::State state = HttpParser::State::kNeedMore;
  for (std::size_t at = 0; at < over.size() && state == HttpParser::State::kNeedMore; ++at) {
    state = parser.Feed(over.substr(at, 1));
  }
  EXPECT_EQ(state, HttpParser::State::kError);
  EXPECT_EQ(parser.error_status(), 431);
}

TEST(HttpParserTest, AnEndlessHeadIsCutOff) {
  HttpParser parser(1024);
  std::string line = "GET /x HTTP/1.1\r\n";
  HttpParser::State state = parser.Feed(line);
  for (int i = 0; i < 2000 && state == HttpParser::State::kNeedMore; ++i) state = parser.Feed("X-Filler: 0123456789\r\n");
  EXPECT_EQ(state, HttpParser::State::kError);
  EXPECT_EQ(parser.error_status(), 431);
}

TEST(HttpParserTest, TooManyHeaders) {
  std::string request = "GET /x HTTP/1.1\r\n";
  for (int i = 0; i < 65; ++i) request += "H" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(Parse(request + "\r\n").error_status(), 431);
}

}  // namespace
}  // namespace fgpu::net
