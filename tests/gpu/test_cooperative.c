/*
 * Cooperative launches and grid-barrier counters (experimental API).
 * GPU lane (label gpu): a grid-wide reduction through a declared software
 * barrier at the maximum cooperative grid, cooperative_groups grid.sync()
 * when NVRTC compiles it, max + 1 blocks rejected with nothing enqueued, a
 * dirtied counter that neither breaks the next launch nor escapes the
 * audit, repeated launches sharing a counter. "fake" (label host): the
 * same on the fake driver of tests/fake (kernels do nothing there; the
 * fake's controls stand in for their effects), plus the order of reset,
 * launch and audit copy, unsupported devices, declaration errors and audit
 * back-pressure. Skipped (exit 77) without a GPU unless T4A_REQUIRE_GPU.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#define _POSIX_C_SOURCE 200809L
#define T4A_EXPERIMENTAL 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "gpu_support.h"
#include "launch_args.h"
#include "t4acuda.h"
#include "test_assert.h"

/* coop_bar: a self-resetting barrier counter (every barrier returns it to
 * 0; a generation word, not audited, releases the waiters). reduce: each
 * round, every block sums its share into partial[], a barrier, block 0
 * sums the partials into out[round], a barrier. arrive_and_exit: every
 * block arrives once and leaves, as a kernel that misses a barrier would
 * (the counter ends at the block count). dirty: writes the counter between
 * launches. */
static const char *const k_src =
    "extern \"C\" {\n"
    "__device__ unsigned int coop_bar;\n"
    "__device__ unsigned int coop_gen;\n"
    "__device__ unsigned long long coop_bar64;\n"
    "__device__ void grid_barrier(unsigned nblocks) {\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) {\n"
    "    unsigned gen = atomicAdd(&coop_gen, 0u);\n"
    "    __threadfence();\n"
    "    unsigned old = atomicAdd(&coop_bar, 1u);\n"
    "    if (old == nblocks - 1) {\n"
    "      atomicExch(&coop_bar, 0u);\n"
    "      __threadfence();\n"
    "      atomicAdd(&coop_gen, 1u);\n"
    "    } else {\n"
    "      while (atomicAdd(&coop_gen, 0u) == gen) {}\n"
    "    }\n"
    "    __threadfence();\n"
    "  }\n"
    "  __syncthreads();\n"
    "}\n"
    "__global__ void reduce(const unsigned *x, unsigned n,\n"
    "                       unsigned long long *partial,\n"
    "                       unsigned long long *out, unsigned rounds) {\n"
    "  __shared__ unsigned long long s;\n"
    "  for (unsigned r = 0; r < rounds; ++r) {\n"
    "    if (threadIdx.x == 0) s = 0;\n"
    "    __syncthreads();\n"
    "    unsigned long long mine = 0;\n"
    "    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "         i += gridDim.x * blockDim.x) mine += x[i] + r;\n"
    "    atomicAdd(&s, mine);\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x == 0) partial[blockIdx.x] = s;\n"
    "    __threadfence();\n"
    "    grid_barrier(gridDim.x);\n"
    "    if (blockIdx.x == 0 && threadIdx.x == 0) {\n"
    "      unsigned long long t = 0;\n"
    "      for (unsigned b = 0; b < gridDim.x; ++b)\n"
    "        t += ((volatile unsigned long long *)partial)[b];\n"
    "      out[r] = t;\n"
    "    }\n"
    "    grid_barrier(gridDim.x);\n"
    "  }\n"
    "}\n"
    "__global__ void arrive_and_exit(void) {\n"
    "  if (threadIdx.x == 0) atomicAdd(&coop_bar, 1u);\n"
    "}\n"
    "__global__ void dirty(unsigned v) { coop_bar = v; }\n"
    "}\n";

/* cooperative_groups' grid.sync(), needing the toolkit's headers. */
static const char *const k_cg_src =
    "#include <cooperative_groups.h>\n"
    "namespace cg = cooperative_groups;\n"
    "extern \"C\" __global__ void cg_reduce(const unsigned *x, unsigned n,\n"
    "    unsigned long long *partial, unsigned long long *out) {\n"
    "  cg::grid_group g = cg::this_grid();\n"
    "  __shared__ unsigned long long s;\n"
    "  if (threadIdx.x == 0) s = 0;\n"
    "  __syncthreads();\n"
    "  unsigned long long mine = 0;\n"
    "  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += gridDim.x * blockDim.x) mine += x[i];\n"
    "  atomicAdd(&s, mine);\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) partial[blockIdx.x] = s;\n"
    "  g.sync();\n"
    "  if (g.thread_rank() == 0) {\n"
    "    unsigned long long t = 0;\n"
    "    for (unsigned b = 0; b < gridDim.x; ++b) t += partial[b];\n"
    "    *out = t;\n"
    "  }\n"
    "}\n";

static int g_fake = 0;
static int g_sanitizer = 0;

/* The fake driver's controls (tests/fake/fake_cuda.c). */
static unsigned long (*fake_launch_count)(int);
static unsigned long (*fake_occupancy_calls)(void);
static void (*fake_set_no_cooperative)(int);
static void (*fake_kernel_writes)(const char *, unsigned long long);
static void (*fake_op_log)(int, char *, size_t);
static unsigned long (*fake_early_host_frees)(void);

#define BLOCK 256u

struct fixture {
  t4a_runtime rt;
  t4a_module module;
  t4a_kernel reduce;
  int32_t max_blocks;
};

static t4a_runtime make_runtime(void) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime rt = {0};
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  return rt;
}

