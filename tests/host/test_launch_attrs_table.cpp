// Host lane: the pure launch-attribute validation
// (src/launch/attrs_validation.cpp, compiled into this test) over a table
// of attributes, compiled cluster facts and devices: status, the named
// field and values, and what the launch does. The fake-driver suite
// (test_launch_attrs.c) covers the same paths through t4a_launch_ex; this
// one reaches what the fake cannot make (a 9.0 device without cluster
// launch, 32-bit overflow of a cluster's block count).
// SPDX-License-Identifier: MIT OR Apache-2.0
#define T4A_EXPERIMENTAL 1
#include <cstdio>
#include <cstring>

#include "launch/attrs_validation.hpp"

using namespace t4a::launch;

namespace {

int g_failures = 0;
int g_fast_rows = 0; // rows validate_attrs_fast decided

ClusterFacts hopper() {
  ClusterFacts l;
  l.cc_major = 9;
  l.cc_minor = 0;
  l.cluster_launch = true;
  return l;
}

struct Row {
  const char *name;
  uint32_t desc_flags;
  bool given;
  t4a_launch_attrs attrs;
  uint32_t grid[3];
  uint32_t required[3];
  bool must;
  ClusterFacts dev;
  const char *missing;
  t4a_status want;
  const char *part; // in the message (rejections) or nullptr
  // Accepted rows: use_ex and the cluster's block count.
  bool use_ex;
  uint32_t blocks;
};

t4a_launch_attrs attrs(uint32_t flags, uint32_t x, uint32_t y, uint32_t z) {
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.flags = flags;
  a.cluster[0] = x, a.cluster[1] = y, a.cluster[2] = z;
  return a;
}

void run(const Row &r) {
  ClusterFacts k = r.dev;
  std::memcpy(k.required_cluster, r.required, sizeof r.required);
  k.cluster_must_be_set = r.must;
  LaunchEx ex{};
  ex.blocks = 12345; // untouched on a rejection
  t4a::core::Check c;
  validate_attrs(r.desc_flags, r.given ? &r.attrs : nullptr, r.grid, k,
                 r.missing, &ex, &c);
  bool ok = c.status == r.want &&
            (r.part == nullptr || std::strstr(c.message, r.part) != nullptr);
  // The fast decision agrees: it accepts only what the explained check
  // accepts, with the same launch; count the rows it decides.
  LaunchEx fast{};
  if (r.given && validate_attrs_fast(r.desc_flags, r.attrs, r.grid, k,
                                     r.missing == nullptr, &fast)) {
    ++g_fast_rows;
    if (c.status != T4A_SUCCESS || !same_launch(fast, ex)) {
      std::fprintf(stderr,
                   "FAIL %s: the fast decision accepted a launch "
                   "the explained check did not, or another one\n",
                   r.name);
      ++g_failures;
    }
  }
  if (ok && r.want == T4A_SUCCESS)
    ok = ex.use_ex == r.use_ex && ex.blocks == r.blocks;
  if (ok && r.want != T4A_SUCCESS) ok = ex.blocks == 12345;
  if (!ok) {
    std::fprintf(stderr,
                 "FAIL %s: status %d (want %d), message \"%s\" (want "
                 "\"%s\"), use_ex %d blocks %u\n",
                 r.name, c.status, r.want, c.message, r.part ? r.part : "",
                 ex.use_ex, ex.blocks);
    ++g_failures;
  }
}

} // namespace

