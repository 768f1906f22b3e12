/*
 * Host lane: NVRTC loading, which needs neither a driver nor a GPU. Run by
 * ctest in two modes:
 *   default  NVRTC is found (12 or newer);
 *   missing  T4A_NVRTC_PATH names a file that does not exist: NO_COMPILER
 *            naming that path;
 *   bad_log_level  T4A_LOG names no level: warned once on stderr, naming
 *            the accepted values, and the level stays as set (issue 8).
 * Both run with T4A_CUDA_DRIVER_PATH pointing nowhere, so they also show
 * that NVRTC does not depend on the driver.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_support.h"
#include "t4acuda.h"

#define MISSING_PATH "/nonexistent/libnvrtc.so"
#define SENTINEL32 INT32_C(0x5A5A5A5A)

static void test_null_arguments(void **state) {
  int32_t v = SENTINEL32;
  t4a_error_info info = T4A_ERROR_INFO_INIT;
  char message[1024];
  (void)state;
  assert_int_equal(t4a_nvrtc_version(NULL, &v), T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(v, SENTINEL32);
  assert_int_equal(t4a_last_error(&info), T4A_SUCCESS);
  assert_string_equal(info.entry_point, "t4a_nvrtc_version");
  assert_int_equal(t4a_last_error_message(message, sizeof message, NULL),
                   T4A_SUCCESS);
  assert_true(t4a_test_contains(message, "major"));
  assert_int_equal(t4a_nvrtc_version(&v, NULL), T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(v, SENTINEL32);
}

static void test_found(void **state) {
  int32_t major = SENTINEL32, minor = SENTINEL32, major2 = 0, minor2 = 0;
  int32_t driver = SENTINEL32;
  t4a_status s;
  (void)state;
  t4a_last_error_clear();
  s = t4a_nvrtc_version(&major, &minor);
  if (s != T4A_SUCCESS) {
    char message[2048];
    t4a_last_error_message(message, sizeof message, NULL);
    fail_msg("t4a_nvrtc_version gave %s: %s", t4a_status_name(s), message);
  }
  assert_true(major >= 12);
  assert_true(minor >= 0 && minor < 100);
  /* Loaded once; the same answer every time. */
  assert_int_equal(t4a_nvrtc_version(&major2, &minor2), T4A_SUCCESS);
  assert_int_equal(major2, major);
  assert_int_equal(minor2, minor);
  /* ...while there is no driver at all. The message names every path
   * tried and says what to do (issue 8). */
  assert_int_equal(t4a_driver_version(&driver), T4A_ERROR_NO_DRIVER);
  assert_int_equal(driver, SENTINEL32);
  {
    char message[2048];
    assert_int_equal(t4a_last_error_message(message, sizeof message, NULL),
                     T4A_SUCCESS);
    if (!t4a_test_contains(message, "/nonexistent/libcuda.so.1") ||
        !t4a_test_contains(message, "Install the NVIDIA driver") ||
        !t4a_test_contains(message, "set T4A_CUDA_DRIVER_PATH"))
      fail_msg("no-driver message \"%s\" does not say what to do", message);
  }
  print_message("NVRTC %d.%d\n", major, minor);
}

static void test_missing(void **state) {
  int32_t major = SENTINEL32, minor = SENTINEL32;
  t4a_error_info info = T4A_ERROR_INFO_INIT;
  char message[2048], again[2048];
  int round;
  (void)state;
  for (round = 0; round < 2; ++round) { /* the failure is remembered */
    t4a_last_error_clear();
    assert_int_equal(t4a_nvrtc_version(&major, &minor), T4A_ERROR_NO_COMPILER);
    assert_int_equal(major, SENTINEL32);
    assert_int_equal(minor, SENTINEL32);
    assert_int_equal(t4a_last_error(&info), T4A_SUCCESS);
    assert_int_equal(info.status, T4A_ERROR_NO_COMPILER);
    assert_string_equal(info.entry_point, "t4a_nvrtc_version");
    assert_int_equal(info.driver_result, 0);
    assert_int_equal(t4a_last_error_message(round == 0 ? message : again,
                                            sizeof message, NULL),
                     T4A_SUCCESS);
  }
  if (!t4a_test_contains(message, MISSING_PATH))
    fail_msg("message \"%s\" does not name " MISSING_PATH, message);
  assert_true(t4a_test_contains(message, "T4A_NVRTC_PATH"));
  /* It says what to do (issue 8). */
  if (!t4a_test_contains(message, "Install the CUDA toolkit's NVRTC"))
    fail_msg("message \"%s\" does not say what to do", message);
  assert_string_equal(again, message);
}