static t4a_status compile_module(t4a_runtime rt, const char *src,
                                 const char *const *options, uint32_t nopt,
                                 t4a_module *m) {
  SKIP_IF_NVRTC_OUTRUNS_DRIVER();
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  r.source = src;
  r.output = T4A_COMPILE_CUBIN;
  r.runtime = rt;
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  r.options = options;
  r.option_count = nopt;
  t4a_artifact a = {0};
  t4a_status s = t4a_compile(&r, &a);
  if (s != T4A_SUCCESS) return s;
  s = t4a_module_load(rt, a, m);
  ASSERT_OK(t4a_artifact_release(a));
  return s;
}

static t4a_kernel kernel(t4a_module m, const char *name) {
  t4a_kernel k = {0};
  ASSERT_OK(t4a_kernel_get(m, name, &k));
  return k;
}

static uint32_t declare(t4a_kernel k, const char *global) {
  t4a_barrier_desc b = T4A_BARRIER_DESC_INIT;
  b.global_name = global;
  uint32_t index = 99;
  ASSERT_OK(t4a_kernel_declare_barrier(k, &b, &index));
  return index;
}

static void setup(struct fixture *f) {
  f->rt = make_runtime();
  ASSERT_OK(compile_module(f->rt, k_src, NULL, 0, &f->module));
  f->reduce = kernel(f->module, "reduce");
  ASSERT_OK(
      t4a_kernel_max_cooperative_blocks(f->reduce, BLOCK, 0, &f->max_blocks));
  assert_true(f->max_blocks > 0);
}

static void teardown(struct fixture *f) {
  ASSERT_OK(t4a_kernel_release(f->reduce));
  ASSERT_OK(t4a_module_release(f->module));
  ASSERT_OK(t4a_runtime_destroy(f->rt));
}

static t4a_runtime_stats stats_of(t4a_runtime rt) {
  t4a_runtime_stats s = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(rt, &s));
  return s;
}

static t4a_barrier_audit audit_of(t4a_kernel k, uint32_t index) {
  t4a_barrier_audit a = T4A_BARRIER_AUDIT_INIT;
  ASSERT_OK(t4a_kernel_barrier_audit(k, index, &a));
  return a;
}

/* The reduction's input (x[i] = i % 1000) and expected sums. */
struct reduction {
  unsigned n, rounds;
  t4a_buffer x, partial, out;
};

static void make_reduction(struct fixture *f, struct reduction *r,
                           unsigned launches) {
  r->n = 1u << 20;
  r->rounds = g_sanitizer ? 2 : 8;
  unsigned *host = malloc(sizeof(unsigned) * r->n);
  assert_non_null(host);
  for (unsigned i = 0; i < r->n; ++i) host[i] = i % 1000;
  ASSERT_OK(t4a_buffer_alloc(f->rt, sizeof(unsigned) * r->n, 0, &r->x));
  ASSERT_OK(t4a_buffer_upload(f->rt, r->x, 0, host, sizeof(unsigned) * r->n));
  free(host);
  ASSERT_OK(t4a_buffer_alloc(f->rt, 8ull * (unsigned)f->max_blocks + 8, 0,
                             &r->partial));
  ASSERT_OK(t4a_buffer_alloc(f->rt, 8ull * r->rounds * launches,
                             T4A_BUFFER_ZERO, &r->out));
}

static void free_reduction(struct reduction *r) {
  ASSERT_OK(t4a_buffer_release(r->x));
  ASSERT_OK(t4a_buffer_release(r->partial));
  ASSERT_OK(t4a_buffer_release(r->out));
}

static unsigned long long expected_sum(const struct reduction *r,
                                       unsigned round) {
  unsigned long long t = 0;
  for (unsigned i = 0; i < r->n; ++i) t += i % 1000 + round;
  return t;
}

static t4a_status launch_reduce(struct fixture *f, struct reduction *r,
                                uint32_t grid, uint32_t flags,
                                unsigned launch) {
  t4a_arg args[5] = {
      buf_arg_at(r->x, 0), scalar_arg(&r->n, 4), buf_arg_at(r->partial, 0),
      buf_arg_at(r->out, 8ull * r->rounds * launch), scalar_arg(&r->rounds, 4)};
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.flags = flags;
  d.kernel = f->reduce;
  d.grid[0] = grid;
  d.block[0] = BLOCK;
  d.args = args;
  d.arg_count = 5;
  return t4a_launch(f->rt, &d);
}

static void check_sums(struct fixture *f, struct reduction *r,
                       unsigned launches) {
  if (g_fake) return; /* kernels do nothing on the fake driver */
  size_t count = (size_t)r->rounds * launches;
  unsigned long long *got = malloc(8 * count);
  assert_non_null(got);
  ASSERT_OK(t4a_buffer_download_sync(f->rt, r->out, 0, got, 8 * count));
  for (unsigned l = 0; l < launches; ++l)
    for (unsigned k = 0; k < r->rounds; ++k)
      if (got[l * r->rounds + k] != expected_sum(r, k))
        fail_msg("launch %u round %u: sum %llu, expected %llu", l, k,
                 got[l * r->rounds + k], expected_sum(r, k));
  free(got);
}

static t4a_status launch_simple(t4a_runtime rt, t4a_kernel k, uint32_t grid,
                                uint32_t flags, const t4a_arg *args,
                                uint32_t n) {
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.flags = flags;
  d.kernel = k;
  d.grid[0] = grid;
  d.block[0] = BLOCK;
  d.args = args;
  d.arg_count = n;
  return t4a_launch(rt, &d);
}

/* Max cooperative blocks: blocks per SM x SMs; argument errors; the
 * occupancy answer cached per (block, shared) pair. */
