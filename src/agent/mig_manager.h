// MigManager: takes the agent's MIG GPUs to their configured geometries — at start and on each
// reload of the configuration (SIGHUP) — through NVML, with the drain rules of docs/mig.md
// "Reconfiguration and running work".
//
// Contract
// - Configure: for each GPU of the mig class with a geometry, the instances that change are
//   unbound from placement first (so no slice lands on one being destroyed), then destroyed and
//   created by the planner's steps (only what changes), then the GPU's instances are bound again
//   (SliceService::SetMigInstances) and the queue served. Each step is logged.
// - An instance in the way holds a slice: without `drain` the GPU keeps its geometry and its note
//   says why; with `drain` the instances that must go take no new slice (fenced) and the
//   geometry is applied by the first Tick after they are empty; the note says what it waits for.
// - A later Configure replaces what earlier ones asked (their fences are lifted first). A GPU's
//   class is fixed at start: a reload that changes it is logged and ignored.
// - Dynamic GPUs ("mig": "dynamic", fixed at start like the class) keep no geometry: a
//   hard-isolation request (CreateOrQueue) takes a free instance that holds it, else the manager
//   makes one — of the profile the request names, at the start it names, else of the smallest
//   profile that holds its memory where it leaves the most room (ChoosePlacement) — and binds
//   it before the slice is placed on it; an instance made for a request that then fails is
//   destroyed at once. Tick destroys a dynamic GPU's instances that hold no slice (unbound from
//   placement first, so none is placed on one being destroyed). A queued hard request waits for
//   an instance that empties; the queue makes none.
// - Thread-safe (one mutex); NVML calls are made under it, never under SliceService's lock.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/nvml_client.h"
#include "agent/slice_service.h"
#include "core/mig_profiles.h"

namespace fgpu::agent {

class MigManager {
 public:
  MigManager(const NvmlClient* nvml, SliceService* slices) : nvml_(nvml), slices_(slices) {}

  void Configure(const std::vector<GpuClassConfig>& classes);
  // Told of a GPU's instances after its geometry changed (the agent makes their compute board
  // files on a managed node without a board socket).
  void SetOnInstances(std::function<void(const std::vector<GpuState>&)> on_instances) {
    on_instances_ = std::move(on_instances);
  }
  // SliceService::CreateOrQueue, with a hard-isolation request's MIG instance found or made
  // first (the contract's dynamic GPUs; `mig_profile`/`mig_start` resolved to the instance).
  Result<QueueStatus> CreateOrQueue(CreateRequest request, const net::Peer& peer);
  // Applies the geometries whose drains have finished; destroys dynamic GPUs' empty instances.
  void Tick();
  // GPUs waiting for their instances to empty.
  int Draining() const;

 private:
  struct Wanted {
    GpuState gpu;  // the GPU in MIG mode
    GpuClassConfig config;
    std::vector<std::string> fenced;  // instances this manager holds new slices off
    std::string noted;                // the note last set (logged when it changes)
  };
  // Moves `wanted` on: true when finished (applied, or refused for good), false while it drains.
  bool Advance(Wanted& wanted);
  Status Apply(const Wanted& wanted, const mig::ModelInfo& model, const std::vector<MigInstance>& current,
               const std::vector<mig::Placed>& target);
  void Unfence(Wanted& wanted);
  void Note(Wanted& wanted, const std::string& note, bool warn);

  // Dynamic GPUs (mig_dynamic.cc).
  struct NewInstance {
    const GpuState* gpu = nullptr;
    const mig::Profile* profile = nullptr;
    int start = 0;
  };
  const GpuState* FindMigGpuLocked(const std::string& selector) const;
  // A request naming mig_profile (and maybe mig_start): an instance there, made if need be.
  Result<QueueStatus> CreateOnProfileLocked(CreateRequest request, const net::Peer& peer);
  // Where a new instance for `request` goes on `candidates` (the smallest profile that holds it).
  std::optional<NewInstance> NewInstanceFor(const CreateRequest& request, const std::vector<const GpuState*>& candidates) const;
  // Makes the instance, binds it and creates the request's slice on it; destroys it on failure.
  Result<QueueStatus> MakeAndCreateLocked(const NewInstance& where, CreateRequest request, const net::Peer& peer);
  // Unbinds and destroys `gpu`'s instances that hold no slice.
  void ReapLocked(const GpuState& gpu);

  const NvmlClient* nvml_;
  SliceService* slices_;
  std::function<void(const std::vector<GpuState>&)> on_instances_;
  mutable std::mutex mutex_;
  std::vector<Wanted> pending_;
  std::vector<GpuState> dynamic_;  // GPUs whose instances are made per request
};

}  // namespace fgpu::agent
