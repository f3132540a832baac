#include "probe/json_line.h"

#include <cmath>
#include <cstdio>

namespace fgpu::probe {

namespace {

// Length of the valid UTF-8 sequence starting at `at`, or 0 if it is invalid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t Utf8SequenceLength(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  size_t length = 0;
  uint32_t code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code = lead & 0x0Fu;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code = lead & 0x07u;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0u) != 0x80u) return 0;
    code = (code << 6) | (byte(at + i) & 0x3Fu);
  }
  if ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000)) return 0;
  if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view value) {
  out->push_back('"');
  for (size_t i = 0; i < value.size();) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c >= 0x80) {
      const size_t length = Utf8SequenceLength(value, i);
      if (length == 0) {
        out->append("\\ufffd");
        ++i;
      } else {
        out->append(value.substr(i, length));
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out->append(escaped);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out->push_back('"');
}

// text_ starts from push_back rather than `= "{"`: GCC 12 at -O3 reports a false
// -Wrestrict on that assignment (GCC bug 105329).
JsonLine::JsonLine(std::string_view event) {
  text_.push_back('{');
  has_member_.push_back(false);
  closers_.push_back('}');
  Str("event", event);
}

void JsonLine::Key(std::string_view key) {
  if (has_member_.back()) text_.push_back(',');
  has_member_.back() = true;
  if (closers_.back() == '}') {
    AppendJsonString(&text_, key);
    text_.push_back(':');
  }
}

JsonLine& JsonLine::Str(std::string_view key, std::string_view value) {
  Key(key);
  AppendJsonString(&text_, value);
  return *this;
}

JsonLine& JsonLine::Int(std::string_view key, int64_t value) {
  Key(key);
  text_.append(std::to_string(value));
  return *this;
}

JsonLine& JsonLine::Uint(std::string_view key, uint64_t value) {
  Key(key);
  text_.append(std::to_string(value));
  return *this;
}

JsonLine& JsonLine::Num(std::string_view key, double value) {
  if (!std::isfinite(value)) return Null(key);
  Key(key);
  // %.10g keeps microsecond resolution on values of hours while printing round
  // numbers (50, 1.5) without noise. The probe never calls setlocale, so the decimal
  // separator is always '.'.
  char number[32];
  std::snprintf(number, sizeof(number), "%.10g", value);
  text_.append(number);
  return *this;
}

JsonLine& JsonLine::Bool(std::string_view key, bool value) {
  Key(key);
  text_.append(value ? "true" : "false");
  return *this;
}

JsonLine& JsonLine::Null(std::string_view key) {
  Key(key);
  text_.append("null");
  return *this;
}

JsonLine& JsonLine::BeginObject(std::string_view key) {
  Key(key);
  text_.push_back('{');
  has_member_.push_back(false);
  closers_.push_back('}');
  return *this;
}

JsonLine& JsonLine::BeginArray(std::string_view key) {
  Key(key);
  text_.push_back('[');
  has_member_.push_back(false);
  closers_.push_back(']');
  return *this;
}

JsonLine& JsonLine::EndObject() {
  if (closers_.size() > 1 && closers_.back() == '}') {
    text_.push_back('}');
    closers_.pop_back();
    has_member_.pop_back();
  }
  return *this;
}

JsonLine& JsonLine::EndArray() {
  if (closers_.back() == ']') {
    text_.push_back(']');
    closers_.pop_back();
    has_member_.pop_back();
  }
  return *this;
}

std::string JsonLine::Finish() {
  std::string line = text_;
  for (auto it = closers_.rbegin(); it != closers_.rend(); ++it) line.push_back(*it);
  return line;
}

void JsonLine::Emit() {
  const std::string line = Finish() + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

}  // namespace fgpu::probe
