/*
 * Host lane (fake driver): zero bytes mean the default. A binding that
 * cannot see the T4A_<NAME>_INIT macros (Python, Rust, Julia) zero-fills a
 * struct and sets struct_size; that must behave exactly like the macro:
 *   - every _INIT macro of t4acuda.h and t4acuda_dlpack.h is struct_size
 * followed by zero bytes (compared byte for byte with a zero-filled struct; the
 * test fails when the header gains an _INIT macro this file does not use);
 *   - t4a_runtime_options: a zero-filled struct, the INIT macro, NULL and
 *     the documented defaults spelled out create the same runtime: the
 *     pool release threshold the fake driver's pool holds (keep all),
 *     staging and module-cache behaviour; T4A_POOL_RELEASE_ALL reaches the
 *     driver as exactly 0;
 *   - t4a_launch_desc: 0 in grid/block y and z launches 1; 0 in x is
 *     rejected naming grid[0] / block[0];
 *   - t4a_arg and t4a_compile_request: the zero-filled struct and the
 *     macro give the same status and message.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L
#define T4A_EXPERIMENTAL 1 /* the experimental _INIT macros too */

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

#if !defined(T4A_FAKE_CUDA_PATH)
#error "test_zero_init needs the fake driver (T4A_FAKE_CUDA_PATH)"
#endif

/* A zero-filled T with only struct_size set equals T's _INIT macro. */
#define EXPECT_INIT_IS_ZERO_FILL(T, INIT)                                      \
  do {                                                                         \
    static const T init_ = INIT;                                               \
    T zero_;                                                                   \
    memset(&zero_, 0, sizeof zero_);                                           \
    zero_.struct_size = (uint32_t)sizeof zero_;                                \
    if (memcmp(&init_, &zero_, sizeof zero_) != 0)                             \
      fail_msg(#INIT " is not struct_size followed by zero bytes");            \
  } while (0)

static void test_every_init_is_zero_fill(void **state) {
  (void)state;
  /* input structs */
  EXPECT_INIT_IS_ZERO_FILL(t4a_runtime_options, T4A_RUNTIME_OPTIONS_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_compile_request, T4A_COMPILE_REQUEST_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_launch_desc, T4A_LAUNCH_DESC_INIT);
  /* output structs */
  EXPECT_INIT_IS_ZERO_FILL(t4a_error_info, T4A_ERROR_INFO_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_device_info, T4A_DEVICE_INFO_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_runtime_info, T4A_RUNTIME_INFO_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_runtime_stats, T4A_RUNTIME_STATS_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_buffer_info, T4A_BUFFER_INFO_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_artifact_info, T4A_ARTIFACT_INFO_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_compile_stats, T4A_COMPILE_STATS_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_kernel_info, T4A_KERNEL_INFO_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_process_stats, T4A_PROCESS_STATS_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_process_fault, T4A_PROCESS_FAULT_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_raw_info, T4A_RAW_INFO_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_dlpack_desc, T4A_DLPACK_DESC_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_barrier_desc, T4A_BARRIER_DESC_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_barrier_audit, T4A_BARRIER_AUDIT_INIT);
  /* experimental */
  EXPECT_INIT_IS_ZERO_FILL(t4a_capture_options, T4A_CAPTURE_OPTIONS_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_graph_info, T4A_GRAPH_INFO_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_launch_attrs, T4A_LAUNCH_ATTRS_INIT);
  EXPECT_INIT_IS_ZERO_FILL(t4a_cluster_occupancy, T4A_CLUSTER_OCCUPANCY_INIT);
  /* t4a_arg has no struct_size (its layout is frozen): all zero bytes */
  {
    static const t4a_arg init = T4A_ARG_INIT;
    t4a_arg zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(&init, &zero, sizeof zero);
  }
  /* handles: the zero id is the null handle */
  assert_true(T4A_NULL_ID == 0);
}

/* Every `#define T4A_<NAME>_INIT` of the header is used in this file. */
static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) fail_msg("cannot open %s", path);
  char *buf = calloc(1, 1 << 20);
  assert_non_null(buf);
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static void test_every_init_macro_covered(void **state) {
  (void)state;
  char *self = read_file(T4A_TEST_SOURCE_DIR "/tests/host/test_zero_init.c");
  int found = 0;
  static const char *const headers[] = {"/include/t4acuda.h",
                                        "/include/t4acuda_dlpack.h"};
  for (size_t h = 0; h < sizeof headers / sizeof headers[0]; ++h) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s", T4A_TEST_SOURCE_DIR, headers[h]);
    char *header = read_file(path);
    for (const char *p = header; (p = strstr(p, "#define T4A_")) != NULL;) {
      p += strlen("#define ");
      size_t len = strcspn(p, " \t\n(");
      if (len > 5 && strncmp(p + len - 5, "_INIT", 5) == 0) {
        char name[128];
        assert_true(len < sizeof name);
        memcpy(name, p, len);
        name[len] = '\0';
        char use[160];
        snprintf(use, sizeof use, ", %s)", name);
        if (strstr(self, use) == NULL && strcmp(name, "T4A_ARG_INIT") != 0)
          fail_msg("%s is not checked by EXPECT_INIT_IS_ZERO_FILL here", name);
        ++found;
      }
    }
    free(header);
  }
  assert_true(found >= 15);
  free(self);
}

