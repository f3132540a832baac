// Fuzzes the agent's API handler, agent::Api::Handle (agent/api.h), with the requests the HTTP
// server would hand it: any method, target, headers and body, from root, ordinary users and TCP
// viewers. Behind it is a real SliceService and Store (SQLite) on two made-up GPUs, in a private
// directory under /dev/shm, set up as agent/api_test.cc's fixture does, afresh for every input:
// the Store keeps every deleted slice's usage records, so shared state would make later inputs
// slower (GET /v1/usage grows) and their outcome depend on earlier ones.
//
// Input: requests separated by a line "%%" (the form of fuzz/corpus/agent_api/):
//
//   POST /v1/slices?x=1 user         method, target, peer: root | user | other | tcp (default root)
//   content-type: application/json  headers: lines "name: value" (any number)
//   {"memory":"1GiB","wait":true}    the body: everything after the headers
//   %%
//   PATCH /v1/slices/$slice root     $slice: the last slice made; $ticket: the last queue ticket
//
// Checked on every request:
// - Handle never throws; its status is 2xx, 3xx or 4xx. 5xx only for a genuine storage failure:
//   when the private directory is still writable, a 5xx is a bug.
// - Where the content type says JSON, the body is valid JSON; an error is {"error": "..."}; 204
//   has no body; a 201 from POST /v1/slices is a slice that GET then finds.
// After every input: no GPU is booked past its memory or past 100 % compute (the room rules),
// and deleting every slice, queue ticket and exclusive mode it made leaves nothing behind.
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "agent/api.h"
#include "agent/slice_service.h"
#include "agent/store.h"
#include "net/http_message.h"

namespace {

namespace agent = fgpu::agent;
namespace net = fgpu::net;
using nlohmann::json;

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kGpuMemory = 80 * kGiB;
constexpr size_t kMaxRequests = 16;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "agent_api_fuzzer: %s %s\n", what, detail.c_str());
  std::abort();
}

void Expect(bool condition, const char* what, const std::string& detail = "") {
  if (!condition) Fail(what, detail);
}

// The agent's state for one input: a Store, SliceService and Api in a private directory.
struct Agent {
  Agent() {
    std::string pattern = "/dev/shm/fgpu-fuzz-agent-XXXXXX";
    Expect(::mkdtemp(pattern.data()) != nullptr, "mkdtemp");
    dir = pattern;
    fgpu::Result<std::unique_ptr<agent::Store>> opened = agent::Store::Open(dir + "/state.db");
    Expect(opened.ok(), "Store::Open:", opened.status().message());
    store = std::move(*opened);
    // Two shared GPUs, one of the exclusive class, one in MIG mode with two instances (docs/mig.md).
    std::vector<agent::GpuState> gpus = {{0, "GPU-aaaa", "H100", kGpuMemory, 0, 0},
                                         {1, "GPU-bbbb", "H100", kGpuMemory, 0, 0},
                                         {2, "GPU-cccc", "H100", kGpuMemory, 0, 0},
                                         {3, "GPU-dddd", "H100", kGpuMemory, 0, 0},
                                         {3, "MIG-eeee", "H100 MIG 3g.40gb", kGpuMemory / 2, 0, 0},
                                         {3, "MIG-ffff", "H100 MIG 2g.20gb", kGpuMemory / 4, 0, 0}};
    gpus[2].isolation = agent::IsolationClass::kExclusive;
    for (size_t i = 3; i < gpus.size(); ++i) gpus[i].isolation = agent::IsolationClass::kMig;
    gpus[4].parent_uuid = gpus[5].parent_uuid = "GPU-dddd";
    gpus[4].mig_profile = "3g.40gb";
    gpus[5].mig_profile = "2g.20gb";
    gpus[4].mig_start = 0;
    gpus[5].mig_start = 4;
    service = std::make_unique<agent::SliceService>(store.get(), gpus, dir + "/slices",
                                                    [](const agent::SliceRecord&) { return uint64_t{0}; });
    const fgpu::Status restored = service->Restore();
    Expect(restored.ok(), "Restore:", restored.message());
    api = std::make_unique<agent::Api>(service.get(), nullptr, dir + "/compute");
  }
  ~Agent() {
    api.reset();
    service.reset();
    store.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }

