/*
 * Host lane: the drivers users have (CUDA 12.0 and newer), on the fake
 * driver of tests/fake acting as the version FAKE_CUDA_DRIVER_VERSION names
 * (each ctest registration sets it; `scripts/test` also runs the whole host
 * suite as 12.0 and 12.4):
 *   - every entry point is requested at the CUDA version of the variant
 *     the library calls, never at a version newer than the driver, and a
 *     base name whose newest variant has other parameters gets the old one
 *     (cuStreamGetCtx at 9020, not the three-parameter 12050 variant);
 *   - t4a_driver_lacks lists what the driver lacks with the version it
 *     needs; a feature that needs it is UNSUPPORTED naming both versions;
 *   - runtimes, buffers, transfers, the raw seam and capture work;
 *   - a driver older than 12.0 is NO_DRIVER naming both versions.
 * Argument: the version the fake reports (as FAKE_CUDA_DRIVER_VERSION).
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _GNU_SOURCE
#define T4A_EXPERIMENTAL

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t4acuda.h"
#include "test_assert.h"

static int g_version; /* what the fake reports */

static int lookup_version(const char *name) {
  void *lib = dlopen(T4A_FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (lib == NULL) fail_msg("the fake driver is not loaded: %s", dlerror());
  int (*f)(const char *) =
      (int (*)(const char *))dlsym(lib, "fake_cuda_lookup_version");
  if (f == NULL) fail_msg("the fake driver has no fake_cuda_lookup_version");
  return f(name);
}

static char *lacks_text(void) {
  size_t needed = 0;
  ASSERT_OK(t4a_driver_lacks(NULL, 0, &needed));
  char *text = malloc(needed);
  assert_non_null(text);
  ASSERT_OK(t4a_driver_lacks(text, needed, NULL));
  assert_int_equal(strlen(text) + 1, needed);
  return text;
}

static void test_reports_the_version(void **state) {
  (void)state;
  int32_t v = 0;
  ASSERT_OK(t4a_driver_version(&v));
  assert_int_equal(v, g_version);
}

/* The variants requested, from cudaTypedefs.h's PFN_<name>_v<version>. */
static void test_lookups_at_the_variants_called(void **state) {
  (void)state;
  int32_t v = 0;
  ASSERT_OK(t4a_driver_version(&v));
  static const struct {
    const char *name;
    int version;
  } k_expected[] = {
      {"cuInit", 2000},
      {"cuDeviceTotalMem", 3020},
      {"cuDeviceGetUuid", 11040},
      {"cuDevicePrimaryCtxRelease", 11000},
      {"cuStreamDestroy", 4000},
      {"cuStreamGetCtx", 9020}, /* 12050 adds a green-context parameter */
      {"cuMemcpyHtoDAsync", 3020},
      {"cuMemAllocFromPoolAsync", 11020},
      {"cuModuleGetGlobal", 3020},
      {"cuStreamBeginCapture", 10010},
      {"cuGraphInstantiateWithFlags", 11040},
  };
  for (size_t i = 0; i < sizeof k_expected / sizeof k_expected[0]; ++i) {
    int got = lookup_version(k_expected[i].name);
    if (got != k_expected[i].version)
      fail_msg("%s requested at %d, expected %d", k_expected[i].name, got,
               k_expected[i].version);
  }
  /* Not used: never looked up (its 13.0 variant takes a context). */
  assert_int_equal(lookup_version("cuCtxGetDevice"), 0);
  /* Newer than the driver: not even asked for. */
  int param_info = lookup_version("cuFuncGetParamInfo");
  assert_int_equal(param_info, g_version >= 12040 ? 12040 : 0);
}

static void test_lacks_lists_what_is_missing(void **state) {
  (void)state;
  char *text = lacks_text();
  /* The fake never has cuFuncGetParamInfo; a 12.0 driver would not
   * either. Each line names the version needed. */
  assert_non_null(strstr(text, "cuFuncGetParamInfo (CUDA 12.4): "));
  assert_null(strstr(text, "cuStreamBeginCapture"));
  assert_null(strstr(text, "cuLaunchCooperativeKernel"));
  free(text);
  /* A NULL buffer with a capacity is refused. */
  assert_int_equal(t4a_driver_lacks(NULL, 4, NULL), T4A_ERROR_INVALID_ARGUMENT);
}

/* What users do first works on every supported version. */
static void test_runtime_buffer_transfer_capture(void **state) {
  (void)state;
  t4a_runtime rt = {0};
  t4a_runtime_options opt = T4A_RUNTIME_OPTIONS_INIT;
  ASSERT_OK(t4a_runtime_create(&opt, &rt));
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, 256, 0, &b));
  unsigned char in[256], out[256];
  for (int i = 0; i < 256; ++i) in[i] = (unsigned char)(i * 7);
  ASSERT_OK(t4a_buffer_upload(rt, b, 0, in, sizeof in));
  ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, out, sizeof out));
  assert_memory_equal(in, out, sizeof in);
  /* The raw seam; waiting for a caller's stream asks the driver for the
   * stream's context (cuStreamGetCtx). */
  t4a_raw_scope scope = {0};
  t4a_raw_info raw = T4A_RAW_INFO_INIT;
  ASSERT_OK(t4a_raw_begin(rt, &scope, &raw));
  ASSERT_OK(t4a_raw_end(scope));
  ASSERT_OK(t4a_runtime_wait_stream(rt, raw.stream));
  t4a_capture_options capture = T4A_CAPTURE_OPTIONS_INIT;
  ASSERT_OK(t4a_capture_begin(rt, &capture));
  t4a_graph g = {0};
  ASSERT_OK(t4a_capture_end(rt, &g));
  ASSERT_OK(t4a_graph_launch(rt, g));
  ASSERT_OK(t4a_graph_release(g));
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* Argument `old`: a driver older than 12.0 is refused, naming both. */
static void test_older_than_12_refused(void **state) {
  (void)state;
  int32_t v = 0;
  assert_int_equal(t4a_driver_version(&v), T4A_ERROR_NO_DRIVER);
  const char *m = last_message();
  char seen[32];
  snprintf(seen, sizeof seen, "CUDA %d.%d", g_version / 1000,
           g_version % 1000 / 10);
  assert_non_null(strstr(m, seen));
  assert_non_null(strstr(m, "needs CUDA 12.0 or newer"));
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_driver_versions VERSION\n");
    return 2;
  }
  g_version = atoi(argv[1]);
  assert_int_equal(setenv("FAKE_CUDA_DRIVER_VERSION", argv[1], 1), 0);
  assert_int_equal(setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1), 0);
  if (g_version < 12000) {
    const struct CMUnitTest old[] = {
        cmocka_unit_test(test_older_than_12_refused),
    };
    return cmocka_run_group_tests(old, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reports_the_version),
      cmocka_unit_test(test_lookups_at_the_variants_called),
      cmocka_unit_test(test_lacks_lists_what_is_missing),
      cmocka_unit_test(test_runtime_buffer_transfer_capture),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
