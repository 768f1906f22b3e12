// Launch attributes (t4a_launch_attrs, experimental) as a pure function:
// the descriptor's flags, the attributes (already read through their
// struct_size; NULL: none), the grid validate() made, the kernel's compiled
// cluster facts, the device's capability and whether the driver has
// cuLaunchKernelEx in; what the launch does with them out. No driver, no
// registry, no heap: table-tested on the host (tests/host/
// test_launch_attrs_table.cpp) and fuzzed with the rest of the descriptor
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

// What launch attributes are checked against, read once at kernel lookup
// and kept off the launch's hot cache lines (launch/kernel.hpp): the
// cluster dimensions compiled into the kernel (`__cluster_dims__`,
// CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_*; all 0: none), whether it must be
// launched with a cluster (CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET),
// the device's compute capability and CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH.
struct ClusterFacts {
  uint32_t required_cluster[3] = {0, 0, 0};
  bool cluster_must_be_set = false;
  uint32_t cc_major = 0, cc_minor = 0;
  bool cluster_launch = false;
  // The kernel itself has cluster facts: a launch without attributes is
  // checked too.
  bool kernel_has_cluster() const {
    return (required_cluster[0] | required_cluster[1] | required_cluster[2] |
            uint32_t(cluster_must_be_set)) != 0;
  }
};

// What a launch with attributes does. No default member initializers:
// declared on the launch path for every launch, written only by
// validate_attrs (which sets every field) on the rare path.
struct LaunchEx {
  // Blocks per cluster (y and z 0 made 1): the attributes' or the kernel's
  // compiled dimensions; all 1 without a cluster.
  bool cluster;
  uint32_t dims[3];
  uint32_t blocks; // dims[0] * dims[1] * dims[2], saturated
  // The cluster came from the attributes: passed as
  // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (compiled dimensions are not
  // repeated: the driver has them).
  bool cluster_attr;
  bool programmatic;
  bool non_portable;
  // Launched through cuLaunchKernelEx (a cluster attribute or
  // programmatic); otherwise through cuLaunchKernel.
  bool use_ex;
  // The launch needs launch/attributes.cpp's steps (cuLaunchKernelEx, or
  // the non-portable opt-in).
  bool needed() const { return use_ex || non_portable; }
};

// The device can launch clusters (compute capability 9.0 and
// CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH), else UNSUPPORTED naming both.
void check_cluster_device(const ClusterFacts &device, core::Check *c);

// The attributes' part of the descriptor check, after validate() accepted
// the descriptor (`grid`: its extents, 0 made 1). `attrs` NULL means none;
// then only the kernel's compiled cluster facts are checked. `ex_missing`:
// NULL when the driver has cuLaunchKernelEx, else the driver's text saying
// it lacks it (driver::lacks_text), quoted in the UNSUPPORTED of a launch
// that needs it. `*out` is written only when `c` stays SUCCESS.
void validate_attrs(uint32_t desc_flags, const t4a_launch_attrs *attrs,
                    const uint32_t grid[3], const ClusterFacts &facts,
                    const char *ex_missing, LaunchEx *out, core::Check *c);

// Two verdicts name the same launch (every field of LaunchEx).
inline bool same_launch(const LaunchEx &a, const LaunchEx &b) {
  return a.cluster == b.cluster && a.dims[0] == b.dims[0] &&
         a.dims[1] == b.dims[1] && a.dims[2] == b.dims[2] &&
         a.blocks == b.blocks && a.cluster_attr == b.cluster_attr &&
         a.programmatic == b.programmatic && a.non_portable == b.non_portable &&
         a.use_ex == b.use_ex;
}

// The common launch with attributes decided without a message, in a few
// branches: the attributes (read through their struct_size) ask for a
// portable cluster given on every axis the caller set, or programmatic
// launch, or both; the descriptor has no flags; the kernel has no compiled
// cluster facts; the device has compute capability 9.0 and clusters; the
// driver has cuLaunchKernelEx (`has_ex`). True only when validate_attrs
// accepts the same launch with the same *out; false says nothing (the
// caller runs validate_attrs, which names the problem). The fuzzer
// (fuzz/fuzz_launch_validation.cpp) and the table test check both agree.
inline bool validate_attrs_fast(uint32_t desc_flags, const t4a_launch_attrs &a,
                                const uint32_t grid[3], const ClusterFacts &k,
                                bool has_ex, LaunchEx *out) {
  if ((desc_flags | (a.flags & ~k_attr_programmatic) | a.reserved0) != 0 ||
      !has_ex || k.kernel_has_cluster() || k.cc_major < 9)
    return false;
  const uint32_t x = a.cluster[0];
  const uint32_t y = a.cluster[1] != 0 ? a.cluster[1] : 1;
  const uint32_t z = a.cluster[2] != 0 ? a.cluster[2] : 1;
  const bool programmatic = (a.flags & k_attr_programmatic) != 0;
  LaunchEx ex;
  ex.programmatic = programmatic;
  ex.non_portable = false;
  if (x == 0) {
    if ((a.cluster[1] | a.cluster[2]) != 0) return false;
    ex.cluster = false;
    ex.dims[0] = ex.dims[1] = ex.dims[2] = 1;
    ex.blocks = 1;
    ex.cluster_attr = false;
    ex.use_ex = programmatic;
  } else {
    // Each axis at most the portable maximum first: the product cannot
    // wrap.
    if (!k.cluster_launch || x > k_portable_cluster || y > k_portable_cluster ||
        z > k_portable_cluster || x * y * z > k_portable_cluster ||
        (grid[0] % x | grid[1] % y | grid[2] % z) != 0)
      return false;
    ex.cluster = true;
    ex.dims[0] = x, ex.dims[1] = y, ex.dims[2] = z;
    ex.blocks = x * y * z;
    ex.cluster_attr = true;
    ex.use_ex = true;
  }
  *out = ex;
  return true;
}

} // namespace t4a::launch