  // A 5xx is allowed only when storage really fails: the directory no longer takes a write.
  bool StorageFails() const {
    struct statvfs info {};
    if (::statvfs(dir.c_str(), &info) != 0 || info.f_bavail * info.f_frsize < (64u << 20)) return true;
    const std::string probe = dir + "/probe";
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return true;
    const std::string bytes(1 << 20, 'x');
    const bool written =
        ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()) && ::fsync(fd) == 0;
    ::close(fd);
    ::unlink(probe.c_str());
    return !written;
  }

  std::string dir;
  std::unique_ptr<agent::Store> store;
  std::unique_ptr<agent::SliceService> service;
  std::unique_ptr<agent::Api> api;
};

net::Peer PeerNamed(std::string_view name) {
  net::Peer peer;
  if (name == "tcp") {
    peer.address = "127.0.0.1:40000";
    return peer;
  }
  peer.unix_socket = true;
  peer.pid = ::getpid();  // alive, so release_on_exit and wait have an owner to watch
  peer.uid = name == "user" ? 1000 : name == "other" ? 1001 : 0;
  peer.gid = peer.uid;
  peer.address = "/run/fgpu/agent.sock";
  return peer;
}

std::string Replace(std::string text, std::string_view name, const std::string& value) {
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + value.size())) {
    text.replace(at, name.size(), value);
  }
  return text;
}

std::string_view NextLine(std::string_view& text) {
  const size_t end = text.find('\n');
  const std::string_view line = text.substr(0, end);
  text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  return line;
}

bool IsHeaderLine(std::string_view line) {
  const size_t colon = line.find(": ");
  if (colon == 0 || colon == std::string_view::npos) return false;
  for (char c : line.substr(0, colon)) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-')) return false;
  }
  return true;
}

struct Session {
  std::string last_slice = "none";
  std::string last_ticket = "none";
  std::vector<std::string> tickets;
};

net::HttpRequest ParseRequest(std::string_view text, const Session& session) {
  std::string_view line = NextLine(text);
  net::HttpRequest request;
  const size_t first = line.find(' ');
  request.method = std::string(line.substr(0, first));
  std::string_view rest = first == std::string_view::npos ? std::string_view() : line.substr(first + 1);
  const size_t second = rest.find(' ');
  std::string target = Replace(Replace(std::string(rest.substr(0, second)), "$slice", session.last_slice),
                               "$ticket", session.last_ticket);
  request.peer = PeerNamed(second == std::string_view::npos ? "root" : rest.substr(second + 1));
  const size_t question = target.find('?');
  request.path = target.substr(0, question);
  if (question != std::string::npos) request.query = target.substr(question + 1);
  while (!text.empty()) {
    std::string_view peek = text;
    const std::string_view header = NextLine(peek);
    if (!IsHeaderLine(header)) break;
    const size_t colon = header.find(": ");
    std::string name(header.substr(0, colon));
    for (char& c : name) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    request.headers[name] = std::string(header.substr(colon + 2));
    text = peek;
  }
  request.body = std::string(text);
  return request;
}

std::string Describe(const net::HttpRequest& request, const net::HttpResponse& response) {
  return request.method + " " + request.path + (request.query.empty() ? "" : "?" + request.query) + " -> " +
         std::to_string(response.status) + " " + response.body.substr(0, 400);
}

net::HttpResponse Call(Agent& agent, const net::HttpRequest& request) {
  net::HttpResponse response;
  try {
    response = agent.api->Handle(request);
  } catch (const std::exception& error) {
    Fail("Handle threw:", std::string(error.what()) + " on " + request.method + " " + request.path);
  } catch (...) {
    Fail("Handle threw a non-exception on", request.method + " " + request.path);
  }
  Expect(response.status >= 200 && response.status < 600, "status out of range", Describe(request, response));
  if (response.status >= 500) {
    Expect((response.status == 500 || response.status == 503) && agent.StorageFails(),
           "a 5xx while storage works:", Describe(request, response));
  }
  if (response.content_type.rfind("application/json", 0) == 0) {
    const json body = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
    Expect(!body.is_discarded(), "a JSON response that is not JSON:", Describe(request, response));
    if (response.status >= 400) {
      Expect(body.is_object() && body.contains("error") && body["error"].is_string(),
             "an error without \"error\":", Describe(request, response));
    }
  }
  if (response.status == 204)
    Expect(response.body.empty(), "a 204 with a body:", Describe(request, response));
  return response;
}

