#include "simulate/authors.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>

#include "simulate/csv.h"

namespace fgpu::simulate {

namespace {

// "06-FGD" → "FGD".
std::string PolicyName(std::string_view label) {
  const size_t dash = label.find('-');
  if (dash != std::string_view::npos && dash > 0 && std::isdigit(static_cast<unsigned char>(label[0]))) {
    label.remove_prefix(dash + 1);
  }
  return std::string(label);
}

}  // namespace

std::string TraceName(std::string_view pods_path) { return std::filesystem::path(pods_path).stem().string(); }

Result<AuthorsResults> AuthorsResults::Load(const std::string& path) {
  Result<CsvTable> table = ReadCsv(path);
  if (!table.ok()) return table.status();
  const std::optional<size_t> workload = table->Column("workload");
  const std::optional<size_t> policy = table->Column("sc_policy");
  const std::optional<size_t> first_bin = table->Column("0");
  if (!workload || !policy || !first_bin) {
    return Status::InvalidArgument(path + ":1: expected columns workload, sc_policy and 0..130");
  }
  // Columns from "0" on are arrival percentages; their header says which.
  std::vector<int> arrived_of_column(table->header.size(), -1);
  int last_arrived = 0;
  for (size_t column = *first_bin; column < table->header.size(); ++column) {
    Result<int64_t> arrived = ParseIntField(table->header[column], "header", 0, 1000);
    if (!arrived.ok()) return Status::InvalidArgument(path + ":1: " + arrived.status().message());
    arrived_of_column[column] = static_cast<int>(*arrived);
    last_arrived = std::max(last_arrived, arrived_of_column[column]);
  }
  AuthorsResults results;
  for (const CsvRow& row : table->rows) {
    std::vector<double> allocation(static_cast<size_t>(last_arrived) + 1,
                                   std::numeric_limits<double>::quiet_NaN());
    for (size_t column = *first_bin; column < row.fields.size(); ++column) {
      const std::string& text = row.fields[column];
      if (text.empty()) continue;
      double value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error != std::errc() || end != text.data() + text.size()) {
        return Status::InvalidArgument(table->Where(row) + "'" + text + "' is not a number");
      }
      allocation[static_cast<size_t>(arrived_of_column[column])] = value;
    }
    results.runs_[{row.fields[*workload], PolicyName(row.fields[*policy])}].push_back(std::move(allocation));
  }
  return results;
}

std::optional<SeedStat> AuthorsResults::Unallocated(std::string_view trace, std::string_view policy,
                                                    int arrived_pct) const {
  const auto found = runs_.find({std::string(trace), std::string(policy)});
  if (found == runs_.end() || arrived_pct < 0) return std::nullopt;
  std::vector<double> values;
  for (const std::vector<double>& allocation : found->second) {
    const auto bin = static_cast<size_t>(arrived_pct);
    if (bin < allocation.size() && !std::isnan(allocation[bin])) values.push_back(100.0 - allocation[bin]);
  }
  if (values.empty()) return std::nullopt;
  return StatOf(values);
}

}  // namespace fgpu::simulate
