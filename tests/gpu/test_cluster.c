/*
 * Hopper launch attributes on the GPU (issue 28, experimental API), label
 * gpu: thread block clusters whose blocks read each other's shared memory
 * (cooperative_groups::this_cluster(), map_shared_rank), a distributed
 * shared memory sum across a cluster checked against the CPU, a kernel
 * compiled with __cluster_dims__ launched by plain t4a_launch, a
 * non-portable 16-block cluster, invalid shapes refused with nothing
 * enqueued, cluster occupancy, a programmatic dependent launch chain behind
 * a slow first kernel, and graph capture of both. Every result is checked
 * element by element. Skipped (exit 77) without a GPU unless
 * T4A_REQUIRE_GPU; the device must have compute capability 9.0.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L
#define T4A_EXPERIMENTAL 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_support.h"
#include "launch_args.h"
#include "t4acuda.h"
#include "test_assert.h"

/* neighbor: each block of a 1-D cluster stores its input in shared
 * memory; after cluster.sync() every thread reads the same slot of the
 * next block of its cluster (rank + 1, wrapping) through distributed
 * shared memory; a second sync keeps that block's shared memory alive
 * until every reader is done. neighbor_fixed: the same, compiled with
 * __cluster_dims__(2, 1, 1). cluster_sum: each block sums its slice into
 * shared memory; rank 0 adds every rank's partial through
 * map_shared_rank and writes one sum per cluster. slow_fill lets the next
 * grid start at once (griddepcontrol.launch_dependents), then writes
 * `value` after spinning `spin` clocks; step (programmatic) lets the next
 * grid start, then waits for the previous grid to complete
 * (griddepcontrol.wait) and adds 1. Every dependent grid may so be
 * resident before its predecessor finished: each wait is load-bearing (a
 * step that did not wait would add to a value not yet written). */
static const char *const k_src =
    "#include <cooperative_groups.h>\n"
    "namespace cg = cooperative_groups;\n"
    "template <int dummy>\n"
    "__device__ void neighbor_body(const unsigned *in, unsigned *out) {\n"
    "  extern __shared__ unsigned s[];\n"
    "  cg::cluster_group cl = cg::this_cluster();\n"
    "  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  s[threadIdx.x] = in[g];\n"
    "  cl.sync();\n"
    "  unsigned next = (cl.block_rank() + 1) % cl.num_blocks();\n"
    "  unsigned *theirs = cl.map_shared_rank(s, next);\n"
    "  out[g] = theirs[threadIdx.x];\n"
    "  cl.sync();\n"
    "}\n"
    "extern \"C\" __global__ void neighbor(const unsigned *in, unsigned "
    "*out) {\n"
    "  neighbor_body<0>(in, out);\n"
    "}\n"
    "extern \"C\" __global__ void __cluster_dims__(2, 1, 1)\n"
    "neighbor_fixed(const unsigned *in, unsigned *out) {\n"
    "  neighbor_body<1>(in, out);\n"
    "}\n"
    "extern \"C\" __global__ void cluster_sum(const unsigned *in,\n"
    "    unsigned n_per_block, unsigned long long *sums) {\n"
    "  __shared__ unsigned long long part;\n"
    "  cg::cluster_group cl = cg::this_cluster();\n"
    "  if (threadIdx.x == 0) part = 0;\n"
    "  __syncthreads();\n"
    "  unsigned long long mine = 0;\n"
    "  for (unsigned i = threadIdx.x; i < n_per_block; i += blockDim.x)\n"
    "    mine += in[blockIdx.x * n_per_block + i];\n"
    "  atomicAdd(&part, mine);\n"
    "  cl.sync();\n"
    "  if (cl.block_rank() == 0 && threadIdx.x == 0) {\n"
    "    unsigned long long t = 0;\n"
    "    for (unsigned r = 0; r < cl.num_blocks(); ++r)\n"
    "      t += *cl.map_shared_rank(&part, r);\n"
    "    sums[blockIdx.x / cl.num_blocks()] = t;\n"
    "  }\n"
    "  cl.sync();\n"
    "}\n"
    "extern \"C\" __global__ void slow_fill(unsigned *x, unsigned n,\n"
    "    unsigned value, unsigned long long spin) {\n"
    "  asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
    "  long long start = clock64();\n"
    "  while ((unsigned long long)(clock64() - start) < spin) {}\n"
    "  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += gridDim.x * blockDim.x) x[i] = value;\n"
    "}\n"
    "extern \"C\" __global__ void step(unsigned *x, unsigned n) {\n"
    "  asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
    "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
    "  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += gridDim.x * blockDim.x) x[i] += 1;\n"
    "}\n";

