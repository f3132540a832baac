#include "sim/cuda/ptx_image.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

namespace fgpu::sim::cuda {
namespace {

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.';
}

// The PTX text without comments.
std::string StripComments(std::string_view ptx) {
  std::string out;
  out.reserve(ptx.size());
  for (size_t i = 0; i < ptx.size(); ++i) {
    if (ptx.compare(i, 2, "//") == 0) {
      while (i < ptx.size() && ptx[i] != '\n') ++i;
      out.push_back('\n');
    } else if (ptx.compare(i, 2, "/*") == 0) {
      const size_t end = ptx.find("*/", i + 2);
      i = end == std::string_view::npos ? ptx.size() : end + 1;
      out.push_back(' ');
    } else {
      out.push_back(ptx[i]);
    }
  }
  return out;
}

std::vector<std::string> Tokens(std::string_view text) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (IsNameChar(c)) {
      size_t end = i;
      while (end < text.size() && IsNameChar(text[end])) ++end;
      tokens.emplace_back(text.substr(i, end - i));
      i = end;
    } else {
      tokens.emplace_back(1, c);
      ++i;
    }
  }
  return tokens;
}

// Bytes of a fundamental PTX type (.u32, .f64, .b8, ...); 0 if it is not one.
uint64_t TypeBytes(const std::string& type) {
  static const char* const kTypes[][2] = {
      {".b8", "1"},  {".u8", "1"},  {".s8", "1"},  {".b16", "2"}, {".u16", "2"}, {".s16", "2"}, {".f16", "2"},
      {".bf16", "2"}, {".b32", "4"}, {".u32", "4"}, {".s32", "4"}, {".f32", "4"}, {".f16x2", "4"},
      {".b64", "8"}, {".u64", "8"}, {".s64", "8"}, {".f64", "8"}, {".pred", "1"}, {".b128", "16"}};
  for (const auto& entry : kTypes) {
    if (type == entry[0]) return static_cast<uint64_t>(std::atoi(entry[1]));
  }
  return 0;
}

// One declarator's shape: `.align N`, `.vN`, a type, a name, `[n]...` dimensions. Reads
// tokens[at...] up to the name and its dimensions; returns false if it is not one.
struct Shape {
  uint64_t element = 0;  // bytes of one element (vector included)
  uint64_t align = 0;
  uint64_t count = 1;
  bool unsized = false;
  std::string name;
  std::string type;
};

bool ReadDimensions(const std::vector<std::string>& tokens, size_t* at, Shape* shape) {
  while (*at < tokens.size() && tokens[*at] == "[") {
    if (*at + 1 < tokens.size() && tokens[*at + 1] == "]") {
      shape->unsized = true;
      *at += 2;
      continue;
    }
    if (*at + 2 >= tokens.size() || tokens[*at + 2] != "]") return false;
    shape->count *= std::strtoull(tokens[*at + 1].c_str(), nullptr, 0);
    *at += 3;
  }
  return true;
}

bool ReadShape(const std::vector<std::string>& tokens, size_t* at, Shape* shape) {
  uint64_t vector = 1;
  for (; *at < tokens.size(); ++*at) {
    const std::string& t = tokens[*at];
    if (t == ".align" && *at + 1 < tokens.size()) {
      shape->align = std::strtoull(tokens[++*at].c_str(), nullptr, 0);
    } else if (t == ".v2" || t == ".v4" || t == ".v8") {
      vector = static_cast<uint64_t>(t[2] - '0');
    } else if (t.rfind(".ptr", 0) == 0 || t == ".visible" || t == ".weak" || t == ".global" || t == ".const" ||
               t == ".param") {
      continue;  // pointer annotations and state spaces
    } else if (TypeBytes(t) != 0) {
      shape->type = t;
      shape->element = TypeBytes(t) * vector;
    } else if (t[0] != '.' && IsNameChar(t[0])) {
      if (shape->element == 0) return false;
      shape->name = t;
      ++*at;
      if (!ReadDimensions(tokens, at, shape)) return false;
      if (shape->align == 0) shape->align = shape->element;
      return true;
    } else if (t == ".attribute") {
      while (*at < tokens.size() && tokens[*at] != ")") ++*at;
    } else {
      return false;
    }
  }
  return false;
}

