/*
 * Host lane: the context-free functions. Versions, status names, the
 * per-thread last error (query-then-copy, truncation, struct_size of the
 * output struct) and the log callback. Needs no driver.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cuda.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_support.h"
#include "t4acuda.h"

/* ---- helpers ------------------------------------------------------------ */

/* Provokes a known failure: t4a_device_count(NULL) is INVALID_ARGUMENT
 * before any driver is touched. */
static void provoke_failure(void) {
  assert_int_equal(t4a_device_count(NULL), T4A_ERROR_INVALID_ARGUMENT);
}

/* The calling thread's last error message, copied into `buf`. */
static void read_message(char *buf, size_t capacity) {
  size_t needed = 0;
  assert_int_equal(t4a_last_error_message(buf, capacity, &needed), T4A_SUCCESS);
  assert_true(needed <= capacity);
  assert_int_equal(strlen(buf) + 1, needed);
}

static t4a_error_info read_info(void) {
  t4a_error_info info = T4A_ERROR_INFO_INIT;
  assert_int_equal(t4a_last_error(&info), T4A_SUCCESS);
  assert_int_equal(info.struct_size, sizeof(t4a_error_info));
  assert_non_null(info.entry_point);
  return info;
}

/* ---- versions ----------------------------------------------------------- */

static void test_version(void **state) {
  char expected[32];
  (void)state;
  assert_int_equal(t4a_version(), T4A_VERSION_NUMBER);
  assert_int_equal(t4a_version(), T4A_VERSION_MAJOR * 10000 +
                                      T4A_VERSION_MINOR * 100 +
                                      T4A_VERSION_PATCH);
  assert_string_equal(t4a_version_string(), T4A_VERSION_STRING);
  snprintf(expected, sizeof expected, "%d.%d.%d", T4A_VERSION_MAJOR,
           T4A_VERSION_MINOR, T4A_VERSION_PATCH);
  assert_string_equal(t4a_version_string(), expected);
  assert_int_equal(t4a_built_cuda_version(), CUDA_VERSION);
}

/* ---- status names ------------------------------------------------------- */

typedef struct status_row {
  t4a_status value;
  const char *name;
  const char *text;
} status_row;

#define STATUS_ROW_(name, value, text) {value, #name, text},
static const status_row k_statuses[] = {T4A_STATUS_MAP(STATUS_ROW_)};
#undef STATUS_ROW_
#define STATUS_COUNT (sizeof k_statuses / sizeof k_statuses[0])

static void test_status_names(void **state) {
  size_t i, j;
  (void)state;
  assert_true(STATUS_COUNT >= 19);
  for (i = 0; i < STATUS_COUNT; ++i) {
    const char *name = t4a_status_name(k_statuses[i].value);
    const char *text = t4a_status_description(k_statuses[i].value);
    assert_non_null(name);
    assert_string_equal(name, k_statuses[i].name);
    assert_non_null(text);
    assert_true(text[0] != '\0');
    assert_string_equal(text, k_statuses[i].text);
    for (j = 0; j < i; ++j) {
      assert_int_not_equal(k_statuses[i].value, k_statuses[j].value);
      assert_string_not_equal(name, t4a_status_name(k_statuses[j].value));
    }
  }
}

