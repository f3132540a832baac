#include "k8s/client/yaml_subset.h"

#include <cstddef>
#include <string>
#include <vector>

namespace fgpu::k8s {
namespace {

struct Line {
  int number;   // 1-based, for messages
  int indent;   // leading spaces
  std::string text;  // without indentation, comments and trailing spaces
};

Status LineError(int number, const std::string& what) {
  return Status::InvalidArgument("yaml line " + std::to_string(number) + ": " + what);
}

// Strips a trailing comment: '#' at the start or after a space, outside quotes.
std::string StripComment(const std::string& s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\' && quote == '"') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      if (i == 0 || s[i - 1] == ' ' || s[i - 1] == ':' || s[i - 1] == '-') quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ')) {
      return s.substr(0, i);
    }
  }
  return s;
}

std::string TrimRight(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
  return s;
}

Result<std::vector<Line>> SplitLines(std::string_view text) {
  std::vector<Line> lines;
  int number = 0;
  size_t pos = 0;
  bool seen_content = false;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string raw(text.substr(pos, end - pos));
    pos = end + 1;
    ++number;
    size_t indent = raw.find_first_not_of(' ');
    if (indent == std::string::npos) continue;
    if (raw[indent] == '\t') return LineError(number, "tab in indentation");
    std::string body = TrimRight(StripComment(raw.substr(indent)));
    if (body.empty()) continue;
    if (body == "---") {
      if (seen_content) return LineError(number, "more than one YAML document");
      continue;
    }
    if (body == "...") continue;
    seen_content = true;
    lines.push_back({number, static_cast<int>(indent), body});
    if (end == text.size()) break;
  }
  return lines;
}

// Position of the ':' that ends a mapping key ("key: value" or "key:"), or npos.
size_t KeyColon(const std::string& s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\' && quote == '"') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if ((c == '"' || c == '\'') && i == 0) {
      quote = c;
    } else if (c == ':' && (i + 1 == s.size() || s[i + 1] == ' ')) {
      return i;
    }
  }
  return std::string::npos;
}

bool IsSequenceItem(const std::string& s) { return s == "-" || s.rfind("- ", 0) == 0; }

Result<std::string> Unquote(const std::string& s, int number) {
  char q = s[0];
  if (s.size() < 2 || s.back() != q) return LineError(number, "unterminated quoted scalar");
  std::string out;
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    char c = s[i];
    if (q == '\'' && c == '\'') {
      if (s[i + 1] != '\'' || i + 2 == s.size()) return LineError(number, "stray quote in scalar");
      out += '\'';
      ++i;
    } else if (q == '"' && c == '\\') {
      char e = s[++i];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case '\\': out += '\\'; break;
        case '"': out += '"'; break;
        case '/': out += '/'; break;
        default: return LineError(number, std::string("unsupported escape \\") + e);
      }
    } else if (q == '"' && c == '"') {
      return LineError(number, "stray quote in scalar");
    } else {
      out += c;
    }
  }
  return out;
}

Result<nlohmann::json> Scalar(const std::string& s, int number) {
  if (s.empty()) return nlohmann::json(nullptr);
  char c = s[0];
  if (c == '"' || c == '\'') {
    auto text = Unquote(s, number);
    if (!text) return text.status();
    return nlohmann::json(*text);
  }
  if (s == "{}") return nlohmann::json::object();
  if (s == "[]") return nlohmann::json::array();
  if (c == '&' || c == '*' || c == '!' || c == '|' || c == '>' || c == '{' || c == '[' || c == '%' ||
      c == '@' || c == '`') {
    return LineError(number, "unsupported YAML construct '" + s + "' (the kubeconfig subset has plain "
                             "and quoted scalars, block mappings and block sequences)");
  }
  if (s == "true" || s == "True" || s == "TRUE") return nlohmann::json(true);
  if (s == "false" || s == "False" || s == "FALSE") return nlohmann::json(false);
  if (s == "null" || s == "~" || s == "Null" || s == "NULL") return nlohmann::json(nullptr);
  return nlohmann::json(s);
}

