// Unit test of the probe's text handling: the SIZE parser and the JSON writer.
// Plain asserts in a tiny executable, so it builds in the dependency-free
// probe-only configuration too.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "probe/byte_size.h"
#include "probe/json_line.h"

namespace {

int failures = 0;

void Expect(bool condition, const std::string& what) {
  if (condition) return;
  std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  ++failures;
}

void ExpectSize(const char* text, uint64_t expected) {
  uint64_t bytes = 0;
  const bool parsed = fgpu::probe::ParseSize(text, &bytes);
  Expect(parsed && bytes == expected, std::string("ParseSize(\"") + text + "\") == " + std::to_string(expected) +
                                          " (got " + (parsed ? std::to_string(bytes) : "rejected") + ")");
}

void ExpectSizeRejected(const char* text) {
  uint64_t bytes = 7;
  Expect(!fgpu::probe::ParseSize(text, &bytes) && bytes == 7, std::string("ParseSize rejects \"") + text + "\"");
}

std::string Escaped(std::string_view value) {
  std::string out;
  fgpu::probe::AppendJsonString(&out, value);
  return out;
}

void ExpectEqual(const std::string& got, const std::string& expected, const char* what) {
  Expect(got == expected, std::string(what) + ": expected " + expected + ", got " + got);
}

void TestSizes() {
  ExpectSize("123", 123);
  ExpectSize("0", 0);
  ExpectSize("4KiB", 4096);
  ExpectSize("4k", 4096);
  ExpectSize("512MiB", 512ull << 20);
  ExpectSize("2GiB", 2ull << 30);
  ExpectSize("1.5GiB", 3ull << 29);
  ExpectSize("1G", 1ull << 30);
  ExpectSize("1g", 1ull << 30);
  ExpectSize("1 GiB", 1ull << 30);
  ExpectSize("1GB", 1000000000ull);
  ExpectSize("1.5KB", 1500);
  ExpectSize("0.5KiB", 512);
  ExpectSize(".5KiB", 512);
  ExpectSize("1.0005KiB", 1025);  // 1024.512 rounds to nearest
  ExpectSize("10B", 10);
  ExpectSize("2T", 2ull << 40);
  ExpectSize("18446744073709551615", UINT64_MAX);
  ExpectSize("0.000000000000000000000001GiB", 0);  // past 19 fraction digits: ignored
  ExpectSizeRejected("");
  ExpectSizeRejected("GiB");
  ExpectSizeRejected("-1");
  ExpectSizeRejected("+1");
  ExpectSizeRejected("1.5");
  ExpectSizeRejected("1.5B");
  ExpectSizeRejected("1.");
  ExpectSizeRejected("1e9");
  ExpectSizeRejected("1GiBx");
  ExpectSizeRejected("1 2");
  ExpectSizeRejected("1PiB");
  ExpectSizeRejected("18446744073709551616");
  ExpectSizeRejected("16777216T");  // 2^64
  ExpectSizeRejected(" 1");
}

void TestJson() {
  ExpectEqual(Escaped("plain"), "\"plain\"", "plain");
  ExpectEqual(Escaped("a\"b\\c"), "\"a\\\"b\\\\c\"", "quote and backslash");
  ExpectEqual(Escaped("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"", "short escapes");
  ExpectEqual(Escaped(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"", "control characters");
  ExpectEqual(Escaped(std::string("nul\0x", 5)), "\"nul\\u0000x\"", "embedded NUL");
  ExpectEqual(Escaped("/\x7f"), "\"/\x7f\"", "slash and DEL pass through");
  ExpectEqual(Escaped("H\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"H\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
              "valid UTF-8 passes through");
  ExpectEqual(Escaped("a\xff" "b"), "\"a\\ufffdb\"", "invalid byte");
  ExpectEqual(Escaped("\xc3"), "\"\\ufffd\"", "truncated sequence");
  ExpectEqual(Escaped("\xc0\xaf"), "\"\\ufffd\\ufffd\"", "overlong form");
  ExpectEqual(Escaped("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"", "surrogate");

  fgpu::probe::JsonLine line("info");
  line.Str("name", "GPU \"0\"").Int("neg", -3).Uint("big", UINT64_MAX).Num("half", 0.5).Num("nan", 0.0 / 0.0);
  line.BeginObject("nvml").Bool("available", true).BeginArray("processes");
  line.BeginObject("").Uint("pid", 1).Null("used").EndObject();
  line.BeginObject("").Uint("pid", 2).EndObject();
  line.EndArray().EndObject();
  line.BeginArray("shape").Uint("", 3).Uint("", 4);  // left open: Finish closes it
  ExpectEqual(line.Finish(),
              "{\"event\":\"info\",\"name\":\"GPU \\\"0\\\"\",\"neg\":-3,\"big\":18446744073709551615,\"half\":0.5,"
              "\"nan\":null,\"nvml\":{\"available\":true,\"processes\":[{\"pid\":1,\"used\":null},{\"pid\":2}]},"
              "\"shape\":[3,4]}",
              "JsonLine nesting");
}

}  // namespace

int main() {
  TestSizes();
  TestJson();
  if (failures != 0) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return EXIT_FAILURE;
  }
  std::puts("probe text tests passed");
  return EXIT_SUCCESS;
}
