/*
 * Host lane: struct_size rules of input and output structs and
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

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A smaller struct_size must be an older version's size: one that ends
 * inside a field (half of a pointer) is refused before anything reads the
 * field. Before the rule, t4a_compile read the half pointer and crashed
 * (found by the compile-request fuzz target). */
static void test_input_size_inside_field(void **state) {
  (void)state;
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  t4a_artifact art = {SENTINEL_ID};
  r.source = "extern \"C\" __global__ void k() {}";
  r.cc_major = 9;
  r.struct_size = (uint32_t)(offsetof(t4a_compile_request, source) + 4);
  assert_int_equal(t4a_compile(&r, &art), T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(art.id, SENTINEL_ID);
  expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_compile",
                    "ends inside a field");

  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime rt = {SENTINEL_ID};
  o.struct_size = (uint32_t)(offsetof(t4a_runtime_options, device_ordinal) + 2);
  assert_int_equal(t4a_runtime_create(&o, &rt), T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(rt.id, SENTINEL_ID);
  expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_runtime_create",
                    "options->struct_size");
  o.struct_size =
      (uint32_t)(offsetof(t4a_runtime_options, pool_release_threshold) + 4);
  assert_int_equal(t4a_runtime_create(&o, &rt), T4A_ERROR_INVALID_ARGUMENT);
  expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_runtime_create",
                    "ends inside a field");
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
      sizeof(uint32_t),
      offsetof(t4a_runtime_options, pool_release_threshold),
      offsetof(t4a_runtime_options, staging_bytes), /* 0.1.0 foundation */
      offsetof(t4a_runtime_options, staging_chunk_bytes),
      offsetof(t4a_runtime_options, staging_threads),
      offsetof(t4a_runtime_options, reserved0),
      offsetof(t4a_runtime_options, module_cache_entries),
      offsetof(t4a_runtime_options, peer_access), /* before issue 10 */
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

/* A foundation-era caller (16-byte options, before the staging fields)
 * whose struct is exactly that big: the library reads nothing beyond it
 * (AddressSanitizer would report the over-read). */
typedef struct foundation_options {
  uint32_t struct_size;
  int32_t device_ordinal;
  uint64_t pool_release_threshold;
} foundation_options;

static void test_input_foundation_struct_exact_allocation(void **state) {
  foundation_options *old;
  t4a_status expected;
  (void)state;
  assert_int_equal(sizeof(foundation_options),
                   offsetof(t4a_runtime_options, staging_bytes));
  expected = default_outcome();
  old = malloc(sizeof *old);
  assert_non_null(old);
  old->struct_size = (uint32_t)sizeof *old;
  old->device_ordinal = 0;
  old->pool_release_threshold = T4A_POOL_KEEP_ALL;
  create_expecting((const t4a_runtime_options *)(const void *)old, expected);
  free(old);
}

/* Fields beyond the caller's struct_size are not part of its struct: even
 * invalid values there are ignored and the defaults used. */
static void test_input_fields_beyond_size_ignored(void **state) {
  t4a_status expected;
  (void)state;
  expected = default_outcome();
  {
    t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
    o.struct_size = offsetof(t4a_runtime_options, staging_bytes);
    o.staging_bytes = 0;
    o.staging_chunk_bytes = 1;
    o.staging_threads = -1;
    create_expecting(&o, expected);
  }
  {
    t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
    o.struct_size = offsetof(t4a_runtime_options, staging_chunk_bytes);
    o.staging_chunk_bytes = 1;
    o.staging_threads = 1000;
    create_expecting(&o, expected);
  }
  {
    t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
    o.struct_size = offsetof(t4a_runtime_options, staging_threads);
    o.staging_threads = -5;
    create_expecting(&o, expected);
  }
  {
    /* A caller from before peer_access: garbage beyond its size. */
    t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
    o.struct_size = offsetof(t4a_runtime_options, peer_access);
    o.peer_access = 7;
    o.reserved2 = 9;
    create_expecting(&o, expected);
  }
  /* ...while the same value inside the struct is rejected. */
  {
    t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
    o.struct_size = offsetof(t4a_runtime_options, staging_threads);
    o.staging_chunk_bytes = 1;
    create_expecting(&o, T4A_ERROR_INVALID_ARGUMENT);
    expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_runtime_create",
                      "options->staging_chunk_bytes is 1;");
  }
}

/* Staging options are validated before the driver is needed: the same
 * INVALID_ARGUMENT, naming the field and its value, with or without a
 * driver; valid boundary values give exactly the default outcome. */
typedef struct staging_case {
  uint64_t staging_bytes;
  uint64_t chunk_bytes;
  int32_t threads;
  const char *part; /* NULL: valid, expect the default outcome */
  const char *part2;
} staging_case;