struct fixture {
  t4a_runtime rt;
  t4a_module m;
  t4a_kernel neighbor, neighbor_fixed, cluster_sum, slow_fill, step;
};

static t4a_kernel kernel(t4a_module m, const char *name) {
  t4a_kernel k = {0};
  ASSERT_OK(t4a_kernel_get(m, name, &k));
  return k;
}

static int setup(void **state) {
  static struct fixture f;
  memset(&f, 0, sizeof f);
  ASSERT_OK(t4a_runtime_create(NULL, &f.rt));
  t4a_device_info info = T4A_DEVICE_INFO_INIT;
  ASSERT_OK(t4a_device_info_get(0, &info));
  if (info.cc_major < 9) {
    fprintf(stderr,
            "test_cluster needs compute capability 9.0, device 0 is "
            "%d.%d\n",
            info.cc_major, info.cc_minor);
    exit(getenv("T4A_REQUIRE_GPU") != NULL ? 1 : 77);
  }
  SKIP_IF_NVRTC_OUTRUNS_DRIVER();
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  r.source = k_src;
  r.output = T4A_COMPILE_CUBIN;
  r.runtime = f.rt;
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  t4a_artifact a = {0};
  t4a_status s = t4a_compile(&r, &a);
  if (s != T4A_SUCCESS) {
    char log[8192];
    size_t needed = 0;
    if (t4a_last_compile_log(log, sizeof log, &needed) == T4A_SUCCESS)
      fprintf(stderr, "%s\n", log);
    fail_msg("compile failed: %s", last_message());
  }
  ASSERT_OK(t4a_module_load(f.rt, a, &f.m));
  ASSERT_OK(t4a_artifact_release(a));
  f.neighbor = kernel(f.m, "neighbor");
  f.neighbor_fixed = kernel(f.m, "neighbor_fixed");
  f.cluster_sum = kernel(f.m, "cluster_sum");
  f.slow_fill = kernel(f.m, "slow_fill");
  f.step = kernel(f.m, "step");
  *state = &f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = *state;
  t4a_kernel *ks[5] = {&f->neighbor, &f->neighbor_fixed, &f->cluster_sum,
                       &f->slow_fill, &f->step};
  for (int i = 0; i < 5; ++i) ASSERT_OK(t4a_kernel_release(*ks[i]));
  ASSERT_OK(t4a_module_release(f->m));
  ASSERT_OK(t4a_runtime_destroy(f->rt));
  return 0;
}

static t4a_buffer upload_pattern(t4a_runtime rt, unsigned *host, size_t n) {
  for (size_t i = 0; i < n; ++i) host[i] = (unsigned)(i * 2654435761u);
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, n * sizeof *host, 0, &b));
  ASSERT_OK(t4a_buffer_upload(rt, b, 0, host, n * sizeof *host));
  return b;
}

/* Runs neighbor (or neighbor_fixed with attrs NULL) over `blocks` blocks
 * of `threads` in clusters of `cl` and checks every element. */