/* ---- runtime options on the fake driver ------------------------------ */

typedef int (*pool_get_fn)(void *, int, void *);
typedef void (*last_launch_fn)(unsigned dims[6]);

/* The release threshold the fake driver's pool holds. */
static uint64_t driver_threshold(const t4a_runtime_info *info) {
  void *fn = driver_entry("cuMemPoolGetAttribute");
  uint64_t v = 0x5A5A5A5A5A5A5A5Au;
  /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD is 4 in cuda.h */
  if (((pool_get_fn)fn)(info->memory_pool, 4, &v) != 0)
    fail_msg("cuMemPoolGetAttribute failed");
  return v;
}

/* What one runtime created with `o` shows: its info, the driver's pool
 * threshold, and its counters after a fixed workload (a pageable upload
 * through staging, 65 distinct modules through the module cache). */
typedef struct observed {
  int32_t device_ordinal;
  uint64_t info_threshold, driver_threshold;
  t4a_runtime_stats stats;
} observed;

static observed observe(const t4a_runtime_options *o) {
  observed ob;
  memset(&ob, 0, sizeof ob);
  t4a_runtime rt;
  ASSERT_OK(t4a_runtime_create(o, &rt));
  t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
  ASSERT_OK(t4a_runtime_info_get(rt, &info));
  ob.device_ordinal = info.device_ordinal;
  ob.info_threshold = info.pool_release_threshold;
  ob.driver_threshold = driver_threshold(&info);
  const size_t bytes = 20u << 20;
  unsigned char *host = malloc(bytes);
  assert_non_null(host);
  memset(host, 7, bytes);
  t4a_buffer b;
  ASSERT_OK(t4a_buffer_alloc(rt, bytes, 0, &b));
  ASSERT_OK(t4a_buffer_upload(rt, b, 0, host, bytes));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  ASSERT_OK(t4a_buffer_release(b));
  free(host);
  for (int i = 0; i < 65; ++i) {
    unsigned char image[16] = {9, (unsigned char)i};
    t4a_module m;
    ASSERT_OK(t4a_module_load_data(rt, image, sizeof image, &m));
    ASSERT_OK(t4a_module_release(m));
  }
  ob.stats.struct_size = sizeof ob.stats;
  ASSERT_OK(t4a_runtime_stats_get(rt, &ob.stats));
  ASSERT_OK(t4a_runtime_destroy(rt));
  return ob;
}

