#include "agent/agent.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <iostream>

#include "agent/api.h"
#include "agent/board_registry.h"
#include "agent/board_server.h"
#include "agent/config.h"
#include "agent/log.h"
#include "agent/mig_manager.h"
#include "agent/mig_setup.h"
#include "agent/membership.h"
#include "agent/metrics.h"
#include "agent/nvml_client.h"
#include "agent/slice_service.h"
#include "agent/stop_loss.h"
#include "agent/store.h"
#include "compute/board.h"
#include "core/units.h"
#include "slice/node_config.h"
#include "slice/slice.h"
#include "net/http_client.h"
#include "net/http_server.h"

namespace fgpu::agent {
namespace {

int64_t UnixMsNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The state directory, made if missing, as one canonical absolute path (slice directories are
// compared by path: "/var/lib/fgpu/" and "/var/lib/fgpu" must be one place). Other users may
// reach slices/ and agent.sock through it but not list or change it.
Result<std::string> PrepareStateDir(const std::string& wanted) {
  std::error_code error;
  std::filesystem::create_directories(wanted, error);
  if (error) return Status::Unavailable("cannot create the state directory " + wanted + ": " + error.message());
  const std::filesystem::path canonical = std::filesystem::canonical(wanted, error);
  if (error) return Status::Unavailable("cannot resolve the state directory " + wanted + ": " + error.message());
  struct stat info {};
  if (stat(canonical.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return Status::InvalidArgument(canonical.string() + " is not a directory");
  }
  if (info.st_uid != geteuid()) {
    return Status::InvalidArgument("the state directory " + canonical.string() + " belongs to uid " +
                                   std::to_string(info.st_uid) + ", not to the agent's user");
  }
  if (chmod(canonical.c_str(), 0711) != 0) {
    return Status::Unavailable("cannot make " + canonical.string() + " 0711: " + std::strerror(errno));
  }
  return canonical.string();
}

// Slice cgroups under the cgroup v2 mount, one subtree per state directory (two agents on one
// machine keep theirs apart); without a writable hierarchy, membership rests on joined processes.
std::shared_ptr<Membership> MakeMembership(const std::string& state_dir) {
  char instance[17];
  std::snprintf(instance, sizeof(instance), "%016llx",
                static_cast<unsigned long long>(std::hash<std::string>{}(state_dir)));
  const auto base = Membership::CgroupBase(instance);
  if (!base) {
    std::cerr << "fgpu agent: no writable cgroup v2 hierarchy: slice membership by joined processes and their "
                 "descendants only"
              << std::endl;
    return std::make_shared<Membership>("", "");
  }
  return std::make_shared<Membership>(base->first, base->second);
}

// On a managed node the interposer accepts only slices directly under slice_root: this agent's
// slices must be there, or every workload would be refused.
Status CheckNodePolicy(const slice::NodePolicy& node, const std::string& slices_dir) {
  if (!node.managed) return Status::Ok();
  std::error_code error;
  std::filesystem::create_directories(slices_dir, error);
  const std::filesystem::path ours = std::filesystem::weakly_canonical(slices_dir, error);
  const std::filesystem::path root = std::filesystem::weakly_canonical(node.config.slice_root, error);
  if (ours != root) {
    return Status::InvalidArgument("the node configuration " + node.source + " says slices live in " +
                                   node.config.slice_root + ", but this agent keeps them in " + ours.string() +
                                   ": workloads would refuse them (use --state " + root.parent_path().string() +
                                   " or change slice_root)");
  }
  return Status::Ok();
}

// A managed node's compute boards are in a directory the agent makes and owns: workloads open
// the boards the agent made there and cannot add files of their own.
Status PrepareBoards(const std::string& compute_dir, const std::vector<GpuState>& gpus) {
  std::error_code error;
  std::filesystem::create_directories(compute_dir, error);
  if (error || chmod(compute_dir.c_str(), 0755) != 0) {
    return Status::Unavailable("cannot prepare the compute boards' directory " + compute_dir);
  }
  for (const GpuState& gpu : gpus) {
    Result<compute::Board*> board = compute::Board::Open(compute_dir, gpu.uuid);
    if (!board.ok()) return Status::Unavailable("the compute board of " + gpu.uuid + ": " + board.status().message());
    delete *board;
  }
  return Status::Ok();
}

// The processes that may still map a GPU's sealed board after a restart: every slice's ledger
// processes and members. Candidates only: recovery adopts only memfds this agent's user made.
std::vector<pid_t> BoardHolders(const SliceService& slices) {
  std::vector<pid_t> pids;
  for (const SliceRecord& slice : slices.List()) {
    if (Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice.dir); admin.ok()) {
      for (const slice::ProcessUsage& process : admin->Usage().processes) pids.push_back(process.pid);
    }
    for (const pid_t pid : slices.membership().CgroupProcesses(slice.id)) pids.push_back(pid);
    for (const Member& member : slices.membership().Members(slice.id)) pids.push_back(member.pid);
  }
  return pids;
}

// A managed node with board_socket: each GPU's board and policy table are sealed memfds this
// agent makes (or recovers from its workloads after a restart), assigns rows in and hands out.
Result<std::unique_ptr<BoardRegistry>> OpenSealedBoards(const std::vector<GpuState>& gpus, SliceService& slices) {
  std::vector<std::string> uuids;
  for (const GpuState& gpu : gpus) uuids.push_back(gpu.uuid);
  Result<std::unique_ptr<BoardRegistry>> registry = BoardRegistry::Open(uuids, BoardHolders(slices), geteuid());
  if (!registry.ok()) return registry.status();
  BoardRegistry* boards = registry->get();
  for (const std::string& change : boards->Rebuild(slices.List())) std::cout << "fgpu agent: " << change << std::endl;
  int recovered = 0;
  for (const std::string& uuid : uuids) recovered += boards->Recovered(uuid) ? 1 : 0;
  std::cout << "fgpu agent: compute boards sealed: " << recovered << " recovered from live workloads, "
            << uuids.size() - static_cast<size_t>(recovered) << " new" << std::endl;
  slices.SetObserver([boards](const SliceRecord& slice, bool gone) { boards->Observe(slice, gone); });
  slices.SetMaxSlicesPerGpu(static_cast<int>(compute::layout::kEntryCount));
  UseSealedBoards([boards](const std::string& uuid) { return boards->BoardOf(uuid); });
  return registry;
}

// The HTTP server sizes its connection cap to the descriptors it may open (docs/net.md): take
// every one the hard limit allows, so one user's idle connections cannot crowd the others out.
void RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int Fail(const std::string& message) {
  std::cerr << "fgpu agent: " << message << "\n";
  return 1;
}

// Blocks SIGINT/SIGTERM in every thread (the server's threads inherit the mask) and waits for one.
// SIGHUP: the configuration's MIG geometries (its `gpus`) applied again; the rest of the file
// takes a restart.
void Reload(const std::string& path, MigManager& mig) {
  Result<AgentConfig> config = LoadConfig(path);
  if (!config.ok()) {
    Log(LogLevel::kError, "reload", {{"reason", config.status().message() + " (nothing changed)"}});
    return;
  }
  Log(LogLevel::kInfo, "reload", {{"reason", "MIG geometries from " + (path.empty() ? std::string("(no file)") : path)}});
  mig.Configure(config->gpus);
}

sigset_t StopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);  // reload the configuration's MIG geometries
  return signals;
}

}  // namespace