static void run_neighbor(struct fixture *f, t4a_kernel k, uint32_t blocks,
                         uint32_t threads, uint32_t cl,
                         const t4a_launch_attrs *attrs) {
  size_t n = (size_t)blocks * threads;
  unsigned *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
  assert_non_null(in);
  assert_non_null(out);
  t4a_buffer bin = upload_pattern(f->rt, in, n), bout = {0};
  ASSERT_OK(t4a_buffer_alloc(f->rt, n * sizeof *out, 0, &bout));
  ASSERT_OK(t4a_buffer_fill(f->rt, bout, 0, n * sizeof *out, 0xAB));
  t4a_arg args[2] = {buf_arg(bin), buf_arg(bout)};
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = k;
  d.grid[0] = blocks;
  d.block[0] = threads;
  d.dynamic_shared_bytes = threads * sizeof(unsigned);
  d.arg_count = 2;
  d.args = args;
  ASSERT_OK(attrs != NULL ? t4a_launch_ex(f->rt, &d, attrs)
                          : t4a_launch(f->rt, &d));
  ASSERT_OK(t4a_buffer_download_sync(f->rt, bout, 0, out, n * sizeof *out));
  for (uint32_t b = 0; b < blocks; ++b) {
    uint32_t base = b - b % cl, next = base + (b % cl + 1) % cl;
    for (uint32_t t = 0; t < threads; ++t)
      if (out[(size_t)b * threads + t] != in[(size_t)next * threads + t])
        fail_msg("cluster %u: block %u thread %u read %u, expected %u (block "
                 "%u's)",
                 cl, b, t, out[(size_t)b * threads + t],
                 in[(size_t)next * threads + t], next);
  }
  ASSERT_OK(t4a_buffer_release(bin));
  ASSERT_OK(t4a_buffer_release(bout));
  free(in);
  free(out);
}

static void test_neighbor_clusters(void **state) {
  struct fixture *f = *state;
  uint32_t sizes[4] = {2, 4, 8, 1};
  for (int i = 0; i < 4; ++i) {
    t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
    a.cluster[0] = sizes[i];
    run_neighbor(f, f->neighbor, 64, 128, sizes[i], &a);
  }
  /* 16 blocks per cluster: above the portable maximum, with the opt-in. */
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 16;
  a.flags = T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = f->neighbor;
  d.grid[0] = 32;
  d.block[0] = 128;
  d.dynamic_shared_bytes = 512;
  t4a_cluster_occupancy o = T4A_CLUSTER_OCCUPANCY_INIT;
  ASSERT_OK(t4a_kernel_cluster_occupancy(&d, &a, &o));
  fprintf(stderr, "non-portable: largest cluster %d, %d clusters of 16\n",
          o.max_cluster_size, o.max_active_clusters);
  if (o.max_cluster_size >= 16) run_neighbor(f, f->neighbor, 32, 128, 16, &a);
}