static void expect_same(const char *what, const observed *a,
                        const observed *b) {
  if (a->device_ordinal != b->device_ordinal ||
      a->info_threshold != b->info_threshold ||
      a->driver_threshold != b->driver_threshold ||
      a->stats.staging_bytes_peak != b->stats.staging_bytes_peak ||
      a->stats.bytes_uploaded != b->stats.bytes_uploaded ||
      a->stats.module_loads != b->stats.module_loads ||
      a->stats.module_evictions != b->stats.module_evictions)
    fail_msg("%s: device %d/%d, threshold %llu/%llu (driver %llu/%llu), "
             "staging peak %llu/%llu, modules loaded %llu/%llu, evicted "
             "%llu/%llu",
             what, a->device_ordinal, b->device_ordinal,
             (unsigned long long)a->info_threshold,
             (unsigned long long)b->info_threshold,
             (unsigned long long)a->driver_threshold,
             (unsigned long long)b->driver_threshold,
             (unsigned long long)a->stats.staging_bytes_peak,
             (unsigned long long)b->stats.staging_bytes_peak,
             (unsigned long long)a->stats.module_loads,
             (unsigned long long)b->stats.module_loads,
             (unsigned long long)a->stats.module_evictions,
             (unsigned long long)b->stats.module_evictions);
}

static void test_runtime_options_zero_is_default(void **state) {
  (void)state;
  t4a_runtime_options zero;
  memset(&zero, 0, sizeof zero);
  zero.struct_size = sizeof zero;
  const t4a_runtime_options init = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime_options spelled = T4A_RUNTIME_OPTIONS_INIT;
  spelled.device_ordinal = 0;
  spelled.pool_release_threshold = T4A_POOL_KEEP_ALL;
  spelled.staging_bytes = T4A_DEFAULT_STAGING_BYTES;
  spelled.staging_chunk_bytes = T4A_DEFAULT_STAGING_CHUNK_BYTES;
  spelled.staging_threads = T4A_STAGING_THREADS_AUTO;
  spelled.module_cache_entries = T4A_DEFAULT_MODULE_CACHE_ENTRIES;
  spelled.module_cache_bytes = T4A_DEFAULT_MODULE_CACHE_BYTES;

  observed by_zero = observe(&zero);
  observed by_init = observe(&init);
  observed by_null = observe(NULL);
  observed by_spelled = observe(&spelled);
  expect_same("zero-filled vs INIT", &by_zero, &by_init);
  expect_same("zero-filled vs NULL", &by_zero, &by_null);
  expect_same("zero-filled vs the defaults spelled out", &by_zero, &by_spelled);
  /* ...and those are the documented defaults */
  assert_int_equal(by_zero.device_ordinal, 0);
  assert_true(by_zero.info_threshold == T4A_POOL_KEEP_ALL);
  assert_true(by_zero.driver_threshold == UINT64_MAX);
  assert_int_equal(by_zero.stats.bytes_uploaded, 20u << 20);
  assert_true(by_zero.stats.staging_bytes_peak > 0 &&
              by_zero.stats.staging_bytes_peak <= T4A_DEFAULT_STAGING_BYTES);
  assert_int_equal(by_zero.stats.module_loads, 65);
  assert_int_equal(by_zero.stats.module_evictions,
                   65 - T4A_DEFAULT_MODULE_CACHE_ENTRIES);

  /* The workload does observe these fields: other values differ. */
  t4a_runtime_options small = zero;
  small.staging_bytes = 8192;
  small.module_cache_entries = 1;
  observed by_small = observe(&small);
  assert_true(by_small.stats.staging_bytes_peak <= 8192);
  assert_int_equal(by_small.stats.module_evictions, 64);
}

