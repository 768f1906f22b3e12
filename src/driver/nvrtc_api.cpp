#include "driver/nvrtc_api.hpp"

#include <mutex>
#include <vector>

#include "driver/library_loader.hpp"

namespace t4a::driver {

namespace {

NvrtcTable g_table;
bool g_has[static_cast<int>(NvrtcEntry::count_)] = {};

const char *const k_names[] = {
#define X(name, required) #name,
#include "driver/nvrtc_entry_points.def"
#undef X
};
constexpr bool k_required[] = {
#define X(name, required) (required) != 0,
#include "driver/nvrtc_entry_points.def"
#undef X
};

// The libraries tried, in order. One place, one reason per name.
std::vector<LibraryCandidate> nvrtc_candidates() {
  std::string override_path = env_or_empty("T4A_NVRTC_PATH");
  if (!override_path.empty()) return {{override_path, "T4A_NVRTC_PATH"}};
  std::vector<LibraryCandidate> c = {
      // The newest supported major first: CUDA 13's NVRTC.
      {"libnvrtc.so.13", "NVRTC 13 soname"},
      // CUDA 12's NVRTC still compiles for every target t4acuda supports.
      {"libnvrtc.so.12", "NVRTC 12 soname"},
  };
  // Toolkits are often installed outside the loader's search path.
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"}) {
    std::string home = env_or_empty(var);
    if (home.empty()) continue;
    c.push_back({home + "/lib64/libnvrtc.so.13", std::string(var) + " (13)"});
    c.push_back({home + "/lib64/libnvrtc.so.12", std::string(var) + " (12)"});
  }
  c.push_back({"/usr/local/cuda/lib64/libnvrtc.so.13",
               "default toolkit location (13)"});
  c.push_back({"/usr/local/cuda/lib64/libnvrtc.so.12",
               "default toolkit location (12)"});
  return c;
}

NvrtcState do_load() {
  NvrtcState s;
  LoadedLibrary lib = load_first(nvrtc_candidates());
  if (lib.handle == nullptr) {
    s.reason = "no NVRTC library could be loaded: " + lib.failure;
    return s;
  }
  void **slots[] = {
#define X(name, required) reinterpret_cast<void **>(&g_table.name),
#include "driver/nvrtc_entry_points.def"
#undef X
  };
  for (int i = 0; i < static_cast<int>(NvrtcEntry::count_); ++i) {
    void *fn = find_symbol(lib.handle, k_names[i]);
    if (fn != nullptr) {
      *slots[i] = fn;
      g_has[i] = true;
    } else if (k_required[i]) {
      s.reason = "NVRTC '" + lib.path + "' lacks the required entry point " +
                 k_names[i];
      return s;
    }
  }
  if (g_table.nvrtcVersion(&s.major, &s.minor) != NVRTC_SUCCESS) {
    s.reason = "nvrtcVersion failed in '" + lib.path + "'";
    return s;
  }
  if (s.major < 12) {
    s.reason = "NVRTC '" + lib.path + "' is version " +
               std::to_string(s.major) + "." + std::to_string(s.minor) +
               "; 12 or newer is required";
    return s;
  }
  s.path = lib.path;
  s.ready = true;
  return s;
}

} // namespace

const NvrtcState &nvrtc_load() {
  static std::once_flag once;
  static NvrtcState *state = nullptr; // never destroyed: usable during exit
  std::call_once(once, [] { state = new NvrtcState(do_load()); });
  return *state;
}

const NvrtcTable &nvrtc() { return g_table; }

bool nvrtc_has(NvrtcEntry e) { return g_has[static_cast<int>(e)]; }

} // namespace t4a::driver
