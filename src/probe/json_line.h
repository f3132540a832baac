// JsonLine: builds one JSON object, printed as one line on stdout.
//
// The probe's output is a contract parsed by the CLI, the tests and later tools,
// and the probe must build with no third-party library, so it writes JSON by hand.
//
// Contract
// - A JsonLine starts as {"event":"<name>" and Finish() closes every open object
//   and array. Keys are written as given (callers pass literals); string values are
//   escaped by AppendJsonString.
// - Begin*/End* nest objects and arrays. Inside an array, pass an empty key.
// - Non-finite doubles become null (JSON has no NaN or infinity).
// - Emit() writes the line plus '\n' to stdout and flushes, so a reader sees each
//   event as soon as it happens (the CLI waits for "mem_get_info" while we hold).
#ifndef FGPU_PROBE_JSON_LINE_H_
#define FGPU_PROBE_JSON_LINE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fgpu::probe {

// Appends `value` as a quoted JSON string. Control characters are escaped, and bytes
// that are not valid UTF-8 become U+FFFD, so the line always parses.
void AppendJsonString(std::string* out, std::string_view value);

class JsonLine {
 public:
  explicit JsonLine(std::string_view event);

  JsonLine& Str(std::string_view key, std::string_view value);
  JsonLine& Int(std::string_view key, int64_t value);
  JsonLine& Uint(std::string_view key, uint64_t value);
  JsonLine& Num(std::string_view key, double value);
  JsonLine& Bool(std::string_view key, bool value);
  JsonLine& Null(std::string_view key);

  JsonLine& BeginObject(std::string_view key);
  JsonLine& EndObject();
  JsonLine& BeginArray(std::string_view key);
  JsonLine& EndArray();

  // The finished object, without a newline. Closes whatever is still open.
  std::string Finish();
  void Emit();

 private:
  // Writes the separator and, outside arrays, the quoted key.
  void Key(std::string_view key);

  std::string text_;
  // One entry per open object/array: whether a member was already written.
  std::vector<bool> has_member_;
  std::vector<char> closers_;
};

}  // namespace fgpu::probe

#endif  // FGPU_PROBE_JSON_LINE_H_