// The room rules (slice_service.h): memory caps within the GPU, shares within 100 %.
void CheckRooms(const Agent& agent) {
  std::map<std::string, std::pair<uint64_t, uint32_t>> booked;
  for (const agent::SliceRecord& slice : agent.service->List()) {
    auto& [memory, compute] = booked[slice.gpu_uuid];
    memory += slice.memory_bytes;
    compute += slice.compute_share;
    Expect(slice.compute_share >= 1 && slice.compute_share <= 100, "a slice's share", slice.id);
    Expect(slice.memory_bytes >= 1, "a slice without memory", slice.id);
  }
  const std::map<std::string, uint64_t> memory_of = {{"GPU-aaaa", kGpuMemory},
                                                    {"GPU-bbbb", kGpuMemory},
                                                    {"GPU-cccc", kGpuMemory},
                                                    {"MIG-eeee", kGpuMemory / 2},
                                                    {"MIG-ffff", kGpuMemory / 4}};
  for (const auto& [gpu, totals] : booked) {
    const auto target = memory_of.find(gpu);
    Expect(target != memory_of.end(), "a slice on an unknown GPU or on a GPU in MIG mode itself", gpu);
    Expect(totals.first <= target->second, "a GPU booked past its memory", gpu);
    Expect(totals.second <= 100, "a GPU booked past 100 % compute", gpu);
  }
}

// Back to empty GPUs out of exclusive mode and an empty queue, as an admin would undo the input.
void Reset(Agent& agent, const Session& session) {
  net::HttpRequest request;
  request.peer = PeerNamed("root");
  request.method = "DELETE";
  for (const std::string& ticket : session.tickets) {
    request.path = "/v1/queue/" + ticket;
    Call(agent, request);
  }
  for (int round = 0; round < 8; ++round) {
    const std::vector<agent::SliceRecord> slices = agent.service->List();
    if (slices.empty()) break;
    for (const agent::SliceRecord& slice : slices) {
      request.path = "/v1/slices/" + slice.id;
      Call(agent, request);
    }
  }
  Expect(agent.service->List().empty(), "slices left after deleting every slice and ticket");
  request.method = "PUT";
  request.body = R"({"exclusive":false})";
  for (const char* gpu : {"0", "1", "2", "3", "MIG-eeee", "MIG-ffff"}) {
    request.path = std::string("/v1/gpus/") + gpu;
    Expect(Call(agent, request).status == 200, "cannot share a GPU again");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Agent agent;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  Session session;
  for (size_t count = 0; count < kMaxRequests && !input.empty(); ++count) {
    const size_t end = input.find("\n%%\n");
    const std::string_view text = input.substr(0, end);
    input = end == std::string_view::npos ? std::string_view() : input.substr(end + 4);
    const net::HttpRequest request = ParseRequest(text, session);
    const net::HttpResponse response = Call(agent, request);
    if (response.content_type.rfind("application/json", 0) != 0) continue;
    const json body = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) continue;
    if (response.status == 201 && body.contains("id") && body["id"].is_string()) {
      session.last_slice = body["id"].get<std::string>();
      if (request.method == "POST" && request.path == "/v1/slices") {
        net::HttpRequest get;
        get.method = "GET";
        get.path = "/v1/slices/" + session.last_slice;
        get.peer = PeerNamed("root");
        Expect(Call(agent, get).status == 200, "a created slice that GET does not find", session.last_slice);
      }
    }
    if (response.status == 202 && body.contains("ticket") && body["ticket"].is_string()) {
      session.last_ticket = body["ticket"].get<std::string>();
      session.tickets.push_back(session.last_ticket);
    }
  }
  CheckRooms(agent);
  Reset(agent, session);
  return 0;
}
