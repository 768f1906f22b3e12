// libFuzzer target: the pure launch validation driven with
// arbitrary bytes — descriptor fields (struct_size-independent: the
// descriptor is built field by field), argument kinds, sizes and offsets,
// buffer facts, kernel signatures (known or unknown parameters) and device
// limits; then, for an accepted descriptor, its launch attributes
// (launch/attrs_validation.hpp: clusters, flags, compiled cluster facts,
// device capability). It must never crash, read out of bounds or
// overflow, and every rejection must carry a message.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "launch/attrs_validation.hpp"
#include "launch/launch_validation.hpp"

#include "fuzz_reader.hpp"

namespace {

using t4a_fuzz::Reader;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace t4a::launch;
  Reader r{data, size};
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.flags = r.get<uint8_t>() < 8 ? r.get<uint32_t>() : 0;
  d.kernel.id = r.get<uint64_t>();
  for (int i = 0; i < 3; ++i) d.grid[i] = r.get<uint32_t>();
  for (int i = 0; i < 3; ++i) d.block[i] = r.get<uint32_t>();
  d.dynamic_shared_bytes = r.get<uint32_t>();
  uint32_t nargs = r.get<uint8_t>() % 40;
  std::vector<t4a_arg> args(nargs);
  std::vector<ArgFacts> facts(nargs);
  static unsigned char scalar[T4A_MAX_PARAM_BYTES + 16];
  for (uint32_t i = 0; i < nargs; ++i) {
    t4a_arg &a = args[i];
    a.kind = r.get<uint8_t>() % 5;
    a.buffer.id = r.get<uint64_t>();
    a.offset = r.get<uint64_t>();
    a.size = r.get<uint16_t>();
    a.value = r.get<uint8_t>() & 1 ? scalar : nullptr;
    if (a.size > sizeof scalar) a.value = nullptr;
    a.device_pointer = r.get<uint64_t>();
    facts[i].same_runtime = r.get<uint8_t>() & 1;
    facts[i].buffer_bytes = r.get<uint64_t>();
  }
  // The count may claim more than the array holds only when args is NULL
  // or the count is beyond the parameter limit (the C entry point reads
  // nothing then either).
  uint8_t mode = r.get<uint8_t>() % 4;
  d.arg_count = nargs;
  d.args = nargs > 0 ? args.data() : nullptr;
  if (mode == 1) d.args = nullptr;
  if (mode == 1) d.arg_count = r.get<uint32_t>();
  if (mode == 2) d.arg_count = T4A_MAX_PARAM_BYTES + 1 + r.get<uint16_t>();
  KernelSignature k;
  k.max_threads_per_block = r.get<uint32_t>();
  k.static_shared_bytes = r.get<uint32_t>();
  std::vector<uint32_t> offsets, sizes;
  k.params_known = r.get<uint8_t>() & 1;
  if (k.params_known) {
    k.param_count = r.get<uint8_t>() % 40;
    offsets.resize(k.param_count);
    sizes.resize(k.param_count);
    for (uint32_t i = 0; i < k.param_count; ++i) {
      offsets[i] = r.get<uint32_t>();
      sizes[i] = r.get<uint32_t>();
    }
    k.param_offsets = offsets.data();
    k.param_sizes = sizes.data();
  }
  DeviceLimits lim;
  for (int i = 0; i < 3; ++i) lim.max_grid[i] = r.get<uint32_t>();
  for (int i = 0; i < 3; ++i) lim.max_block[i] = r.get<uint32_t>();
  lim.max_threads_per_block = r.get<uint32_t>();
  lim.max_shared_default = r.get<uint32_t>();
  lim.max_shared_optin = r.get<uint32_t>();
  bool same = r.get<uint8_t>() & 1;
  Verdict v;
  validate(d, same, facts.data(), k, lim, &v);
  if (v.status != T4A_SUCCESS && v.message[0] == '\0') std::abort();
  if (v.status == T4A_SUCCESS && v.param_bytes > T4A_MAX_PARAM_BYTES)
    std::abort();
  // An accepted launch has no zero extent: x as given (a 0 in x is
  // rejected, never made 1), 0 in y or z made 1.
  if (v.status == T4A_SUCCESS && (d.grid[0] == 0 || d.block[0] == 0))
    std::abort();
  if (v.status == T4A_SUCCESS)
    for (int i = 0; i < 3; ++i)
      if (v.grid[i] == 0 || v.block[i] == 0 ||
          (d.grid[i] != 0 && v.grid[i] != d.grid[i]) ||
          (d.block[i] != 0 && v.block[i] != d.block[i]))
        std::abort();
  if (v.status != T4A_SUCCESS) return 0;
  // The attributes of the accepted descriptor.
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.flags = r.get<uint8_t>() % 8;
  for (int i = 0; i < 3; ++i)
    a.cluster[i] = r.get<uint8_t>() & 1 ? r.get<uint32_t>() : r.get<uint8_t>();
  a.reserved0 = r.get<uint8_t>() < 8 ? 1 : 0;
  ClusterFacts f;
  for (int i = 0; i < 3; ++i)
    f.required_cluster[i] = r.get<uint8_t>() < 64 ? r.get<uint8_t>() % 5 : 0;
  f.cluster_must_be_set = r.get<uint8_t>() < 32;
  f.cc_major = r.get<uint8_t>() % 12;
  f.cc_minor = r.get<uint8_t>() % 10;
  f.cluster_launch = r.get<uint8_t>() & 1;
  const bool given = r.get<uint8_t>() & 1;
  const char *missing =
      r.get<uint8_t>() < 32 ? "the driver lacks cuLaunchKernelEx" : nullptr;
  LaunchEx ex;
  t4a::core::Check c;
  validate_attrs(d.flags, given ? &a : nullptr, v.grid, f, missing, &ex, &c);
  // The fast decision accepts only what the explained check accepts, with
  // the same launch.
  LaunchEx fast;
  if (given &&
      validate_attrs_fast(d.flags, a, v.grid, f, missing == nullptr, &fast) &&
      (!c.ok() || !same_launch(fast, ex)))
    std::abort();
  if (!c.ok()) {
    if (c.message[0] == '\0') std::abort();
    return 0;
  }
  // Accepted: the cluster divides the grid, stays within the portable
  // maximum unless opted out of it, never meets a cooperative launch, and
  // only a device and driver that have them get attributes.
  if (ex.cluster) {
    uint64_t blocks = 1;
    for (int i = 0; i < 3; ++i) {
      if (ex.dims[i] == 0 || v.grid[i] % ex.dims[i] != 0) std::abort();
      blocks *= ex.dims[i];
    }
    if (blocks > k_portable_cluster && !ex.non_portable) std::abort();
    if (f.cc_major < 9 || !f.cluster_launch) std::abort();
  }
  if ((d.flags & k_launch_cooperative) && (ex.cluster || ex.programmatic))
    std::abort();
  if (ex.use_ex && missing != nullptr) std::abort();
  if (ex.use_ex != (ex.cluster_attr || ex.programmatic)) std::abort();
  return 0;
}
