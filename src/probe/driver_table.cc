#include "probe/driver_table.h"

#include <dlfcn.h>

namespace fgpu::probe {

namespace {

constexpr const char* kDriverLibrary = "libcuda.so.1";

std::string DlError() {
  const char* error = dlerror();
  return error != nullptr ? error : "symbol not found";
}

// Finds `symbol` in libcuda.so.1 itself; false with a failure naming it.
bool Dlsym(void* library, const char* symbol, void** out, LookupFailure* failure) {
  dlerror();
  *out = dlsym(library, symbol);
  if (*out != nullptr) return true;
  *failure = {"dlsym", symbol, 0, DlError()};
  return false;
}

// Asks the getter of `table->mode` for `base`; false with a failure naming it.
bool GetProcAddress(const DriverTable& table, const char* base, void** out, LookupFailure* failure) {
  *out = nullptr;
  if (table.mode == LookupMode::kProcAddress) {
    const CUresult rc = table.cuGetProcAddress(base, out, table.cuda_version, CU_GET_PROC_ADDRESS_DEFAULT);
    if (rc == CUDA_SUCCESS && *out != nullptr) return true;
    *failure = {"cuGetProcAddress", base, static_cast<int>(rc), rc == CUDA_SUCCESS ? "returned NULL" : ""};
    return false;
  }
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  const CUresult rc =
      table.cuGetProcAddress_v2(base, out, table.cuda_version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  if (rc == CUDA_SUCCESS && *out != nullptr) return true;
  std::string detail = rc == CUDA_SUCCESS ? "returned NULL" : "";
  if (status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) detail = "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND";
  if (status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) detail = "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT";
  *failure = {"cuGetProcAddress_v2", base, static_cast<int>(rc), detail};
  return false;
}

// The address of each linked symbol, by exported name.
void* LinkedSymbol(std::string_view exported) {
#define FGPU_PROBE_LINKED_(name, base, since) \
  if (exported == #name) return reinterpret_cast<void*>(&::name);
  FGPU_PROBE_ALL_DRIVER_ENTRIES(FGPU_PROBE_LINKED_)
#undef FGPU_PROBE_LINKED_
  return nullptr;
}

// Stores `address` into the member named `exported`.
void Assign(DriverTable* table, std::string_view exported, void* address) {
#define FGPU_PROBE_ASSIGN_(name, base, since) \
  if (exported == #name) table->name = reinterpret_cast<decltype(table->name)>(address);
  FGPU_PROBE_ALL_DRIVER_ENTRIES(FGPU_PROBE_ASSIGN_)
#undef FGPU_PROBE_ASSIGN_
}

}  // namespace

bool BuildDriverTable(LookupMode mode, int cuda_version, DriverEntrySet set, DriverTable* table,
                      LookupFailure* failure) {
  *table = DriverTable{};
  table->mode = mode;
  table->cuda_version = cuda_version;
  // Kept open in every mode: `symbols` compares getter answers with dlsym addresses.
  table->library = dlopen(kDriverLibrary, RTLD_NOW);
  if (table->library == nullptr) {
    *failure = {"dlopen", kDriverLibrary, 0, DlError()};
    return false;
  }
  void* getter = nullptr;
  void* getter_v2 = nullptr;
  if (mode == LookupMode::kDirect) {
    getter = reinterpret_cast<void*>(&::cuGetProcAddress);
    getter_v2 = reinterpret_cast<void*>(&::cuGetProcAddress_v2);
  } else if (!Dlsym(table->library, "cuGetProcAddress", &getter, failure) ||
             !Dlsym(table->library, "cuGetProcAddress_v2", &getter_v2, failure)) {
    return false;
  }
  table->cuGetProcAddress = reinterpret_cast<decltype(table->cuGetProcAddress)>(getter);
  table->cuGetProcAddress_v2 = reinterpret_cast<decltype(table->cuGetProcAddress_v2)>(getter_v2);

  size_t count = 0;
  const DriverEntry* entries = DriverEntries(set, &count);
  for (size_t i = 0; i < count; ++i) {
    const DriverEntry& entry = entries[i];
    void* address = nullptr;
    switch (mode) {
      case LookupMode::kDirect:
        address = LinkedSymbol(entry.exported);
        break;
      case LookupMode::kDlsym:
        if (!Dlsym(table->library, entry.exported, &address, failure)) return false;
        break;
      case LookupMode::kProcAddress:
      case LookupMode::kProcAddressV2:
        if (!GetProcAddress(*table, entry.base, &address, failure)) return false;
        break;
    }
    Assign(table, entry.exported, address);
  }
  return true;
}

}  // namespace fgpu::probe
