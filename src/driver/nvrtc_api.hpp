// NVRTC: loaded with dlopen on first compile (T4A_NVRTC_PATH, else the
// newest supported libnvrtc: 13, then 12). Needs no driver and no device.
#pragma once

#include <nvrtc.h>

#include <string>

#include "driver/fault_injection.hpp"

namespace t4a::driver {

enum class NvrtcEntry : int {
#define X(name, required) name,
#include "driver/nvrtc_entry_points.def"
#undef X
  count_
};

struct NvrtcTable {
#define X(name, required) decltype(&::name) name = nullptr;
#include "driver/nvrtc_entry_points.def"
#undef X
};

struct NvrtcState {
  bool ready = false;
  std::string reason; // when not ready: every library tried and why
  std::string path;   // the candidate that loaded
  std::string file;   // the file it was loaded from (links resolved)
  int major = 0;
  int minor = 0;
};

// Loads NVRTC once (thread-safe); the returned state never changes after.
const NvrtcState &nvrtc_load();
// True once nvrtc_load() has run to completion in this process.
bool nvrtc_loaded();

// What decides which file nvrtc_load() would load, found without loading
// anything (loading NVRTC takes milliseconds): every candidate, and for a
// bare library name, the identity (or absence) of that name in every
// directory the dynamic loader would search, plus the loader cache. Two
// equal texts mean nvrtc_load() would pick the same, unchanged file.
struct NvrtcSearch {
  bool mapped = false;  // a candidate is already in the process: load it
  std::string material; // the text described above
};
NvrtcSearch nvrtc_search();
// Whether an (optional) entry point was resolved; valid once
// nvrtc_load().ready.
bool nvrtc_has(NvrtcEntry e);

namespace detail {
extern NvrtcTable g_nvrtc; // valid once nvrtc_load().ready
} // namespace detail

// Indexed by NvrtcEntry (constant: a wrapper reads no table for its name).
inline constexpr const char *k_nvrtc_entry_names[] = {
#define X(name, required) #name,
#include "driver/nvrtc_entry_points.def"
#undef X
};

// The outcome of one NVRTC call: the nvrtcResult and which entry point.
struct NvrtcResult {
  nvrtcResult code = NVRTC_SUCCESS;
  const char *entry = "";
  explicit operator bool() const { return code == NVRTC_SUCCESS; }
};

// Like invoke() for the driver (cuda_api.hpp): in test builds, counted and
// fault-injectable by entry name (t4a_testing_fault_arm("nvrtcGetCUBIN",
// ...), the injected int32 read as an nvrtcResult).
template <class F, class... A>
inline NvrtcResult nvrtc_invoke(NvrtcEntry e, F fn, A... args) {
  const char *name = k_nvrtc_entry_names[static_cast<int>(e)];
#if defined(T4A_TESTING)
  if (fault::g_active.load(std::memory_order_relaxed)) {
    fault::Decision d = fault::on_nvrtc_call(static_cast<int>(e));
    if (d.mode == fault::Mode::Instead)
      return {static_cast<nvrtcResult>(d.result), name};
    if (d.mode == fault::Mode::After) {
      (void)fn(args...);
      return {static_cast<nvrtcResult>(d.result), name};
    }
  }
#endif
  return {fn(args...), name};
}

#define T4A_NVRTC(name, ...)                                                   \
  nvrtc_invoke(NvrtcEntry::name, detail::g_nvrtc.name, __VA_ARGS__)

// ---- Typed wrappers: the only way src/ calls NVRTC. Valid once
// nvrtc_load().ready; call them only inside an NvrtcSection. ----
namespace nv {
inline NvrtcResult version(int *major, int *minor) {
  return T4A_NVRTC(nvrtcVersion, major, minor);
}
// Not a call that can fail (it returns the text, or null for an unknown
// result): neither counted nor injectable.
inline const char *error_string(nvrtcResult r) {
  return detail::g_nvrtc.nvrtcGetErrorString(r);
}
inline NvrtcResult create_program(nvrtcProgram *p, const char *source,
                                  const char *name, int headers,
                                  const char *const *header_sources,
                                  const char *const *header_names) {
  return T4A_NVRTC(nvrtcCreateProgram, p, source, name, headers, header_sources,
                   header_names);
}
inline NvrtcResult destroy_program(nvrtcProgram *p) {
  return T4A_NVRTC(nvrtcDestroyProgram, p);
}
inline NvrtcResult add_name_expression(nvrtcProgram p, const char *expr) {
  return T4A_NVRTC(nvrtcAddNameExpression, p, expr);
}
inline NvrtcResult compile_program(nvrtcProgram p, int count,
                                   const char *const *options) {
  return T4A_NVRTC(nvrtcCompileProgram, p, count, options);
}
inline NvrtcResult get_program_log_size(nvrtcProgram p, size_t *bytes) {
  return T4A_NVRTC(nvrtcGetProgramLogSize, p, bytes);
}
inline NvrtcResult get_program_log(nvrtcProgram p, char *log) {
  return T4A_NVRTC(nvrtcGetProgramLog, p, log);
}
inline NvrtcResult get_ptx_size(nvrtcProgram p, size_t *bytes) {
  return T4A_NVRTC(nvrtcGetPTXSize, p, bytes);
}
inline NvrtcResult get_ptx(nvrtcProgram p, char *ptx) {
  return T4A_NVRTC(nvrtcGetPTX, p, ptx);
}
inline NvrtcResult get_cubin_size(nvrtcProgram p, size_t *bytes) {
  return T4A_NVRTC(nvrtcGetCUBINSize, p, bytes);
}
inline NvrtcResult get_cubin(nvrtcProgram p, char *cubin) {
  return T4A_NVRTC(nvrtcGetCUBIN, p, cubin);
}
inline NvrtcResult get_lowered_name(nvrtcProgram p, const char *expr,
                                    const char **lowered) {
  return T4A_NVRTC(nvrtcGetLoweredName, p, expr, lowered);
}
// Optional entry points: check nvrtc_has() first.
inline NvrtcResult get_num_supported_archs(int *count) {
  return T4A_NVRTC(nvrtcGetNumSupportedArchs, count);
}
inline NvrtcResult get_supported_archs(int *archs) {
  return T4A_NVRTC(nvrtcGetSupportedArchs, archs);
}
} // namespace nv

#undef T4A_NVRTC

// Fork safety (core/fork.hpp): libnvrtc has internal mutexes of
// its own that a child forked while another thread was inside NVRTC would
// inherit locked (its compiles would then hang). Every NVRTC call
// sequence (loading, version and arch queries, create .. destroy of a
// program) runs inside an NvrtcSection, which holds a process-wide
// reader-writer lock SHARED; the fork prepare handler takes it EXCLUSIVELY
// before any other lock, so a fork waits for the NVRTC calls in progress
// and the child's libnvrtc has no lock held. Inside a section a thread
// takes no other library lock, runs no user callback and logs nothing
// (core's LogDefer is out of reach of the driver layer: callers log after
// the section), so no section ever waits for what a forking thread holds.
// Sections nest (only the outermost takes the lock).
class NvrtcSection {
public:
  NvrtcSection();
  ~NvrtcSection();
  NvrtcSection(const NvrtcSection &) = delete;
  NvrtcSection &operator=(const NvrtcSection &) = delete;
};
// The fork hooks (capi/fork.cpp): prepare takes the lock exclusively
// (first of all), the parent releases it, the child re-initializes it.
void nvrtc_fork_prepare();
void nvrtc_fork_parent();
void nvrtc_fork_child();

} // namespace t4a::driver