uint64_t AlignUp(uint64_t value, uint64_t align) { return align <= 1 ? value : (value + align - 1) / align * align; }

// `= v` or `= {v, ...}` for a scalar type: the values written in the element type; empty if
// the initializer is anything else (addresses, nested braces of vectors).
std::vector<uint8_t> Initial(const std::vector<std::string>& tokens, size_t at, const Shape& shape) {
  std::vector<uint8_t> bytes;
  const uint64_t width = TypeBytes(shape.type);
  if (width == 0 || width > 8 || shape.element != width) return {};
  const bool floating = shape.type[1] == 'f';
  for (; at < tokens.size(); ++at) {
    std::string t = tokens[at];
    if (t == "{" || t == "}" || t == ",") continue;
    bool negative = false;
    if (t == "-" && at + 1 < tokens.size()) {
      negative = true;
      t = tokens[++at];
    }
    // PTX float literals: 0fXXXXXXXX (bits of an f32) and 0dXXXXXXXXXXXXXXXX (f64).
    uint64_t bits = 0;
    char* end = nullptr;
    if (t.size() > 2 && t[0] == '0' && (t[1] == 'f' || t[1] == 'F' || t[1] == 'd' || t[1] == 'D')) {
      bits = std::strtoull(t.c_str() + 2, &end, 16);
    } else if (floating || t.find_first_of(".eE") != std::string::npos) {
      const double value = std::strtod(t.c_str(), &end) * (negative ? -1 : 1);
      if (width == 4) {
        const auto f = static_cast<float>(value);
        uint32_t b = 0;
        std::memcpy(&b, &f, sizeof b);
        bits = b;
      } else {
        std::memcpy(&bits, &value, sizeof bits);
      }
      negative = false;
    } else {
      bits = std::strtoull(t.c_str(), &end, 0);
    }
    if (end == nullptr || *end != '\0') return {};
    if (negative) bits = ~bits + 1;
    const size_t offset = bytes.size();
    bytes.resize(offset + width);
    std::memcpy(bytes.data() + offset, &bits, width);  // little-endian, as the device
  }
  if (bytes.size() > shape.element * shape.count) bytes.resize(shape.element * shape.count);
  return bytes;
}

