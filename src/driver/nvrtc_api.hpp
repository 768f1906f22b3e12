// NVRTC: loaded with dlopen on first compile (T4A_NVRTC_PATH, else the
// newest supported libnvrtc: 13, then 12). Needs no driver and no device.
#pragma once

#include <nvrtc.h>

#include <string>

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
// Valid once nvrtc_load().ready. Call its functions only inside an
// NvrtcSection.
const NvrtcTable &nvrtc();
bool nvrtc_has(NvrtcEntry e);

// Fork safety (R-HARD-7, core/fork.hpp): libnvrtc has internal mutexes of
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