/* The values are ABI: pin the ones released so far. */
static void test_status_values_pinned(void **state) {
  static const char *const pinned[] = {
      "T4A_SUCCESS",
      "T4A_NOT_READY",
      "T4A_ERROR_INVALID_ARGUMENT",
      "T4A_ERROR_INVALID_HANDLE",
      "T4A_ERROR_WRONG_RUNTIME",
      "T4A_ERROR_NO_DRIVER",
      "T4A_ERROR_NO_DEVICE",
      "T4A_ERROR_NO_COMPILER",
      "T4A_ERROR_OUT_OF_MEMORY",
      "T4A_ERROR_OUT_OF_HOST_MEMORY",
      "T4A_ERROR_DRIVER",
      "T4A_ERROR_COMPILE",
      "T4A_ERROR_UNKNOWN_ENTRY_POINT",
      "T4A_ERROR_DEVICE_FAULT",
      "T4A_ERROR_REENTRANT",
      "T4A_ERROR_UNSUPPORTED",
      "T4A_ERROR_VERSION_MISMATCH",
      "T4A_ERROR_ABANDONED",
      "T4A_ERROR_INTERNAL",
  };
  t4a_status v;
  (void)state;
  for (v = 0; v < (t4a_status)(sizeof pinned / sizeof pinned[0]); ++v)
    assert_string_equal(t4a_status_name(v), pinned[v]);
  assert_int_equal(T4A_SUCCESS, 0);
  assert_int_equal(T4A_ERROR_INVALID_HANDLE, 3);
  assert_int_equal(T4A_ERROR_INTERNAL, 18);
}

static void test_status_unknown(void **state) {
  t4a_status max = 0;
  size_t i, k;
  (void)state;
  for (i = 0; i < STATUS_COUNT; ++i)
    if (k_statuses[i].value > max) max = k_statuses[i].value;
  {
    const t4a_status unknown[] = {-1, max + 1, 1000, INT32_MIN, INT32_MAX};
    for (k = 0; k < sizeof unknown / sizeof unknown[0]; ++k) {
      assert_string_equal(t4a_status_name(unknown[k]), "T4A_STATUS_UNKNOWN");
      assert_string_equal(t4a_status_description(unknown[k]), "unknown status");
    }
  }
}

/* ---- last error --------------------------------------------------------- */

static void test_last_error_records_failure(void **state) {
  char message[1024];
  t4a_error_info info;
  (void)state;
  t4a_last_error_clear();
  provoke_failure();
  info = read_info();
  assert_int_equal(info.status, T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(info.driver_result, 0);
  assert_int_equal(info.compiler_result, 0);
  assert_string_equal(info.entry_point, "t4a_device_count");
  read_message(message, sizeof message);
  assert_true(t4a_test_contains(message, "count"));
  assert_true(t4a_test_contains(message, "NULL"));
  /* The readers do not change it; a successful call does not clear it. */
  assert_int_equal(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN), T4A_SUCCESS);
  info = read_info();
  assert_int_equal(info.status, T4A_ERROR_INVALID_ARGUMENT);
  assert_string_equal(info.entry_point, "t4a_device_count");
  /* Another failure replaces it. */
  assert_int_equal(t4a_driver_version(NULL), T4A_ERROR_INVALID_ARGUMENT);
  info = read_info();
  assert_string_equal(info.entry_point, "t4a_driver_version");
  read_message(message, sizeof message);
  assert_true(t4a_test_contains(message, "version"));
  assert_false(t4a_test_contains(message, "count"));
  assert_int_equal(t4a_last_error(NULL), T4A_ERROR_INVALID_ARGUMENT);
}

static void test_last_error_query_then_copy(void **state) {
  size_t needed = 0, needed2 = 0;
  char *buf;
  (void)state;
  provoke_failure();
  assert_int_equal(t4a_last_error_message(NULL, 0, &needed), T4A_SUCCESS);
  assert_true(needed > 1);
  buf = malloc(needed + 8);
  assert_non_null(buf);
  memset(buf, 'X', needed + 8);
  assert_int_equal(t4a_last_error_message(buf, needed, &needed2), T4A_SUCCESS);
  assert_int_equal(needed2, needed);
  assert_int_equal(strlen(buf), needed - 1);
  assert_true(t4a_test_contains(buf, "count"));
  for (size_t k = needed; k < needed + 8; ++k) assert_int_equal(buf[k], 'X');
  /* `needed` is optional. */
  memset(buf, 'X', needed + 8);
  assert_int_equal(t4a_last_error_message(buf, needed + 8, NULL), T4A_SUCCESS);
  assert_int_equal(strlen(buf), needed - 1);
  free(buf);
  /* capacity 0 writes nothing, even with a buffer. */
  {
    char one = 'Y';
    assert_int_equal(t4a_last_error_message(&one, 0, &needed2), T4A_SUCCESS);
    assert_int_equal(one, 'Y');
    assert_int_equal(needed2, needed);
  }
}