static void test_staging_options_validated_before_driver(void **state) {
  const uint64_t budget = T4A_DEFAULT_STAGING_BYTES;
  const uint64_t chunk = T4A_DEFAULT_STAGING_CHUNK_BYTES;
  const staging_case cases[] = {
      /* chunk below 4 KiB */
      {budget, 4095, 0, "options->staging_chunk_bytes is 4095;", "4096"},
      {budget, 1, 8, "options->staging_chunk_bytes is 1;", NULL},
      /* chunk above the budget */
      {budget, budget + 1, 0, "options->staging_chunk_bytes is 67108865;",
       "options->staging_bytes (67108864)"},
      {budget, UINT64_MAX, 0,
       "options->staging_chunk_bytes is 18446744073709551615;", NULL},
      {4095, 4096, 0, "options->staging_chunk_bytes is 4096;",
       "options->staging_bytes (4095)"},
      {chunk - 1, chunk, 0, "options->staging_chunk_bytes is 8388608;",
       "(8388607)"},
      /* threads outside 0..64 */
      {budget, chunk, -1, "options->staging_threads is -1;", "1..64"},
      {budget, chunk, 65, "options->staging_threads is 65;", NULL},
      {budget, chunk, INT32_MIN, "options->staging_threads is -2147483648;",
       NULL},
      {budget, chunk, INT32_MAX, "options->staging_threads is 2147483647;",
       NULL},
      /* zero means the default: the budget, and a chunk of at most the
       * default within the budget */
      {0, 0, 0, NULL, NULL},
      {budget, 0, 0, NULL, NULL},
      {0, chunk, 0, NULL, NULL},
      {8192, 0, 0, NULL, NULL},
      {0, budget + 1, 0, "options->staging_chunk_bytes is 67108865;",
       "options->staging_bytes (67108864)"},
      /* valid boundaries */
      {4096, 4096, 0, NULL, NULL},
      {budget, budget, 0, NULL, NULL},
      {budget, 4096, 1, NULL, NULL},
      {budget, chunk, 64, NULL, NULL},
      {budget, chunk, T4A_STAGING_THREADS_AUTO, NULL, NULL},
  };
  t4a_status expected;
  size_t k;
  (void)state;
  expected = default_outcome();
  for (k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
    t4a_runtime rt = {SENTINEL_ID};
    t4a_status s, want;
    o.staging_bytes = cases[k].staging_bytes;
    o.staging_chunk_bytes = cases[k].chunk_bytes;
    o.staging_threads = cases[k].threads;
    want = cases[k].part == NULL ? expected : T4A_ERROR_INVALID_ARGUMENT;
    s = t4a_runtime_create(&o, &rt);
    if (s != want)
      fail_msg("case %zu (staging_bytes %" PRIu64 ", chunk %" PRIu64
               ", threads %" PRId32 ") gave %s, expected %s",
               k, o.staging_bytes, o.staging_chunk_bytes, o.staging_threads,
               t4a_status_name(s), t4a_status_name(want));
    if (s == T4A_SUCCESS) {
      assert_int_not_equal(rt.id, SENTINEL_ID);
      assert_int_equal(t4a_runtime_destroy(rt), T4A_SUCCESS);
      continue;
    }
    assert_int_equal(rt.id, SENTINEL_ID);
    if (cases[k].part == NULL) continue;
    expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_runtime_create",
                      cases[k].part);
    if (cases[k].part2 != NULL)
      expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_runtime_create",
                        cases[k].part2);
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
  {
    t4a_buffer_info info, info0;
    t4a_buffer forged = {UINT64_C(0x0200000100000000)};
    memset(&info, 0x5A, sizeof info);
    info.struct_size = sizeof info;
    memcpy(&info0, &info, sizeof info);
    assert_int_equal(t4a_buffer_info_get(forged, &info),
                     T4A_ERROR_INVALID_HANDLE);
    assert_memory_equal(&info, &info0, sizeof info);
    expect_last_error(T4A_ERROR_INVALID_HANDLE, "t4a_buffer_info_get",
                      "buffer (id 0x0200000100000000)");
  }
}

/* t4a_process_stats_get: struct_size below 4 or a NULL struct is
 * INVALID_ARGUMENT with nothing written; any other size is filled up to
 * min(size, the library's size), byte for byte, and nothing beyond. */
