// Parses one HTTP/1.1 request from bytes as they arrive. Strict and bounded: anything it does
// not understand is an error with the HTTP status the server answers with, never a crash or an
// unbounded buffer.
//
// Contract
// - Feed(bytes) appends; State() says kNeedMore, kDone (request() complete) or kError
//   (error_status() 400/411/413/431/501/505, error_message()). head_complete() turns true once
//   the request line and headers are in and valid (the server's head deadline stops there).
// - Limits: request line + headers ≤ kMaxHeadBytes, ≤ kMaxHeaders headers, body ≤ max_body
//   (Content-Length only; Transfer-Encoding is refused with 501, a body without a length
//   with 411). Bytes after the request are ignored (one request per connection).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "net/http_message.h"

namespace fgpu::net {

class HttpParser {
 public:
  static constexpr std::size_t kMaxHeadBytes = 16 * 1024;
  static constexpr std::size_t kMaxHeaders = 64;

  enum class State { kNeedMore, kDone, kError };

  explicit HttpParser(std::size_t max_body) : max_body_(max_body) {}

  State Feed(std::string_view bytes);
  State state() const { return state_; }
  bool head_complete() const { return head_done_; }
  const HttpRequest& request() const { return request_; }
  HttpRequest& request() { return request_; }
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

 private:
  State Fail(int status, std::string message);
  bool Reject(int status, std::string message);  // Fail, for the line parsers
  State ParseHead(std::string_view head);
  bool ParseRequestLine(std::string_view line);
  bool ParseHeaderLine(std::string_view line);

  std::size_t max_body_;
  std::string buffer_;
  std::size_t body_length_ = 0;
  bool head_done_ = false;
  State state_ = State::kNeedMore;
  HttpRequest request_;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace fgpu::net
