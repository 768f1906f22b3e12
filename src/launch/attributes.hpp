// Launch attributes (experimental: t4a_launch_ex, t4a_kernel_cluster_occupancy)
// on the driver: thread block clusters (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
// and programmatic dependent launch
// (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) through
// cuLaunchKernelEx. What the attributes mean and which are refused is the
// pure validate_attrs (launch/attrs_validation.hpp); this file reads them,
// records its verdict, takes the steps that need the driver (the
// non-portable opt-in and the device's cluster limit for the shape, under
// admission) and builds the launch configuration. A launch without
// attributes of a kernel without compiled cluster facts never reaches it.
#pragma once

#include <cuda.h>

#include "core/runtime.hpp"
#include "driver/cuda_api.hpp"
#include "launch/attrs_validation.hpp"
#include "launch/kernel.hpp"
#include "launch/launch_validation.hpp"

namespace t4a::launch {

// Whether a launch of `k` with `attrs` (NULL: none, or the caller's
// struct, not yet read) needs check_attrs: attributes were given, or the
// kernel has compiled cluster facts. One pointer test and one byte of line
// 0 on the warm path.
inline bool has_attr_facts(const Kernel &k, const void *attrs) {
  return attrs != nullptr || k.has_cluster();
}

// validate_attrs for a launch of `k` whose descriptor `d` validate()
// accepted with verdict `v` (`attrs` already read through its
// struct_size; NULL: none); records a rejection.
t4a_status check_attrs(const t4a_launch_desc &d, const t4a_launch_attrs *attrs,
                       const Verdict &v, const Kernel &k, LaunchEx *out);

// check_attrs of the caller's `given` (NULL: none), read through its
// struct_size first (INVALID_ARGUMENT or VERSION_MISMATCH naming `attrs`).
t4a_status read_and_check_attrs(const t4a_launch_desc &d,
                                const t4a_launch_attrs *given, const Verdict &v,
                                const Kernel &k, LaunchEx *out);

// Before the launch, under admission: with non-portable clusters, the
// kernel's opt-in and the cluster against the device's limit for the
// shape (cuOccupancyMaxPotentialClusterSize, cached per kernel for the
// last shape; without that entry point the driver judges at launch).
t4a_status prepare_attrs(core::Runtime &rt, Kernel &k, const t4a_launch_desc &d,
                         const Verdict &v, const LaunchEx &ex);

// The launch through cuLaunchKernelEx with `ex`'s attributes.
driver::DrvResult launch_ex(Kernel &k, const Verdict &v, uint32_t shared,
                            CUstream s, const LaunchEx &ex, void **params);

// t4a_kernel_cluster_occupancy after the shape and attributes were checked.
t4a_status cluster_occupancy(Kernel &k, const t4a_launch_desc &d,
                             const Verdict &v, const LaunchEx &ex,
                             t4a_cluster_occupancy *out);

} // namespace t4a::launch
