#include "driver/cuda_api.hpp"

#include <atomic>
#include <mutex>

#include "driver/library_loader.hpp"

namespace t4a::driver {

CudaTable g_cuda;
std::atomic<int> g_active_captures{0};

namespace {

constexpr bool k_required[] = {
#define X(name, version, required) (required) != 0,
#include "driver/entry_points.def"
#undef X
};
constexpr int k_versions[] = {
#define X(name, version, required) version,
#include "driver/entry_points.def"
#undef X
};
// The oldest driver supported: cuGetProcAddress_v2 and every required
// entry point's variant exist from CUDA 12.0 on.
constexpr int k_oldest_driver = 12000;
#define X(name, version, required)                                             \
  static_assert(!(required) || (version) <= k_oldest_driver,                   \
                #name " is required but newer than the oldest driver");
#include "driver/entry_points.def"
#undef X

std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// What is unavailable without an optional entry point (one place).
const char *without(Entry e) {
  switch (e) {
  case Entry::cuFuncGetParamInfo:
    return "kernel parameter sizes are not checked at launch and "
           "t4a_kernel_param is UNSUPPORTED";
  case Entry::cuLaunchCooperativeKernel:
    return "cooperative launches are UNSUPPORTED";
  case Entry::cuLaunchKernelEx:
    return "launches with attributes (thread block clusters, programmatic "
           "dependent launch) are UNSUPPORTED";
  case Entry::cuOccupancyMaxActiveClusters:
  case Entry::cuOccupancyMaxPotentialClusterSize:
    return "cluster occupancy (t4a_kernel_cluster_occupancy) and cluster "
           "size checks are UNSUPPORTED";
  case Entry::cuGraphGetNodes:
    return "a captured graph's node count is not reported";
  case Entry::cuStreamBeginCapture:
  case Entry::cuStreamEndCapture:
  case Entry::cuStreamIsCapturing:
  case Entry::cuThreadExchangeStreamCaptureMode:
  case Entry::cuGraphInstantiateWithFlags:
  case Entry::cuGraphLaunch:
  case Entry::cuGraphExecDestroy:
  case Entry::cuGraphDestroy:
    return "stream capture and graphs are UNSUPPORTED";
  default: return "unavailable";
  }
}

bool g_has[static_cast<int>(Entry::count_)] = {};
std::atomic<int> g_driver_version{0};

// Set when a load begins and when it found no usable driver (in the
// once); read by a forked child.
std::atomic<bool> g_load_begun{false};
std::atomic<bool> g_load_found_none{false};
// Non-null in a forked child that must not use the driver: load's reason.
std::atomic<const std::string *> g_fork_refusal{nullptr};

struct State {
  std::once_flag once;
  LoadState state = LoadState::NoDriver;
  std::string reason;
  CUresult init_result = CUDA_SUCCESS; // cuInit's result once called
};

State &state() {
  static State *s = new State(); // never destroyed: usable during exit
  return *s;
}

// The libraries tried, in order. One place, one reason per name.
std::vector<LibraryCandidate> driver_candidates() {
  std::string override_path = env_or_empty("T4A_CUDA_DRIVER_PATH");
  if (!override_path.empty()) return {{override_path, "T4A_CUDA_DRIVER_PATH"}};
  return {
      // The driver's soname: every Linux driver installation provides it.
      {"libcuda.so.1", "the CUDA driver's soname"},
      // The unversioned development name: some containers ship only this.
      {"libcuda.so", "development symlink"},
      // WSL2 keeps the driver outside the default search path.
      {"/usr/lib/wsl/lib/libcuda.so.1", "WSL2 driver location"},
  };
}

using GetProcAddress = CUresult (*)(const char *, void **, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult *);

void do_load(State &s) {
  LoadedLibrary lib = load_first(driver_candidates());
  if (lib.handle == nullptr) {
    s.reason = "no CUDA driver library could be loaded: " + lib.failure +
               ". Install the NVIDIA driver (it provides libcuda.so.1), or "
               "set T4A_CUDA_DRIVER_PATH to the full path of its "
               "libcuda.so.1";
    return;
  }
  auto gpa = reinterpret_cast<GetProcAddress>(
      find_symbol(lib.handle, "cuGetProcAddress_v2"));
  if (gpa == nullptr) {
    s.reason = "'" + lib.path +
               "' has no cuGetProcAddress_v2: a CUDA 12.0 or newer driver is "
               "required";
    return;
  }
  void **slots[] = {
#define X(name, version, required) reinterpret_cast<void **>(&g_cuda.name),
#include "driver/entry_points.def"
#undef X
  };
  // The driver's version first: it decides which lookups may be made (a
  // lookup at a version newer than the driver is refused).
  void *get_version = nullptr;
  int driver = 0;
  if (gpa("cuDriverGetVersion", &get_version,
          k_versions[static_cast<int>(Entry::cuDriverGetVersion)],
          CU_GET_PROC_ADDRESS_DEFAULT, nullptr) != CUDA_SUCCESS ||
      get_version == nullptr ||
      reinterpret_cast<PFN_cuDriverGetVersion_v2020>(get_version)(&driver) !=
          CUDA_SUCCESS) {
    s.reason = "'" + lib.path + "' does not report its CUDA version";
    return;
  }
  if (driver < k_oldest_driver) {
    s.reason = "the CUDA driver '" + lib.path + "' is CUDA " +
               version_text(driver) + "; t4acuda needs CUDA " +
               version_text(k_oldest_driver) + " or newer";
    return;
  }
  for (int i = 0; i < static_cast<int>(Entry::count_); ++i) {
    if (k_versions[i] > driver) continue; // optional (asserted above)
    void *fn = nullptr;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = gpa(k_entry_names[i], &fn, k_versions[i],
                     CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (r == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS &&
        fn != nullptr) {
      *slots[i] = fn;
      g_has[i] = true;
      continue;
    }
    if (k_required[i]) {
      s.reason = std::string("the CUDA driver '") + lib.path + "' (CUDA " +
                 version_text(driver) + ") lacks the required entry point " +
                 k_entry_names[i] + " at CUDA version " +
                 version_text(k_versions[i]) +
                 (found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                      ? " (version not sufficient)"
                      : " (symbol not found)");
      return;
    }
  }
  g_driver_version.store(driver, std::memory_order_release);
  CUresult init = g_cuda.cuInit(0);
  s.init_result = init;
  if (init != CUDA_SUCCESS && init != CUDA_ERROR_NO_DEVICE) {
    const char *name = nullptr;
    const char *text = nullptr;
    g_cuda.cuGetErrorName(init, &name);
    g_cuda.cuGetErrorString(init, &text);
    s.reason = "cuInit(0) failed in '" + lib.path + "' with " +
               (name != nullptr ? name : "CUresult " + std::to_string(init)) +
               " (" + (text != nullptr ? text : "no description") + ")";
    return;
  }
  s.state = LoadState::Ready;
}

} // namespace

LoadOutcome load() {
  if (const std::string *r = g_fork_refusal.load(std::memory_order_acquire))
      [[unlikely]]
    return {LoadState::NoDriver, r, CUDA_SUCCESS};
  State &s = state();
  std::call_once(s.once, [&] {
    g_load_begun.store(true, std::memory_order_release);
    do_load(s);
    if (s.state != LoadState::Ready)
      g_load_found_none.store(true, std::memory_order_release);
  });
  return {s.state, &s.reason, s.init_result};
}

bool refuse_in_forked_child(const char *reason) {
  // Not begun: the child may load the driver itself. Finished without a
  // driver: the child keeps reporting why (the once is complete).
  if (!g_load_begun.load(std::memory_order_acquire) ||
      g_load_found_none.load(std::memory_order_acquire))
    return false;
  // Never freed: the child keeps refusing until it exits or execs.
  g_fork_refusal.store(new std::string(reason), std::memory_order_release);
  return true;
}

bool has(Entry e) { return g_has[static_cast<int>(e)]; }

int entry_version(Entry e) { return k_versions[static_cast<int>(e)]; }

int loaded_driver_version() {
  return g_driver_version.load(std::memory_order_acquire);
}

std::string lacks_text(Entry e) {
  return "the CUDA driver (CUDA " + version_text(loaded_driver_version()) +
         ") lacks " + k_entry_names[static_cast<int>(e)] +
         ", which needs CUDA " + version_text(entry_version(e));
}

std::string lacking_entry_points() {
  std::string out;
  if (loaded_driver_version() == 0) return out;
  for (int i = 0; i < static_cast<int>(Entry::count_); ++i) {
    if (g_has[i] || k_required[i]) continue;
    out += std::string(k_entry_names[i]) + " (CUDA " +
           version_text(k_versions[i]) +
           "): " + without(static_cast<Entry>(i)) + "\n";
  }
  return out;
}

const char *error_name(CUresult r) {
  const char *s = nullptr;
  if (g_cuda.cuGetErrorName == nullptr ||
      g_cuda.cuGetErrorName(r, &s) != CUDA_SUCCESS || s == nullptr)
    return "";
  return s;
}

const char *error_string(CUresult r) {
  const char *s = nullptr;
  if (g_cuda.cuGetErrorString == nullptr ||
      g_cuda.cuGetErrorString(r, &s) != CUDA_SUCCESS || s == nullptr)
    return "";
  return s;
}

} // namespace t4a::driver
