// Status and Result<T>: the result types at fgpu's C++ boundaries.
//
// A Status is either OK or an error code with a human-readable message.
// OK holds no message and costs one enum. Result<T> holds a T or an error Status.
// Nothing here throws; C ABIs translate a Status to CUresult / nvmlReturn_t at
// the edge.
#pragma once

#include <cassert>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace fgpu {

enum class StatusCode : unsigned char {
  kOk = 0,
  kInvalidArgument,  // the caller's input is malformed
  kNotFound,         // a named thing does not exist
  kCorrupt,          // stored or shared data fails validation
  kVersionMismatch,  // data written by another format version
  kResourceExhausted,
  kUnavailable,      // a dependency (file, segment, driver) cannot be reached
  kInternal,
  kPermissionDenied,  // the caller may not do this (who asks, not what is asked)
  kAborted,           // lost a race (a conflicting write, an object changed since it was read): re-read, retry
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status Corrupt(std::string msg) { return {StatusCode::kCorrupt, std::move(msg)}; }
  static Status VersionMismatch(std::string msg) { return {StatusCode::kVersionMismatch, std::move(msg)}; }
  static Status ResourceExhausted(std::string msg) { return {StatusCode::kResourceExhausted, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  static Status PermissionDenied(std::string msg) { return {StatusCode::kPermissionDenied, std::move(msg)}; }
  static Status Aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
  // The same kind of error with another message (context added on the way up).
  static Status WithCode(StatusCode code, std::string msg) { return {code, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Result<T>: a value or an error. Construct from a T or from a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status error) : state_(std::move(error)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(state_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  const T& value() const& { return std::get<T>(state_); }
  T& value() & { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  Status status() const { return ok() ? Status::Ok() : std::get<Status>(state_); }

 private:
  std::variant<T, Status> state_;
};

// "what: <the reason errno gives>", for a system call that just failed.
inline std::string ErrnoMessage(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace fgpu