int RunAgent(const AgentOptions& options) {
  const sigset_t signals = StopSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  RaiseDescriptorLimit();
  // What the agent makes is its own unless it says otherwise (slice files, the socket, boards set
  // their modes explicitly): the database and its journals hold every tenant's usage.
  umask(077);
  Result<AgentConfig> config = LoadConfig(options.config);
  if (!config.ok()) return Fail(config.status().message());
  // --log-level over the configuration's log_level over info.
  Result<LogLevel> log_level = options.log_level.empty() ? Result<LogLevel>(config->log_level)
                                                          : ParseLogLevel(options.log_level);
  if (!log_level.ok()) return Fail("--log-level: " + log_level.status().message());
  SetLogLevel(*log_level);
  if (!options.token_file.empty()) {
    Result<std::string> token = LoadToken(options.token_file);
    if (!token.ok()) return Fail("--token-file: " + token.status().message());
    config->access.token = *token;
  }
  Result<std::string> state_dir = PrepareStateDir(options.state_dir);
  if (!state_dir.ok()) return Fail(state_dir.status().message());
  Result<std::shared_ptr<NvmlClient>> nvml = NvmlClient::Load();
  if (!nvml.ok()) return Fail(nvml.status().message());
  Result<std::vector<GpuState>> gpus = (*nvml)->Gpus();
  if (!gpus.ok()) return Fail(gpus.status().message());
  Result<std::unique_ptr<Store>> store = Store::Open(*state_dir + "/agent.db");
  if (!store.ok()) return Fail(store.status().message());
  // Each GPU's isolation class; a MIG GPU's instances are placement targets of their own.
  gpus = SetUpGpus(**nvml, std::move(*gpus), config->gpus);
  if (!gpus.ok()) return Fail(options.config + ": " + gpus.status().message());
  Result<slice::NodePolicy> node = slice::LoadNodePolicy(std::getenv(slice::kNodeConfigEnv));
  if (!node.ok()) return Fail("the node configuration: " + node.status().message());
  if (Status fits = CheckNodePolicy(*node, *state_dir + "/slices"); !fits.ok()) return Fail(fits.message());
  const char* compute_dir_env = std::getenv("FGPU_COMPUTE_DIR");
  // A managed node's boards are where its configuration says (workloads ignore FGPU_COMPUTE_DIR).
  const std::string compute_dir = node->managed ? node->config.compute_dir
                                  : compute_dir_env != nullptr && *compute_dir_env != '\0' ? compute_dir_env
                                                                                          : "/dev/shm/fgpu-compute";
  // board_socket: sealed memfds handed out by this agent, no files; else files in compute_dir.
  const bool sealed_boards = node->managed && !node->config.board_socket.empty();
  if (node->managed && !sealed_boards) {
    if (Status boards = PrepareBoards(compute_dir, *gpus); !boards.ok()) return Fail(boards.message());
  }
  UsageReader busy(compute_dir);
  Governance governance = config->governance;
  governance.policy = options.policy;
  if (Status valid = ValidateGovernance(governance); !valid.ok()) return Fail("--policy: " + valid.message());
  SliceService slices(
      store->get(), *gpus, *state_dir + "/slices", [&busy](const SliceRecord& slice) { return busy.BusyNs(slice); },
      governance);
  slices.SetMembership(MakeMembership(*state_dir));
  if (Status restored = slices.Restore(); !restored.ok()) return Fail("cannot restore the slices: " + restored.message());
  slices.SetUsageRetention(config->usage_retention_ms);
  slices.PruneMembers();  // the cgroups of slices a killed agent left empty
  MigManager mig(nvml->get(), &slices);
  if (node->managed && !sealed_boards) {  // an instance made later needs its board file too
    mig.SetOnInstances([&compute_dir](const std::vector<GpuState>& instances) {
      if (Status boards = PrepareBoards(compute_dir, instances); !boards.ok()) {
        Log(LogLevel::kError, "mig", {{"reason", boards.message()}});
      }
    });
  }
  mig.Configure(config->gpus);  // each MIG GPU to its geometry, where no slice is in the way
  std::unique_ptr<BoardRegistry> boards;
  std::unique_ptr<BoardServer> board_server;
  if (sealed_boards) {
    Result<std::unique_ptr<BoardRegistry>> opened = OpenSealedBoards(*gpus, slices);
    if (!opened.ok()) return Fail(opened.status().message());
    boards = std::move(*opened);
    board_server = std::make_unique<BoardServer>(boards.get(), SliceOwnersOn(&slices));
    if (Status listening = board_server->Listen(node->config.board_socket); !listening.ok()) return Fail(listening.message());
    if (Status started = board_server->Start(); !started.ok()) return Fail(started.message());
  }

  // Board rows only: stop-loss samples every slice every second and needs no ledger.
  StopLoss stop_loss(&slices, *nvml, config->stop_loss, [&busy](const SliceRecord& slice) { return busy.Compute(slice); });
  Api api(&slices, *nvml, compute_dir);
  api.SetWorkloadEnvironment({options.workload_preload, options.workload_env});
  api.SetStopLoss(&stop_loss);
  api.SetMig(&mig);
  api.SetAccess(std::make_shared<Access>(config->access));
  net::HttpServer::Options server_options;
  server_options.max_body = 64 * 1024;  // the API's bodies are a few hundred bytes
  net::HttpServer server([&api](const net::HttpRequest& request) { return api.Handle(request); }, server_options);
  api.SetHttpStats([&server] { return server.stats(); });
  if (board_server) {
    api.SetBoardStats([&board_server] { return std::make_pair(board_server->handed_out(), board_server->refused()); });
  }
  std::string where;
  if (!options.listen.empty()) {
    Result<net::Endpoint> endpoint = net::ParseEndpoint(options.listen, /*any_port=*/true);
    if (!endpoint.ok() || endpoint->unix_socket) return Fail("--listen wants HOST:PORT, got '" + options.listen + "'");
    if (endpoint->host != "127.0.0.1") return Fail("--listen is loopback only (127.0.0.1): the API has no TLS");
    Result<int> port = server.ListenTcp(endpoint->host, endpoint->port);
    if (!port.ok()) return Fail(port.status().message());
    where = "http://127.0.0.1:" + std::to_string(*port) + (config->access.token.empty() ? " (read-only)" : "") + " and ";
  }
  const std::string socket = options.socket.empty() ? *state_dir + "/agent.sock" : options.socket;
  if (Status listening = server.ListenUnix(socket, 0666); !listening.ok()) return Fail(listening.message());
  if (Status started = server.Start(); !started.ok()) return Fail(started.message());
  std::cout << "fgpu agent: placement policy " << slices.policy() << "; " << gpus->size() << " GPU(s), " << slices.List().size() << " slice(s) restored; serving "
            << where << "unix:" << socket << (sealed_boards ? "; compute boards on " + node->config.board_socket : "")
            << std::endl;

  // Between signals, release the slices whose workloads have exited and serve the queue.
  int received = -1;
  const timespec tick{0, 250'000'000};
  auto next_account = std::chrono::steady_clock::now();
  auto next_check = std::chrono::steady_clock::now();
  auto next_prune = std::chrono::steady_clock::now();
  while (received < 0) {
    received = sigtimedwait(&signals, nullptr, &tick);
    if (received == SIGHUP) {
      received = -1;
      Reload(options.config, mig);
    }
    (void)slices.Reap();  // each release is logged as a delete
    mig.Tick();           // geometries whose drains have ended
    if (std::chrono::steady_clock::now() >= next_prune) {
      slices.PruneMembers();
      next_prune += std::chrono::seconds(30);
    }
    if (std::chrono::steady_clock::now() >= next_check) {
      stop_loss.Tick(UnixMsNow());
      next_check += std::chrono::milliseconds(1000);
    }
    if (std::chrono::steady_clock::now() >= next_account) {
      if (Status billed = slices.Account(UnixMsNow()); !billed.ok()) {
        Log(LogLevel::kError, "account", {{"reason", "usage records: " + billed.message()}});
      }
      next_account += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(options.account_interval_s));
    }
  }
  (void)slices.Account(UnixMsNow());  // a clean stop bills up to now
  std::cout << "fgpu agent: stopping (signal " << received << ")" << std::endl;
  server.Stop();
  if (board_server) board_server->Stop();
  slices.SetObserver(nullptr);  // the registry goes before the service
  UseSealedBoards(nullptr);
  slices.CloseMembership();
  return 0;
}

}  // namespace fgpu::agent
