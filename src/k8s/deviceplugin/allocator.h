// ShareAllocator: the device plugin's Allocate. The kubelet hands a container share ids and
// never says when the container ends (the device-plugin API has no Deallocate), but it hands an
// id to a new container only after the one that held it is gone. So a slice is made per
// allocation, recorded with its shares in a checkpoint (written before the slice is asked for,
// so a plugin killed at any point leaves a record to clean up by, never an unknown slice), and
// released when any of its shares is allocated again (docs/kubernetes.md "The device-plugin
// path" says what that leaves: a slice outlives its container until its shares are reused).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "k8s/deviceplugin/shares.h"
#include "k8s/dra/container_edits.h"
#include "k8s/dra/ports.h"

namespace fgpu::k8s {

struct AllocatorOptions {
  std::string checkpoint_path;  // <plugin dir>/fgpu-allocations.json
  EditsOptions edits;
  int64_t owner_uid = 0;  // the ledger's owner: the pods of this path run as this uid
  std::string tenant = "kubernetes";
  // "hard" for a MIG profile's resource: each slice has its whole instance.
  std::optional<std::string> isolation;
};

struct AllocatorCounters {
  uint64_t allocations = 0;
  uint64_t errors = 0;
  uint64_t released = 0;  // slices released because their shares were allocated again
};

class ShareAllocator {
 public:
  ShareAllocator(AllocatorOptions options, SharePlan plan, SliceAgent* agent);

  // The container's edits for `ids`; the slice it names holds the shares' memory and compute.
  Result<CdiDevice> Allocate(const std::vector<std::string>& ids);
  // The devices for ListAndWatch, from the agent now.
  Result<std::vector<ShareDevice>> Devices();
  std::vector<std::string> Prefer(const std::vector<std::string>& available,
                                  const std::vector<std::string>& must_include, int size) const;
  AllocatorCounters Counters() const;

 private:
  struct Record {
    std::string gpu_uuid;
    std::vector<int> shares;
  };
  Status Load();
  Status Save() const;
  Status ReleaseOverlapping(const ShareGrant& grant);
  static std::string KeyOf(const ShareGrant& grant);

  const AllocatorOptions options_;
  const SharePlan plan_;
  SliceAgent* const agent_;
  mutable std::mutex mutex_;  // serializes Allocate and guards what follows
  std::map<std::string, Record> records_;  // by slice key
  bool loaded_ = false;
  AllocatorCounters counters_;
};

}  // namespace fgpu::k8s
