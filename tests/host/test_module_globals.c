/*
 * Host lane (fake driver, real NVRTC): module globals as buffer views and
 * name expressions by string (issue 23 items 5 and 6).
 *   - t4a_artifact_lowered_name_of: exact, whitespace-insensitive and
 *     '&'-insensitive matching, query-then-copy, absent expressions, an
 *     artifact without expressions, argument checks;
 *   - t4a_kernel_get by expression (the fake records the name the driver
 *     was given), by raw name, on a module of raw bytes;
 *   - t4a_module_global: sizes, the view flag, one address for the
 *     expression and the raw name, absent names, argument checks;
 *   - upload, download, fill and copy into and out of views, bounds
 *     errors naming the sizes, a view as a launch argument with an offset;
 *   - lifetime: a view keeps its module loaded after the module's handle,
 *     kernels and cache entry are gone; after the view's release the module
 *     is unloaded once its work is proven complete (synchronize, the next
 *     t4a_module_global, destroy), a view released after the runtime's
 *     destroy, and no cuMemFreeAsync ever reaches a view's memory.
 * Skipped (77) without NVRTC.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_driver.h"
#include "t4acuda.h"
#include "t4acuda_dlpack.h"
#include "test_assert.h"
#include "test_helpers.h"

/* ---- the fake driver's controls ---------------------------------------- */

static unsigned long global_frees(void) {
  return ((unsigned long (*)(void))fake_symbol("fake_cuda_global_frees"))();
}
static void last_function(char *buf, size_t capacity) {
  ((void (*)(char *, size_t))fake_symbol("fake_cuda_last_function"))(buf,
                                                                     capacity);
}
static void record_param0(int on) {
  ((void (*)(int))fake_symbol("fake_cuda_record_param0"))(on);
}
static unsigned long long last_param0(void) {
  return ((unsigned long long (*)(void))fake_symbol("fake_cuda_last_param0"))();
}

/* ---- the program -------------------------------------------------------- */

/* Sizes on the fake driver (tests/fake/fake_cuda.c): a name ending in
 * "table" is 64 bytes, in "64" 8 bytes, else 4. */
static const char k_source[] =
    "__device__ unsigned counter;\n"
    "__constant__ float table[16];\n"
    "namespace ns { __device__ unsigned long long hits64; }\n"
    "__device__ unsigned no_such_var;\n"
    "template <int N, bool Add> __global__ void apply(float *out) {\n"
    "  out[threadIdx.x] = Add ? table[threadIdx.x % N] + N : -N;\n"
    "}\n"
    "template <typename T> __global__ void fill(T *p) { *p = T(); }\n"
    "extern \"C\" __global__ void plain(float *x) { *x = 0; }\n";

enum {
  E_COUNTER,
  E_TABLE,
  E_HITS,
  E_NO_SUCH_VAR,
  E_APPLY4,
  E_APPLY8,
  E_FILL,
  E_COUNT
};
static const char *const k_expressions[E_COUNT] = {
    "&counter",           "table",          "&ns::hits64",
    "&no_such_var",       "apply<4, true>", "&apply<8, false>",
    "fill<unsigned int>",
};

static t4a_artifact g_artifact;       /* compiled with the expressions */
static t4a_artifact g_plain_artifact; /* the same source, none */
static char g_lowered[E_COUNT][256];

static t4a_status compile(uint32_t expressions, t4a_artifact *out) {
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  r.source = k_source;
  r.program_name = "globals.cu";
  r.cc_major = 9;
  r.cc_minor = 0;
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  r.name_expressions = expressions ? k_expressions : NULL;
  r.name_expression_count = expressions;
  return t4a_compile(&r, out);
}

static int group_setup(void **state) {
  (void)state;
  t4a_status s = compile(E_COUNT, &g_artifact);
  if (s == T4A_ERROR_NO_COMPILER) {
    fprintf(stderr, "skipped: no NVRTC (%s)\n", last_message());
    exit(77);
  }
  if (s != T4A_SUCCESS) {
    fprintf(stderr, "compile failed: %s: %s\n", t4a_status_name(s),
            last_message());
    return -1;
  }
  if (compile(0, &g_plain_artifact) != T4A_SUCCESS) return -1;
  for (uint32_t i = 0; i < E_COUNT; ++i)
    if (t4a_artifact_lowered_name(g_artifact, i, g_lowered[i],
                                  sizeof g_lowered[i], NULL) != T4A_SUCCESS)
      return -1;
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  t4a_artifact_release(g_artifact);
  t4a_artifact_release(g_plain_artifact);
  return 0;
}

