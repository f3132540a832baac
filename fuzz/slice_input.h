// The slice fuzzer's input format, shared by slice_files_fuzzer.cc (which decodes it into a slice
// directory) and slice_seeds.cc (which encodes real slices made by SliceAdmin::Create).
//
// A ledger is 82 KiB for one device and 1 MiB for sixteen, nearly all zeros (free slots); taken
// byte for byte, mutations would land in zeros and the corpus would weigh megabytes. So each file
// is its leading bytes plus a size: the file is those bytes, cut or zero-filled to the size.
//
//   offset 0  u8   kinds: bits 0-1 the limits file, bits 2-3 the ledger (FileKind)
//   offset 1  u16  limits file size
//   offset 3  u32  ledger file size (at most kMaxLedgerBytes)
//   offset 7  u16  how many of the following bytes are the limits file's; the rest are the ledger's
//   offset 9  ...  the limits file's leading bytes, then the ledger's
//
// Little-endian throughout. A short input reads as zeros where it ends.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fgpu::fuzz {

enum class FileKind : uint8_t {
  kRegular = 0,
  kMissing = 1,
  kFifo = 2,       // a named pipe: openers must not block on it
  kOtherLink = 3,  // limits: a directory; ledger: a symlink to the limits file
};

struct SliceInput {
  FileKind limits_kind = FileKind::kRegular;
  FileKind ledger_kind = FileKind::kRegular;
  uint32_t limits_size = 0;
  uint32_t ledger_size = 0;
  std::string_view limits_bytes;  // leading bytes; the file is these, cut or zero-filled to limits_size
  std::string_view ledger_bytes;
};

inline constexpr size_t kSliceInputHeader = 9;
inline constexpr uint32_t kMaxLedgerBytes = 2u << 20;  // twice a sixteen-device ledger

inline SliceInput DecodeSliceInput(std::string_view data) {
  uint8_t header[kSliceInputHeader] = {};
  for (size_t index = 0; index < kSliceInputHeader && index < data.size(); ++index) {
    header[index] = static_cast<uint8_t>(data[index]);
  }
  const auto u16 = [&](size_t at) { return static_cast<uint32_t>(header[at] | header[at + 1] << 8); };
  const auto u32 = [&](size_t at) { return u16(at) | u16(at + 2) << 16; };
  SliceInput input;
  input.limits_kind = static_cast<FileKind>(header[0] & 3);
  input.ledger_kind = static_cast<FileKind>(header[0] >> 2 & 3);
  input.limits_size = u16(1);
  input.ledger_size = u32(3) % (kMaxLedgerBytes + 1);
  const std::string_view rest =
      data.size() > kSliceInputHeader ? data.substr(kSliceInputHeader) : std::string_view();
  const size_t split = std::min<size_t>(u16(7), rest.size());
  input.limits_bytes = rest.substr(0, split);
  input.ledger_bytes = rest.substr(split);
  return input;
}

// The inverse, for the seed corpus; trailing zero bytes are left to the sizes.
inline std::string EncodeSliceInput(std::string_view limits, std::string_view ledger) {
  const auto trim = [](std::string_view bytes) {
    while (!bytes.empty() && bytes.back() == '\0') bytes.remove_suffix(1);
    return bytes;
  };
  const std::string_view limits_lead = trim(limits);
  const std::string_view ledger_lead = trim(ledger);
  std::string out(kSliceInputHeader, '\0');
  const auto put = [&](size_t at, uint32_t value, int bytes) {
    for (int index = 0; index < bytes; ++index)
      out[at + index] = static_cast<char>(value >> (8 * index) & 0xff);
  };
  put(1, static_cast<uint32_t>(limits.size()), 2);
  put(3, static_cast<uint32_t>(ledger.size()), 4);
  put(7, static_cast<uint32_t>(limits_lead.size()), 2);
  out.append(limits_lead);
  out.append(ledger_lead);
  return out;
}

}  // namespace fgpu::fuzz