// A module-scope statement (no function body): a variable, a texture or surface reference.
void ReadStatement(std::vector<std::string> tokens, PtxImage* image) {
  // Directives without a semicolon (.version, .target, .address_size) may precede it.
  const auto begin = std::find_if(tokens.begin(), tokens.end(), [](const std::string& t) {
    return t == ".visible" || t == ".weak" || t == ".extern" || t == ".global" || t == ".const";
  });
  tokens.erase(tokens.begin(), begin);
  if (tokens.empty()) return;
  if (std::find(tokens.begin(), tokens.end(), ".extern") != tokens.end()) return;
  const bool global = std::find(tokens.begin(), tokens.end(), ".global") != tokens.end();
  const bool constant = std::find(tokens.begin(), tokens.end(), ".const") != tokens.end();
  if (!global && !constant) return;
  for (const char* kind : {".texref", ".surfref", ".samplerref"}) {
    const auto found = std::find(tokens.begin(), tokens.end(), kind);
    if (found != tokens.end() && found + 1 != tokens.end()) {
      if (std::strcmp(kind, ".texref") == 0) image->texrefs.push_back(*(found + 1));
      if (std::strcmp(kind, ".surfref") == 0) image->surfrefs.push_back(*(found + 1));
      return;
    }
  }
  const bool managed = std::find(tokens.begin(), tokens.end(), ".managed") != tokens.end();
  size_t at = 0;
  Shape first;
  if (!ReadShape(tokens, &at, &first)) return;
  auto add = [&](const Shape& shape, size_t init_at) {
    if (shape.unsized && init_at == 0) return;  // size unknown
    PtxVariable variable;
    variable.name = shape.name;
    variable.align = std::max<uint64_t>(shape.align, 1);
    variable.constant = constant;
    variable.managed = managed;
    if (init_at != 0) variable.init = Initial(tokens, init_at, shape);
    variable.size = shape.unsized ? variable.init.size() : shape.element * shape.count;
    if (variable.size != 0) image->variables.push_back(std::move(variable));
  };
  // `name[dims] [= init] [, name[dims] [= init]]...`: later declarators share the type.
  Shape shape = first;
  for (;;) {
    size_t init_at = 0;
    size_t next = at;
    if (next < tokens.size() && tokens[next] == "=") {
      init_at = next + 1;
      int depth = 0;
      for (++next; next < tokens.size(); ++next) {
        if (tokens[next] == "{") ++depth;
        if (tokens[next] == "}") --depth;
        if (tokens[next] == "," && depth == 0) break;
      }
    }
    add(shape, init_at);
    if (next >= tokens.size() || tokens[next] != ",") return;
    at = next + 1;
    Shape following;
    following.element = first.element;
    following.align = first.align;
    following.type = first.type;
    if (at >= tokens.size()) return;
    following.name = tokens[at++];
    if (!ReadDimensions(tokens, &at, &following)) return;
    shape = following;
  }
}

// `.entry name ( .param ..., ... )`: the layout of the parameter buffer.
void ReadEntry(const std::vector<std::string>& tokens, PtxImage* image) {
  const auto found = std::find(tokens.begin(), tokens.end(), ".entry");
  if (found == tokens.end() || found + 1 == tokens.end()) return;
  PtxEntry entry;
  entry.name = *(found + 1);
  auto open = std::find(found, tokens.end(), "(");
  if (open != tokens.end()) {
    std::vector<std::string> param;
    uint64_t offset = 0;
    auto flush = [&] {
      size_t at = 0;
      Shape shape;
      if (!param.empty() && ReadShape(param, &at, &shape)) {
        offset = AlignUp(offset, shape.align);
        entry.params.push_back({offset, shape.element * shape.count});
        offset += shape.element * shape.count;
      }
      param.clear();
    };
    for (auto it = open + 1; it != tokens.end() && *it != ")"; ++it) {
      if (*it == ",") {
        flush();
      } else {
        param.push_back(*it);
      }
    }
    flush();
  }
  image->entries.push_back(std::move(entry));
}

}  // namespace

PtxImage ParsePtx(std::string_view ptx) {
  PtxImage image;
  const std::string text = StripComments(ptx);
  int depth = 0;              // function bodies
  int initializer_depth = 0;  // braces of a module-scope initializer
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{') {
      if (depth == 0) {
        const std::vector<std::string> header = Tokens(std::string_view(text).substr(start, i - start));
        if (initializer_depth > 0 || std::find(header.begin(), header.end(), "=") != header.end()) {
          ++initializer_depth;  // part of the statement
          continue;
        }
        if (std::find(header.begin(), header.end(), ".entry") != header.end()) ReadEntry(header, &image);
      }
      ++depth;
    } else if (c == '}') {
      if (depth == 0 && initializer_depth > 0) {
        --initializer_depth;
        continue;
      }
      if (depth > 0) --depth;
      if (depth == 0) start = i + 1;
    } else if (c == ';' && depth == 0 && initializer_depth == 0) {
      const std::vector<std::string> statement = Tokens(std::string_view(text).substr(start, i - start));
      if (std::find(statement.begin(), statement.end(), ".entry") != statement.end()) {
        ReadEntry(statement, &image);  // a declaration without a body
      } else {
        ReadStatement(statement, &image);
      }
      start = i + 1;
    }
  }
  return image;
}

}  // namespace fgpu::sim::cuda
