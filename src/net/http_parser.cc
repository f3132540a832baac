#include "net/http_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace fgpu::net {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool IsToken(std::string_view text) {
  if (text.empty()) return false;
  return std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

bool HasControlCharacters(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; });
}

}  // namespace

HttpParser::State HttpParser::Fail(int status, std::string message) {
  error_status_ = status;
  error_message_ = std::move(message);
  state_ = State::kError;
  return state_;
}

bool HttpParser::Reject(int status, std::string message) {
  Fail(status, std::move(message));
  return false;
}

HttpParser::State HttpParser::Feed(std::string_view bytes) {
  if (state_ != State::kNeedMore) return state_;
  buffer_.append(bytes);
  if (!head_done_) {
    const std::size_t end = buffer_.find("\r\n\r\n");
    if (end == std::string::npos) {
      // Up to three bytes of the terminator may already be here after a head of exactly
      // kMaxHeadBytes: refusing sooner would make the limit depend on how the bytes arrive.
      if (buffer_.size() > kMaxHeadBytes + 3) return Fail(431, "request head larger than 16 KiB");
      return state_;
    }
    if (end > kMaxHeadBytes) return Fail(431, "request head larger than 16 KiB");
    if (ParseHead(std::string_view(buffer_).substr(0, end)) == State::kError) return state_;
    head_done_ = true;
    buffer_.erase(0, end + 4);
  }
  if (buffer_.size() < body_length_) return state_;
  request_.body = buffer_.substr(0, body_length_);
  state_ = State::kDone;
  return state_;
}

HttpParser::State HttpParser::ParseHead(std::string_view head) {
  const std::size_t line_end = head.find("\r\n");
  if (!ParseRequestLine(head.substr(0, line_end))) return state_;
  std::string_view rest = line_end == std::string_view::npos ? std::string_view() : head.substr(line_end + 2);
  std::size_t count = 0;
  while (!rest.empty()) {
    const std::size_t next = rest.find("\r\n");
    if (++count > kMaxHeaders) return Fail(431, "more than 64 headers");
    if (!ParseHeaderLine(rest.substr(0, next))) return state_;
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 2);
  }
  if (request_.headers.count("transfer-encoding") != 0) return Fail(501, "Transfer-Encoding is not supported; send Content-Length");
  const std::string length = request_.Header("content-length");
  if (length.empty()) {
    const bool wants_body = request_.method == "POST" || request_.method == "PUT" || request_.method == "PATCH";
    if (wants_body) return Fail(411, request_.method + " needs a Content-Length");
    return state_;
  }
  uint64_t parsed = 0;
  const auto [end, error] = std::from_chars(length.data(), length.data() + length.size(), parsed);
  if (error != std::errc() || end != length.data() + length.size()) return Fail(400, "malformed Content-Length");
  if (parsed > max_body_) return Fail(413, "body larger than " + std::to_string(max_body_) + " bytes");
  body_length_ = static_cast<std::size_t>(parsed);
  return state_;
}

bool HttpParser::ParseRequestLine(std::string_view line) {
  const std::size_t first = line.find(' ');
  const std::size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  if (second == std::string_view::npos || line.find(' ', second + 1) != std::string_view::npos) {
    return Reject(400, "malformed request line");
  }
  const std::string_view method = line.substr(0, first);
  const std::string_view target = line.substr(first + 1, second - first - 1);
  const std::string_view version = line.substr(second + 1);
  if (!IsToken(method)) return Reject(400, "malformed method");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return Reject(505, "only HTTP/1.0 and 1.1 are spoken");
  if (target.empty() || target.front() != '/' || HasControlCharacters(target)) {
    return Reject(400, "the request target must be an absolute path");
  }
  request_.method = std::string(method);
  const std::size_t question = target.find('?');
  request_.path = std::string(target.substr(0, question));
  if (question != std::string_view::npos) request_.query = std::string(target.substr(question + 1));
  return true;
}

bool HttpParser::ParseHeaderLine(std::string_view line) {
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) return Reject(400, "malformed header line");
  const std::string_view value = Trim(line.substr(colon + 1));
  if (HasControlCharacters(value)) return Reject(400, "control character in a header value");
  const std::string name = Lower(line.substr(0, colon));
  if (name == "content-length" && request_.headers.count(name) != 0 && request_.headers[name] != value) {
    return Reject(400, "conflicting Content-Length headers");
  }
  request_.headers[name] = std::string(value);
  return true;
}

}  // namespace fgpu::net