static void test_max_blocks(void **state) {
  (void)state;
  struct fixture f;
  setup(&f);
  int32_t per_sm = 0;
  ASSERT_OK(t4a_kernel_occupancy(f.reduce, BLOCK, 0, &per_sm));
  t4a_device_info info = T4A_DEVICE_INFO_INIT;
  ASSERT_OK(t4a_device_info_get(0, &info));
  assert_int_equal(f.max_blocks, per_sm * info.multiprocessor_count);
  if (g_fake) {
    assert_int_equal(f.max_blocks, 32); /* 8 per SM x 4 SMs */
    int32_t m = 0;
    ASSERT_OK(t4a_kernel_max_cooperative_blocks(f.reduce, BLOCK, 100000, &m));
    assert_int_equal(m, 2 * 4); /* 228 KiB / 100000 bytes per block */
    unsigned long before = fake_occupancy_calls();
    for (int i = 0; i < 5; ++i)
      ASSERT_OK(t4a_kernel_max_cooperative_blocks(f.reduce, BLOCK, 100000, &m));
    assert_int_equal(fake_occupancy_calls(), before);
  }
  int32_t m = -1;
  ASSERT_STATUS(t4a_kernel_max_cooperative_blocks(f.reduce, 0, 0, &m),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("block_size is 0");
  assert_int_equal(m, -1);
  ASSERT_STATUS(t4a_kernel_max_cooperative_blocks(f.reduce, BLOCK, 0, NULL),
                T4A_ERROR_INVALID_ARGUMENT);
  t4a_kernel bad = {12345};
  ASSERT_STATUS(t4a_kernel_max_cooperative_blocks(bad, BLOCK, 0, &m),
                T4A_ERROR_INVALID_HANDLE);
  teardown(&f);
}

/* max + 1 blocks: INVALID_ARGUMENT naming both numbers, nothing enqueued
 * (no launch, reset or audit copy; no counter moved). */
static void test_max_plus_one(void **state) {
  (void)state;
  struct fixture f;
  setup(&f);
  uint32_t index = declare(f.reduce, "coop_bar");
  struct reduction r;
  make_reduction(&f, &r, 1);
  ASSERT_OK(t4a_runtime_synchronize(f.rt));
  t4a_runtime_stats s0 = stats_of(f.rt);
  unsigned long coop0 = g_fake ? fake_launch_count(1) : 0;
  if (g_fake) fake_op_log(1, NULL, 0);
  ASSERT_STATUS(launch_reduce(&f, &r, (uint32_t)f.max_blocks + 1,
                              T4A_LAUNCH_COOPERATIVE, 0),
                T4A_ERROR_INVALID_ARGUMENT);
  char want[64];
  snprintf(want, sizeof want, "= %d blocks", f.max_blocks + 1);
  ASSERT_MESSAGE_HAS(want);
  snprintf(want, sizeof want, "at most %d co-resident", f.max_blocks);
  ASSERT_MESSAGE_HAS(want);
  ASSERT_MESSAGE_HAS("nothing was enqueued");
  t4a_runtime_stats s1 = stats_of(f.rt);
  assert_int_equal(s1.launches, s0.launches);
  assert_int_equal(s1.cooperative_launches, s0.cooperative_launches);
  assert_int_equal(audit_of(f.reduce, index).launches, 0);
  if (g_fake) {
    char log[256];
    fake_op_log(0, log, sizeof log);
    assert_string_equal(log, "");
    assert_int_equal(fake_launch_count(1), coop0);
  }
  /* The maximum itself is accepted, and computes. */
  ASSERT_OK(
      launch_reduce(&f, &r, (uint32_t)f.max_blocks, T4A_LAUNCH_COOPERATIVE, 0));
  ASSERT_OK(t4a_runtime_synchronize(f.rt));
  check_sums(&f, &r, 1);
  assert_int_equal(stats_of(f.rt).cooperative_launches,
                   s0.cooperative_launches + 1);
  free_reduction(&r);
  teardown(&f);
}

/* A grid-wide reduction through the declared barrier at the maximum
 * cooperative grid, launched repeatedly (the launches share the counter):
 * every sum right, every audit clean. */
static void test_reduction_repeated(void **state) {
  (void)state;
  struct fixture f;
  setup(&f);
  uint32_t index = declare(f.reduce, "coop_bar");
  assert_int_equal(index, 0);
  const unsigned launches = g_sanitizer ? 3 : 20;
  struct reduction r;
  make_reduction(&f, &r, launches);
  for (unsigned l = 0; l < launches; ++l)
    ASSERT_OK(launch_reduce(&f, &r, (uint32_t)f.max_blocks,
                            T4A_LAUNCH_COOPERATIVE, l));
  ASSERT_OK(t4a_runtime_synchronize(f.rt));
  check_sums(&f, &r, launches);
  t4a_barrier_audit a = audit_of(f.reduce, index);
  assert_int_equal(a.launches, launches);
  assert_int_equal(a.audited, launches);
  assert_int_equal(a.pending, 0);
  assert_int_equal(a.failures, 0);
  assert_int_equal(stats_of(f.rt).barrier_audit_failures, 0);
  free_reduction(&r);
  teardown(&f);
}

/* A counter left dirty: by a kernel that arrives and exits (the audit
 * reports it: value = its block count, expected 0) and by a kernel that
 * writes it between launches (the reset before the next launch makes that
 * harmless). The reduction after both is right and audits clean. */
static void test_dirty_counter(void **state) {
  (void)state;
  struct fixture f;
  setup(&f);
  uint32_t ri = declare(f.reduce, "coop_bar");
  t4a_kernel leaver = kernel(f.module, "arrive_and_exit");
  uint32_t li = declare(leaver, "coop_bar");
  t4a_kernel dirty = kernel(f.module, "dirty");
  struct reduction r;
  make_reduction(&f, &r, 2);
  const uint32_t grid = 8;
  if (g_fake) fake_kernel_writes("coop_bar", grid); /* what the kernel does */
  ASSERT_OK(launch_simple(f.rt, leaver, grid, T4A_LAUNCH_COOPERATIVE, NULL, 0));
  if (g_fake) fake_kernel_writes(NULL, 0);
  unsigned v = 12345;
  t4a_arg dv = scalar_arg(&v, 4);
  ASSERT_OK(launch_simple(f.rt, dirty, 1, 0, &dv, 1));
  ASSERT_OK(
      launch_reduce(&f, &r, (uint32_t)f.max_blocks, T4A_LAUNCH_COOPERATIVE, 0));
  ASSERT_OK(launch_simple(f.rt, dirty, 1, 0, &dv, 1));
  ASSERT_OK(
      launch_reduce(&f, &r, (uint32_t)f.max_blocks, T4A_LAUNCH_COOPERATIVE, 1));
  ASSERT_OK(t4a_runtime_synchronize(f.rt));
  check_sums(&f, &r, 2);
  t4a_barrier_audit la = audit_of(leaver, li);
  assert_int_equal(la.launches, 1);
  assert_int_equal(la.failures, 1);
  assert_int_equal(la.last_bad_value, grid);
  assert_int_equal(la.last_bad_expected, 0);
  assert_int_equal(la.last_bad_launch, 1);
  t4a_barrier_audit ra = audit_of(f.reduce, ri);
  assert_int_equal(ra.launches, 2);
  assert_int_equal(ra.audited, 2);
  assert_int_equal(ra.failures, 0);
  assert_int_equal(stats_of(f.rt).barrier_audit_failures, 1);
  ASSERT_OK(t4a_kernel_release(leaver));
  ASSERT_OK(t4a_kernel_release(dirty));
  free_reduction(&r);
  teardown(&f);
}

/* A cooperative launch of a kernel with a barrier, captured into a graph:
 * each replay resets the counter before the kernel (the graph holds the
 * reset: on the fake driver the replay's operations are logged), the
 * graph keeps the launch's buffers after their handles are released, and
 * captured launches are not audited (a replay gives no completion proof of
 * its own). */
static void test_captured_barrier(void **state) {
  (void)state;
  struct fixture f;
  setup(&f);
  uint32_t ri = declare(f.reduce, "coop_bar");
  struct reduction r;
  make_reduction(&f, &r, 1);
  t4a_capture_options o = T4A_CAPTURE_OPTIONS_INIT;
  ASSERT_OK(t4a_capture_begin(f.rt, &o));
  ASSERT_OK(
      launch_reduce(&f, &r, (uint32_t)f.max_blocks, T4A_LAUNCH_COOPERATIVE, 0));
  t4a_graph g = {0};
  ASSERT_OK(t4a_capture_end(f.rt, &g));
  ASSERT_OK(t4a_buffer_release(r.x)); /* the graph keeps both */
  ASSERT_OK(t4a_buffer_release(r.partial));
  for (int replay = 0; replay < 3; ++replay) {
    if (g_fake) fake_op_log(1, NULL, 0);
    ASSERT_OK(t4a_graph_launch(f.rt, g));
    if (g_fake) {
      char log[256];
      fake_op_log(0, log, sizeof log);
      char addr[32], kind[32];
      unsigned long long v = 1, grid = 0;
      int used = 0;
      assert_int_equal(
          sscanf(log, "memset32 %31[0-9a-f]=%llu\n%n", addr, &v, &used), 2);
      assert_int_equal(v, 0);
      assert_int_equal(sscanf(log + used, "%31s %llu", kind, &grid), 2);
      assert_string_equal(kind, "cooperative");
      assert_int_equal(grid, (unsigned long long)f.max_blocks);
    }
  }
  ASSERT_OK(t4a_runtime_synchronize(f.rt));
  check_sums(&f, &r, 1);
  t4a_barrier_audit a = audit_of(f.reduce, ri);
  assert_int_equal(a.launches, 0);
  assert_int_equal(a.pending, 0);
  assert_int_equal(a.failures, 0);
  ASSERT_OK(t4a_graph_release(g));
  ASSERT_OK(t4a_buffer_release(r.out));
  teardown(&f);
}

/* cooperative_groups grid.sync() at the maximum grid, when NVRTC can
 * compile it with the toolkit's headers (reported either way). */
static void test_grid_sync(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime();
  const char *inc = getenv("T4A_CUDA_INCLUDE");
  if (inc == NULL) inc = "/usr/local/cuda/include";
  /* CUDA 13 keeps libcu++ (cuda/std/...), which cooperative_groups
   * includes, under include/cccl. */
  char opt[512], cccl[512];
  snprintf(opt, sizeof opt, "-I%s", inc);
  snprintf(cccl, sizeof cccl, "%s/cccl", inc);
  struct stat st;
  if (stat(cccl, &st) != 0) {
    printf("[ grid.sync ] no toolkit headers at %s (set T4A_CUDA_INCLUDE); "
           "the software barrier test covers grid barriers\n",
           inc);
    ASSERT_OK(t4a_runtime_destroy(rt));
    skip();
  }
  snprintf(cccl, sizeof cccl, "-I%s/cccl", inc);
  const char *options[] = {opt, cccl};
  t4a_module m = {0};
  /* The headers are there, so the compile must succeed. */
  t4a_status s = compile_module(rt, k_cg_src, options, 2, &m);
  if (s != T4A_SUCCESS)
    fail_msg("NVRTC could not compile cooperative_groups with %s %s: %s: %s",
             opt, cccl, t4a_status_name(s), last_message());
  printf("[ grid.sync ] NVRTC compiled cooperative_groups grid.sync()\n");
  t4a_kernel k = kernel(m, "cg_reduce");
  int32_t max = 0;
  ASSERT_OK(t4a_kernel_max_cooperative_blocks(k, BLOCK, 0, &max));
  unsigned n = 1u << 20;
  unsigned *host = malloc(sizeof(unsigned) * n);
  assert_non_null(host);
  unsigned long long want = 0;
  for (unsigned i = 0; i < n; ++i) want += host[i] = i % 1000;
  t4a_buffer x, partial, out;
  ASSERT_OK(t4a_buffer_alloc(rt, sizeof(unsigned) * n, 0, &x));
  ASSERT_OK(t4a_buffer_upload(rt, x, 0, host, sizeof(unsigned) * n));
  free(host);
  ASSERT_OK(t4a_buffer_alloc(rt, 8ull * (unsigned)max, 0, &partial));
  ASSERT_OK(t4a_buffer_alloc(rt, 8, T4A_BUFFER_ZERO, &out));
  t4a_arg args[4] = {buf_arg_at(x, 0), scalar_arg(&n, 4),
                     buf_arg_at(partial, 0), buf_arg_at(out, 0)};
  ASSERT_OK(
      launch_simple(rt, k, (uint32_t)max, T4A_LAUNCH_COOPERATIVE, args, 4));
  unsigned long long got = 0;
  ASSERT_OK(t4a_buffer_download_sync(rt, out, 0, &got, 8));
  assert_int_equal(got, want);
  ASSERT_STATUS(
      launch_simple(rt, k, (uint32_t)max + 1, T4A_LAUNCH_COOPERATIVE, args, 4),
      T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(t4a_buffer_release(x));
  ASSERT_OK(t4a_buffer_release(partial));
  ASSERT_OK(t4a_buffer_release(out));
  ASSERT_OK(t4a_kernel_release(k));
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* Declaration errors, each naming what was wrong, none declaring. */
static void test_declare_errors(void **state) {
  (void)state;
  struct fixture f;
  setup(&f);
  t4a_barrier_desc b = T4A_BARRIER_DESC_INIT;
  uint32_t index = 77;
  ASSERT_STATUS(t4a_kernel_declare_barrier(f.reduce, NULL, &index),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("desc is NULL");
  ASSERT_STATUS(t4a_kernel_declare_barrier(f.reduce, &b, &index),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("global_name is NULL");
  b.global_name = "";
  ASSERT_STATUS(t4a_kernel_declare_barrier(f.reduce, &b, &index),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("global_name is empty");
  b.global_name = "no_such_counter";
  ASSERT_STATUS(t4a_kernel_declare_barrier(f.reduce, &b, &index),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("no global of that name");
  ASSERT_MESSAGE_HAS("no_such_counter");
  b.global_name = "coop_bar64"; /* 8 bytes, declared 4 */
  ASSERT_STATUS(t4a_kernel_declare_barrier(f.reduce, &b, &index),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("is 8 bytes; desc->width is 4");
  b.global_name = "coop_bar";
  b.width = 3;
  ASSERT_STATUS(t4a_kernel_declare_barrier(f.reduce, &b, &index),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("desc->width is 3");
  b.width = 0;
  b.flags = 0x10;
  ASSERT_STATUS(t4a_kernel_declare_barrier(f.reduce, &b, &index),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("desc->flags is 0x10");
  b.flags = 0;
  b.reset_value = 1ull << 32;
  ASSERT_STATUS(t4a_kernel_declare_barrier(f.reduce, &b, &index),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("desc->reset_value is 4294967296");
  b.reset_value = 0;
  b.expected_value = 1ull << 40;
  ASSERT_STATUS(t4a_kernel_declare_barrier(f.reduce, &b, &index),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("desc->expected_value");
  b.expected_value = 0;
  /* A newer caller's non-zero tail. */
  struct {
    t4a_barrier_desc d;
    uint64_t extra;
  } big = {b, 1};
  big.d.struct_size = sizeof big;
  ASSERT_STATUS(t4a_kernel_declare_barrier(f.reduce, &big.d, &index),
                T4A_ERROR_VERSION_MISMATCH);
  assert_int_equal(index, 77);
  /* Nothing was declared: an audit of barrier 0 is out of range. */
  t4a_barrier_audit a = T4A_BARRIER_AUDIT_INIT;
  ASSERT_STATUS(t4a_kernel_barrier_audit(f.reduce, 0, &a),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("has 0 declared barriers");
  ASSERT_OK(t4a_kernel_declare_barrier(f.reduce, &b, NULL));
  ASSERT_STATUS(t4a_kernel_declare_barrier(f.reduce, &b, &index),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("already barrier 0");
  b.global_name = "coop_bar64";
  b.width = 8;
  b.reset_value = 0x100000002ull;
  ASSERT_OK(t4a_kernel_declare_barrier(f.reduce, &b, &index));
  assert_int_equal(index, 1);
  ASSERT_STATUS(t4a_kernel_barrier_audit(f.reduce, 2, &a),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(t4a_kernel_barrier_audit(f.reduce, 0, NULL),
                T4A_ERROR_INVALID_ARGUMENT);
  t4a_kernel bad = {999};
  ASSERT_STATUS(t4a_kernel_declare_barrier(bad, &b, &index),
                T4A_ERROR_INVALID_HANDLE);
  ASSERT_STATUS(t4a_kernel_barrier_audit(bad, 0, &a), T4A_ERROR_INVALID_HANDLE);
  /* Unknown launch flags are still rejected. */
  ASSERT_STATUS(launch_simple(f.rt, f.reduce, 1, 0x2, NULL, 0),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("desc->flags is 0x2");
  teardown(&f);
}

/* Fake: reset, launch and audit copy in that order, each barrier's reset
 * before the kernel and its copy after; a plain launch of a kernel with a
 * barrier does the same; the audit sees a value the kernel left. */
static void test_order_and_audit_fake(void **state) {
  (void)state;
  struct fixture f;
  setup(&f);
  t4a_barrier_desc b = T4A_BARRIER_DESC_INIT;
  b.global_name = "coop_bar";
  b.reset_value = 5;
  b.expected_value = 3;
  b.flags = T4A_BARRIER_EXPECT_PER_BLOCK;
  ASSERT_OK(t4a_kernel_declare_barrier(f.reduce, &b, NULL));
  b.global_name = "coop_bar64";
  b.width = 8;
  b.reset_value = 0x100000002ull;
  b.expected_value = 0;
  b.flags = T4A_BARRIER_EXPECT_AT_MOST;
  ASSERT_OK(t4a_kernel_declare_barrier(f.reduce, &b, NULL));
  struct reduction r;
  make_reduction(&f, &r, 1);
  fake_op_log(1, NULL, 0);
  ASSERT_OK(launch_reduce(&f, &r, 4, T4A_LAUNCH_COOPERATIVE, 0));
  ASSERT_OK(launch_reduce(&f, &r, 2, 0, 0));
  char log[1024];
  fake_op_log(0, log, sizeof log);
  /* memset32 ADDR=VALUE lines, the launch, dtoh ADDR BYTES lines. */
  char a32[32], a64[32];
  unsigned long long v0, v1, v2, n0, n1;
  char kind[32];
  int pos = 0;
  for (int launch = 0; launch < 2; ++launch) {
    int used = 0;
    assert_int_equal(
        sscanf(log + pos, "memset32 %31[0-9a-f]=%llu\n%n", a32, &v0, &used), 2);
    pos += used;
    assert_int_equal(v0, 5);
    assert_int_equal(
        sscanf(log + pos, "memset32 %31[0-9a-f]=%llu\n%n", a64, &v1, &used), 2);
    pos += used;
    assert_int_equal(v1, 2); /* low word */
    char a64hi[32];
    assert_int_equal(
        sscanf(log + pos, "memset32 %31[0-9a-f]=%llu\n%n", a64hi, &v2, &used),
        2);
    pos += used;
    assert_int_equal(v2, 1); /* high word */
    assert_int_equal(strtoull(a64hi, NULL, 16), strtoull(a64, NULL, 16) + 4);
    assert_int_equal(sscanf(log + pos, "%31s %*u %*u\n%n", kind, &used), 1);
    pos += used;
    assert_string_equal(kind, launch == 0 ? "cooperative" : "launch");
    char c32[32], c64[32];
    assert_int_equal(
        sscanf(log + pos, "dtoh %31[0-9a-f] %llu\n%n", c32, &n0, &used), 2);
    pos += used;
    assert_int_equal(
        sscanf(log + pos, "dtoh %31[0-9a-f] %llu\n%n", c64, &n1, &used), 2);
    pos += used;
    assert_string_equal(c32, a32);
    assert_string_equal(c64, a64);
    assert_int_equal(n0, 4);
    assert_int_equal(n1, 8);
  }
  assert_int_equal(log[pos], '\0');
  ASSERT_OK(t4a_runtime_synchronize(f.rt));
  /* The fake kernel does nothing: the 4-byte counter stays at its reset
   * value 5, expected 3 x blocks: both launches fail their audit; the
   * 8-byte one stays at 0x100000002, above "at most 0": fails too. */
  t4a_barrier_audit a = audit_of(f.reduce, 0);
  assert_int_equal(a.launches, 2);
  assert_int_equal(a.audited, 2);
  assert_int_equal(a.failures, 2);
  assert_int_equal(a.last_bad_value, 5);
  assert_int_equal(a.last_bad_expected, 3 * 2);
  assert_int_equal(a.last_bad_launch, 2);
  a = audit_of(f.reduce, 1);
  assert_int_equal(a.failures, 2);
  assert_int_equal(a.last_bad_value, 0x100000002ull);
  assert_int_equal(stats_of(f.rt).barrier_audit_failures, 4);
  /* A kernel that leaves the expected value passes. */
  fake_kernel_writes("coop_bar", 3 * 4);
  fake_kernel_writes("coop_bar64", 0); /* only the last call holds */
  ASSERT_OK(launch_reduce(&f, &r, 4, T4A_LAUNCH_COOPERATIVE, 0));
  fake_kernel_writes(NULL, 0);
  ASSERT_OK(t4a_runtime_synchronize(f.rt));
  a = audit_of(f.reduce, 1);
  assert_int_equal(a.launches, 3);
  assert_int_equal(a.failures, 2); /* 0 <= 0 passes */
  a = audit_of(f.reduce, 0);
  assert_int_equal(a.failures, 3); /* coop_bar left at its reset value */
  free_reduction(&r);
  teardown(&f);
}

/* Fake: a device without cooperative launch support: UNSUPPORTED from the
 * query and the launch, nothing enqueued. */
static void test_unsupported_fake(void **state) {
  (void)state;
  struct fixture f;
  setup(&f);
  fake_set_no_cooperative(1);
  t4a_kernel k = kernel(f.module, "reduce"); /* facts read anew */
  int32_t m = -1;
  ASSERT_STATUS(t4a_kernel_max_cooperative_blocks(k, BLOCK, 0, &m),
                T4A_ERROR_UNSUPPORTED);
  ASSERT_MESSAGE_HAS("does not support cooperative launches");
  unsigned long n0 = fake_launch_count(1) + fake_launch_count(0);
  ASSERT_STATUS(launch_simple(f.rt, k, 1, T4A_LAUNCH_COOPERATIVE, NULL, 0),
                T4A_ERROR_UNSUPPORTED);
  assert_int_equal(fake_launch_count(1) + fake_launch_count(0), n0);
  fake_set_no_cooperative(0);
  ASSERT_OK(t4a_kernel_release(k));
  teardown(&f);
}

/* Fake: more launches than audit slots without a synchronize: every launch
 * succeeds (completed epochs retired to free slots) and every audit is
 * compared in the end. */
static void test_many_audits_fake(void **state) {
  (void)state;
  struct fixture f;
  setup(&f);
  uint32_t index = declare(f.reduce, "coop_bar");
  struct reduction r;
  make_reduction(&f, &r, 1);
  const unsigned launches = 3000;
  for (unsigned l = 0; l < launches; ++l)
    ASSERT_OK(launch_reduce(&f, &r, 4, T4A_LAUNCH_COOPERATIVE, 0));
  t4a_barrier_audit a = audit_of(f.reduce, index);
  assert_int_equal(a.launches, launches);
  assert_true(a.pending <= 1024);
  ASSERT_OK(t4a_runtime_synchronize(f.rt));
  a = audit_of(f.reduce, index);
  assert_int_equal(a.audited, launches);
  assert_int_equal(a.pending, 0);
  assert_int_equal(a.failures, 0);
  free_reduction(&r);
  teardown(&f);
}

/* Fake: above 48 KiB of dynamic shared memory, a block fits only once the
 * kernel's dynamic-shared limit is raised (the fake's occupancy, like a
 * device's, is 0 before). A launch raises it before its co-residency
 * check; the query answers for that launch, and what it caches does not
 * turn the launch of the same shape away afterwards. 150000 bytes: above
 * any limit an earlier test raised the fake's one function to. */
static void test_max_blocks_large_shared_fake(void **state) {
  (void)state;
  struct fixture f;
  setup(&f);
  const uint32_t shared = 150000;
  int32_t m = -1;
  ASSERT_OK(t4a_kernel_max_cooperative_blocks(f.reduce, BLOCK, shared, &m));
  assert_int_equal(m, 1 * 4); /* 228 KiB / 150000 bytes per block x 4 SMs */
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.flags = T4A_LAUNCH_COOPERATIVE;
  d.kernel = f.reduce;
  d.grid[0] = (uint32_t)m;
  d.block[0] = BLOCK;
  d.dynamic_shared_bytes = shared;
  ASSERT_OK(t4a_launch(f.rt, &d));
  d.grid[0] = (uint32_t)m + 1;
  ASSERT_STATUS(t4a_launch(f.rt, &d), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("at most 4 co-resident");
  teardown(&f);
}

/* Fake: every barrier launch keeps its kernel object (the pinned audit
 * slots, the module) until its audit copy is proven complete, also when
 * the kernel's previous keep sits among the open epoch's last keeps and
 * the launch's own ticket reservation seals that (full) epoch: its seal
 * event then precedes the launch. The kernel and module are released
 * right after such a launch; allocations poll and retire that sealed
 * epoch (amortized, once per 64); the audit slots must not be freed while
 * the copy into them is in flight (fake_cuda_early_host_frees). */
static void test_kernel_kept_across_seal_fake(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime();
  t4a_module m = {0};
  ASSERT_OK(compile_module(rt, k_src, NULL, 0, &m));
  t4a_kernel k = kernel(m, "reduce");
  declare(k, "coop_bar");
  unsigned long early0 = fake_early_host_frees();
  int full = 0;
  for (int i = 0; i < 4000 && !full; ++i) {
    full = stats_of(rt).open_epoch_items == 256; /* T4A_OPEN_EPOCH_LIMIT */
    ASSERT_OK(launch_simple(rt, k, 4, 0, NULL, 0));
  }
  assert_true(full);
  ASSERT_OK(t4a_kernel_release(k));
  ASSERT_OK(t4a_module_release(m));
  for (int i = 0; i < 128; ++i) {
    t4a_buffer b = {0};
    ASSERT_OK(t4a_buffer_alloc(rt, 256, 0, &b));
    ASSERT_OK(t4a_buffer_release(b));
  }
  assert_int_equal(fake_early_host_frees(), early0);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* Fake: a reset that fails after an earlier one of the same launch was
 * enqueued (the second barrier's) keeps the kernel object in the open
 * epoch, as a failed launch does: the first reset may already be queued
 * against the module's memory. Needs the test build's fault injection
 * (t4a_testing_fault_arm, looked up at run time; skipped without it). */
static void test_failed_reset_keeps_kernel_fake(void **state) {
  (void)state;
  t4a_status (*arm)(const char *, uint64_t, int32_t, int32_t);
  void (*disarm)(void);
  *(void **)&arm = dlsym(RTLD_DEFAULT, "t4a_testing_fault_arm");
  *(void **)&disarm = dlsym(RTLD_DEFAULT, "t4a_testing_fault_reset");
  if (arm == NULL || disarm == NULL) skip();
  t4a_runtime rt = make_runtime();
  t4a_module m = {0};
  ASSERT_OK(compile_module(rt, k_src, NULL, 0, &m));
  t4a_kernel k = kernel(m, "reduce");
  declare(k, "coop_bar");
  t4a_barrier_desc b = T4A_BARRIER_DESC_INIT;
  b.global_name = "coop_bar64";
  b.width = 8;
  ASSERT_OK(t4a_kernel_declare_barrier(k, &b, NULL));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  uint64_t open0 = stats_of(rt).open_epoch_items;
  /* The second cuMemsetD32Async: barrier 1's reset (barrier 0's is one
   * call); 1 is CUDA_ERROR_INVALID_VALUE, 1 T4A_TESTING_FAULT_INSTEAD. */
  ASSERT_OK(arm("cuMemsetD32Async", 2, 1, 1));
  t4a_status s = launch_simple(rt, k, 4, 0, NULL, 0);
  disarm();
  ASSERT_STATUS(s, T4A_ERROR_DRIVER);
  ASSERT_MESSAGE_HAS("resetting a grid barrier counter");
  assert_int_equal(stats_of(rt).open_epoch_items, open0 + 1);
  assert_int_equal(audit_of(k, 0).launches, 0);
  ASSERT_OK(t4a_kernel_release(k));
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* Fake: audits still pending when a kernel is destroyed are compared then,
 * so a barrier failure in its last launches is counted and logged, not
 * dropped with the kernel: (a) the handle released right after three
 * launches (the open epoch still keeps the kernel; the synchronize that
 * retires it destroys it); (b) two launches, a synchronize (complete, not
 * yet audited: nothing launched or queried since), then the release. */
static int g_released_logs;
static void count_release_audits(void *user, int32_t level,
                                 const char *message) {
  (void)user;
  if (level == T4A_LOG_ERROR && strstr(message, "grid barrier 'coop_bar'") &&
      strstr(message, "as the kernel was released"))
    ++g_released_logs;
}

static void test_audit_at_release_fake(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime();
  t4a_module m = {0};
  ASSERT_OK(compile_module(rt, k_src, NULL, 0, &m));
  g_released_logs = 0;
  ASSERT_OK(t4a_set_log_callback(count_release_audits, NULL, T4A_LOG_ERROR));
  fake_kernel_writes("coop_bar", 7); /* every launch leaves 7, expected 0 */
  t4a_kernel k = kernel(m, "reduce");
  declare(k, "coop_bar");
  for (int i = 0; i < 3; ++i) ASSERT_OK(launch_simple(rt, k, 4, 0, NULL, 0));
  ASSERT_OK(t4a_kernel_release(k));
  assert_int_equal(stats_of(rt).barrier_audit_failures, 0);
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(stats_of(rt).barrier_audit_failures, 3);
  assert_int_equal(g_released_logs, 3);

  k = kernel(m, "reduce"); /* a new kernel object, no barrier yet */
  declare(k, "coop_bar");
  for (int i = 0; i < 2; ++i) ASSERT_OK(launch_simple(rt, k, 4, 0, NULL, 0));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(stats_of(rt).barrier_audit_failures, 3);
  ASSERT_OK(t4a_kernel_release(k));
  assert_int_equal(stats_of(rt).barrier_audit_failures, 5);
  assert_int_equal(g_released_logs, 5);
  fake_kernel_writes(NULL, 0);
  ASSERT_OK(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN));
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

static void load_fake_controls(void) {
#if defined(T4A_FAKE_CUDA_PATH)
  void *h = dlopen(T4A_FAKE_CUDA_PATH, RTLD_NOW);
  if (h == NULL) {
    fprintf(stderr, "dlopen %s: %s\n", T4A_FAKE_CUDA_PATH, dlerror());
    exit(1);
  }
  *(void **)&fake_launch_count = dlsym(h, "fake_cuda_launch_count");
  *(void **)&fake_occupancy_calls = dlsym(h, "fake_cuda_occupancy_calls");
  *(void **)&fake_set_no_cooperative = dlsym(h, "fake_cuda_set_no_cooperative");
  *(void **)&fake_kernel_writes = dlsym(h, "fake_cuda_kernel_writes");
  *(void **)&fake_op_log = dlsym(h, "fake_cuda_op_log");
  *(void **)&fake_early_host_frees = dlsym(h, "fake_cuda_early_host_frees");
  if (!fake_launch_count || !fake_occupancy_calls || !fake_set_no_cooperative ||
      !fake_kernel_writes || !fake_op_log || !fake_early_host_frees) {
    fprintf(stderr, "the fake driver lacks the cooperative controls\n");
    exit(1);
  }
#endif
}

#define T(f) cmocka_unit_test(f)

int main(int argc, char **argv) {
  g_sanitizer = getenv("T4A_UNDER_SANITIZER") != NULL;
  if (argc > 1 && strcmp(argv[1], "fake") == 0) {
#if defined(T4A_FAKE_CUDA_PATH)
    setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
    g_fake = 1;
    load_fake_controls();
    const struct CMUnitTest fake[] = {
        T(test_max_blocks),
        T(test_max_plus_one),
        T(test_reduction_repeated),
        T(test_dirty_counter),
        T(test_declare_errors),
        T(test_order_and_audit_fake),
        T(test_unsupported_fake),
        T(test_many_audits_fake),
        T(test_max_blocks_large_shared_fake),
        T(test_kernel_kept_across_seal_fake),
        T(test_failed_reset_keeps_kernel_fake),
        T(test_audit_at_release_fake),
        T(test_captured_barrier),
    };
    return cmocka_run_group_tests(fake, NULL, NULL);
#else
    fprintf(stderr, "built without the fake driver\n");
    return 1;
#endif
  }
  gpu_lane_require(1);
  const struct CMUnitTest tests[] = {
      T(test_max_blocks),         T(test_max_plus_one),
      T(test_reduction_repeated), T(test_dirty_counter),
      T(test_grid_sync),          T(test_declare_errors),
      T(test_captured_barrier),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
