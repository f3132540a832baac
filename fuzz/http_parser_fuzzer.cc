// Fuzzes net::HttpParser, the first code that sees a client's bytes (every agent request, from any
// local user or, with TCP on, any host).
//
// Input: the request bytes, then (from the end, FuzzedDataProvider's integers) the body limit and
// up to 16 cut points. The bytes go to one parser in the pieces the cuts make, as a slow or
// hostile client sends them, and to a second parser in one Feed.
//
// Checked on every input:
// - Feed returns state(); once done or failed, the state never changes again.
// - The outcome does not depend on how the bytes arrived: both parsers agree on the state, the
//   error status and every field of the request.
// - A done request respects the limits: a method token, an absolute path without control
//   characters, at most kMaxHeaders headers, a head of at most kMaxHeadBytes, a body of exactly
//   Content-Length bytes and at most max_body, no Transfer-Encoding.
// - An error carries one of the statuses http_parser.h promises (400/411/413/431/501/505) and a
//   message.
// - Still waiting means the bytes hold no complete request yet, and the head is not over its limit.
// - A done request written back in canonical form parses to the same request (when that form
//   still fits the head limit).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "net/http_message.h"
#include "net/http_parser.h"

namespace {

using fgpu::net::HttpParser;
using fgpu::net::HttpRequest;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "http_parser_fuzzer: %s %s\n", what, detail.c_str());
  std::abort();
}

void Expect(bool condition, const char* what, const std::string& detail = "") {
  if (!condition) Fail(what, detail);
}

const char* StateName(HttpParser::State state) {
  switch (state) {
    case HttpParser::State::kNeedMore:
      return "need-more";
    case HttpParser::State::kDone:
      return "done";
    case HttpParser::State::kError:
      return "error";
  }
  return "?";
}

