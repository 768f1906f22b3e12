#include "launch/attributes.hpp"

#include <cstring>
#include <string>

#include "core/admission.hpp"
#include "core/context_scope.hpp"
#include "core/error.hpp"
#include "core/struct_io.hpp"

namespace t4a::launch {

static_assert(k_attr_programmatic == T4A_LAUNCH_ATTR_PROGRAMMATIC &&
                  k_attr_non_portable == T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE,
              "attrs_validation.hpp's flags are the header's");

using namespace t4a::driver;

namespace {

// The launch configuration of `ex`: at most two attributes.
struct Config {
  CUlaunchAttribute attrs[2];
  CUlaunchConfig cfg;
  Config(const Verdict &v, uint32_t shared, CUstream s, const LaunchEx &ex,
         bool cluster_attr) {
    std::memset(attrs, 0, sizeof attrs);
    unsigned n = 0;
    if (cluster_attr) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attrs[n].value.clusterDim.x = ex.dims[0];
      attrs[n].value.clusterDim.y = ex.dims[1];
      attrs[n].value.clusterDim.z = ex.dims[2];
      ++n;
    }
    if (ex.programmatic) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attrs[n].value.programmaticStreamSerializationAllowed = 1;
      ++n;
    }
    cfg.gridDimX = v.grid[0];
    cfg.gridDimY = v.grid[1];
    cfg.gridDimZ = v.grid[2];
    cfg.blockDimX = v.block[0];
    cfg.blockDimY = v.block[1];
    cfg.blockDimZ = v.block[2];
    cfg.sharedMemBytes = shared;
    cfg.hStream = s;
    cfg.attrs = n > 0 ? attrs : nullptr;
    cfg.numAttrs = n;
  }
  Config(const Config &) = delete;
  Config &operator=(const Config &) = delete;
};

// The largest cluster of the launch's shape, cached per kernel for the last
// shape (under admission, context current).
t4a_status max_cluster_size(core::Runtime &rt, Kernel &k, const Verdict &v,
                            uint32_t shared, int32_t *out) {
  Kernel::ClusterLimit &c = k.cluster_limit();
  // The non-portable opt-in changes the answer: part of the key.
  const uint32_t shape[8] = {
      v.grid[0],  v.grid[1],  v.grid[2], v.block[0],
      v.block[1], v.block[2], shared,    uint32_t(k.non_portable_allowed())};
  if (c.valid && std::memcmp(c.shape, shape, sizeof shape) == 0) {
    *out = c.max_size;
    return T4A_SUCCESS;
  }
  // No stream: the query needs only the context, which is current (the
  // runtime's stream may be capturing).
  LaunchEx none{};
  Config cfg(v, shared, nullptr, none, false);
  int n = 0;
  if (auto r =
          cu::occupancy_max_potential_cluster_size(&n, k.function(), &cfg.cfg);
      !r)
    return rt.fail_op(r, "reading the largest cluster of a launch shape "
                         "(cuOccupancyMaxPotentialClusterSize)");
  std::memcpy(c.shape, shape, sizeof shape);
  c.max_size = n < 0 ? 0 : n;
  c.valid = true;
  *out = c.max_size;
  return T4A_SUCCESS;
}

// The non-portable opt-in and its limit (under admission, context current).
t4a_status non_portable(core::Runtime &rt, Kernel &k, const t4a_launch_desc &d,
                        const Verdict &v, const LaunchEx &ex) {
  if (t4a_status s = k.allow_non_portable_clusters(); s != T4A_SUCCESS)
    return s;
  if (!has(Entry::cuOccupancyMaxPotentialClusterSize)) return T4A_SUCCESS;
  int32_t max = 0;
  if (t4a_status s = max_cluster_size(rt, k, v, d.dynamic_shared_bytes, &max);
      s != T4A_SUCCESS)
    return s;
  if (ex.blocks > static_cast<uint32_t>(max))
    return core::fail(
        T4A_ERROR_INVALID_ARGUMENT,
        "the cluster is %u x %u x %u = %u blocks; kernel '%s' with block "
        "%u x %u x %u and %u dynamic shared bytes allows at most %d blocks "
        "per cluster on device %d (cuOccupancyMaxPotentialClusterSize); "
        "nothing was enqueued",
        ex.dims[0], ex.dims[1], ex.dims[2], ex.blocks, k.name().c_str(),
        v.block[0], v.block[1], v.block[2], d.dynamic_shared_bytes, max,
        rt.ordinal());
  return T4A_SUCCESS;
}

} // namespace