int main() {
  const ClusterFacts h = hopper();
  ClusterFacts no_clusters = h;
  no_clusters.cluster_launch = false;
  ClusterFacts ampere = h;
  ampere.cc_major = 8;
  const Row rows[] = {
      {"none",
       0,
       false,
       attrs(0, 0, 0, 0),
       {8, 1, 1},
       {0, 0, 0},
       false,
       h,
       nullptr,
       T4A_SUCCESS,
       nullptr,
       false,
       1},
      {"zero attrs",
       0,
       true,
       attrs(0, 0, 0, 0),
       {8, 1, 1},
       {0, 0, 0},
       false,
       h,
       nullptr,
       T4A_SUCCESS,
       nullptr,
       false,
       1},
      {"cluster 2",
       0,
       true,
       attrs(0, 2, 0, 0),
       {8, 1, 1},
       {0, 0, 0},
       false,
       h,
       nullptr,
       T4A_SUCCESS,
       nullptr,
       true,
       2},
      {"cluster 2x2x2",
       0,
       true,
       attrs(0, 2, 2, 2),
       {8, 4, 2},
       {0, 0, 0},
       false,
       h,
       nullptr,
       T4A_SUCCESS,
       nullptr,
       true,
       8},
      {"3-D above portable",
       0,
       true,
       attrs(0, 2, 2, 4),
       {8, 4, 4},
       {0, 0, 0},
       false,
       h,
       nullptr,
       T4A_ERROR_INVALID_ARGUMENT,
       "2 x 2 x 4 = 16 blocks; the portable maximum is 8",
       false,
       0},
      {"32-bit overflow saturates",
       T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE,
       true,
       attrs(T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE, 65536, 65536, 1),
       {65536, 65536, 1},
       {0, 0, 0},
       false,
       h,
       nullptr,
       T4A_SUCCESS,
       nullptr,
       true,
       0xFFFFFFFFu},
      {"compiled dims, launched plain",
       0,
       false,
       attrs(0, 0, 0, 0),
       {8, 2, 1},
       {4, 2, 0},
       false,
       h,
       nullptr,
       T4A_SUCCESS,
       nullptr,
       false,
       8},
      {"compiled dims: y does not divide",
       0,
       false,
       attrs(0, 0, 0, 0),
       {8, 3, 1},
       {4, 2, 0},
       false,
       h,
       nullptr,
       T4A_ERROR_INVALID_ARGUMENT,
       "grid[1] (y) is 3, not a multiple of 2",
       false,
       0},
      {"compiled dims and an equal attribute: checked, not passed",
       0,
       true,
       attrs(0, 2, 1, 1),
       {8, 1, 1},
       {2, 1, 1},
       false,
       h,
       nullptr,
       T4A_SUCCESS,
       nullptr,
       false,
       2},
      {"compiled dims and programmatic",
       0,
       true,
       attrs(T4A_LAUNCH_ATTR_PROGRAMMATIC, 0, 0, 0),
       {8, 1, 1},
       {2, 1, 1},
       false,
       h,
       nullptr,
       T4A_SUCCESS,
       nullptr,
       true,
       2},
      {"compiled dims differ in z",
       0,
       true,
       attrs(0, 2, 1, 2),
       {8, 1, 2},
       {2, 1, 1},
       false,
       h,
       nullptr,
       T4A_ERROR_INVALID_ARGUMENT,
       "__cluster_dims__(2, 1, 1)",
       false,
       0},
      {"must be set",
       0,
       false,
       attrs(0, 0, 0, 0),
       {8, 1, 1},
       {0, 0, 0},
       true,
       h,
       nullptr,
       T4A_ERROR_INVALID_ARGUMENT,
       "must be launched with a cluster",
       false,
       0},
      {"9.0 without cluster launch",
       0,
       true,
       attrs(0, 2, 0, 0),
       {8, 1, 1},
       {0, 0, 0},
       false,
       no_clusters,
       nullptr,
       T4A_ERROR_UNSUPPORTED,
       "CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH 0",
       false,
       0},
      {"8.0 cluster",
       0,
       true,
       attrs(0, 2, 0, 0),
       {8, 1, 1},
       {0, 0, 0},
       false,
       ampere,
       nullptr,
       T4A_ERROR_UNSUPPORTED,
       "the device is 8.0",
       false,
       0},
      {"8.0 programmatic",
       0,
       true,
       attrs(T4A_LAUNCH_ATTR_PROGRAMMATIC, 0, 0, 0),
       {8, 1, 1},
       {0, 0, 0},
       false,
       ampere,
       nullptr,
       T4A_ERROR_UNSUPPORTED,
       "programmatic dependent launch needs compute capability 9.0",
       false,
       0},
      {"8.0 without attributes",
       0,
       true,
       attrs(0, 0, 0, 0),
       {8, 1, 1},
       {0, 0, 0},
       false,
       ampere,
       nullptr,
       T4A_SUCCESS,
       nullptr,
       false,
       1},
      {"no cuLaunchKernelEx",
       0,
       true,
       attrs(0, 2, 0, 0),
       {8, 1, 1},
       {0, 0, 0},
       false,
       h,
       "the driver (CUDA 11.4) lacks cuLaunchKernelEx",
       T4A_ERROR_UNSUPPORTED,
       "launch attributes: the driver (CUDA 11.4)",
       false,
       0},
      {"no cuLaunchKernelEx, compiled dims",
       0,
       false,
       attrs(0, 0, 0, 0),
       {8, 1, 1},
       {2, 1, 1},
       false,
       h,
       "lacks cuLaunchKernelEx",
       T4A_SUCCESS,
       nullptr,
       false,
       2},
      {"cooperative + compiled cluster",
       0x1,
       false,
       attrs(0, 0, 0, 0),
       {8, 1, 1},
       {2, 1, 1},
       false,
       h,
       nullptr,
       T4A_ERROR_INVALID_ARGUMENT,
       "T4A_LAUNCH_COOPERATIVE with a thread block cluster",
       false,
       0},
      {"unknown flag",
       0,
       true,
       attrs(0x8, 0, 0, 0),
       {8, 1, 1},
       {0, 0, 0},
       false,
       h,
       nullptr,
       T4A_ERROR_INVALID_ARGUMENT,
       "attrs->flags is 0x8",
       false,
       0},
  };
  for (const Row &r : rows) run(r);
  // The launches the fast decision is for are decided by it: a portable
  // cluster (on one and on three axes), programmatic launch alone.
  {
    const uint32_t grid[3] = {8, 4, 2};
    const t4a_launch_attrs common[] = {
        attrs(0, 2, 0, 0), attrs(0, 2, 2, 2),
        attrs(T4A_LAUNCH_ATTR_PROGRAMMATIC, 0, 0, 0)};
    for (const t4a_launch_attrs &a : common) {
      LaunchEx fast{};
      if (!validate_attrs_fast(0, a, grid, h, true, &fast)) {
        std::fprintf(stderr,
                     "FAIL: the fast decision declined cluster %u x %u x %u "
                     "flags 0x%x\n",
                     a.cluster[0], a.cluster[1], a.cluster[2], a.flags);
        ++g_failures;
      }
    }
  }
  // Near misses of the fast decision: each either declined by it or
  // decided as validate_attrs decides it.
  {
    const uint32_t grid[3] = {8, 4, 2};
    ClusterFacts compiled = h;
    compiled.required_cluster[0] = 2;
    ClusterFacts old = h;
    old.cc_major = 8;
    ClusterFacts no_launch = h;
    no_launch.cluster_launch = false;
    struct Near {
      const char *name;
      uint32_t desc_flags;
      t4a_launch_attrs a;
      ClusterFacts k;
      bool has_ex;
    } near[] = {
        {"non-portable 2", 0,
         attrs(T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE, 2, 0, 0), h, true},
        {"cooperative", 1, attrs(0, 2, 0, 0), h, true},
        {"compiled dims", 0, attrs(0, 2, 0, 0), compiled, true},
        {"cc 8 programmatic", 0, attrs(T4A_LAUNCH_ATTR_PROGRAMMATIC, 0, 0, 0),
         old, true},
        {"no cluster launch", 0, attrs(0, 2, 0, 0), no_launch, true},
        {"no cuLaunchKernelEx", 0, attrs(0, 2, 0, 0), h, false},
        {"y without x", 0, attrs(0, 0, 2, 0), h, true},
        {"3 does not divide 8", 0, attrs(0, 3, 0, 0), h, true},
        {"y 8 does not divide 4", 0, attrs(0, 1, 8, 0), h, true},
        {"z 4 does not divide 2", 0, attrs(0, 1, 1, 4), h, true},
        {"9 blocks", 0, attrs(0, 1, 1, 9), h, true},
    };
    for (const Near &n : near) {
      LaunchEx fast{}, ex{};
      t4a::core::Check c;
      validate_attrs(n.desc_flags, &n.a, grid, n.k,
                     n.has_ex ? nullptr : "no cuLaunchKernelEx", &ex, &c);
      if (validate_attrs_fast(n.desc_flags, n.a, grid, n.k, n.has_ex, &fast) &&
          (!c.ok() || !same_launch(fast, ex))) {
        std::fprintf(stderr, "FAIL %s: the fast decision differs\n", n.name);
        ++g_failures;
      }
    }
  }
  if (g_fast_rows == 0) {
    std::fprintf(stderr, "FAIL: no table row was decided by the fast path\n");
    ++g_failures;
  }
  if (g_failures != 0) {
    std::fprintf(stderr, "%d of %zu rows failed\n", g_failures,
                 sizeof rows / sizeof rows[0]);
    return 1;
  }
  std::printf("%zu rows passed (%d decided by the fast path too)\n",
              sizeof rows / sizeof rows[0], g_fast_rows);
  return 0;
}
