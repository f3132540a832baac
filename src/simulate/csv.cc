#include "simulate/csv.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fgpu::simulate {

namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

// Splits one line into fields; nullopt if a quoted field is not closed.
std::optional<std::vector<std::string>> SplitLine(std::string_view line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  bool was_quoted = false;
  for (size_t index = 0; index < line.size(); ++index) {
    const char c = line[index];
    if (quoted) {
      if (c == '"' && index + 1 < line.size() && line[index + 1] == '"') {
        field += '"';
        ++index;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"' && Trim(field).empty()) {
      quoted = true;
      was_quoted = true;
      field.clear();
    } else if (c == ',') {
      fields.emplace_back(was_quoted ? field : std::string(Trim(field)));
      field.clear();
      was_quoted = false;
    } else {
      field += c;
    }
  }
  if (quoted) return std::nullopt;
  fields.emplace_back(was_quoted ? field : std::string(Trim(field)));
  return fields;
}

}  // namespace

std::optional<size_t> CsvTable::Column(std::string_view name) const {
  for (size_t index = 0; index < header.size(); ++index) {
    if (header[index] == name) return index;
  }
  return std::nullopt;
}

std::string CsvTable::Where(const CsvRow& row) const { return path + ":" + std::to_string(row.line) + ": "; }

Result<CsvTable> ReadCsv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Unavailable("cannot read " + path + ": " + std::strerror(errno));
  CsvTable table;
  table.path = path;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (Trim(line).empty()) continue;
    std::optional<std::vector<std::string>> fields = SplitLine(line);
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (!fields) return Status::InvalidArgument(where + "a quoted field is not closed");
    if (table.header.empty()) {
      table.header = std::move(*fields);
      constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
      if (table.header[0].starts_with(kByteOrderMark)) table.header[0].erase(0, kByteOrderMark.size());
      continue;
    }
    if (fields->size() != table.header.size()) {
      return Status::InvalidArgument(where + "expected " + std::to_string(table.header.size()) +
                                     " fields (as the header), found " + std::to_string(fields->size()));
    }
    table.rows.push_back({number, std::move(*fields)});
  }
  if (in.bad()) return Status::Unavailable("error reading " + path);
  if (table.header.empty()) return Status::InvalidArgument(path + ": empty file (no header row)");
  return table;
}

Result<int64_t> ParseIntField(std::string_view text, std::string_view column, int64_t min, int64_t max) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string quoted = "column " + std::string(column) + " '" + std::string(text) + "'";
  if (text.empty()) return Status::InvalidArgument("column " + std::string(column) + " is empty");
  if (error == std::errc::result_out_of_range) return Status::InvalidArgument(quoted + " is out of range");
  if (error != std::errc() || end != text.data() + text.size()) {
    return Status::InvalidArgument(quoted + " is not an integer");
  }
  if (value < min || value > max) {
    return Status::InvalidArgument(quoted + " is outside " + std::to_string(min) + ".." +
                                   std::to_string(max));
  }
  return value;
}

}  // namespace fgpu::simulate