t4a_status check_attrs(const t4a_launch_desc &d, const t4a_launch_attrs *attrs,
                       const Verdict &v, const Kernel &k, LaunchEx *out) {
  std::string missing;
  if (!has(Entry::cuLaunchKernelEx)) [[unlikely]]
    missing = lacks_text(Entry::cuLaunchKernelEx);
  core::Check c;
  validate_attrs(d.flags, attrs, v.grid, k.cluster_facts(),
                 missing.empty() ? nullptr : missing.c_str(), out, &c);
  if (!c.ok()) return core::fail(c.status, "%s", c.message);
  return T4A_SUCCESS;
}

t4a_status read_and_check_attrs(const t4a_launch_desc &d,
                                const t4a_launch_attrs *given, const Verdict &v,
                                const Kernel &k, LaunchEx *out) {
  if (given == nullptr) return check_attrs(d, nullptr, v, k, out);
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  if (core::StructFault fault = core::copy_struct(given, &a);
      fault.status != T4A_SUCCESS) [[unlikely]]
    return core::fail_struct(fault, "attrs", sizeof a);
  // The common shapes without building a message (attrs_validation.hpp).
  if (validate_attrs_fast(d.flags, a, v.grid, k.cluster_facts(),
                          has(Entry::cuLaunchKernelEx), out)) [[likely]]
    return T4A_SUCCESS;
  return check_attrs(d, &a, v, k, out);
}

t4a_status prepare_attrs(core::Runtime &rt, Kernel &k, const t4a_launch_desc &d,
                         const Verdict &v, const LaunchEx &ex) {
  if (!ex.non_portable) return T4A_SUCCESS;
  core::ContextScope scope;
  if (t4a_status s = scope.enter(rt.context(), "launching a kernel");
      s != T4A_SUCCESS)
    return s;
  return non_portable(rt, k, d, v, ex);
}

DrvResult launch_ex(Kernel &k, const Verdict &v, uint32_t shared, CUstream s,
                    const LaunchEx &ex, void **params) {
  Config cfg(v, shared, s, ex, ex.cluster_attr);
  return cu::launch_kernel_ex(&cfg.cfg, k.function(), params);
}

t4a_status cluster_occupancy(Kernel &k, const t4a_launch_desc &d,
                             const Verdict &v, const LaunchEx &ex,
                             t4a_cluster_occupancy *out) {
  for (Entry e : {Entry::cuOccupancyMaxActiveClusters,
                  Entry::cuOccupancyMaxPotentialClusterSize})
    if (!has(e))
      return core::fail(T4A_ERROR_UNSUPPORTED, "cluster occupancy: %s",
                        lacks_text(e).c_str());
  core::Check c;
  check_cluster_device(k.cluster_facts(), &c);
  if (!c.ok()) return core::fail(c.status, "%s", c.message);
  core::Runtime &rt = k.runtime();
  const char *what = "computing cluster occupancy";
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  core::Admission adm(rt.admission());
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  core::ContextScope scope;
  if (t4a_status s = scope.enter(rt.context(), what); s != T4A_SUCCESS)
    return s;
  if (v.raise_shared)
    if (t4a_status s = k.ensure_dynamic_shared(d.dynamic_shared_bytes);
        s != T4A_SUCCESS)
      return s;
  if (ex.non_portable)
    if (t4a_status s = k.allow_non_portable_clusters(); s != T4A_SUCCESS)
      return s;
  // Without any cluster the clusters are single blocks; a compiled cluster
  // is the driver's already (not repeated).
  const bool compiled = ex.cluster && !ex.cluster_attr;
  Config active(v, d.dynamic_shared_bytes, nullptr, ex, !compiled);
  active.cfg.numAttrs = compiled ? 0 : 1; // the cluster attribute alone
  if (compiled) active.cfg.attrs = nullptr;
  int clusters = 0;
  if (auto r = cu::occupancy_max_active_clusters(&clusters, k.function(),
                                                 &active.cfg);
      !r)
    return rt.fail_op(r, "computing cluster occupancy "
                         "(cuOccupancyMaxActiveClusters)");
  int32_t size = 0;
  if (t4a_status s = max_cluster_size(rt, k, v, d.dynamic_shared_bytes, &size);
      s != T4A_SUCCESS)
    return s;
  t4a_cluster_occupancy o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.max_active_clusters = clusters < 0 ? 0 : clusters;
  // Without the non-portable flag a launch accepts at most the portable
  // maximum, whatever the kernel's opt-in from an earlier call allows.
  o.max_cluster_size = ex.non_portable || size <= int32_t(k_portable_cluster)
                           ? size
                           : int32_t(k_portable_cluster);
  core::write_struct(out, o);
  return T4A_SUCCESS;
}

} // namespace t4a::launch