/* ---- T4A_LOG with an unknown value (issue 8) ---------------------------- */

static int g_info_seen;

static void count_info(void *user, int32_t level, const char *message) {
  (void)user;
  (void)message;
  if (level == T4A_LOG_INFO) ++g_info_seen;
}

static void test_bad_log_level(void **state) {
  char path[] = "/tmp/t4a-test-nvrtc-stderr-XXXXXX";
  char text[4096];
  const char *p;
  int fd = mkstemp(path), saved = dup(2), count = 0;
  size_t n;
  FILE *f;
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  t4a_artifact a = {0};
  (void)state;
  assert_true(fd >= 0 && saved >= 0);
  assert_int_equal(unlink(path), 0);
  fflush(stderr);
  assert_true(dup2(fd, 2) >= 0);
  /* Read at the first use of logging and at every callback change. */
  assert_int_equal(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN), T4A_SUCCESS);
  assert_int_equal(t4a_set_log_callback(count_info, NULL, T4A_LOG_INFO),
                   T4A_SUCCESS);
  fflush(stderr);
  assert_true(dup2(saved, 2) >= 0);
  close(saved);
  f = fdopen(fd, "r");
  assert_non_null(f);
  rewind(f);
  n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  for (p = text; (p = strstr(p, "T4A_LOG='verbose'")) != NULL; ++p) ++count;
  if (count != 1 || !t4a_test_contains(text, "off, error, warn, info, debug"))
    fail_msg("expected one warning naming the accepted levels; stderr: %s",
             text);
  /* The level stays the one set: an INFO log reaches the callback. */
  r.source = "extern \"C\" __global__ void k() {}";
  r.cc_major = 9;
  r.flags = T4A_COMPILE_NO_DISK_CACHE | T4A_COMPILE_NO_MEMORY_CACHE;
  assert_int_equal(t4a_compile(&r, &a), T4A_SUCCESS);
  assert_int_equal(t4a_artifact_release(a), T4A_SUCCESS);
  assert_int_equal(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN), T4A_SUCCESS);
  assert_true(g_info_seen >= 1);
}

int main(int argc, char **argv) {
  const struct CMUnitTest found[] = {
      cmocka_unit_test(test_null_arguments),
      cmocka_unit_test(test_found),
  };
  const struct CMUnitTest missing[] = {
      cmocka_unit_test(test_null_arguments),
      cmocka_unit_test(test_missing),
  };
  const struct CMUnitTest bad_log_level[] = {
      cmocka_unit_test(test_bad_log_level),
  };
  const char *nvrtc = getenv("T4A_NVRTC_PATH");
  setenv("T4A_CUDA_DRIVER_PATH", "/nonexistent/libcuda.so.1", 1);
  if (argc == 2 && strcmp(argv[1], "default") == 0)
    return cmocka_run_group_tests_name("nvrtc_default", found, NULL, NULL);
  if (argc == 2 && strcmp(argv[1], "missing") == 0) {
    if (nvrtc == NULL || strcmp(nvrtc, MISSING_PATH) != 0) {
      fprintf(stderr, "mode 'missing' needs T4A_NVRTC_PATH=" MISSING_PATH "\n");
      return 1;
    }
    return cmocka_run_group_tests_name("nvrtc_missing", missing, NULL, NULL);
  }
  if (argc == 2 && strcmp(argv[1], "bad_log_level") == 0) {
    setenv("T4A_LOG", "verbose", 1);
    return cmocka_run_group_tests_name("nvrtc_bad_log_level", bad_log_level,
                                       NULL, NULL);
  }
  fprintf(stderr, "usage: %s default|missing|bad_log_level\n", argv[0]);
  return 1;
}