static void test_pool_threshold_encoding(void **state) {
  (void)state;
  static const struct {
    uint64_t asked, driver;
  } cases[] = {
      {0, UINT64_MAX},                 /* the default: keep all */
      {T4A_POOL_KEEP_ALL, UINT64_MAX}, /* keep all, spelled out */
      {T4A_POOL_RELEASE_ALL, 0},       /* exactly 0 for the driver */
      {1, 1},                          /* others as they are */
      {123456789u, 123456789u},
      {UINT64_MAX - 2, UINT64_MAX - 2},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    t4a_runtime_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.pool_release_threshold = cases[k].asked;
    t4a_runtime rt;
    ASSERT_OK(t4a_runtime_create(&o, &rt));
    t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
    ASSERT_OK(t4a_runtime_info_get(rt, &info));
    if (driver_threshold(&info) != cases[k].driver ||
        info.pool_release_threshold != cases[k].driver)
      fail_msg("threshold %llu: the driver holds %llu, info reports %llu; "
               "expected %llu",
               (unsigned long long)cases[k].asked,
               (unsigned long long)driver_threshold(&info),
               (unsigned long long)info.pool_release_threshold,
               (unsigned long long)cases[k].driver);
    ASSERT_OK(t4a_runtime_destroy(rt));
  }
  /* An older struct that ends before the threshold gets the default. */
  t4a_runtime_options old;
  memset(&old, 0, sizeof old);
  old.struct_size =
      (uint32_t)offsetof(t4a_runtime_options, pool_release_threshold);
  old.pool_release_threshold = T4A_POOL_RELEASE_ALL; /* beyond its size */
  t4a_runtime rt;
  ASSERT_OK(t4a_runtime_create(&old, &rt));
  t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
  ASSERT_OK(t4a_runtime_info_get(rt, &info));
  assert_true(driver_threshold(&info) == UINT64_MAX);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* ---- launch descriptors and arguments -------------------------------- */

typedef struct kernel_setup {
  t4a_runtime rt;
  t4a_module module;
  t4a_kernel kernel;
} kernel_setup;

static kernel_setup make_kernel(void) {
  kernel_setup s;
  ASSERT_OK(t4a_runtime_create(NULL, &s.rt));
  unsigned char image[16] = {3};
  ASSERT_OK(t4a_module_load_data(s.rt, image, sizeof image, &s.module));
  ASSERT_OK(t4a_kernel_get(s.module, "k", &s.kernel));
  return s;
}

static void drop_kernel(kernel_setup *s) {
  ASSERT_OK(t4a_kernel_release(s->kernel));
  ASSERT_OK(t4a_module_release(s->module));
  ASSERT_OK(t4a_runtime_destroy(s->rt));
}

static void expect_launched(const t4a_launch_desc *d, t4a_runtime rt,
                            const unsigned want[6]) {
  last_launch_fn last = (last_launch_fn)fake_symbol("fake_cuda_last_launch");
  unsigned got[6];
  ASSERT_OK(t4a_launch(rt, d));
  last(got);
  if (memcmp(got, want, sizeof got) != 0)
    fail_msg("launched grid %u x %u x %u, block %u x %u x %u; expected grid "
             "%u x %u x %u, block %u x %u x %u",
             got[0], got[1], got[2], got[3], got[4], got[5], want[0], want[1],
             want[2], want[3], want[4], want[5]);
}

static void test_launch_desc_zero_is_default(void **state) {
  (void)state;
  kernel_setup s = make_kernel();
  t4a_launch_desc zero;
  memset(&zero, 0, sizeof zero);
  zero.struct_size = sizeof zero;
  t4a_launch_desc init = T4A_LAUNCH_DESC_INIT;
  t4a_launch_desc *both[2] = {&zero, &init};
  for (int k = 0; k < 2; ++k) {
    t4a_launch_desc *d = both[k];
    d->kernel = s.kernel;
    /* x has no default */
    ASSERT_STATUS(t4a_launch(s.rt, d), T4A_ERROR_INVALID_ARGUMENT);
    ASSERT_MESSAGE_HAS("desc->grid[0] (x) is 0");
    d->grid[0] = 5;
    ASSERT_STATUS(t4a_launch(s.rt, d), T4A_ERROR_INVALID_ARGUMENT);
    ASSERT_MESSAGE_HAS("desc->block[0] (x) is 0");
    d->block[0] = 32;
    /* y and z: 0 launches 1 */
    const unsigned ones[6] = {5, 1, 1, 32, 1, 1};
    expect_launched(d, s.rt, ones);
    d->grid[2] = 3;
    d->block[1] = 2;
    const unsigned given[6] = {5, 1, 3, 32, 2, 1};
    expect_launched(d, s.rt, given);
    d->grid[1] = d->grid[2] = d->block[1] = d->block[2] = 1;
    expect_launched(d, s.rt, ones);
  }
  /* A zero-filled argument and T4A_ARG_INIT: the same rejection. */
  t4a_arg zero_arg, init_arg = T4A_ARG_INIT;
  memset(&zero_arg, 0, sizeof zero_arg);
  const t4a_arg *args[2] = {&zero_arg, &init_arg};
  char first[512] = "";
  for (int k = 0; k < 2; ++k) {
    init.args = args[k];
    init.arg_count = 1;
    ASSERT_STATUS(t4a_launch(s.rt, &init), T4A_ERROR_INVALID_ARGUMENT);
    ASSERT_MESSAGE_HAS("desc->args[0].kind is 0");
    if (k == 0)
      snprintf(first, sizeof first, "%s", last_message());
    else
      assert_string_equal(first, last_message());
  }
  drop_kernel(&s);
}

/* ---- compile requests --------------------------------------------------- */

static void test_compile_request_zero_is_default(void **state) {
  (void)state;
  t4a_compile_request zero;
  memset(&zero, 0, sizeof zero);
  zero.struct_size = sizeof zero;
  t4a_compile_request init = T4A_COMPILE_REQUEST_INIT;
  assert_int_equal(T4A_COMPILE_CUBIN, 0);
  /* nothing set: the same rejection, naming the source */
  t4a_artifact a = {T4A_NULL_ID};
  ASSERT_STATUS(t4a_compile(&zero, &a), T4A_ERROR_INVALID_ARGUMENT);
  char first[512];
  snprintf(first, sizeof first, "%s", last_message());
  ASSERT_STATUS(t4a_compile(&init, &a), T4A_ERROR_INVALID_ARGUMENT);
  assert_string_equal(first, last_message());
  ASSERT_MESSAGE_HAS("source");
  /* source and target set: the same outcome (a CUBIN, or no NVRTC here) */
  const char *src = "extern \"C\" __global__ void k() {}";
  zero.source = init.source = src;
  zero.cc_major = init.cc_major = 9;
  zero.flags = init.flags = T4A_COMPILE_NO_DISK_CACHE;
  t4a_artifact az = {T4A_NULL_ID}, ai = {T4A_NULL_ID};
  t4a_status sz = t4a_compile(&zero, &az);
  snprintf(first, sizeof first, "%s", last_message());
  t4a_status si = t4a_compile(&init, &ai);
  assert_int_equal(sz, si);
  if (sz == T4A_SUCCESS) {
    t4a_artifact_info iz = T4A_ARTIFACT_INFO_INIT, ii = T4A_ARTIFACT_INFO_INIT;
    ASSERT_OK(t4a_artifact_info_get(az, &iz));
    ASSERT_OK(t4a_artifact_info_get(ai, &ii));
    assert_memory_equal(&iz, &ii, sizeof iz);
    assert_int_equal(iz.output, T4A_COMPILE_CUBIN);
    ASSERT_OK(t4a_artifact_release(az));
    ASSERT_OK(t4a_artifact_release(ai));
  } else {
    assert_string_equal(first, last_message());
  }
}

int main(void) {
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_init_is_zero_fill),
      cmocka_unit_test(test_every_init_macro_covered),
      cmocka_unit_test(test_runtime_options_zero_is_default),
      cmocka_unit_test(test_pool_threshold_encoding),
      cmocka_unit_test(test_launch_desc_zero_is_default),
      cmocka_unit_test(test_compile_request_zero_is_default),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
