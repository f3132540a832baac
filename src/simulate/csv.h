// A small CSV reader for traces: a header row naming the columns, then one record per line.
// Fields may be quoted ("a,b", "" for a quote); lines may end in CRLF; blank lines are
// skipped. Every error names the file and line, e.g. "pods.csv:17: expected 5 fields, found 4".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fgpu::simulate {

struct CsvRow {
  int line = 0;  // 1-based line number in the file
  std::vector<std::string> fields;
};

struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<CsvRow> rows;

  // The index of a column, or nullopt.
  std::optional<size_t> Column(std::string_view name) const;
  // "path:line: " for messages about a row.
  std::string Where(const CsvRow& row) const;
};

// Unavailable if the file cannot be read; InvalidArgument (with file:line) if it is not CSV
// with a header and rows of the header's width.
Result<CsvTable> ReadCsv(const std::string& path);

// Parses a whole field as a base-10 integer within [min, max]; InvalidArgument naming the
// column and the text otherwise.
Result<int64_t> ParseIntField(std::string_view text, std::string_view column, int64_t min, int64_t max);

}  // namespace fgpu::simulate
