// Test builds only (T4A_TESTING): make the Nth call of a named driver or
// NVRTC entry point return a chosen CUresult or nvrtcResult, either instead of
// calling it or after really calling it (work enqueued, failure reported), and
// count calls. Reached from tests only through src/testing/t4acuda_testing.h.
#pragma once

#include <atomic>
#include <cstdint>

namespace t4a::driver::fault {

enum class Mode : int32_t { None = 0, Instead = 1, After = 2 };

struct Decision {
  Mode mode = Mode::None;
  int32_t result = 0;
};

#if defined(T4A_TESTING)
// True while any rule is armed or counting is on; the only cost on the
// driver-call path of a test build when nothing is armed.
extern std::atomic<bool> g_active;

// Called for every driver call while g_active: counts it and applies rules.
Decision on_call(int entry_index);
// The same for an NVRTC call (NvrtcEntry index; nvrtc_api.hpp).
Decision on_nvrtc_call(int nvrtc_entry_index);

// Test controls (exposed through capi/testing.cpp).
bool arm(const char *entry_name, uint64_t nth, int32_t result, Mode mode);
void reset();
void set_counting(bool on);
int64_t call_count(const char *entry_name);
#endif

} // namespace t4a::driver::fault
