/*
 * GPU lane (label gpu): module globals and name expressions on a real
 * device (issue 23 items 5 and 6). A program of this file, compiled through
 * NVRTC for the runtime's device, has a `__constant__ float table[16]`, a
 * `__device__ unsigned counter` and a template kernel
 * `template <int N, bool Add> __global__ void apply(...)`, found by the
 * expression string "apply<4, true>" (and without its space). The table is
 * uploaded through its view, the kernel is launched, its output is checked
 * byte for byte against the same computation on the CPU, and the counter
 * the kernel incremented is read back through its view. Releasing the
 * module (and the kernel) while the views live keeps them usable; a
 * second launch after the module's release reads the table again, and a
 * view used as a launch argument (with an offset) is written by a kernel.
 * Skipped (exit 77) without a GPU unless T4A_REQUIRE_GPU is set.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_support.h"
#include "t4acuda.h"
#include "test_assert.h"

#define THREADS 256u

static const char k_source[] =
    "__constant__ float table[16];\n"
    "__device__ unsigned counter;\n"
    "template <int N, bool Add>\n"
    "__global__ void apply(const float *in, float *out, unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= n) return;\n"
    "  float t = table[i % 16] * (float)N;\n"
    "  out[i] = Add ? in[i] + t : in[i] - t;\n"
    "  atomicAdd(&counter, 1u);\n"
    "}\n"
    "extern \"C\" __global__ void stamp(unsigned *p, unsigned v) {\n"
    "  p[threadIdx.x] = v + threadIdx.x;\n"
    "}\n";

static const char *const k_expressions[] = {"apply<4, true>", "apply<2, false>",
                                            "&counter", "table"};

/* What apply<N, Add> computes, in the same float operations. */
static void expected(const float *in, const float *table, int n_mul, int add,
                     float *out, unsigned n) {
  for (unsigned i = 0; i < n; ++i) {
    float t = table[i % 16] * (float)n_mul;
    out[i] = add ? in[i] + t : in[i] - t;
  }
}

static t4a_runtime g_rt;
static t4a_artifact g_artifact;

