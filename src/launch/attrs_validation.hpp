// Launch attributes (t4a_launch_attrs, experimental) as a pure function:
// the descriptor's flags, the attributes (already read through their
// struct_size; NULL: none), the grid validate() made, the kernel's compiled
// cluster facts, the device's capability and whether the driver has
// cuLaunchKernelEx in; what the launch does with them out. No driver, no
// registry, no heap: table-tested on the host (tests/host/
// test_launch_attrs.cpp) and fuzzed with the rest of the descriptor
// (fuzz/fuzz_launch_validation.cpp). Each rejection names the field and the
// values.
#pragma once

#include <cstdint>

// t4a_launch_attrs is of the header's experimental section (the library
// builds with it; this file also builds alone into its test and fuzzer).
// The section has its own guard, so it is declared even when the header
// was included before without it.
#if !defined(T4A_EXPERIMENTAL)
#define T4A_EXPERIMENTAL 1
#endif
#include "core/check.hpp"
#include "launch/launch_validation.hpp"
#include "t4acuda.h"

namespace t4a::launch {

// The attribute flags validate_attrs accepts (the experimental section's
// T4A_LAUNCH_ATTR_*; launch/attributes.cpp asserts the values).
inline constexpr uint32_t k_attr_programmatic = 0x1u;
inline constexpr uint32_t k_attr_non_portable = 0x2u;
inline constexpr uint32_t k_attr_flags =
    k_attr_programmatic | k_attr_non_portable;
// The portable maximum of blocks per cluster (sm_90).
inline constexpr uint32_t k_portable_cluster = 8;

// What a launch with attributes does.
struct LaunchEx {
  // Blocks per cluster (y and z 0 made 1): the attributes' or the kernel's
  // compiled dimensions; all 1 without a cluster.
  bool cluster = false;
  uint32_t dims[3] = {1, 1, 1};
  uint32_t blocks = 1; // dims[0] * dims[1] * dims[2], saturated
  // The cluster came from the attributes: passed as
  // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (compiled dimensions are not
  // repeated: the driver has them).
  bool cluster_attr = false;
  bool programmatic = false;
  bool non_portable = false;
  // Launched through cuLaunchKernelEx (a cluster attribute or
  // programmatic); otherwise through cuLaunchKernel.
  bool use_ex = false;
  // The launch needs launch/attributes.cpp's steps (cuLaunchKernelEx, or
  // the non-portable opt-in).
  bool needed() const { return use_ex || non_portable; }
};

// The device can launch clusters (compute capability 9.0 and
// CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH), else UNSUPPORTED naming both.
void check_cluster_device(const DeviceLimits &device, core::Check *c);

// The attributes' part of the descriptor check, after validate() accepted
// the descriptor (`grid`: its extents, 0 made 1). `attrs` NULL means none;
// then only the kernel's compiled cluster facts are checked. `ex_missing`:
// NULL when the driver has cuLaunchKernelEx, else the driver's text saying
// it lacks it (driver::lacks_text), quoted in the UNSUPPORTED of a launch
// that needs it. `*out` is written only when `c` stays SUCCESS.
void validate_attrs(uint32_t desc_flags, const t4a_launch_attrs *attrs,
                    const uint32_t grid[3], const KernelSignature &kernel,
                    const DeviceLimits &device, const char *ex_missing,
                    LaunchEx *out, core::Check *c);

} // namespace t4a::launch