static void test_compiled_dims(void **state) {
  struct fixture *f = *state;
  /* Plain t4a_launch: the compiled dimensions need no attribute. */
  run_neighbor(f, f->neighbor_fixed, 64, 64, 2, NULL);
  /* A grid that is no multiple of them is refused before the driver. */
  t4a_runtime_stats before = T4A_RUNTIME_STATS_INIT,
                    after = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(f->rt, &before));
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = f->neighbor_fixed;
  d.grid[0] = 3;
  d.block[0] = 64;
  d.dynamic_shared_bytes = 256;
  t4a_buffer dummy = {0};
  ASSERT_OK(t4a_buffer_alloc(f->rt, 4096, 0, &dummy));
  t4a_arg args[2] = {buf_arg(dummy), buf_arg(dummy)};
  d.arg_count = 2;
  d.args = args;
  ASSERT_STATUS(t4a_launch(f->rt, &d), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("not a multiple of 2");
  /* Attributes that differ from them are refused too. */
  d.grid[0] = 4;
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 4;
  ASSERT_STATUS(t4a_launch_ex(f->rt, &d, &a), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("__cluster_dims__(2, 1, 1)");
  ASSERT_OK(t4a_runtime_stats_get(f->rt, &after));
  assert_int_equal(after.launches, before.launches);
  ASSERT_OK(t4a_buffer_release(dummy));
}

static void test_invalid_shapes(void **state) {
  struct fixture *f = *state;
  t4a_buffer dummy = {0};
  ASSERT_OK(t4a_buffer_alloc(f->rt, 1 << 20, 0, &dummy));
  t4a_arg args[2] = {buf_arg(dummy), buf_arg(dummy)};
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = f->neighbor;
  d.grid[0] = 6;
  d.block[0] = 128;
  d.dynamic_shared_bytes = 512;
  d.arg_count = 2;
  d.args = args;
  t4a_runtime_stats before = T4A_RUNTIME_STATS_INIT,
                    after = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(f->rt, &before));
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 4;
  ASSERT_STATUS(t4a_launch_ex(f->rt, &d, &a), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("grid[0] (x) is 6, not a multiple of 4");
  d.grid[0] = 64;
  a.cluster[0] = 16;
  ASSERT_STATUS(t4a_launch_ex(f->rt, &d, &a), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("the portable maximum is 8");
  a.cluster[0] = 32;
  a.flags = T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE;
  ASSERT_STATUS(t4a_launch_ex(f->rt, &d, &a), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("blocks per cluster on device 0");
  d.flags = T4A_LAUNCH_COOPERATIVE;
  a.cluster[0] = 2;
  a.flags = 0;
  ASSERT_STATUS(t4a_launch_ex(f->rt, &d, &a), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("T4A_LAUNCH_COOPERATIVE");
  ASSERT_OK(t4a_runtime_stats_get(f->rt, &after));
  assert_int_equal(after.launches, before.launches);
  ASSERT_OK(t4a_runtime_synchronize(f->rt));
  ASSERT_OK(t4a_buffer_release(dummy));
}

/* The docs/launch.md example: one sum per cluster through distributed
 * shared memory, against the CPU; then captured and replayed. */
static void test_cluster_sum_and_capture(void **state) {
  struct fixture *f = *state;
  const uint32_t cl = 4, clusters = 33, blocks = cl * clusters,
                 per_block = 1000;
  size_t n = (size_t)blocks * per_block;
  unsigned *in = malloc(n * sizeof *in);
  assert_non_null(in);
  t4a_buffer bin = upload_pattern(f->rt, in, n), bsum = {0};
  for (size_t i = 0; i < n; ++i) in[i] %= 100000; /* keep sums readable */
  ASSERT_OK(t4a_buffer_upload(f->rt, bin, 0, in, n * sizeof *in));
  ASSERT_OK(t4a_buffer_alloc(f->rt, 8ull * clusters, 0, &bsum));
  t4a_arg args[3] = {buf_arg(bin), scalar_arg(&per_block, 4), buf_arg(bsum)};
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = f->cluster_sum;
  d.grid[0] = blocks;
  d.block[0] = 256;
  d.arg_count = 3;
  d.args = args;
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = cl;
  unsigned long long want[33], got[33];
  for (uint32_t c = 0; c < clusters; ++c) {
    want[c] = 0;
    for (size_t i = (size_t)c * cl * per_block;
         i < (size_t)(c + 1) * cl * per_block; ++i)
      want[c] += in[i];
  }
  for (int pass = 0; pass < 2; ++pass) {
    ASSERT_OK(t4a_buffer_fill(f->rt, bsum, 0, 8ull * clusters, 0));
    if (pass == 0) {
      ASSERT_OK(t4a_launch_ex(f->rt, &d, &a));
    } else {
      t4a_graph g = {0};
      ASSERT_OK(t4a_capture_begin(f->rt, NULL));
      ASSERT_OK(t4a_launch_ex(f->rt, &d, &a));
      ASSERT_OK(t4a_capture_end(f->rt, &g));
      for (int rep = 0; rep < 3; ++rep) ASSERT_OK(t4a_graph_launch(f->rt, g));
      ASSERT_OK(t4a_graph_release(g));
    }
    ASSERT_OK(t4a_buffer_download_sync(f->rt, bsum, 0, got, 8ull * clusters));
    for (uint32_t c = 0; c < clusters; ++c)
      if (got[c] != want[c])
        fail_msg("pass %d: cluster %u summed %llu, the CPU %llu", pass, c,
                 got[c], want[c]);
  }
  t4a_cluster_occupancy o = T4A_CLUSTER_OCCUPANCY_INIT;
  ASSERT_OK(t4a_kernel_cluster_occupancy(&d, &a, &o));
  assert_true(o.max_active_clusters > 0);
  assert_true(o.max_cluster_size >= 8);
  ASSERT_OK(t4a_buffer_release(bin));
  ASSERT_OK(t4a_buffer_release(bsum));
  free(in);
}

/* A slow first kernel, then `steps` programmatic launches that each add 1:
 * every element must end at 1 + steps (a step that did not wait for the
 * previous grid would add to the value before slow_fill wrote it). */
static void enqueue_chain(struct fixture *f, t4a_buffer x, unsigned n,
                          unsigned steps, unsigned long long spin) {
  unsigned one = 1;
  t4a_arg fa[4] = {buf_arg(x), scalar_arg(&n, 4), scalar_arg(&one, 4),
                   scalar_arg(&spin, 8)};
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = f->slow_fill;
  d.grid[0] = 132;
  d.block[0] = 256;
  d.arg_count = 4;
  d.args = fa;
  ASSERT_OK(t4a_launch(f->rt, &d));
  t4a_arg sa[2] = {buf_arg(x), scalar_arg(&n, 4)};
  d.kernel = f->step;
  d.args = sa;
  d.arg_count = 2;
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.flags = T4A_LAUNCH_ATTR_PROGRAMMATIC;
  for (unsigned i = 0; i < steps; ++i) ASSERT_OK(t4a_launch_ex(f->rt, &d, &a));
}

static void check_chain(struct fixture *f, t4a_buffer x, unsigned n,
                        unsigned want, const char *what) {
  unsigned *got = malloc(n * sizeof *got);
  assert_non_null(got);
  ASSERT_OK(t4a_buffer_download_sync(f->rt, x, 0, got, n * sizeof *got));
  for (unsigned i = 0; i < n; ++i)
    if (got[i] != want)
      fail_msg("%s: x[%u] is %u, expected %u", what, i, got[i], want);
  free(got);
}

static void test_programmatic_chain(void **state) {
  struct fixture *f = *state;
  const unsigned n = 1u << 16, steps = 1000;
  const unsigned long long spin =
      getenv("T4A_UNDER_SANITIZER") != NULL ? 100000ull : 20000000ull;
  t4a_buffer x = {0};
  ASSERT_OK(t4a_buffer_alloc(f->rt, n * 4ull, 0, &x));
  ASSERT_OK(t4a_buffer_fill(f->rt, x, 0, n * 4ull, 0));
  enqueue_chain(f, x, n, steps, spin);
  check_chain(f, x, n, 1 + steps, "programmatic chain");
  /* Captured (100 steps) and replayed three times, each from zero. */
  t4a_graph g = {0};
  ASSERT_OK(t4a_capture_begin(f->rt, NULL));
  enqueue_chain(f, x, n, 100, spin);
  ASSERT_OK(t4a_capture_end(f->rt, &g));
  t4a_graph_info gi = T4A_GRAPH_INFO_INIT;
  ASSERT_OK(t4a_graph_info_get(g, &gi));
  assert_int_equal(gi.node_count, 101);
  for (int rep = 0; rep < 3; ++rep) {
    ASSERT_OK(t4a_buffer_fill(f->rt, x, 0, n * 4ull, 0));
    ASSERT_OK(t4a_graph_launch(f->rt, g));
    check_chain(f, x, n, 101, "replayed programmatic chain");
  }
  ASSERT_OK(t4a_graph_release(g));
  ASSERT_OK(t4a_buffer_release(x));
}

static void test_stream_priority(void **state) {
  (void)state;
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  o.stream_priority = -1;
  t4a_runtime rt = {0};
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
  ASSERT_OK(t4a_runtime_info_get(rt, &info));
  assert_int_equal(info.stream_priority, -1);
  ASSERT_OK(t4a_runtime_destroy(rt));
  o.stream_priority = 1;
  ASSERT_STATUS(t4a_runtime_create(&o, &rt), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("options->stream_priority is 1");
}

int main(void) {
  gpu_lane_require(1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_neighbor_clusters),
      cmocka_unit_test(test_compiled_dims),
      cmocka_unit_test(test_invalid_shapes),
      cmocka_unit_test(test_cluster_sum_and_capture),
      cmocka_unit_test(test_programmatic_chain),
      cmocka_unit_test(test_stream_priority),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
