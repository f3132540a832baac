// AgentClient: the agent's API (docs/agent.md "API") as typed calls over net::HttpCall, one
// request per call. Every refusal comes back as a Status carrying the agent's {"error": ...}
// text: 400 InvalidArgument, 403 PermissionDenied, 404 NotFound, 409 ResourceExhausted, 503
// Unavailable (so is an agent that does not answer), any other 5xx Internal, any other 4xx
// InvalidArgument. A success whose body does not parse is Internal (an agent of another version).
// Thread-compatible; holds no connection between calls.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/types.h"
#include "core/status.h"
#include "net/http_client.h"
#include "net/http_message.h"

namespace fgpu::api {

// One HTTP exchange: the real one is net::HttpCall; tests and launchers may pass their own.
using Transport = std::function<Result<net::HttpResponse>(const std::string& method, const std::string& target,
                                                          const std::string& body)>;

// GET /v1/slices' query.
struct SliceQuery {
  bool usage = false;           // ?usage=1: what each slice uses now
  std::string idempotency_key;  // only the slice made for this key (its owner's and admins' view)
};

// GET /v1/usage's query: the usage records that overlap [since, until), summed by `by`.
struct UsageQuery {
  int64_t since_unix_ms = 0;
  std::optional<int64_t> until_unix_ms;  // absent: now
  std::string by = "tenant";             // tenant, slice; account, user or job (admins)
};

// The Status an answer of the agent means (Ok for 2xx), with its {"error"} text.
Status StatusOfReply(const net::HttpResponse& response);
// POST /v1/slices' or GET /v1/queue/{ticket}'s answer: a slice (201, or 200 with a slice: an
// idempotent retry), or a ticket (202, or 200 with a ticket: still queued).
Result<CreateReply> ReadCreateReply(const net::HttpResponse& response);

class AgentClient {
 public:
  AgentClient(net::Endpoint endpoint, int timeout_ms);
  explicit AgentClient(Transport transport);

  Result<CreateReply> CreateSlice(const SliceRequest& request) const;
  Result<Slice> GetSlice(const std::string& id) const;
  Result<std::vector<Slice>> ListSlices(const SliceQuery& query = {}) const;
  Result<Slice> ResizeSlice(const std::string& id, const SliceResize& resize) const;
  // NotFound when there is no such slice (already gone).
  Status DeleteSlice(const std::string& id) const;
  // The calling process joins the slice (the Unix socket: the kernel names it).
  Result<JoinReply> JoinSlice(const std::string& id) const;
  Result<std::vector<Gpu>> ListGpus() const;
  // GET /v1/queue and GET /v1/quotas (an agent older than them: NotFound).
  Result<std::vector<QueueItem>> Queue() const;
  Result<std::vector<Quota>> Quotas() const;
  Result<api::Health> Health() const;
  Result<std::vector<UsageTotal>> Usage(const UsageQuery& query) const;
  // Still queued (a ticket) or placed (the slice; the ticket is then spent).
  Result<CreateReply> PollTicket(const std::string& ticket) const;
  Status CancelTicket(const std::string& ticket) const;

 private:
  Result<net::HttpResponse> Call(const std::string& method, const std::string& target, const std::string& body) const;

  Transport transport_;
};

}  // namespace fgpu::api