class Parser {
 public:
  explicit Parser(std::vector<Line> lines) : lines_(std::move(lines)) {}

  Result<nlohmann::json> Document() {
    if (lines_.empty()) return nlohmann::json::object();
    auto root = Node(lines_[0].indent);
    if (!root) return root;
    if (at_ < lines_.size()) return LineError(lines_[at_].number, "unexpected indentation");
    return root;
  }

 private:
  Result<nlohmann::json> Node(int indent) {
    const Line& line = lines_[at_];
    if (IsSequenceItem(line.text)) return Sequence(indent);
    if (KeyColon(line.text) != std::string::npos) return Mapping(indent);
    ++at_;
    return Scalar(line.text, line.number);
  }

  // The value after "key:" with nothing on its line: a nested block, or a sequence that may
  // sit at the key's own indentation (kubectl writes them so), or null.
  Result<nlohmann::json> NestedValue(int key_indent) {
    if (at_ >= lines_.size()) return nlohmann::json(nullptr);
    const Line& next = lines_[at_];
    if (next.indent > key_indent) return Node(next.indent);
    if (next.indent == key_indent && IsSequenceItem(next.text)) return Sequence(key_indent);
    return nlohmann::json(nullptr);
  }

  Result<nlohmann::json> Mapping(int indent) {
    nlohmann::json map = nlohmann::json::object();
    while (at_ < lines_.size() && lines_[at_].indent == indent && !IsSequenceItem(lines_[at_].text)) {
      const Line line = lines_[at_];
      size_t colon = KeyColon(line.text);
      if (colon == std::string::npos) return LineError(line.number, "expected 'key: value'");
      auto key = Scalar(line.text.substr(0, colon), line.number);
      if (!key) return key.status();
      if (!key->is_string()) return LineError(line.number, "mapping keys must be strings");
      std::string name = key->get<std::string>();
      if (map.contains(name)) return LineError(line.number, "duplicate key '" + name + "'");
      size_t value_at = line.text.find_first_not_of(' ', colon + 1);
      ++at_;
      Result<nlohmann::json> value = value_at == std::string::npos
                                         ? NestedValue(indent)
                                         : Scalar(line.text.substr(value_at), line.number);
      if (!value) return value.status();
      map[name] = std::move(*value);
    }
    if (at_ < lines_.size() && lines_[at_].indent > indent) {
      return LineError(lines_[at_].number, "unexpected indentation");
    }
    return map;
  }

  Result<nlohmann::json> Sequence(int indent) {
    nlohmann::json seq = nlohmann::json::array();
    while (at_ < lines_.size() && lines_[at_].indent == indent && IsSequenceItem(lines_[at_].text)) {
      Line& line = lines_[at_];
      if (line.text == "-") {
        ++at_;
        if (at_ < lines_.size() && lines_[at_].indent > indent) {
          auto item = Node(lines_[at_].indent);
          if (!item) return item;
          seq.push_back(std::move(*item));
        } else {
          seq.push_back(nullptr);
        }
        continue;
      }
      // "- rest": rest is a node starting at a column of its own; re-read it there.
      size_t rest = line.text.find_first_not_of(' ', 1);
      line.indent = indent + static_cast<int>(rest);
      line.text = line.text.substr(rest);
      auto item = Node(line.indent);
      if (!item) return item;
      seq.push_back(std::move(*item));
    }
    if (at_ < lines_.size() && lines_[at_].indent > indent) {
      return LineError(lines_[at_].number, "unexpected indentation");
    }
    return seq;
  }

  std::vector<Line> lines_;
  size_t at_ = 0;
};

}  // namespace

Result<nlohmann::json> ParseYamlSubset(std::string_view text) {
  auto lines = SplitLines(text);
  if (!lines) return lines.status();
  return Parser(std::move(*lines)).Document();
}

}  // namespace fgpu::k8s
