/*
 * Host lane: struct_size rules of input and output structs (R-ABI-5) and
 * "out-parameters are written only on success". Runs with or without a
 * driver: where the struct check passes, the outcome must be exactly what
 * the same call with the default options gives.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "host_support.h"
#include "t4acuda.h"

#define SENTINEL_ID UINT64_C(0xA5A5A5A5A5A5A5A5)

static void expect_last_error(t4a_status status, const char *entry,
                              const char *part) {
  t4a_error_info info = T4A_ERROR_INFO_INIT;
  char message[1024];
  size_t needed = 0;
  assert_int_equal(t4a_last_error(&info), T4A_SUCCESS);
  assert_int_equal(info.status, status);
  assert_string_equal(info.entry_point, entry);
  assert_int_equal(t4a_last_error_message(message, sizeof message, &needed),
                   T4A_SUCCESS);
  assert_true(needed <= sizeof message);
  if (!t4a_test_contains(message, part))
    fail_msg("message \"%s\" does not contain \"%s\"", message, part);
}

/* The outcome of creating a runtime with the defaults on this machine:
 * SUCCESS with a GPU, NO_DRIVER without a driver, NO_DEVICE with a driver
 * that sees no device. Every accepted struct must give the same. */
static t4a_status default_outcome(void) {
  t4a_runtime rt = {SENTINEL_ID};
  t4a_status s = t4a_runtime_create(NULL, &rt);
  if (s == T4A_SUCCESS) {
    assert_int_not_equal(rt.id, SENTINEL_ID);
    assert_int_equal(t4a_runtime_destroy(rt), T4A_SUCCESS);
  } else {
    if (s != T4A_ERROR_NO_DRIVER && s != T4A_ERROR_NO_DEVICE)
      fail_msg("t4a_runtime_create(NULL) gave %s", t4a_status_name(s));
    assert_int_equal(rt.id, SENTINEL_ID);
  }
  return s;
}

/* Creates with `options`, expects `expected`, destroys on success. */
static void create_expecting(const t4a_runtime_options *options,
                             t4a_status expected) {
  t4a_runtime rt = {SENTINEL_ID};
  t4a_status s = t4a_runtime_create(options, &rt);
  if (s != expected)
    fail_msg("t4a_runtime_create gave %s, expected %s", t4a_status_name(s),
             t4a_status_name(expected));
  if (s == T4A_SUCCESS) {
    assert_int_not_equal(rt.id, SENTINEL_ID);
    assert_int_equal(t4a_runtime_destroy(rt), T4A_SUCCESS);
  } else {
    assert_int_equal(rt.id, SENTINEL_ID);
  }
}

static void test_input_size_too_small(void **state) {
  uint32_t size;
  (void)state;
  for (size = 0; size < sizeof(uint32_t); ++size) {
    t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
    t4a_runtime rt = {SENTINEL_ID};
    o.struct_size = size;
    assert_int_equal(t4a_runtime_create(&o, &rt), T4A_ERROR_INVALID_ARGUMENT);
    assert_int_equal(rt.id, SENTINEL_ID);
    expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_runtime_create",
                      "options->struct_size");
  }
}

static void test_null_out_param(void **state) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  (void)state;
  assert_int_equal(t4a_runtime_create(&o, NULL), T4A_ERROR_INVALID_ARGUMENT);
  expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_runtime_create",
                    "runtime");
}

/* Options embedded at the start of a bigger, zeroed buffer. */
typedef struct big_options {
  t4a_runtime_options options;
  unsigned char tail[24];
} big_options;

static void test_input_larger_nonzero_tail(void **state) {
  size_t k;
  (void)state;
  for (k = 0; k < sizeof(((big_options *)0)->tail); ++k) {
    big_options b;
    t4a_runtime rt = {SENTINEL_ID};
    t4a_runtime_options defaults = T4A_RUNTIME_OPTIONS_INIT;
    memset(&b, 0, sizeof b);
    b.options = defaults;
    b.options.struct_size = (uint32_t)sizeof b;
    b.tail[k] = (unsigned char)(1u << (k % 8));
    assert_int_equal(t4a_runtime_create(&b.options, &rt),
                     T4A_ERROR_VERSION_MISMATCH);
    assert_int_equal(rt.id, SENTINEL_ID);
    expect_last_error(T4A_ERROR_VERSION_MISMATCH, "t4a_runtime_create",
                      "options->struct_size");
  }
}