static void test_process_stats_sizes(void **state) {
  typedef struct big_stats {
    t4a_process_stats stats;
    unsigned char tail[16];
  } big_stats;
  t4a_process_stats full;
  unsigned char reference[sizeof(big_stats)];
  uint32_t size;
  (void)state;
  assert_int_equal(t4a_process_stats_get(NULL), T4A_ERROR_INVALID_ARGUMENT);
  expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_process_stats_get",
                    "stats is NULL");
  for (size = 0; size < sizeof(uint32_t); ++size) {
    big_stats b, copy;
    memset(&b, 0x5A, sizeof b);
    b.stats.struct_size = size;
    memcpy(&copy, &b, sizeof b);
    assert_int_equal(t4a_process_stats_get(&b.stats),
                     T4A_ERROR_INVALID_ARGUMENT);
    assert_memory_equal(&b, &copy, sizeof b);
    expect_last_error(T4A_ERROR_INVALID_ARGUMENT, "t4a_process_stats_get",
                      "stats->struct_size");
  }
  memset(&full, 0x5A, sizeof full);
  full.struct_size = sizeof full;
  assert_int_equal(t4a_process_stats_get(&full), T4A_SUCCESS);
  assert_int_equal(full.struct_size, sizeof full);
  assert_int_equal(full.reserved0, 0);
  /* Nothing here creates anything that lasts: no runtime lives on and,
   * with or without a GPU, nothing was leaked. */
  assert_int_equal(full.runtimes_live, 0);
  assert_int_equal(full.runtimes_leaked, 0);
  assert_int_equal(full.leaked_device_allocations, 0);
  assert_int_equal(full.leaked_device_bytes, 0);
  assert_int_equal(full.leaked_staging_bytes, 0);
  assert_int_equal(full.leaked_host_buffers, 0);
  for (size = sizeof(uint32_t); size <= sizeof(big_stats); ++size) {
    big_stats b;
    size_t covered = size < sizeof full ? size : sizeof full;
    memset(&b, 0x5A, sizeof b);
    b.stats.struct_size = size;
    memcpy(reference, &b, sizeof b);
    memcpy(reference + sizeof(uint32_t),
           (const unsigned char *)&full + sizeof(uint32_t),
           covered - sizeof(uint32_t));
    assert_int_equal(t4a_process_stats_get(&b.stats), T4A_SUCCESS);
    assert_int_equal(b.stats.struct_size, size); /* never rewritten */
    if (memcmp(&b, reference, sizeof b) != 0)
      fail_msg("struct_size %u: bytes other than [4, %zu) changed, or "
               "those not filled",
               size, covered);
  }
}

/* An older caller's smaller output struct, allocated at exactly its size:
 * nothing is written past it (AddressSanitizer would report it). */
static void test_process_stats_exact_allocation(void **state) {
  const size_t size = offsetof(t4a_process_stats, leaked_device_bytes);
  unsigned char *p = malloc(size);
  uint32_t struct_size = (uint32_t)size;
  uint64_t runtimes_live = SENTINEL_ID;
  (void)state;
  assert_non_null(p);
  memset(p, 0x5A, size);
  memcpy(p, &struct_size, sizeof struct_size);
  assert_int_equal(t4a_process_stats_get((t4a_process_stats *)(void *)p),
                   T4A_SUCCESS);
  memcpy(&struct_size, p, sizeof struct_size);
  assert_int_equal(struct_size, size);
  memcpy(&runtimes_live, p + offsetof(t4a_process_stats, runtimes_live),
         sizeof runtimes_live);
  assert_int_equal(runtimes_live, 0);
  free(p);
}

/* t4a_runtime_stats grows only at its end (abi/CHANGES.md): the epoch
 * gauges of issue 8 (item 1) follow completions_recorded, and the
 * initializer sets struct_size and zeroes every field. */
static void test_runtime_stats_layout(void **state) {
  t4a_runtime_stats init = T4A_RUNTIME_STATS_INIT;
  t4a_runtime_stats zero;
  (void)state;
  assert_int_equal(offsetof(t4a_runtime_stats, completions_recorded), 208);
  assert_int_equal(offsetof(t4a_runtime_stats, open_epoch_items), 216);
  assert_int_equal(offsetof(t4a_runtime_stats, sealed_epochs), 224);
  /* Copies between runtimes (issue 10), per path. */
  assert_int_equal(offsetof(t4a_runtime_stats, same_device_copies), 232);
  assert_int_equal(offsetof(t4a_runtime_stats, same_device_bytes), 240);
  assert_int_equal(offsetof(t4a_runtime_stats, peer_copies), 248);
  assert_int_equal(offsetof(t4a_runtime_stats, peer_bytes), 256);
  assert_int_equal(offsetof(t4a_runtime_stats, staged_copies), 264);
  assert_int_equal(offsetof(t4a_runtime_stats, staged_bytes), 272);
  /* Cooperative launches and grid-barrier audits (issue 11). */
  assert_int_equal(offsetof(t4a_runtime_stats, cooperative_launches), 280);
  assert_int_equal(offsetof(t4a_runtime_stats, barrier_audit_failures), 288);
  assert_int_equal(sizeof(t4a_runtime_stats), 296);
  memset(&zero, 0, sizeof zero);
  zero.struct_size = sizeof zero;
  assert_memory_equal(&init, &zero, sizeof zero);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_input_size_too_small),
      cmocka_unit_test(test_input_size_inside_field),
      cmocka_unit_test(test_null_out_param),
      cmocka_unit_test(test_input_larger_nonzero_tail),
      cmocka_unit_test(test_input_bytes_beyond_size_ignored),
      cmocka_unit_test(test_input_larger_zero_tail),
      cmocka_unit_test(test_input_older_sizes),
      cmocka_unit_test(test_input_foundation_struct_exact_allocation),
      cmocka_unit_test(test_input_fields_beyond_size_ignored),
      cmocka_unit_test(test_staging_options_validated_before_driver),
      cmocka_unit_test(test_output_size_too_small),
      cmocka_unit_test(test_out_params_untouched_on_error),
      cmocka_unit_test(test_process_stats_sizes),
      cmocka_unit_test(test_process_stats_exact_allocation),
      cmocka_unit_test(test_runtime_stats_layout),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