static int setup(void **state) {
  (void)state;
  if (t4a_runtime_create(NULL, &g_rt) != T4A_SUCCESS) {
    fprintf(stderr, "runtime: %s\n", last_message());
    return -1;
  }
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  r.source = k_source;
  r.program_name = "globals_gpu.cu";
  r.runtime = g_rt;
  r.name_expressions = k_expressions;
  r.name_expression_count = 4;
  /* No contraction into fma: the CPU computes the same two roundings. */
  static const char *const options[] = {"-fmad=false"};
  r.options = options;
  r.option_count = 1;
  if (t4a_compile(&r, &g_artifact) != T4A_SUCCESS) {
    fprintf(stderr, "compile: %s\n", last_message());
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  (void)t4a_artifact_release(g_artifact);
  return t4a_runtime_destroy(g_rt) == T4A_SUCCESS ? 0 : -1;
}

static t4a_arg buffer_arg(t4a_buffer b, uint64_t offset) {
  t4a_arg a = T4A_ARG_INIT;
  a.kind = T4A_ARG_BUFFER;
  a.buffer = b;
  a.offset = offset;
  return a;
}
static t4a_arg scalar_arg(const void *v, uint64_t size) {
  t4a_arg a = T4A_ARG_INIT;
  a.kind = T4A_ARG_SCALAR;
  a.value = v;
  a.size = size;
  return a;
}

static void launch_apply(t4a_kernel k, t4a_buffer in, t4a_buffer out,
                         const unsigned *n) {
  t4a_arg args[3] = {buffer_arg(in, 0), buffer_arg(out, 0),
                     scalar_arg(n, sizeof *n)};
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = k;
  d.grid[0] = (*n + THREADS - 1) / THREADS;
  d.block[0] = THREADS;
  d.args = args;
  d.arg_count = 3;
  ASSERT_OK(t4a_launch(g_rt, &d));
}

static void test_table_counter_and_expression(void **state) {
  (void)state;
  const unsigned n = 1000;
  float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out),
        *want = malloc(n * sizeof *want);
  assert_non_null(in);
  assert_non_null(out);
  assert_non_null(want);
  float table[16];
  for (int i = 0; i < 16; ++i) table[i] = 0.25f * (float)i - 1.5f;
  for (unsigned i = 0; i < n; ++i) in[i] = (float)i / 7.0f;

  t4a_module m;
  t4a_kernel add4, add4_nospace, sub2;
  t4a_buffer tv, cv, bin, bout;
  ASSERT_OK(t4a_module_load(g_rt, g_artifact, &m));
  ASSERT_OK(t4a_kernel_get(m, "apply<4, true>", &add4));
  ASSERT_OK(t4a_kernel_get(m, "apply<4,true>", &add4_nospace));
  ASSERT_OK(t4a_kernel_get(m, "apply<2, false>", &sub2));
  ASSERT_OK(t4a_module_global(m, "table", &tv));
  ASSERT_OK(t4a_module_global(m, "counter", &cv)); /* "&counter", '&' off */
  t4a_buffer_info ti = T4A_BUFFER_INFO_INIT, ci = T4A_BUFFER_INFO_INIT;
  ASSERT_OK(t4a_buffer_info_get(tv, &ti));
  ASSERT_OK(t4a_buffer_info_get(cv, &ci));
  assert_int_equal(ti.bytes, sizeof table);
  assert_int_equal(ci.bytes, sizeof(unsigned));
  assert_int_equal(ti.flags & T4A_BUFFER_INFO_VIEW, T4A_BUFFER_INFO_VIEW);
  /* The raw (lowered) name of the expression finds the same kernel. */
  char lowered[256];
  ASSERT_OK(t4a_artifact_lowered_name_of(g_artifact, "apply< 4 , true >",
                                         lowered, sizeof lowered, NULL));
  t4a_kernel raw;
  ASSERT_OK(t4a_kernel_get(m, lowered, &raw));
  ASSERT_OK(t4a_kernel_release(raw));

  ASSERT_OK(t4a_buffer_alloc(g_rt, n * sizeof *in, 0, &bin));
  ASSERT_OK(t4a_buffer_alloc(g_rt, n * sizeof *out, 0, &bout));
  ASSERT_OK(t4a_buffer_upload(g_rt, bin, 0, in, n * sizeof *in));
  ASSERT_OK(t4a_buffer_upload(g_rt, tv, 0, table, sizeof table));
  ASSERT_OK(t4a_buffer_fill(g_rt, cv, 0, sizeof(unsigned), 0));

  launch_apply(add4, bin, bout, &n);
  ASSERT_OK(t4a_buffer_download_sync(g_rt, bout, 0, out, n * sizeof *out));
  expected(in, table, 4, 1, want, n);
  assert_memory_equal(out, want, n * sizeof *out);
  unsigned counter = 0;
  ASSERT_OK(t4a_buffer_download_sync(g_rt, cv, 0, &counter, sizeof counter));
  assert_int_equal(counter, n);

  /* The module's handle and the kernels we no longer need go; the views
   * keep the module loaded: the table is rewritten through its view and
   * the other instantiation (its kernel still held) reads it. */
  ASSERT_OK(t4a_kernel_release(add4));
  ASSERT_OK(t4a_module_release(m));
  for (int i = 0; i < 16; ++i) table[i] = (float)(i * i) / 16.0f;
  ASSERT_OK(t4a_buffer_upload(g_rt, tv, 0, table, sizeof table));
  launch_apply(sub2, bin, bout, &n);
  launch_apply(add4_nospace, bin, bout, &n); /* same output buffer: last */
  ASSERT_OK(t4a_buffer_download_sync(g_rt, bout, 0, out, n * sizeof *out));
  expected(in, table, 4, 1, want, n);
  assert_memory_equal(out, want, n * sizeof *out);
  ASSERT_OK(t4a_buffer_download_sync(g_rt, cv, 0, &counter, sizeof counter));
  assert_int_equal(counter, 3 * n);
  /* A view as a launch argument, with an offset: a kernel writes into the
   * table's last 8 floats' bytes through it. */
  ASSERT_OK(t4a_kernel_release(sub2));
  ASSERT_OK(t4a_kernel_release(add4_nospace));
  ASSERT_OK(t4a_module_load(g_rt, g_artifact, &m)); /* the cached module */
  t4a_kernel stamp;
  ASSERT_OK(t4a_kernel_get(m, "stamp", &stamp));
  ASSERT_OK(t4a_module_release(m));
  const unsigned base = 0x1000u;
  t4a_arg args[2] = {buffer_arg(tv, 32), scalar_arg(&base, sizeof base)};
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = stamp;
  d.grid[0] = 1;
  d.block[0] = 8;
  d.args = args;
  d.arg_count = 2;
  ASSERT_OK(t4a_launch(g_rt, &d));
  unsigned words[16];
  ASSERT_OK(t4a_buffer_download_sync(g_rt, tv, 0, words, sizeof words));
  assert_memory_equal(words, table, 32);
  for (unsigned i = 0; i < 8; ++i) assert_int_equal(words[8 + i], base + i);
  ASSERT_OK(t4a_kernel_release(stamp));

  ASSERT_OK(t4a_buffer_release(tv));
  ASSERT_OK(t4a_buffer_release(cv));
  ASSERT_OK(t4a_buffer_release(bin));
  ASSERT_OK(t4a_buffer_release(bout));
  ASSERT_OK(t4a_runtime_synchronize(g_rt));
  free(in);
  free(out);
  free(want);
}

int main(void) {
  gpu_lane_require(1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_counter_and_expression),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