/* A non-zero byte beyond the caller's struct_size is not part of the
 * struct and must be ignored. */
static void test_input_bytes_beyond_size_ignored(void **state) {
  big_options b;
  t4a_runtime_options defaults = T4A_RUNTIME_OPTIONS_INIT;
  t4a_status expected;
  (void)state;
  expected = default_outcome();
  memset(&b, 0, sizeof b);
  b.options = defaults;
  b.options.struct_size = (uint32_t)(sizeof b.options + 8);
  b.tail[8] = 0xFF;
  create_expecting(&b.options, expected);
}

static void test_input_larger_zero_tail(void **state) {
  big_options b;
  t4a_runtime_options defaults = T4A_RUNTIME_OPTIONS_INIT;
  t4a_status expected;
  (void)state;
  expected = default_outcome();
  memset(&b, 0, sizeof b);
  b.options = defaults;
  b.options.struct_size = (uint32_t)sizeof b;
  create_expecting(&b.options, expected);
}

/* An older, smaller struct is accepted; missing fields take defaults. */
static void test_input_older_sizes(void **state) {
  static const uint32_t sizes[] = {
      sizeof(uint32_t), offsetof(t4a_runtime_options, pool_release_threshold),
      sizeof(t4a_runtime_options)};
  t4a_status expected;
  size_t k;
  (void)state;
  expected = default_outcome();
  for (k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
    o.struct_size = sizes[k];
    create_expecting(&o, expected);
  }
}

/* Output structs: a struct_size below 4 is rejected before anything else
 * (even without a driver) and the struct is left untouched. */
static void test_output_size_too_small(void **state) {
  uint32_t size;
  (void)state;
  for (size = 0; size < sizeof(uint32_t); ++size) {
    t4a_device_info info, copy;
    memset(&info, 0x5A, sizeof info);
    info.struct_size = size;
    memcpy(&copy, &info, sizeof info);
    assert_int_equal(t4a_device_info_get(0, &info), T4A_ERROR_INVALID_ARGUMENT);
    assert_memory_equal(&info, &copy, sizeof info);
    expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_device_info_get",
                      "info->struct_size");
  }
  assert_int_equal(t4a_device_info_get(0, NULL), T4A_ERROR_INVALID_ARGUMENT);
  expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_device_info_get", "info");
}

/* Out-parameters are written only on success: pre-filled sentinels stay
 * whenever a call fails. */
static void test_out_params_untouched_on_error(void **state) {
  int32_t v = 0x5A5A5A5A, w = 0x5A5A5A5A;
  (void)state;
  assert_int_equal(t4a_nvrtc_version(NULL, &w), T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(w, 0x5A5A5A5A);
  expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_nvrtc_version", "major");
  assert_int_equal(t4a_nvrtc_version(&v, NULL), T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(v, 0x5A5A5A5A);
  expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_nvrtc_version", "minor");
  {
    t4a_runtime_info info;
    t4a_runtime_stats stats;
    t4a_runtime forged = {UINT64_C(0x0100000100000000)};
    memset(&info, 0x5A, sizeof info);
    info.struct_size = sizeof info;
    memset(&stats, 0x5A, sizeof stats);
    stats.struct_size = sizeof stats;
    {
      t4a_runtime_info info0;
      t4a_runtime_stats stats0;
      memcpy(&info0, &info, sizeof info);
      memcpy(&stats0, &stats, sizeof stats);
      assert_int_equal(t4a_runtime_info_get(forged, &info),
                       T4A_ERROR_INVALID_HANDLE);
      assert_memory_equal(&info, &info0, sizeof info);
      assert_int_equal(t4a_runtime_stats_get(forged, &stats),
                       T4A_ERROR_INVALID_HANDLE);
      assert_memory_equal(&stats, &stats0, sizeof stats);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_input_size_too_small),
      cmocka_unit_test(test_null_out_param),
      cmocka_unit_test(test_input_larger_nonzero_tail),
      cmocka_unit_test(test_input_bytes_beyond_size_ignored),
      cmocka_unit_test(test_input_larger_zero_tail),
      cmocka_unit_test(test_input_older_sizes),
      cmocka_unit_test(test_output_size_too_small),
      cmocka_unit_test(test_out_params_untouched_on_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
