// What the simulator reads from a PTX image: its kernels (`.entry`) with their parameter
// layout, its module-scope variables (`.global`, `.const`, with sizes, alignment, managed
// attribute and initial values) and its texture and surface references. Binary images (cubin,
// fatbin) are not read. Pure text processing, no driver state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fgpu::sim::cuda {

struct PtxParam {
  uint64_t offset = 0;  // in the kernel's parameter buffer
  uint64_t size = 0;
};

struct PtxEntry {
  std::string name;
  std::vector<PtxParam> params;
};

struct PtxVariable {
  std::string name;
  uint64_t size = 0;
  uint64_t align = 1;
  bool constant = false;      // .const (else .global)
  bool managed = false;       // .attribute(.managed)
  std::vector<uint8_t> init;  // initial bytes (empty: zero)
};

struct PtxImage {
  std::vector<PtxEntry> entries;  // in image order
  std::vector<PtxVariable> variables;
  std::vector<std::string> texrefs;
  std::vector<std::string> surfrefs;
};

// Reads what it recognises; anything else is skipped. Declarations with .extern (defined
// elsewhere) and variables of unknown size are left out.
PtxImage ParsePtx(std::string_view ptx);

}  // namespace fgpu::sim::cuda
