#include "cli/probe_client.h"

#include <algorithm>
#include <ranges>

namespace fgpu::cli {

namespace {

constexpr size_t kQuoteLimit = 300;  // keep error messages readable when quoting probe output

std::string Quote(const std::string& text) {
  return text.size() <= kQuoteLimit ? text : text.substr(0, kQuoteLimit) + "...";
}

}  // namespace

const nlohmann::json* FindLastEvent(const std::vector<nlohmann::json>& events, std::string_view name) {
  auto newest_first = events | std::views::reverse;
  auto found = std::ranges::find_if(newest_first, [name](const nlohmann::json& event) {
    return event["event"].get_ref<const std::string&>() == name;
  });
  return found == newest_first.end() ? nullptr : &*found;
}

const nlohmann::json* EventReader::Find(std::string_view path) const {
  const nlohmann::json* node = &event_;
  while (!path.empty()) {
    const size_t dot = path.find('.');
    if (!node->is_object()) return nullptr;
    auto child = node->find(std::string(path.substr(0, dot)));
    if (child == node->end()) return nullptr;
    node = &*child;
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return node;
}

void EventReader::Fail(std::string_view path, const char* expected) {
  if (!status_.ok()) return;  // the first error is the useful one
  status_ = Status::Corrupt("fgpu-probe event lacks " + std::string(expected) + " field '" +
                            std::string(path) + "': " + Quote(event_.dump()));
}

uint64_t EventReader::Uint(std::string_view path) {
  const nlohmann::json* field = Find(path);
  // nlohmann stores every non-negative integer as unsigned, so this rejects only misfits.
  if (field != nullptr && field->is_number_unsigned()) return field->get<uint64_t>();
  Fail(path, "a non-negative integer");
  return 0;
}

double EventReader::Number(std::string_view path) {
  const nlohmann::json* field = Find(path);
  if (field != nullptr && field->is_number()) return field->get<double>();
  Fail(path, "a numeric");
  return 0;
}

std::string EventReader::String(std::string_view path) {
  const nlohmann::json* field = Find(path);
  if (field != nullptr && field->is_string()) return field->get<std::string>();
  Fail(path, "a string");
  return {};
}

bool EventReader::Bool(std::string_view path) {
  const nlohmann::json* field = Find(path);
  if (field != nullptr && field->is_boolean()) return field->get<bool>();
  Fail(path, "a boolean");
  return false;
}

const nlohmann::json& EventReader::Array(std::string_view path) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json* field = Find(path);
  if (field != nullptr && field->is_array()) return *field;
  Fail(path, "an array");
  return kEmpty;
}

Result<const nlohmann::json*> ProbeProcess::ReadEvent(Deadline deadline) {
  Result<std::optional<std::string>> line = child_.ReadLine(deadline);
  if (!line.ok()) return Status::Unavailable(description_ + ": " + line.status().message());
  if (!line->has_value()) return static_cast<const nlohmann::json*>(nullptr);
  nlohmann::json event = nlohmann::json::parse(**line, nullptr, /*allow_exceptions=*/false);
  if (event.is_discarded() || !event.is_object() || !event.contains("event") || !event["event"].is_string()) {
    return Status::Corrupt(description_ + " printed a line that is not a JSON event: " + Quote(**line));
  }
  events_.push_back(std::move(event));
  return &events_.back();
}

std::string ProbeProcess::ExitDescription(Deadline deadline) {
  Result<int> status = child_.Wait(deadline);
  if (!status.ok()) return status.status().message();
  return "exit status " + std::to_string(*status);
}

Result<nlohmann::json> ProbeProcess::WaitForEvent(std::string_view event, Deadline deadline) {
  while (true) {
    Result<const nlohmann::json*> next = ReadEvent(deadline);
    if (!next.ok()) return next.status();
    if (*next == nullptr) {
      return Status::Unavailable(description_ + " ended before printing a '" + std::string(event) +
                                 "' event (" + ExitDescription(deadline) + ")");
    }
    if ((**next)["event"].get_ref<const std::string&>() == event) return **next;
  }
}

Status ProbeProcess::Finish(Deadline deadline) {
  while (true) {
    Result<const nlohmann::json*> next = ReadEvent(deadline);
    if (!next.ok()) return next.status();
    if (*next == nullptr) break;
  }
  Result<int> status = child_.Wait(deadline);
  if (!status.ok()) return Status::Unavailable(description_ + ": " + status.status().message());
  if (*status != 0) {
    std::string message = description_ + " failed with exit status " + std::to_string(*status);
    if (!events_.empty()) message += "; its last event: " + Quote(events_.back().dump());
    return Status::Unavailable(message);
  }
  return Status::Ok();
}

const nlohmann::json* ProbeProcess::LastEvent(std::string_view event) const {
  return FindLastEvent(events_, event);
}

Result<ProbeProcess> ProbeClient::Start(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {probe_path_};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string description = "fgpu-probe";
  for (const std::string& arg : args) description += " " + arg;
  Result<ChildProcess> child = ChildProcess::Spawn(argv);
  if (!child.ok()) return child.status();
  return ProbeProcess(std::move(child).value(), std::move(description));
}

Result<std::vector<nlohmann::json>> ProbeClient::Run(const std::vector<std::string>& args,
                                                     Deadline deadline) const {
  Result<ProbeProcess> probe = Start(args);
  if (!probe.ok()) return probe.status();
  Status finished = probe->Finish(deadline);
  if (!finished.ok()) return finished;
  return probe->events();
}

}  // namespace fgpu::cli