static t4a_runtime make_runtime(uint32_t cache_entries) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  o.module_cache_entries = cache_entries;
  t4a_runtime rt;
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  return rt;
}

/* ---- lowered names by expression --------------------------------------- */

static void expect_lowered(const char *expression, int index) {
  char buf[256];
  size_t needed = 0;
  ASSERT_OK(t4a_artifact_lowered_name_of(g_artifact, expression, buf,
                                         sizeof buf, &needed));
  if (strcmp(buf, g_lowered[index]) != 0)
    fail_msg("'%s' gave '%s', expected '%s' (of '%s')", expression, buf,
             g_lowered[index], k_expressions[index]);
  assert_int_equal(needed, strlen(g_lowered[index]) + 1);
}

static void test_lowered_name_of(void **state) {
  (void)state;
  /* Exact. */
  for (int i = 0; i < E_COUNT; ++i) expect_lowered(k_expressions[i], i);
  /* Whitespace ignored between tokens. */
  expect_lowered("apply<4,true>", E_APPLY4);
  expect_lowered("  apply < 4 ,\ttrue >\n", E_APPLY4);
  expect_lowered("& apply<8,false>", E_APPLY8);
  expect_lowered("fill< unsigned  int >", E_FILL);
  expect_lowered("& ns :: hits64", E_HITS);
  /* A leading '&' ignored on either side. */
  expect_lowered("counter", E_COUNTER);
  expect_lowered("&table", E_TABLE);
  expect_lowered("&apply<4, true>", E_APPLY4);
  expect_lowered("apply<8, false>", E_APPLY8);
  /* A space between two words still counts. */
  ASSERT_STATUS(t4a_artifact_lowered_name_of(g_artifact, "fill<unsignedint>",
                                             NULL, 0, NULL),
                T4A_ERROR_UNKNOWN_ENTRY_POINT);
  ASSERT_MESSAGE_HAS("expression 'fill<unsignedint>' is none of the "
                     "artifact's 7 name expressions");
  ASSERT_STATUS(t4a_artifact_lowered_name_of(g_artifact, "apply<4, false>",
                                             NULL, 0, NULL),
                T4A_ERROR_UNKNOWN_ENTRY_POINT);
  ASSERT_MESSAGE_HAS("'apply<4, false>'");
  /* Query, then copy (truncated like t4a_artifact_lowered_name). */
  size_t needed = 0;
  ASSERT_OK(t4a_artifact_lowered_name_of(g_artifact, "apply<4,true>", NULL, 0,
                                         &needed));
  assert_int_equal(needed, strlen(g_lowered[E_APPLY4]) + 1);
  char small[4] = {'x', 'x', 'x', 'x'};
  ASSERT_OK(t4a_artifact_lowered_name_of(g_artifact, "apply<4,true>", small,
                                         sizeof small, NULL));
  assert_memory_equal(small, g_lowered[E_APPLY4], 3);
  assert_int_equal(small[3], '\0');
  /* Argument checks. */
  ASSERT_STATUS(t4a_artifact_lowered_name_of(g_artifact, NULL, NULL, 0, NULL),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("expression is NULL");
  ASSERT_STATUS(t4a_artifact_lowered_name_of(g_artifact, "", NULL, 0, NULL),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("expression is empty");
  ASSERT_STATUS(
      t4a_artifact_lowered_name_of(g_artifact, "counter", NULL, 8, NULL),
      T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("buf is NULL but capacity is 8");
  /* An artifact compiled without name expressions. */
  ASSERT_STATUS(
      t4a_artifact_lowered_name_of(g_plain_artifact, "&counter", NULL, 0, NULL),
      T4A_ERROR_UNKNOWN_ENTRY_POINT);
  ASSERT_MESSAGE_HAS("compiled without name expressions");
  /* The same request compiled again (a memory hit) finds the same. */
  t4a_artifact again;
  ASSERT_OK(compile(E_COUNT, &again));
  char buf[256];
  ASSERT_OK(t4a_artifact_lowered_name_of(again, "apply<4,true>", buf,
                                         sizeof buf, NULL));
  assert_string_equal(buf, g_lowered[E_APPLY4]);
  ASSERT_OK(t4a_artifact_release(again));
}

/* ---- kernels by expression ---------------------------------------------- */

static void expect_kernel(t4a_module m, const char *name, const char *symbol) {
  t4a_kernel k;
  char got[256];
  ASSERT_OK(t4a_kernel_get(m, name, &k));
  last_function(got, sizeof got);
  if (strcmp(got, symbol) != 0)
    fail_msg("t4a_kernel_get('%s') asked the driver for '%s', expected '%s'",
             name, got, symbol);
  ASSERT_OK(t4a_kernel_release(k));
}

static void test_kernel_by_expression(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0);
  t4a_module m;
  ASSERT_OK(t4a_module_load(rt, g_artifact, &m));
  expect_kernel(m, "apply<4, true>", g_lowered[E_APPLY4]);
  expect_kernel(m, "apply<4,true>", g_lowered[E_APPLY4]);
  expect_kernel(m, "&apply<4, true>", g_lowered[E_APPLY4]);
  expect_kernel(m, "&apply<8, false>", g_lowered[E_APPLY8]);
  expect_kernel(m, "apply < 8 , false >", g_lowered[E_APPLY8]);
  expect_kernel(m, "fill<unsigned int>", g_lowered[E_FILL]);
  /* No expression matches: the raw name. */
  expect_kernel(m, "plain", "plain");
  expect_kernel(m, g_lowered[E_APPLY4], g_lowered[E_APPLY4]);
  t4a_kernel k = {0};
  ASSERT_STATUS(t4a_kernel_get(m, "no_such_kernel", &k),
                T4A_ERROR_UNKNOWN_ENTRY_POINT);
  ASSERT_MESSAGE_HAS("no kernel named 'no_such_kernel' (7 name expressions");
  assert_int_equal(k.id, 0);
  /* An expression whose lowered name is no kernel (the fake has no
   * no_such_* symbol). */
  ASSERT_STATUS(t4a_kernel_get(m, "no_such_var", &k),
                T4A_ERROR_UNKNOWN_ENTRY_POINT);
  ASSERT_MESSAGE_HAS("is the name expression '&no_such_var', whose lowered "
                     "name 'no_such_var' is no kernel");
  ASSERT_OK(t4a_module_release(m));

  /* A module of raw bytes has no expressions: names pass as they are. */
  static const char image[] = "raw image";
  ASSERT_OK(t4a_module_load_data(rt, image, sizeof image, &m));
  expect_kernel(m, "apply<4, true>", "apply<4, true>");
  ASSERT_STATUS(t4a_kernel_get(m, "no_such_kernel", &k),
                T4A_ERROR_UNKNOWN_ENTRY_POINT);
  ASSERT_MESSAGE_HAS("(0 name expressions");
  ASSERT_OK(t4a_module_release(m));

  /* The artifact without expressions: raw names only. */
  ASSERT_OK(t4a_module_load(rt, g_plain_artifact, &m));
  expect_kernel(m, "apply<4,true>", "apply<4,true>");
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* ---- globals ------------------------------------------------------------ */

static void test_global_lookup(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0);
  t4a_module m;
  ASSERT_OK(t4a_module_load(rt, g_artifact, &m));
  t4a_buffer counter, counter2, table, hits, raw_hits;
  ASSERT_OK(t4a_module_global(m, "&counter", &counter));
  ASSERT_OK(t4a_module_global(m, "counter", &counter2));
  ASSERT_OK(t4a_module_global(m, "table", &table));
  ASSERT_OK(t4a_module_global(m, "ns::hits64", &hits));
  ASSERT_OK(t4a_module_global(m, g_lowered[E_HITS], &raw_hits));
  t4a_buffer_info ci = buffer_info(counter), ti = buffer_info(table),
                  hi = buffer_info(hits);
  assert_int_equal(ci.bytes, 4);
  assert_int_equal(ti.bytes, 64);
  assert_int_equal(hi.bytes, 4); /* the fake sees "_ZN2ns6hits64E" */
  assert_int_equal(ci.flags, T4A_BUFFER_INFO_VIEW);
  assert_int_equal(ti.flags & T4A_BUFFER_INFO_IMPORTED, 0);
  assert_int_equal(ci.runtime.id, rt.id);
  assert_true(ci.device_pointer != 0);
  assert_int_equal(buffer_info(counter2).device_pointer, ci.device_pointer);
  assert_int_equal(buffer_info(raw_hits).device_pointer, hi.device_pointer);
  assert_int_equal(buffer_info(raw_hits).bytes, hi.bytes);
  assert_true(ti.device_pointer != ci.device_pointer);

  t4a_buffer v = {0};
  ASSERT_STATUS(t4a_module_global(m, "no_such_global", &v),
                T4A_ERROR_UNKNOWN_ENTRY_POINT);
  ASSERT_MESSAGE_HAS("no __device__ or __constant__ variable named "
                     "'no_such_global'");
  ASSERT_STATUS(t4a_module_global(m, "&no_such_var", &v),
                T4A_ERROR_UNKNOWN_ENTRY_POINT);
  ASSERT_MESSAGE_HAS("the name expression '&no_such_var', whose lowered name "
                     "'no_such_var' is no __device__ or __constant__");
  ASSERT_STATUS(t4a_module_global(m, NULL, &v), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("name is NULL");
  ASSERT_STATUS(t4a_module_global(m, "", &v), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("name is empty");
  ASSERT_STATUS(t4a_module_global(m, "counter", NULL),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("view is NULL");
  t4a_module forged = {UINT64_C(0x0600000100000066)};
  ASSERT_STATUS(t4a_module_global(forged, "counter", &v),
                T4A_ERROR_INVALID_HANDLE);
  ASSERT_MESSAGE_HAS("module");
  assert_int_equal(v.id, 0);

  ASSERT_OK(t4a_buffer_release(counter));
  ASSERT_OK(t4a_buffer_release(counter2));
  ASSERT_OK(t4a_buffer_release(table));
  ASSERT_OK(t4a_buffer_release(hits));
  ASSERT_OK(t4a_buffer_release(raw_hits));
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(global_frees(), 0);
}

static void test_view_transfers(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0);
  t4a_module m;
  ASSERT_OK(t4a_module_load(rt, g_artifact, &m));
  t4a_buffer table, counter, pool;
  ASSERT_OK(t4a_module_global(m, "table", &table));
  ASSERT_OK(t4a_module_global(m, "&counter", &counter));
  ASSERT_OK(t4a_buffer_alloc(rt, 128, T4A_BUFFER_ZERO, &pool));
  int live = fake_live("allocations");

  float in[16], out[16];
  for (int i = 0; i < 16; ++i) in[i] = 0.5f * (float)i - 3.0f;
  ASSERT_OK(t4a_buffer_upload(rt, table, 0, in, sizeof in));
  memset(out, 0, sizeof out);
  ASSERT_OK(t4a_buffer_download_sync(rt, table, 0, out, sizeof out));
  assert_memory_equal(in, out, sizeof in);
  /* Offsets, and the bounds of the global's own size. */
  ASSERT_OK(t4a_buffer_download_sync(rt, table, 60, out, 4));
  assert_memory_equal(out, &in[15], 4);
  ASSERT_STATUS(t4a_buffer_upload(rt, table, 60, in, 8),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("[60, 68) goes past the end of the buffer (64 bytes)");
  ASSERT_STATUS(t4a_buffer_download_sync(rt, counter, 0, out, 5),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("(4 bytes)");
  ASSERT_STATUS(t4a_buffer_fill(rt, counter, 2, 4, 0),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("[2, 6) goes past the end of the buffer (4 bytes)");

  /* Fill. */
  uint32_t c = 0;
  ASSERT_OK(t4a_buffer_fill(rt, counter, 0, 4, 0xAB));
  ASSERT_OK(t4a_buffer_download_sync(rt, counter, 0, &c, 4));
  assert_int_equal(c, 0xABABABABu);
  ASSERT_OK(t4a_buffer_fill(rt, counter, 1, 2, 0x00));
  ASSERT_OK(t4a_buffer_download_sync(rt, counter, 0, &c, 4));
  assert_int_equal(c, 0xAB0000ABu);

  /* Copies: view to buffer, buffer to view, view to view. */
  ASSERT_OK(t4a_buffer_copy(rt, pool, 16, table, 0, 64));
  unsigned char bytes[128];
  ASSERT_OK(t4a_buffer_download_sync(rt, pool, 0, bytes, sizeof bytes));
  assert_memory_equal(bytes + 16, in, 64);
  float twice[16];
  for (int i = 0; i < 16; ++i) twice[i] = 2.0f * in[i];
  ASSERT_OK(t4a_buffer_upload(rt, pool, 0, twice, sizeof twice));
  ASSERT_OK(t4a_buffer_copy(rt, table, 8, pool, 8, 56));
  ASSERT_OK(t4a_buffer_download_sync(rt, table, 0, out, sizeof out));
  assert_memory_equal(out, in, 8);
  assert_memory_equal(out + 2, twice + 2, 56);
  ASSERT_OK(t4a_buffer_copy(rt, counter, 0, table, 4, 4));
  ASSERT_OK(t4a_buffer_download_sync(rt, counter, 0, &c, 4));
  assert_memory_equal(&c, &in[1], 4);
  ASSERT_STATUS(t4a_buffer_copy(rt, counter, 0, table, 0, 8),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("dst: the range [0, 8) goes past the end of the buffer "
                     "(4 bytes)");
  ASSERT_STATUS(t4a_buffer_copy(rt, pool, 0, table, 32, 64),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("src: the range [32, 96) goes past the end of the "
                     "buffer (64 bytes)");
  /* Overlap inside one view is refused like any buffer's. */
  ASSERT_STATUS(t4a_buffer_copy(rt, table, 0, table, 4, 8),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("overlaps");

  /* DLPack export of a view: its memory, its size; the tensor holds it. */
  DLManagedTensorVersioned *t = NULL;
  ASSERT_OK(t4a_buffer_to_dlpack(rt, table, NULL, -1, &t));
  assert_int_equal((uintptr_t)t->dl_tensor.data + t->dl_tensor.byte_offset,
                   buffer_info(table).device_pointer);
  assert_int_equal(t->dl_tensor.shape[0], 64);
  t->deleter(t);

  ASSERT_OK(t4a_buffer_release(pool));
  ASSERT_OK(t4a_buffer_release(table));
  ASSERT_OK(t4a_buffer_release(counter));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(fake_live("allocations"), live - 1);
  assert_int_equal(global_frees(), 0);
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

static void test_view_as_launch_argument(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0);
  t4a_module m;
  t4a_kernel k;
  t4a_buffer table, empty;
  ASSERT_OK(t4a_module_load(rt, g_artifact, &m));
  ASSERT_OK(t4a_kernel_get(m, "apply<4, true>", &k));
  ASSERT_OK(t4a_module_global(m, "table", &table));
  ASSERT_OK(t4a_buffer_alloc(rt, 0, 0, &empty));
  t4a_arg a = T4A_ARG_INIT;
  a.kind = T4A_ARG_BUFFER;
  a.buffer = table;
  a.offset = 8;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = k;
  d.grid[0] = 1;
  d.block[0] = 16;
  d.args = &a;
  d.arg_count = 1;
  record_param0(1);
  ASSERT_OK(t4a_launch(rt, &d));
  assert_int_equal(last_param0(), buffer_info(table).device_pointer + 8);
  record_param0(0);
  a.offset = 64;
  ASSERT_STATUS(t4a_launch(rt, &d), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("args[0]");
  /* A view of another runtime is that runtime's. */
  t4a_runtime other = make_runtime(0);
  a.offset = 0;
  ASSERT_STATUS(t4a_launch(other, &d), T4A_ERROR_WRONG_RUNTIME);
  ASSERT_OK(t4a_runtime_destroy(other));
  /* Released while the launch's work may run: the module stays. */
  ASSERT_OK(t4a_launch(rt, &d));
  ASSERT_OK(t4a_buffer_release(table));
  ASSERT_OK(t4a_kernel_release(k));
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_buffer_release(empty));
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(global_frees(), 0);
}

/* ---- lifetime ----------------------------------------------------------- */

static void test_view_keeps_module(void **state) {
  (void)state;
  int before = fake_live("modules");
  /* One cache entry: loading another artifact evicts the first. */
  t4a_runtime rt = make_runtime(1);
  t4a_module m, other;
  t4a_kernel k;
  t4a_buffer table;
  ASSERT_OK(t4a_module_load(rt, g_artifact, &m));
  ASSERT_OK(t4a_kernel_get(m, "apply<4,true>", &k));
  ASSERT_OK(t4a_module_global(m, "table", &table));
  ASSERT_OK(t4a_kernel_release(k));
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_module_load(rt, g_plain_artifact, &other)); /* evicts */
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(stats_of(rt).module_unloads, 0);
  assert_int_equal(fake_live("modules"), before + 2);
  /* Still usable: its memory is the module's (freed by the unload). */
  float in[16], out[16];
  for (int i = 0; i < 16; ++i) in[i] = (float)i;
  ASSERT_OK(t4a_buffer_upload(rt, table, 0, in, sizeof in));
  ASSERT_OK(t4a_buffer_download_sync(rt, table, 0, out, sizeof out));
  assert_memory_equal(in, out, sizeof in);
  /* Released: unloaded once proven complete, here at the next
   * t4a_module_global of the runtime (the fake's events are complete). */
  ASSERT_OK(t4a_buffer_release(table));
  t4a_buffer v;
  ASSERT_OK(t4a_module_global(other, "counter", &v));
  assert_int_equal(stats_of(rt).module_unloads, 1);
  assert_int_equal(fake_live("modules"), before + 1);
  /* And at a synchronize. */
  ASSERT_OK(t4a_module_load(rt, g_artifact, &m)); /* evicts `other` */
  ASSERT_OK(t4a_module_release(other));
  ASSERT_OK(t4a_buffer_release(v));
  assert_int_equal(stats_of(rt).module_unloads, 1);
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(stats_of(rt).module_unloads, 2);
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(fake_live("modules"), before);
  assert_int_equal(global_frees(), 0);
}

static void test_view_and_runtime_destroy(void **state) {
  (void)state;
  int before = fake_live("modules");
  int contexts = fake_live("context_refs");
  /* A view released before the destroy, with no synchronize: the destroy's
   * drain proves it complete and unloads the module. */
  t4a_runtime rt = make_runtime(0);
  t4a_module m;
  t4a_buffer v;
  ASSERT_OK(t4a_module_load(rt, g_artifact, &m));
  ASSERT_OK(t4a_module_global(m, "&counter", &v));
  ASSERT_OK(t4a_buffer_fill(rt, v, 0, 4, 1));
  ASSERT_OK(t4a_buffer_release(v));
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(fake_live("modules"), before);
  assert_int_equal(fake_live("context_refs"), contexts);

  /* A view that outlives the destroy: refused for work, released after;
   * the module and the runtime go with it. */
  rt = make_runtime(0);
  ASSERT_OK(t4a_module_load(rt, g_artifact, &m));
  ASSERT_OK(t4a_module_global(m, "table", &v));
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(fake_live("modules"), before + 1);
  t4a_buffer_info i = T4A_BUFFER_INFO_INIT;
  ASSERT_OK(t4a_buffer_info_get(v, &i));
  assert_int_equal(i.bytes, 64);
  ASSERT_OK(t4a_buffer_release(v));
  assert_int_equal(fake_live("modules"), before);
  assert_int_equal(fake_live("context_refs"), contexts);

  /* Module released after the view, both before the destroy. */
  rt = make_runtime(0);
  ASSERT_OK(t4a_module_load(rt, g_artifact, &m));
  ASSERT_OK(t4a_module_global(m, "table", &v));
  ASSERT_OK(t4a_buffer_release(v));
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(fake_live("modules"), before);
  assert_int_equal(fake_live("context_refs"), contexts);
  assert_int_equal(global_frees(), 0);
}

int main(void) {
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lowered_name_of),
      cmocka_unit_test(test_kernel_by_expression),
      cmocka_unit_test(test_global_lookup),
      cmocka_unit_test(test_view_transfers),
      cmocka_unit_test(test_view_as_launch_argument),
      cmocka_unit_test(test_view_keeps_module),
      cmocka_unit_test(test_view_and_runtime_destroy),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
