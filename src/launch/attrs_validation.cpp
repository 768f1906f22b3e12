#include "launch/attrs_validation.hpp"

namespace t4a::launch {

namespace {

const char *const k_axis[3] = {"x", "y", "z"};

} // namespace

void check_cluster_device(const ClusterFacts &dev, core::Check *c) {
  if (dev.cc_major < 9)
    return c->reject(T4A_ERROR_UNSUPPORTED,
                     "thread block clusters need compute capability 9.0 "
                     "(Hopper) or newer; the device is %u.%u",
                     dev.cc_major, dev.cc_minor);
  if (!dev.cluster_launch)
    return c->reject(T4A_ERROR_UNSUPPORTED,
                     "thread block clusters: the device (compute capability "
                     "%u.%u) reports CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH 0",
                     dev.cc_major, dev.cc_minor);
}

namespace {

// The attributes' own fields: flags, reserved, the cluster's axes.
void check_fields(const t4a_launch_attrs &a, core::Check *c) {
  if ((a.flags & ~k_attr_flags) != 0)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "attrs->flags is 0x%x; the flags are "
                     "T4A_LAUNCH_ATTR_PROGRAMMATIC (0x1) and "
                     "T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE (0x2)",
                     a.flags);
  if (a.reserved0 != 0)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "attrs->reserved0 is %u; it must be 0", a.reserved0);
  if (a.cluster[0] == 0 && (a.cluster[1] != 0 || a.cluster[2] != 0))
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "attrs->cluster is %u x %u x %u; cluster[0] (x) must be "
                     "set when y or z is (0 x 0 x 0 means no cluster)",
                     a.cluster[0], a.cluster[1], a.cluster[2]);
}

// The cluster to launch with: the attributes' (y, z 0 made 1), else the
// kernel's compiled dimensions; a difference between both is refused.
void choose_cluster(const t4a_launch_attrs *a, const ClusterFacts &k,
                    LaunchEx *ex, core::Check *c) {
  const uint32_t *req = k.required_cluster;
  const bool compiled = req[0] != 0 || req[1] != 0 || req[2] != 0;
  const bool given = a != nullptr && a->cluster[0] != 0;
  if (given) {
    for (int i = 0; i < 3; ++i)
      ex->dims[i] = a->cluster[i] != 0 ? a->cluster[i] : 1;
    if (compiled)
      for (int i = 0; i < 3; ++i)
        if (ex->dims[i] != (req[i] != 0 ? req[i] : 1))
          return c->reject(
              T4A_ERROR_INVALID_ARGUMENT,
              "attrs->cluster is %u x %u x %u; the kernel was compiled with "
              "__cluster_dims__(%u, %u, %u) (leave attrs->cluster 0 to use "
              "them)",
              ex->dims[0], ex->dims[1], ex->dims[2], req[0], req[1], req[2]);
  } else if (compiled) {
    for (int i = 0; i < 3; ++i) ex->dims[i] = req[i] != 0 ? req[i] : 1;
  } else if (k.cluster_must_be_set) {
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "the kernel must be launched with a cluster "
                     "(CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET); set "
                     "attrs->cluster");
  }
  ex->cluster = given || compiled;
  // Compiled dimensions are the driver's already: an equal attribute is
  // checked, never passed (the driver's rule for them is "unset or equal").
  ex->cluster_attr = given && !compiled;
  ex->use_ex = ex->cluster_attr;
}

// The cluster against the grid and the portable maximum.
void check_cluster_shape(const LaunchEx &ex, const uint32_t grid[3],
                         core::Check *c) {
  for (int i = 0; i < 3; ++i)
    if (grid[i] % ex.dims[i] != 0)
      return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                       "the cluster is %u x %u x %u blocks; grid[%d] (%s) is "
                       "%u, not a multiple of %u (every axis of the grid must "
                       "be a multiple of the cluster's)",
                       ex.dims[0], ex.dims[1], ex.dims[2], i, k_axis[i],
                       grid[i], ex.dims[i]);
  if (ex.blocks > k_portable_cluster && !ex.non_portable)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "the cluster is %u x %u x %u = %u blocks; the portable "
                     "maximum is %u (set T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE "
                     "in attrs->flags for more, up to what the device allows)",
                     ex.dims[0], ex.dims[1], ex.dims[2], ex.blocks,
                     k_portable_cluster);
}

} // namespace

void validate_attrs(uint32_t desc_flags, const t4a_launch_attrs *a,
                    const uint32_t grid[3], const ClusterFacts &k,
                    const char *ex_missing, LaunchEx *out, core::Check *c) {
  const ClusterFacts &dev = k;
  LaunchEx ex{};
  ex.dims[0] = ex.dims[1] = ex.dims[2] = 1;
  ex.blocks = 1;
  if (a != nullptr) {
    check_fields(*a, c);
    if (!c->ok()) return;
    ex.programmatic = (a->flags & k_attr_programmatic) != 0;
    ex.non_portable = (a->flags & k_attr_non_portable) != 0;
  }
  choose_cluster(a, k, &ex, c);
  if (!c->ok()) return;
  if (ex.programmatic) ex.use_ex = true;
  if (ex.non_portable) {
    if (!ex.cluster)
      return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                       "attrs->flags has T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE "
                       "but there is no cluster (attrs->cluster is 0 x 0 x 0 "
                       "and the kernel has no __cluster_dims__)");
  }
  const bool cooperative = (desc_flags & k_launch_cooperative) != 0;
  if (cooperative && (ex.cluster || ex.programmatic))
    return c->reject(
        T4A_ERROR_INVALID_ARGUMENT,
        "desc->flags has T4A_LAUNCH_COOPERATIVE with %s; this version does not "
        "combine them (a cooperative grid's co-residency is checked per "
        "block, not per cluster)",
        ex.cluster ? "a thread block cluster" : "T4A_LAUNCH_ATTR_PROGRAMMATIC");
  if (ex.cluster) {
    // In 64 bits (three 32-bit axes), saturated to 32: anything above the
    // portable maximum is refused below unless non-portable, and then by
    // the device's limit (launch/attributes.cpp).
    const uint64_t blocks = uint64_t(ex.dims[0]) * ex.dims[1] * ex.dims[2];
    ex.blocks = blocks > 0xFFFFFFFFu ? 0xFFFFFFFFu : uint32_t(blocks);
    check_cluster_shape(ex, grid, c);
    if (!c->ok()) return;
    check_cluster_device(dev, c);
    if (!c->ok()) return;
  }
  if (ex.programmatic && dev.cc_major < 9)
    return c->reject(T4A_ERROR_UNSUPPORTED,
                     "programmatic dependent launch needs compute capability "
                     "9.0 (Hopper) or newer; the device is %u.%u",
                     dev.cc_major, dev.cc_minor);
  if (ex.use_ex && ex_missing != nullptr)
    return c->reject(T4A_ERROR_UNSUPPORTED, "launch attributes: %s",
                     ex_missing);
  *out = ex;
}

} // namespace t4a::launch
