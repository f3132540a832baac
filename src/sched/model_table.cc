#include "sched/model_table.h"

namespace fgpu::sched {

Result<int> ModelTable::Intern(std::string_view name) {
  if (name.empty()) return Status::InvalidArgument("a GPU model name is empty");
  if (std::optional<int> known = Find(name)) return *known;
  if (size() == kMaxModels) {
    return Status::InvalidArgument("more than " + std::to_string(kMaxModels) + " GPU models (adding '" +
                                   std::string(name) + "')");
  }
  names_.emplace_back(name);
  return size() - 1;
}

std::optional<int> ModelTable::Find(std::string_view name) const {
  for (size_t index = 0; index < names_.size(); ++index) {
    if (names_[index] == name) return static_cast<int>(index);
  }
  return std::nullopt;
}

ModelTable::ParsedSet ModelTable::ParseSet(std::string_view list) const {
  ParsedSet parsed;
  if (list.empty()) return parsed;
  parsed.set = 0;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find('|', start);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view name = list.substr(start, end - start);
    if (!name.empty()) {
      if (std::optional<int> model = Find(name)) {
        parsed.set |= ModelSet{1} << *model;
      } else {
        parsed.unknown.emplace_back(name);
      }
    }
    start = end + 1;
  }
  return parsed;
}

}  // namespace fgpu::sched