bool IsTokenCharacter(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool IsControl(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }

void ExpectSameRequest(const HttpRequest& a, const HttpRequest& b, const char* what) {
  Expect(a.method == b.method, what, "method: " + a.method + " vs " + b.method);
  Expect(a.path == b.path, what, "path: " + a.path + " vs " + b.path);
  Expect(a.query == b.query, what, "query: " + a.query + " vs " + b.query);
  Expect(a.headers == b.headers, what, "headers differ");
  Expect(a.body == b.body, what, "body differs");
}

void CheckDone(const HttpParser& parser, const std::string& bytes, std::size_t max_body) {
  const HttpRequest& request = parser.request();
  Expect(parser.head_complete(), "done before the head was complete");
  Expect(!request.method.empty(), "empty method");
  for (unsigned char c : request.method) Expect(IsTokenCharacter(c), "method is not a token", request.method);
  Expect(!request.path.empty() && request.path.front() == '/', "path is not absolute", request.path);
  for (unsigned char c : request.path + request.query)
    Expect(!IsControl(c), "control character in the target");
  Expect(request.headers.size() <= HttpParser::kMaxHeaders, "too many headers");
  Expect(request.headers.count("transfer-encoding") == 0, "Transfer-Encoding accepted");
  for (const auto& [name, value] : request.headers) {
    for (unsigned char c : name) Expect(IsTokenCharacter(c) && !(c >= 'A' && c <= 'Z'), "header name", name);
    for (unsigned char c : value) Expect(!IsControl(c), "control character in a header value", name);
  }
  const std::size_t head_end = bytes.find("\r\n\r\n");
  Expect(head_end != std::string::npos, "done without an end of head");
  Expect(head_end <= HttpParser::kMaxHeadBytes, "head over kMaxHeadBytes accepted");
  Expect(request.body.size() <= max_body, "body over max_body accepted");
  const std::string length = request.Header("content-length");
  Expect(request.body.size() == (length.empty() ? 0 : std::stoull(length)),
         "body is not Content-Length bytes");
  Expect(bytes.compare(head_end + 4, request.body.size(), request.body) == 0,
         "body is not the bytes after the head");
}

void CheckError(const HttpParser& parser) {
  const int status = parser.error_status();
  Expect(status == 400 || status == 411 || status == 413 || status == 431 || status == 501 || status == 505,
         "unexpected error status", std::to_string(status));
  Expect(!parser.error_message().empty(), "error without a message");
}

void CheckNeedMore(const HttpParser& parser, const std::string& bytes) {
  const std::size_t head_end = bytes.find("\r\n\r\n");
  if (!parser.head_complete()) {
    Expect(head_end == std::string::npos, "a complete head is still waiting");
    // The longest head that may still complete: kMaxHeadBytes, then the 4-byte terminator
    // starting at most there, so kMaxHeadBytes + 3 bytes may be held without it.
    Expect(bytes.size() <= HttpParser::kMaxHeadBytes + 3, "an over-long head is still waiting",
           std::to_string(bytes.size()));
    return;
  }
  const std::string length = parser.request().Header("content-length");
  Expect(!length.empty() && bytes.size() - (head_end + 4) < std::stoull(length),
         "a complete body is still waiting");
}

// The canonical wire form of a parsed request: what a well-behaved client would have sent.
std::string Canonical(const HttpRequest& request) {
  std::string out = request.method + " " + request.path;
  if (!request.query.empty()) out += "?" + request.query;
  out += " HTTP/1.1\r\n";
  for (const auto& [name, value] : request.headers) out += name + ": " + value + "\r\n";
  return out + "\r\n" + request.body;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  static constexpr std::size_t kBodyLimits[] = {0, 1, 7, 1024, 1 << 20};
  const std::size_t max_body = input.PickValueInArray(kBodyLimits);
  std::vector<uint16_t> cuts(input.ConsumeIntegralInRange<std::size_t>(0, 16));
  for (uint16_t& cut : cuts) cut = input.ConsumeIntegral<uint16_t>();
  const std::string bytes = input.ConsumeRemainingBytesAsString();

  // In pieces: each cut is a fraction of the input (so that cuts stay meaningful as it grows).
  HttpParser pieces(max_body);
  std::size_t fed = 0;
  HttpParser::State settled = HttpParser::State::kNeedMore;
  for (std::size_t index = 0; index <= cuts.size(); ++index) {
    std::size_t end = index < cuts.size() ? bytes.size() * cuts[index] / 65536 : bytes.size();
    if (end < fed) end = fed;
    const HttpParser::State state = pieces.Feed(std::string_view(bytes).substr(fed, end - fed));
    Expect(state == pieces.state(), "Feed's result is not state()");
    if (settled != HttpParser::State::kNeedMore)
      Expect(state == settled, "a settled parser changed its state");
    settled = state;
    fed = end;
  }

  HttpParser whole(max_body);
  whole.Feed(bytes);
  Expect(whole.state() == pieces.state(), "the outcome depends on how the bytes arrived",
         std::string(StateName(whole.state())) + " whole vs " + StateName(pieces.state()) + " in pieces");
  switch (whole.state()) {
    case HttpParser::State::kDone: {
      CheckDone(whole, bytes, max_body);
      ExpectSameRequest(whole.request(), pieces.request(), "in pieces vs whole:");
      // Canonical spacing ("name: value") may make a head at the limit longer: those are skipped.
      const std::string canonical = Canonical(whole.request());
      if (canonical.find("\r\n\r\n") > HttpParser::kMaxHeadBytes) break;
      HttpParser again(max_body);
      again.Feed(canonical);
      Expect(again.state() == HttpParser::State::kDone, "the canonical form does not parse",
             again.error_message());
      ExpectSameRequest(whole.request(), again.request(), "canonical form:");
      break;
    }
    case HttpParser::State::kError:
      CheckError(whole);
      Expect(whole.error_status() == pieces.error_status(), "the error depends on how the bytes arrived",
             std::to_string(whole.error_status()) + " vs " + std::to_string(pieces.error_status()));
      break;
    case HttpParser::State::kNeedMore:
      CheckNeedMore(whole, bytes);
      break;
  }
  return 0;
}