static void test_last_error_truncation(void **state) {
  char full[1024];
  char small[16];
  size_t needed = 0, cap;
  (void)state;
  provoke_failure();
  read_message(full, sizeof full);
  assert_true(strlen(full) > 8);
  for (cap = 1; cap <= 8; ++cap) {
    memset(small, 'X', sizeof small);
    needed = 0;
    assert_int_equal(t4a_last_error_message(small, cap, &needed), T4A_SUCCESS);
    assert_int_equal(needed, strlen(full) + 1); /* the whole length */
    assert_int_equal(small[cap - 1], '\0');
    assert_int_equal(strlen(small), cap - 1);
    assert_memory_equal(small, full, cap - 1); /* a prefix */
    for (size_t k = cap; k < sizeof small; ++k) assert_int_equal(small[k], 'X');
  }
}

static void test_last_error_null_buffer(void **state) {
  char before[1024], after[1024];
  size_t needed = 12345;
  (void)state;
  provoke_failure();
  read_message(before, sizeof before);
  assert_int_equal(t4a_last_error_message(NULL, 1, &needed),
                   T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(t4a_last_error_message(NULL, 64, NULL),
                   T4A_ERROR_INVALID_ARGUMENT);
  /* Nothing written, and the last error still describes the old failure. */
  assert_int_equal(needed, 12345);
  assert_string_equal(read_info().entry_point, "t4a_device_count");
  read_message(after, sizeof after);
  assert_string_equal(after, before);
}

static void test_last_error_clear(void **state) {
  char message[16];
  size_t needed = 0;
  t4a_error_info info;
  (void)state;
  provoke_failure();
  t4a_last_error_clear();
  info = read_info();
  assert_int_equal(info.status, T4A_SUCCESS);
  assert_int_equal(info.driver_result, 0);
  assert_int_equal(info.compiler_result, 0);
  assert_string_equal(info.entry_point, "");
  memset(message, 'X', sizeof message);
  assert_int_equal(t4a_last_error_message(message, sizeof message, &needed),
                   T4A_SUCCESS);
  assert_int_equal(needed, 1);
  assert_string_equal(message, "");
}

typedef struct thread_report {
  t4a_error_info initial;
  size_t initial_needed;
  t4a_status provoked;
  t4a_error_info after;
  char message[1024];
} thread_report;

static void *other_thread(void *arg) {
  thread_report *r = arg;
  r->initial.struct_size = sizeof r->initial;
  t4a_last_error(&r->initial);
  t4a_last_error_message(NULL, 0, &r->initial_needed);
  r->provoked = t4a_set_log_callback(NULL, NULL, 42);
  r->after.struct_size = sizeof r->after;
  t4a_last_error(&r->after);
  t4a_last_error_message(r->message, sizeof r->message, NULL);
  return NULL;
}

static void test_last_error_per_thread(void **state) {
  char before[1024], after[1024];
  thread_report r;
  pthread_t t;
  (void)state;
  memset(&r, 0, sizeof r);
  provoke_failure();
  read_message(before, sizeof before);
  assert_int_equal(pthread_create(&t, NULL, other_thread, &r), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  /* A new thread starts without an error... */
  assert_int_equal(r.initial.status, T4A_SUCCESS);
  assert_string_equal(r.initial.entry_point, "");
  assert_int_equal(r.initial_needed, 1);
  /* ...records its own... */
  assert_int_equal(r.provoked, T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(r.after.status, T4A_ERROR_INVALID_ARGUMENT);
  assert_string_equal(r.after.entry_point, "t4a_set_log_callback");
  assert_true(t4a_test_contains(r.message, "max_level"));
  assert_true(t4a_test_contains(r.message, "42"));
  /* ...and leaves this thread's untouched. */
  assert_string_equal(read_info().entry_point, "t4a_device_count");
  read_message(after, sizeof after);
  assert_string_equal(after, before);
}

/* Output struct_size: the library writes bytes [4, min(size, ours)) and
 * nothing else, whatever the caller's size. */
static void test_last_error_struct_size(void **state) {
  enum { EXTRA = 32, SENTINEL = 0xAB };
  _Alignas(8) unsigned char buf[sizeof(t4a_error_info) + EXTRA];
  t4a_error_info ref = T4A_ERROR_INFO_INIT;
  uint32_t size;
  (void)state;
  provoke_failure();
  assert_int_equal(t4a_last_error(&ref), T4A_SUCCESS);
  assert_int_equal(ref.status, T4A_ERROR_INVALID_ARGUMENT);
  for (size = 0; size <= sizeof buf; ++size) {
    size_t covered = size < sizeof ref ? size : sizeof ref;
    t4a_status s;
    memset(buf, SENTINEL, sizeof buf);
    memcpy(buf, &size, sizeof size);
    s = t4a_last_error((t4a_error_info *)(void *)buf);
    if (size < sizeof(uint32_t)) {
      assert_int_equal(s, T4A_ERROR_INVALID_ARGUMENT);
      covered = sizeof(uint32_t); /* nothing may be written */
    } else {
      assert_int_equal(s, T4A_SUCCESS);
    }
    {
      uint32_t kept;
      memcpy(&kept, buf, sizeof kept);
      assert_int_equal(kept, size); /* struct_size itself is not written */
    }
    if (covered > sizeof(uint32_t))
      assert_memory_equal(buf + sizeof(uint32_t),
                          (const unsigned char *)&ref + sizeof(uint32_t),
                          covered - sizeof(uint32_t));
    for (size_t k = covered; k < sizeof buf; ++k)
      if (buf[k] != SENTINEL)
        fail_msg("struct_size %u: byte %zu was written (0x%02x)",
                 (unsigned)size, k, buf[k]);
  }
  /* The last error itself is unchanged by all this. */
  assert_string_equal(read_info().entry_point, "t4a_device_count");
}

/* ---- log callback ------------------------------------------------------- */

typedef struct log_record {
  int calls;
  int32_t level;
  char message[1024];
  t4a_status inner; /* re-entrant callback: what its own call returned */
} log_record;

static void record_log(void *user, int32_t level, const char *message) {
  log_record *r = user;
  ++r->calls;
  r->level = level;
  snprintf(r->message, sizeof r->message, "%s", message);
}

static void test_log_callback(void **state) {
  log_record r, other;
  (void)state;
  memset(&r, 0, sizeof r);
  memset(&other, 0, sizeof other);
  unsetenv("T4A_LOG");
  assert_int_equal(t4a_set_log_callback(record_log, &r, T4A_LOG_DEBUG),
                   T4A_SUCCESS);
  provoke_failure();
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.level, T4A_LOG_DEBUG);
  assert_true(t4a_test_contains(r.message, "t4a_device_count"));
  assert_true(t4a_test_contains(r.message, "count"));

  /* An invalid level is rejected and changes nothing: the installed
   * callback still receives the failure, the rejected one does not. */
  assert_int_equal(t4a_set_log_callback(record_log, &other, -1),
                   T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(t4a_set_log_callback(record_log, &other, T4A_LOG_DEBUG + 1),
                   T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(other.calls, 0);
  assert_int_equal(r.calls, 3);
  assert_true(t4a_test_contains(r.message, "t4a_set_log_callback"));
  assert_true(t4a_test_contains(r.message, "max_level"));
  assert_string_equal(read_info().entry_point, "t4a_set_log_callback");

  /* A threshold below DEBUG filters the failure messages out. */
  assert_int_equal(t4a_set_log_callback(record_log, &r, T4A_LOG_WARN),
                   T4A_SUCCESS);
  provoke_failure();
  assert_int_equal(r.calls, 3);

  /* T4A_LOG overrides the level given. */
  setenv("T4A_LOG", "off", 1);
  assert_int_equal(t4a_set_log_callback(record_log, &r, T4A_LOG_DEBUG),
                   T4A_SUCCESS);
  provoke_failure();
  assert_int_equal(r.calls, 3);
  setenv("T4A_LOG", "debug", 1);
  assert_int_equal(t4a_set_log_callback(record_log, &r, T4A_LOG_OFF),
                   T4A_SUCCESS);
  provoke_failure();
  assert_int_equal(r.calls, 4);
  unsetenv("T4A_LOG");

  /* NULL restores the default sink: the callback is no longer called. */
  assert_int_equal(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN), T4A_SUCCESS);
  provoke_failure();
  assert_int_equal(r.calls, 4);
}

/* Runs `provoke_failure` with stderr redirected; returns what was written. */
static void capture_stderr(char *out, size_t capacity) {
  FILE *tmp = tmpfile();
  int saved;
  size_t n;
  assert_non_null(tmp);
  fflush(stderr);
  saved = dup(STDERR_FILENO);
  assert_true(saved >= 0);
  assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
  provoke_failure();
  fflush(stderr);
  assert_true(dup2(saved, STDERR_FILENO) >= 0);
  close(saved);
  rewind(tmp);
  n = fread(out, 1, capacity - 1, tmp);
  out[n] = '\0';
  fclose(tmp);
}

static void test_log_default_sink(void **state) {
  char text[2048];
  (void)state;
  unsetenv("T4A_LOG");
  assert_int_equal(t4a_set_log_callback(NULL, NULL, T4A_LOG_DEBUG),
                   T4A_SUCCESS);
  capture_stderr(text, sizeof text);
  assert_true(t4a_test_contains(text, "t4acuda debug: "));
  assert_true(t4a_test_contains(text, "t4a_device_count"));
  assert_int_equal(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN), T4A_SUCCESS);
  capture_stderr(text, sizeof text);
  assert_string_equal(text, "");
}

/* A callback may call t4acuda, even a failing function; it is not
 * re-entered and the outer failure is what the last error reports. */
static void reentrant_log(void *user, int32_t level, const char *message) {
  log_record *r = user;
  record_log(user, level, message);
  r->inner = t4a_device_count(NULL);
}

static void test_log_callback_reentry(void **state) {
  log_record r;
  char message[1024];
  (void)state;
  memset(&r, 0, sizeof r);
  unsetenv("T4A_LOG");
  assert_int_equal(t4a_set_log_callback(reentrant_log, &r, T4A_LOG_DEBUG),
                   T4A_SUCCESS);
  assert_int_equal(t4a_driver_version(NULL), T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN), T4A_SUCCESS);
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.inner, T4A_ERROR_INVALID_ARGUMENT);
  assert_true(t4a_test_contains(r.message, "t4a_driver_version"));
  assert_string_equal(read_info().entry_point, "t4a_driver_version");
  read_message(message, sizeof message);
  assert_true(t4a_test_contains(message, "version"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_status_names),
      cmocka_unit_test(test_status_values_pinned),
      cmocka_unit_test(test_status_unknown),
      cmocka_unit_test(test_last_error_records_failure),
      cmocka_unit_test(test_last_error_query_then_copy),
      cmocka_unit_test(test_last_error_truncation),
      cmocka_unit_test(test_last_error_null_buffer),
      cmocka_unit_test(test_last_error_clear),
      cmocka_unit_test(test_last_error_per_thread),
      cmocka_unit_test(test_last_error_struct_size),
      cmocka_unit_test(test_log_callback),
      cmocka_unit_test(test_log_default_sink),
      cmocka_unit_test(test_log_callback_reentry),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
