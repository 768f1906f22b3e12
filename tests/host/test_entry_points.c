/*
 * Host lane, table-driven over every exported function:
 *   - the list of exports is read from the built library (nm -D); an export
 *     without a row, or a row naming a symbol that is not exported, fails;
 *   - without a driver (T4A_CUDA_DRIVER_PATH points at a file that does not
 *     exist), every function that needs one returns NO_DRIVER naming the
 *     path, context-free functions work (t4a_process_stats_get reports a
 *     fresh process: all zeros), and functions taking a handle reject it
 *     (INVALID_HANDLE) before touching the driver: every runtime, buffer,
 *     host buffer and download needs a driver to exist, so without one no
 *     handle of theirs can be valid (artifacts need only NVRTC, and this
 *     program compiles nothing: t4a_compile is only given bad arguments);
 *   - every function taking a handle rejects null, forged, wrong-kind,
 *     released and stale handles with INVALID_HANDLE naming the argument
 *     (for functions taking several handles, the first one checked: the
 *     runtime), and leaves its out-parameters untouched.
 * The t4a_testing_* rows exist when the library has them (T4A_TESTING).
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L
#define T4A_EXPERIMENTAL 1 /* rows for the experimental functions too */

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
#include "t4acuda_dlpack.h"
#if defined(T4A_TEST_HAVE_TESTING)
#include "t4acuda_testing.h"
#endif

#define DRIVER_PATH "/nonexistent/libcuda.so.1"
#define SENTINEL32 INT32_C(0x5A5A5A5A)
#define SENTINEL_ID UINT64_C(0xA5A5A5A5A5A5A5A5)

/* Handle id layout (src/core/registry.hpp): kind (8 bits) << 56 |
 * generation (24 bits, never 0) << 32 | slot (32 bits). Kinds from
 * src/core/object.hpp. */
#define KIND_RUNTIME 1u
#define KIND_BUFFER 2u
#define KIND_HOST_BUFFER 3u
#define KIND_DOWNLOAD 4u
#define KIND_ARTIFACT 5u
#define KIND_MODULE 6u
#define KIND_KERNEL 7u
#define KIND_COMPLETION 8u
#define KIND_RAW_SCOPE 9u
#define KIND_GRAPH 10u
#define KIND_TEST_OBJECT 255u
#define MAKE_ID(kind, gen, slot)                                               \
  (((uint64_t)(kind) << 56) | ((uint64_t)((gen)&0xFFFFFFu) << 32) |            \
   (uint64_t)(uint32_t)(slot))
#define WITH_KIND(id, kind)                                                    \
  (((id) & ~(UINT64_C(0xFF) << 56)) | ((uint64_t)(kind) << 56))

/* ---- shared checks ------------------------------------------------------ */

static void read_last(t4a_error_info *info, char *message, size_t capacity) {
  size_t needed = 0;
  info->struct_size = sizeof *info;
  assert_int_equal(t4a_last_error(info), T4A_SUCCESS);
  assert_int_equal(t4a_last_error_message(message, capacity, &needed),
                   T4A_SUCCESS);
  assert_true(needed <= capacity);
}

static void expect_message_contains(const char *message, const char *part) {
  if (!t4a_test_contains(message, part))
    fail_msg("message \"%s\" does not contain \"%s\"", message, part);
}

/* `s` is NO_DRIVER, recorded for `entry` with a message naming the path. */
static void expect_no_driver(t4a_status s, const char *entry) {
  t4a_error_info info;
  char message[2048];
  if (s != T4A_ERROR_NO_DRIVER)
    fail_msg("%s gave %s, expected T4A_ERROR_NO_DRIVER", entry,
             t4a_status_name(s));
  read_last(&info, message, sizeof message);
  assert_int_equal(info.status, T4A_ERROR_NO_DRIVER);
  assert_string_equal(info.entry_point, entry);
  assert_int_equal(info.driver_result, 0); /* cuInit never ran */
  assert_int_equal(info.compiler_result, 0);
  expect_message_contains(message, DRIVER_PATH);
  expect_message_contains(message, "T4A_CUDA_DRIVER_PATH");
  expect_message_contains(message, entry);
}

/* `s` is INVALID_HANDLE for `entry`, naming exactly `arg` and the id
 * ("<entry>: <arg> (id 0x...) is <why>"), and, when `why` is not NULL,
 * giving that reason. */
static void expect_bad_handle_why(t4a_status s, const char *entry,
                                  const char *arg, uint64_t id,
                                  const char *why) {
  t4a_error_info info;
  char message[2048], named[256];
  if (s != T4A_ERROR_INVALID_HANDLE)
    fail_msg("%s(%s = 0x%016" PRIx64 ") gave %s, expected "
             "T4A_ERROR_INVALID_HANDLE",
             entry, arg, id, t4a_status_name(s));
  read_last(&info, message, sizeof message);
  assert_int_equal(info.status, T4A_ERROR_INVALID_HANDLE);
  assert_string_equal(info.entry_point, entry);
  assert_int_equal(info.driver_result, 0);
  assert_int_equal(info.compiler_result, 0);
  snprintf(named, sizeof named, "%s: %s (id 0x%016" PRIx64 ") is ", entry, arg,
           id);
  expect_message_contains(message, named);
  if (why != NULL) {
    snprintf(named, sizeof named, "(id 0x%016" PRIx64 ") is %s", id, why);
    expect_message_contains(message, named);
  }
}

static void expect_bad_handle(t4a_status s, const char *entry, const char *arg,
                              uint64_t id) {
  expect_bad_handle_why(s, entry, arg, id, NULL);
}

/* Reasons (src/core/registry.cpp, Registry::describe). */
#define WHY_NULL "the null handle"
#define WHY_KIND "a handle of another type"
#define WHY_UNKNOWN "not a handle this library issued"
#define WHY_STALE "released (stale)"

/* ---- the table ---------------------------------------------------------- */

typedef enum category {
  NEEDS_DRIVER, /* must return NO_DRIVER without a driver */
  HANDLE_FIRST, /* takes a handle (runtime, buffer, host buffer, download):
                   without a driver none can exist, and a forged one is
                   rejected before the driver is touched */
  CONTEXT_FREE, /* works without a driver: its own check */
  TESTING_ONLY  /* t4a_testing_*: its own check */
} category;

typedef struct row {
  const char *name;
  category cat;
  /* Without a driver: the row's check (NULL for HANDLE_FIRST: the
   * handle check below with a forged runtime is the check). */
  void (*check)(void);
  /* Calls the function with handle `id` and otherwise valid arguments
   * (other handles: null or forged, of their own kind), checking that its
   * out-parameters stay untouched on error; NULL when it takes no handle.
   * Must only be given invalid ids. */
  t4a_status (*with_handle)(uint64_t id);
  uint8_t kind;    /* kind byte of the handle it takes */
  const char *arg; /* the handle argument's name in messages */
  int null_ok;     /* the null handle is a successful no-op */
} row;

/* -- needs a driver -- */

static void check_runtime_create(void) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime rt = {SENTINEL_ID};
  expect_no_driver(t4a_runtime_create(&o, &rt), "t4a_runtime_create");
  assert_int_equal(rt.id, SENTINEL_ID);
  expect_no_driver(t4a_runtime_create(NULL, &rt), "t4a_runtime_create");
  assert_int_equal(rt.id, SENTINEL_ID);
}

static void check_device_count(void) {
  int32_t n = SENTINEL32;
  expect_no_driver(t4a_device_count(&n), "t4a_device_count");
  assert_int_equal(n, SENTINEL32);
}

static void check_device_info_get(void) {
  t4a_device_info info, copy;
  memset(&info, 0x5A, sizeof info);
  info.struct_size = sizeof info;
  memcpy(&copy, &info, sizeof info);
  expect_no_driver(t4a_device_info_get(0, &info), "t4a_device_info_get");
  assert_memory_equal(&info, &copy, sizeof info);
}

static void check_device_can_access_peer(void) {
  int32_t can = SENTINEL32;
  expect_no_driver(t4a_device_can_access_peer(0, 1, &can),
                   "t4a_device_can_access_peer");
  assert_int_equal(can, SENTINEL32);
  expect_no_driver(t4a_device_can_access_peer(0, 0, &can),
                   "t4a_device_can_access_peer");
  assert_int_equal(can, SENTINEL32);
}

static void check_driver_version(void) {
  int32_t v = SENTINEL32;
  expect_no_driver(t4a_driver_version(&v), "t4a_driver_version");
  assert_int_equal(v, SENTINEL32);
}

static void check_driver_lacks(void) {
  char text[8] = "sentinel";
  size_t needed = 12345;
  expect_no_driver(t4a_driver_lacks(text, sizeof text, &needed),
                   "t4a_driver_lacks");
  assert_int_equal(needed, 12345);
  assert_memory_equal(text, "sentinel", 8);
}

/* -- context-free -- */

static void check_version(void) {
  assert_int_equal(t4a_version(), T4A_VERSION_NUMBER);
}

static void check_version_string(void) {
  assert_string_equal(t4a_version_string(), T4A_VERSION_STRING);
}

static void check_built_cuda_version(void) {
  /* CUDA_VERSION of the toolkit the library was built with: 12.0 or newer
   * (cuGetProcAddress_v2), major*1000 + minor*10. */
  int32_t v = t4a_built_cuda_version();
  assert_true(v >= 12000);
  assert_int_equal(v % 10, 0);
}

static void check_status_name(void) {
  assert_string_equal(t4a_status_name(T4A_ERROR_NO_DRIVER),
                      "T4A_ERROR_NO_DRIVER");
}

static void check_status_description(void) {
  assert_string_equal(t4a_status_description(T4A_ERROR_NO_DRIVER),
                      "no usable CUDA driver was found");
}

static void check_last_error(void) {
  t4a_error_info info = T4A_ERROR_INFO_INIT;
  int32_t n;
  (void)t4a_device_count(&n);
  assert_int_equal(t4a_last_error(&info), T4A_SUCCESS);
  assert_int_equal(info.status, T4A_ERROR_NO_DRIVER);
  assert_string_equal(info.entry_point, "t4a_device_count");
}

static void check_last_error_message(void) {
  char message[2048];
  size_t needed = 0;
  int32_t n;
  (void)t4a_device_count(&n);
  assert_int_equal(t4a_last_error_message(NULL, 0, &needed), T4A_SUCCESS);
  assert_true(needed > sizeof DRIVER_PATH);
  assert_true(needed <= sizeof message);
  assert_int_equal(t4a_last_error_message(message, needed, NULL), T4A_SUCCESS);
  assert_int_equal(strlen(message) + 1, needed);
  expect_message_contains(message, DRIVER_PATH);
}

static void check_last_error_clear(void) {
  t4a_error_info info = T4A_ERROR_INFO_INIT;
  int32_t n;
  (void)t4a_device_count(&n);
  t4a_last_error_clear();
  assert_int_equal(t4a_last_error(&info), T4A_SUCCESS);
  assert_int_equal(info.status, T4A_SUCCESS);
  assert_string_equal(info.entry_point, "");
}

typedef struct log_record {
  int calls;
  char message[2048];
} log_record;

static void record_log(void *user, int32_t level, const char *message) {
  log_record *r = user;
  (void)level;
  ++r->calls;
  snprintf(r->message, sizeof r->message, "%s", message);
}

static void check_set_log_callback(void) {
  log_record r;
  int32_t n;
  memset(&r, 0, sizeof r);
  unsetenv("T4A_LOG");
  assert_int_equal(t4a_set_log_callback(record_log, &r, T4A_LOG_DEBUG),
                   T4A_SUCCESS);
  (void)t4a_device_count(&n);
  assert_int_equal(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN), T4A_SUCCESS);
  assert_int_equal(r.calls, 1);
  expect_message_contains(r.message, "t4a_device_count");
  expect_message_contains(r.message, DRIVER_PATH);
}

static void check_nvrtc_version(void) {
  /* NVRTC needs no driver: SUCCESS, or NO_COMPILER where no NVRTC is
   * installed (tests/host/test_nvrtc.c requires one); never NO_DRIVER. */
  int32_t major = SENTINEL32, minor = SENTINEL32;
  t4a_status s = t4a_nvrtc_version(&major, &minor);
  if (s == T4A_SUCCESS) {
    assert_true(major >= 12);
    assert_true(minor >= 0 && minor < 100);
  } else {
    assert_int_equal(s, T4A_ERROR_NO_COMPILER);
    assert_int_equal(major, SENTINEL32);
    assert_int_equal(minor, SENTINEL32);
  }
}

static void check_process_stats_get(void) {
  /* Without a driver no runtime was ever created: a fresh process has
   * nothing live and nothing leaked. */
  const t4a_process_stats fresh = T4A_PROCESS_STATS_INIT;
  t4a_process_stats stats, copy;
  t4a_error_info info;
  char message[2048];
  uint32_t size;
  memset(&stats, 0x5A, sizeof stats);
  stats.struct_size = sizeof stats;
  assert_int_equal(t4a_process_stats_get(&stats), T4A_SUCCESS);
  assert_int_equal(stats.struct_size, sizeof stats);
  assert_int_equal(stats.runtimes_live, 0);
  assert_int_equal(stats.runtimes_leaked, 0);
  assert_int_equal(stats.leaked_device_allocations, 0);
  assert_int_equal(stats.leaked_device_bytes, 0);
  assert_int_equal(stats.leaked_staging_bytes, 0);
  assert_int_equal(stats.leaked_host_buffers, 0);
  assert_memory_equal(&stats, &fresh, sizeof stats); /* reserved0 too */
  /* Argument errors: recorded, nothing written. */
  assert_int_equal(t4a_process_stats_get(NULL), T4A_ERROR_INVALID_ARGUMENT);
  read_last(&info, message, sizeof message);
  assert_int_equal(info.status, T4A_ERROR_INVALID_ARGUMENT);
  assert_string_equal(info.entry_point, "t4a_process_stats_get");
  expect_message_contains(message, "stats is NULL");
  for (size = 0; size < sizeof(uint32_t); ++size) {
    memset(&stats, 0x5A, sizeof stats);
    stats.struct_size = size;
    memcpy(&copy, &stats, sizeof stats);
    assert_int_equal(t4a_process_stats_get(&stats), T4A_ERROR_INVALID_ARGUMENT);
    assert_memory_equal(&stats, &copy, sizeof stats);
    read_last(&info, message, sizeof message);
    assert_string_equal(info.entry_point, "t4a_process_stats_get");
    expect_message_contains(message, "stats->struct_size");
  }
}

static void check_process_fault_get(void) {
  /* Without a driver no runtime was ever created: no fault. */
  const t4a_process_fault none = T4A_PROCESS_FAULT_INIT;
  t4a_process_fault fault, copy;
  t4a_error_info info;
  char message[2048];
  uint32_t size;
  memset(&fault, 0x5A, sizeof fault);
  fault.struct_size = sizeof fault;
  assert_int_equal(t4a_process_fault_get(&fault), T4A_SUCCESS);
  assert_int_equal(fault.struct_size, sizeof fault);
  assert_int_equal(fault.has_fault, 0);
  assert_int_equal(fault.driver_result, 0);
  assert_string_equal(fault.operation, "");
  assert_memory_equal(&fault, &none, sizeof fault);
  /* Argument errors: recorded, nothing written. */
  assert_int_equal(t4a_process_fault_get(NULL), T4A_ERROR_INVALID_ARGUMENT);
  read_last(&info, message, sizeof message);
  assert_int_equal(info.status, T4A_ERROR_INVALID_ARGUMENT);
  assert_string_equal(info.entry_point, "t4a_process_fault_get");
  expect_message_contains(message, "fault is NULL");
  for (size = 0; size < sizeof(uint32_t); ++size) {
    memset(&fault, 0x5A, sizeof fault);
    fault.struct_size = size;
    memcpy(&copy, &fault, sizeof fault);
    assert_int_equal(t4a_process_fault_get(&fault), T4A_ERROR_INVALID_ARGUMENT);
    assert_memory_equal(&fault, &copy, sizeof fault);
    read_last(&info, message, sizeof message);
    assert_string_equal(info.entry_point, "t4a_process_fault_get");
    expect_message_contains(message, "fault->struct_size");
  }
}

/* -- runtime handle wrappers -- */

static t4a_status call_runtime_destroy(uint64_t id) {
  t4a_runtime rt = {id};
  return t4a_runtime_destroy(rt);
}

static t4a_status call_runtime_synchronize(uint64_t id) {
  t4a_runtime rt = {id};
  return t4a_runtime_synchronize(rt);
}

static t4a_status call_runtime_trim(uint64_t id) {
  t4a_runtime rt = {id};
  return t4a_runtime_trim(rt);
}

static t4a_status call_runtime_info_get(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_runtime_info info, copy;
  t4a_status s;
  memset(&info, 0x5A, sizeof info);
  info.struct_size = sizeof info;
  memcpy(&copy, &info, sizeof info);
  s = t4a_runtime_info_get(rt, &info);
  if (s != T4A_SUCCESS) assert_memory_equal(&info, &copy, sizeof info);
  return s;
}

static t4a_status call_runtime_stats_get(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_runtime_stats stats, copy;
  t4a_status s;
  memset(&stats, 0x5A, sizeof stats);
  stats.struct_size = sizeof stats;
  memcpy(&copy, &stats, sizeof stats);
  s = t4a_runtime_stats_get(rt, &stats);
  if (s != T4A_SUCCESS) assert_memory_equal(&stats, &copy, sizeof stats);
  return s;
}

/* The peer is checked after the runtime: a forged or null runtime is
 * named even when the peer is bad too. Without a driver no runtime exists,
 * so the peer is a forged one as well. */
static t4a_status call_runtime_enable_peer(uint64_t id) {
  t4a_runtime rt = {id}, none = {T4A_NULL_ID},
              peer = {MAKE_ID(KIND_RUNTIME, 3, 9)};
  expect_bad_handle(t4a_runtime_enable_peer(rt, none),
                    "t4a_runtime_enable_peer", "runtime", id);
  return t4a_runtime_enable_peer(rt, peer);
}

/* -- buffer, host buffer and download wrappers -- */

/* Forged handles of each kind for the arguments a row does not vary. */
#define FORGED_BUFFER_A MAKE_ID(KIND_BUFFER, 1, 1)
#define FORGED_BUFFER_B MAKE_ID(KIND_BUFFER, 2, 2)
#define FORGED_HOST_BUFFER MAKE_ID(KIND_HOST_BUFFER, 1, 3)

/* Host memory an erroneous call must not write. */
#define HOST_BYTES 64
static void fill_sentinel(unsigned char *p) { memset(p, 0x5A, HOST_BYTES); }
static void expect_sentinel(const unsigned char *p) {
  unsigned char expected[HOST_BYTES];
  fill_sentinel(expected);
  assert_memory_equal(p, expected, HOST_BYTES);
}

static t4a_status call_buffer_alloc(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_buffer b = {SENTINEL_ID};
  t4a_status s;
  expect_bad_handle(t4a_buffer_alloc(rt, 0, 0, &b), "t4a_buffer_alloc",
                    "runtime", id);
  assert_int_equal(b.id, SENTINEL_ID);
  s = t4a_buffer_alloc(rt, 4096, T4A_BUFFER_ZERO, &b);
  if (s != T4A_SUCCESS) assert_int_equal(b.id, SENTINEL_ID);
  return s;
}

static t4a_status call_buffer_retain(uint64_t id) {
  t4a_buffer b = {id};
  return t4a_buffer_retain(b);
}

static t4a_status call_buffer_release(uint64_t id) {
  t4a_buffer b = {id};
  return t4a_buffer_release(b);
}

static t4a_status call_buffer_info_get(uint64_t id) {
  t4a_buffer b = {id};
  t4a_buffer_info info, copy;
  t4a_status s;
  memset(&info, 0x5A, sizeof info);
  info.struct_size = sizeof info;
  memcpy(&copy, &info, sizeof info);
  s = t4a_buffer_info_get(b, &info);
  if (s != T4A_SUCCESS) assert_memory_equal(&info, &copy, sizeof info);
  return s;
}

static t4a_status call_buffer_fill(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_buffer none = {T4A_NULL_ID}, b = {FORGED_BUFFER_A};
  expect_bad_handle(t4a_buffer_fill(rt, none, 0, 0, 0), "t4a_buffer_fill",
                    "runtime", id);
  return t4a_buffer_fill(rt, b, 0, 16, 0xAB);
}

static t4a_status call_buffer_copy(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_buffer none = {T4A_NULL_ID}, dst = {FORGED_BUFFER_A},
             src = {FORGED_BUFFER_B};
  expect_bad_handle(t4a_buffer_copy(rt, none, 0, none, 0, 0), "t4a_buffer_copy",
                    "runtime", id);
  /* The same buffer as both: still the runtime that is named. */
  expect_bad_handle(t4a_buffer_copy(rt, dst, 0, dst, 16, 16), "t4a_buffer_copy",
                    "runtime", id);
  return t4a_buffer_copy(rt, dst, 0, src, 0, 16);
}

static t4a_status call_buffer_upload(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_buffer none = {T4A_NULL_ID}, dst = {FORGED_BUFFER_A};
  unsigned char src[HOST_BYTES];
  fill_sentinel(src);
  expect_bad_handle(t4a_buffer_upload(rt, none, 0, NULL, 0),
                    "t4a_buffer_upload", "runtime", id);
  return t4a_buffer_upload(rt, dst, 0, src, sizeof src);
}

static t4a_status call_buffer_download(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_buffer none = {T4A_NULL_ID}, src = {FORGED_BUFFER_A};
  t4a_download d = {SENTINEL_ID};
  t4a_status s;
  expect_bad_handle(t4a_buffer_download(rt, none, 0, 0, &d),
                    "t4a_buffer_download", "runtime", id);
  assert_int_equal(d.id, SENTINEL_ID);
  s = t4a_buffer_download(rt, src, 0, HOST_BYTES, &d);
  if (s != T4A_SUCCESS) assert_int_equal(d.id, SENTINEL_ID);
  return s;
}

static t4a_status call_buffer_download_sync(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_buffer none = {T4A_NULL_ID}, src = {FORGED_BUFFER_A};
  unsigned char dst[HOST_BYTES];
  t4a_status s;
  expect_bad_handle(t4a_buffer_download_sync(rt, none, 0, NULL, 0),
                    "t4a_buffer_download_sync", "runtime", id);
  fill_sentinel(dst);
  s = t4a_buffer_download_sync(rt, src, 0, dst, sizeof dst);
  if (s != T4A_SUCCESS) expect_sentinel(dst);
  return s;
}

static t4a_status call_download_poll(uint64_t id) {
  t4a_download d = {id};
  unsigned char dst[HOST_BYTES];
  t4a_status s;
  /* A NULL dst is valid for a zero-byte download: the handle decides. */
  expect_bad_handle(t4a_download_poll(d, NULL), "t4a_download_poll", "download",
                    id);
  fill_sentinel(dst);
  s = t4a_download_poll(d, dst);
  if (s != T4A_SUCCESS && s != T4A_NOT_READY) expect_sentinel(dst);
  return s;
}

static t4a_status call_download_wait(uint64_t id) {
  t4a_download d = {id};
  unsigned char dst[HOST_BYTES];
  t4a_status s;
  expect_bad_handle(t4a_download_wait(d, NULL), "t4a_download_wait", "download",
                    id);
  fill_sentinel(dst);
  s = t4a_download_wait(d, dst);
  if (s != T4A_SUCCESS) expect_sentinel(dst);
  return s;
}

static t4a_status call_download_size(uint64_t id) {
  t4a_download d = {id};
  uint64_t bytes = SENTINEL_ID;
  t4a_status s = t4a_download_size(d, &bytes);
  if (s != T4A_SUCCESS) assert_int_equal(bytes, SENTINEL_ID);
  return s;
}

static t4a_status call_download_release(uint64_t id) {
  t4a_download d = {id};
  return t4a_download_release(d);
}

static t4a_status call_host_buffer_alloc(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_host_buffer h = {SENTINEL_ID};
  t4a_status s;
  expect_bad_handle(t4a_host_buffer_alloc(rt, 0, &h), "t4a_host_buffer_alloc",
                    "runtime", id);
  assert_int_equal(h.id, SENTINEL_ID);
  s = t4a_host_buffer_alloc(rt, 4096, &h);
  if (s != T4A_SUCCESS) assert_int_equal(h.id, SENTINEL_ID);
  return s;
}

static t4a_status call_host_buffer_retain(uint64_t id) {
  t4a_host_buffer h = {id};
  return t4a_host_buffer_retain(h);
}

static t4a_status call_host_buffer_release(uint64_t id) {
  t4a_host_buffer h = {id};
  return t4a_host_buffer_release(h);
}

static t4a_status call_host_buffer_pointer(uint64_t id) {
  t4a_host_buffer h = {id};
  unsigned char anchor;
  void *pointer = &anchor;
  uint64_t bytes = SENTINEL_ID;
  t4a_status s;
  /* `bytes` is optional: the handle decides. */
  expect_bad_handle(t4a_host_buffer_pointer(h, &pointer, NULL),
                    "t4a_host_buffer_pointer", "host_buffer", id);
  assert_ptr_equal(pointer, &anchor);
  s = t4a_host_buffer_pointer(h, &pointer, &bytes);
  if (s != T4A_SUCCESS) {
    assert_ptr_equal(pointer, &anchor);
    assert_int_equal(bytes, SENTINEL_ID);
  }
  return s;
}

static t4a_status call_buffer_upload_host(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_buffer none = {T4A_NULL_ID}, dst = {FORGED_BUFFER_A};
  t4a_host_buffer hnone = {T4A_NULL_ID}, src = {FORGED_HOST_BUFFER};
  expect_bad_handle(t4a_buffer_upload_host(rt, none, 0, hnone, 0, 0),
                    "t4a_buffer_upload_host", "runtime", id);
  /* Handles of the wrong kinds in the other slots: still the runtime. */
  {
    t4a_buffer as_buffer = {FORGED_HOST_BUFFER};
    t4a_host_buffer as_host = {FORGED_BUFFER_A};
    expect_bad_handle(t4a_buffer_upload_host(rt, as_buffer, 0, as_host, 0, 1),
                      "t4a_buffer_upload_host", "runtime", id);
  }
  return t4a_buffer_upload_host(rt, dst, 0, src, 0, 16);
}

static t4a_status call_buffer_download_host(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_buffer none = {T4A_NULL_ID}, src = {FORGED_BUFFER_A};
  t4a_host_buffer hnone = {T4A_NULL_ID}, dst = {FORGED_HOST_BUFFER};
  expect_bad_handle(t4a_buffer_download_host(rt, none, 0, hnone, 0, 0),
                    "t4a_buffer_download_host", "runtime", id);
  {
    t4a_buffer as_buffer = {FORGED_HOST_BUFFER};
    t4a_host_buffer as_host = {FORGED_BUFFER_A};
    expect_bad_handle(t4a_buffer_download_host(rt, as_buffer, 0, as_host, 0, 1),
                      "t4a_buffer_download_host", "runtime", id);
  }
  return t4a_buffer_download_host(rt, src, 0, dst, 0, 16);
}

/* -- compile and artifacts -- */

static void check_compile(void) {
  /* Argument errors come first and need neither NVRTC nor a driver; a
   * forged runtime is INVALID_HANDLE naming request->runtime. */
  static const char *const k_source = "__global__ void k() {}";
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  t4a_artifact a = {SENTINEL_ID};
  t4a_error_info info;
  char message[2048];
  assert_int_equal(t4a_compile(NULL, &a), T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(a.id, SENTINEL_ID);
  read_last(&info, message, sizeof message);
  assert_string_equal(info.entry_point, "t4a_compile");
  expect_message_contains(message, "request is NULL");
  r.source = k_source;
  r.runtime.id = MAKE_ID(KIND_RUNTIME, 1, 0);
  expect_bad_handle(t4a_compile(&r, &a), "t4a_compile", "request->runtime",
                    r.runtime.id);
  assert_int_equal(a.id, SENTINEL_ID);
  r.runtime.id = MAKE_ID(KIND_BUFFER, 1, 0);
  expect_bad_handle_why(t4a_compile(&r, &a), "t4a_compile", "request->runtime",
                        r.runtime.id, WHY_KIND);
  assert_int_equal(a.id, SENTINEL_ID);
}

static void check_last_compile_log(void) {
  char log[16] = "sentinel";
  size_t needed = 0;
  /* No compile failed in this process: the log is "". */
  assert_int_equal(t4a_last_compile_log(log, sizeof log, &needed), T4A_SUCCESS);
  assert_int_equal(needed, 1);
  assert_string_equal(log, "");
  assert_int_equal(t4a_last_compile_log(NULL, 4, &needed),
                   T4A_ERROR_INVALID_ARGUMENT);
}

static void check_toolkit_headers(void) {
  /* Needs NVRTC, never the driver: SUCCESS with "nvrtc ..." first, or
   * NO_COMPILER; a NULL buffer with a capacity is refused. */
  char text[4096] = "sentinel";
  size_t needed = 0;
  t4a_status s = t4a_toolkit_headers(text, sizeof text, &needed);
  if (s == T4A_SUCCESS) {
    assert_true(needed > 6 && needed <= sizeof text);
    assert_int_equal(strncmp(text, "nvrtc ", 6), 0);
  } else {
    assert_int_equal(s, T4A_ERROR_NO_COMPILER);
  }
  assert_int_equal(t4a_toolkit_headers(NULL, 4, &needed),
                   T4A_ERROR_INVALID_ARGUMENT);
}

static void check_compile_stats_get(void) {
  /* Nothing was compiled in this process (argument errors are not
   * requests): all zeros. */
  const t4a_compile_stats fresh = T4A_COMPILE_STATS_INIT;
  t4a_compile_stats stats;
  memset(&stats, 0x5A, sizeof stats);
  stats.struct_size = sizeof stats;
  assert_int_equal(t4a_compile_stats_get(&stats), T4A_SUCCESS);
  assert_memory_equal(&stats, &fresh, sizeof stats);
  assert_int_equal(t4a_compile_stats_get(NULL), T4A_ERROR_INVALID_ARGUMENT);
}

static t4a_status call_artifact_retain(uint64_t id) {
  t4a_artifact a = {id};
  return t4a_artifact_retain(a);
}

static t4a_status call_artifact_release(uint64_t id) {
  t4a_artifact a = {id};
  return t4a_artifact_release(a);
}

static t4a_status call_artifact_info_get(uint64_t id) {
  t4a_artifact a = {id};
  t4a_artifact_info info, copy;
  t4a_status s;
  memset(&info, 0x5A, sizeof info);
  info.struct_size = sizeof info;
  memcpy(&copy, &info, sizeof info);
  s = t4a_artifact_info_get(a, &info);
  if (s != T4A_SUCCESS) assert_memory_equal(&info, &copy, sizeof info);
  return s;
}

static t4a_status call_artifact_image(uint64_t id) {
  t4a_artifact a = {id};
  unsigned char buf[HOST_BYTES];
  size_t needed = 77;
  t4a_status s;
  fill_sentinel(buf);
  s = t4a_artifact_image(a, buf, sizeof buf, &needed);
  if (s != T4A_SUCCESS) {
    expect_sentinel(buf);
    assert_int_equal(needed, 77);
  }
  return s;
}

static t4a_status call_artifact_log(uint64_t id) {
  t4a_artifact a = {id};
  char buf[HOST_BYTES];
  size_t needed = 77;
  t4a_status s;
  fill_sentinel((unsigned char *)buf);
  s = t4a_artifact_log(a, buf, sizeof buf, &needed);
  if (s != T4A_SUCCESS) {
    expect_sentinel((unsigned char *)buf);
    assert_int_equal(needed, 77);
  }
  return s;
}

static t4a_status call_artifact_lowered_name(uint64_t id) {
  t4a_artifact a = {id};
  char buf[HOST_BYTES];
  size_t needed = 77;
  t4a_status s;
  fill_sentinel((unsigned char *)buf);
  s = t4a_artifact_lowered_name(a, 0, buf, sizeof buf, &needed);
  if (s != T4A_SUCCESS) {
    expect_sentinel((unsigned char *)buf);
    assert_int_equal(needed, 77);
  }
  return s;
}

static t4a_status call_artifact_lowered_name_of(uint64_t id) {
  t4a_artifact a = {id};
  char buf[HOST_BYTES];
  size_t needed = 77;
  t4a_status s;
  fill_sentinel((unsigned char *)buf);
  s = t4a_artifact_lowered_name_of(a, "&kernel<float>", buf, sizeof buf,
                                   &needed);
  if (s != T4A_SUCCESS) {
    expect_sentinel((unsigned char *)buf);
    assert_int_equal(needed, 77);
  }
  return s;
}

static t4a_status call_artifact_key(uint64_t id) {
  t4a_artifact a = {id};
  char buf[HOST_BYTES];
  size_t needed = 77;
  t4a_status s;
  fill_sentinel((unsigned char *)buf);
  s = t4a_artifact_key(a, buf, sizeof buf, &needed);
  if (s != T4A_SUCCESS) {
    expect_sentinel((unsigned char *)buf);
    assert_int_equal(needed, 77);
  }
  return s;
}

/* -- modules, kernels, launches, completions -- */

static t4a_status call_module_load(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_artifact a = {MAKE_ID(KIND_ARTIFACT, 1, 1)};
  t4a_module m = {SENTINEL_ID};
  t4a_status s = t4a_module_load(rt, a, &m);
  if (s != T4A_SUCCESS) assert_int_equal(m.id, SENTINEL_ID);
  return s;
}

static t4a_status call_module_load_data(uint64_t id) {
  t4a_runtime rt = {id};
  static const unsigned char image[16] = {1};
  t4a_module m = {SENTINEL_ID};
  t4a_status s = t4a_module_load_data(rt, image, sizeof image, &m);
  if (s != T4A_SUCCESS) assert_int_equal(m.id, SENTINEL_ID);
  return s;
}

static t4a_status call_module_retain(uint64_t id) {
  t4a_module m = {id};
  return t4a_module_retain(m);
}

static t4a_status call_module_release(uint64_t id) {
  t4a_module m = {id};
  return t4a_module_release(m);
}

static t4a_status call_kernel_get(uint64_t id) {
  t4a_module m = {id};
  t4a_kernel k = {SENTINEL_ID};
  t4a_status s = t4a_kernel_get(m, "saxpy", &k);
  if (s != T4A_SUCCESS) assert_int_equal(k.id, SENTINEL_ID);
  return s;
}

static t4a_status call_module_global(uint64_t id) {
  t4a_module m = {id};
  t4a_buffer v = {SENTINEL_ID};
  t4a_status s = t4a_module_global(m, "counter", &v);
  if (s != T4A_SUCCESS) assert_int_equal(v.id, SENTINEL_ID);
  return s;
}

static t4a_status call_kernel_retain(uint64_t id) {
  t4a_kernel k = {id};
  return t4a_kernel_retain(k);
}

static t4a_status call_kernel_release(uint64_t id) {
  t4a_kernel k = {id};
  return t4a_kernel_release(k);
}

static t4a_status call_kernel_info_get(uint64_t id) {
  t4a_kernel k = {id};
  t4a_kernel_info info, copy;
  t4a_status s;
  memset(&info, 0x5A, sizeof info);
  info.struct_size = sizeof info;
  memcpy(&copy, &info, sizeof info);
  s = t4a_kernel_info_get(k, &info);
  if (s != T4A_SUCCESS) assert_memory_equal(&info, &copy, sizeof info);
  return s;
}

static t4a_status call_kernel_param(uint64_t id) {
  t4a_kernel k = {id};
  uint64_t offset = SENTINEL_ID, size = SENTINEL_ID;
  t4a_status s = t4a_kernel_param(k, 0, &offset, &size);
  if (s != T4A_SUCCESS) {
    assert_int_equal(offset, SENTINEL_ID);
    assert_int_equal(size, SENTINEL_ID);
  }
  return s;
}

static t4a_status call_kernel_occupancy(uint64_t id) {
  t4a_kernel k = {id};
  int32_t n = SENTINEL32;
  t4a_status s = t4a_kernel_occupancy(k, 256, 0, &n);
  if (s != T4A_SUCCESS) assert_int_equal(n, SENTINEL32);
  return s;
}

static t4a_status call_kernel_max_cooperative_blocks(uint64_t id) {
  t4a_kernel k = {id};
  int32_t n = SENTINEL32;
  t4a_status s = t4a_kernel_max_cooperative_blocks(k, 256, 0, &n);
  if (s != T4A_SUCCESS) assert_int_equal(n, SENTINEL32);
  return s;
}

static t4a_status call_kernel_declare_barrier(uint64_t id) {
  t4a_kernel k = {id};
  t4a_barrier_desc d = T4A_BARRIER_DESC_INIT;
  d.global_name = "counter";
  uint32_t index = (uint32_t)SENTINEL32;
  t4a_status s = t4a_kernel_declare_barrier(k, &d, &index);
  if (s != T4A_SUCCESS) assert_int_equal(index, (uint32_t)SENTINEL32);
  return s;
}

static t4a_status call_kernel_barrier_audit(uint64_t id) {
  t4a_kernel k = {id};
  t4a_barrier_audit a = T4A_BARRIER_AUDIT_INIT;
  a.launches = SENTINEL_ID;
  t4a_status s = t4a_kernel_barrier_audit(k, 0, &a);
  if (s != T4A_SUCCESS) assert_true(a.launches == SENTINEL_ID);
  return s;
}

static t4a_status call_kernel_suggest_block_size(uint64_t id) {
  t4a_kernel k = {id};
  int32_t b = SENTINEL32, g = SENTINEL32;
  t4a_status s = t4a_kernel_suggest_block_size(k, 0, &b, &g);
  if (s != T4A_SUCCESS) {
    assert_int_equal(b, SENTINEL32);
    assert_int_equal(g, SENTINEL32);
  }
  return s;
}

static t4a_status call_launch(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel.id = MAKE_ID(KIND_KERNEL, 1, 1);
  return t4a_launch(rt, &d);
}

static t4a_status call_launch_ex(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  d.kernel.id = MAKE_ID(KIND_KERNEL, 1, 1);
  a.cluster[0] = 2;
  return t4a_launch_ex(rt, &d, &a);
}

static t4a_status call_kernel_cluster_occupancy(uint64_t id) {
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  t4a_cluster_occupancy o = T4A_CLUSTER_OCCUPANCY_INIT;
  d.kernel.id = id;
  d.grid[0] = 2;
  d.block[0] = 128;
  o.max_active_clusters = SENTINEL32;
  t4a_status s = t4a_kernel_cluster_occupancy(&d, NULL, &o);
  if (s != T4A_SUCCESS) assert_int_equal(o.max_active_clusters, SENTINEL32);
  return s;
}

static t4a_status call_runtime_record(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_completion c = {SENTINEL_ID};
  t4a_status s = t4a_runtime_record(rt, &c);
  if (s != T4A_SUCCESS) assert_int_equal(c.id, SENTINEL_ID);
  return s;
}

static t4a_status call_runtime_wait(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_completion c = {MAKE_ID(KIND_COMPLETION, 1, 1)};
  return t4a_runtime_wait(rt, c);
}

static t4a_status call_completion_poll(uint64_t id) {
  t4a_completion c = {id};
  return t4a_completion_poll(c);
}

static t4a_status call_completion_wait(uint64_t id) {
  t4a_completion c = {id};
  return t4a_completion_wait(c);
}

static t4a_status call_completion_retain(uint64_t id) {
  t4a_completion c = {id};
  return t4a_completion_retain(c);
}

static t4a_status call_completion_release(uint64_t id) {
  t4a_completion c = {id};
  return t4a_completion_release(c);
}

static t4a_status call_raw_begin(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_raw_scope scope = {SENTINEL_ID};
  t4a_raw_info info, copy;
  t4a_status s;
  memset(&info, 0x5A, sizeof info);
  info.struct_size = sizeof info;
  memcpy(&copy, &info, sizeof info);
  s = t4a_raw_begin(rt, &scope, &info);
  if (s != T4A_SUCCESS) {
    assert_int_equal(scope.id, SENTINEL_ID);
    assert_memory_equal(&info, &copy, sizeof info);
  }
  return s;
}

static t4a_status call_capture_begin(uint64_t id) {
  t4a_runtime rt = {id};
  return t4a_capture_begin(rt, NULL);
}

static t4a_status call_capture_end(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_graph g = {SENTINEL_ID};
  t4a_status s = t4a_capture_end(rt, &g);
  if (s != T4A_SUCCESS) assert_int_equal(g.id, SENTINEL_ID);
  return s;
}

static t4a_status call_graph_launch(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_graph g = {0};
  return t4a_graph_launch(rt, g);
}

static t4a_status call_graph_retain(uint64_t id) {
  t4a_graph g = {id};
  return t4a_graph_retain(g);
}

static t4a_status call_graph_release(uint64_t id) {
  t4a_graph g = {id};
  return t4a_graph_release(g);
}

static t4a_status call_graph_info_get(uint64_t id) {
  t4a_graph g = {id};
  t4a_graph_info info, copy;
  t4a_status s;
  memset(&info, 0x5A, sizeof info);
  info.struct_size = sizeof info;
  memcpy(&copy, &info, sizeof info);
  s = t4a_graph_info_get(g, &info);
  if (s != T4A_SUCCESS) assert_memory_equal(&info, &copy, sizeof info);
  return s;
}

static t4a_status call_raw_buffer(uint64_t id) {
  t4a_raw_scope scope = {id};
  t4a_buffer b = {FORGED_BUFFER_A};
  uint64_t p = SENTINEL_ID;
  t4a_status s = t4a_raw_buffer(scope, b, &p);
  if (s != T4A_SUCCESS) assert_int_equal(p, SENTINEL_ID);
  return s;
}

static t4a_status call_raw_end(uint64_t id) {
  t4a_raw_scope scope = {id};
  return t4a_raw_end(scope);
}

static t4a_status call_runtime_wait_stream(uint64_t id) {
  t4a_runtime rt = {id};
  return t4a_runtime_wait_stream(rt, NULL);
}

static t4a_status call_runtime_signal_stream(uint64_t id) {
  t4a_runtime rt = {id};
  return t4a_runtime_signal_stream(rt, NULL);
}

/* -- testing-only -- */

#if defined(T4A_TEST_HAVE_TESTING)
static void check_testing_fault_arm(void) {
  assert_int_equal(
      t4a_testing_fault_arm("cuInit", 1, 999, T4A_TESTING_FAULT_INSTEAD),
      T4A_SUCCESS);
  assert_int_equal(
      t4a_testing_fault_arm("cuNoSuchEntry", 1, 999, T4A_TESTING_FAULT_INSTEAD),
      T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(
      t4a_testing_fault_arm("cuInit", 0, 999, T4A_TESTING_FAULT_INSTEAD),
      T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(t4a_testing_fault_arm("cuInit", 1, 999, 0),
                   T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(t4a_testing_fault_arm(NULL, 1, 999, T4A_TESTING_FAULT_AFTER),
                   T4A_ERROR_INVALID_ARGUMENT);
  t4a_testing_fault_reset();
}

static void check_testing_fault_reset(void) {
  int32_t n;
  t4a_testing_count_calls(1);
  (void)t4a_device_count(&n);
  t4a_testing_fault_reset();
  assert_int_equal(t4a_testing_call_count("cuDeviceGetCount"), 0);
  assert_int_equal(t4a_testing_call_count("cuInit"), 0);
}

static void check_testing_count_calls(void) {
  int32_t n;
  t4a_testing_fault_reset();
  t4a_testing_count_calls(1);
  /* Without a driver no driver entry point is ever called. */
  expect_no_driver(t4a_device_count(&n), "t4a_device_count");
  assert_int_equal(t4a_testing_call_count("cuDeviceGetCount"), 0);
  t4a_testing_count_calls(0);
  t4a_testing_fault_reset();
}

static void check_testing_call_count(void) {
  t4a_testing_fault_reset();
  assert_int_equal(t4a_testing_call_count("cuInit"), 0);
  assert_int_equal(t4a_testing_call_count("cuStreamSynchronize"), 0);
  assert_int_equal(t4a_testing_call_count("cuNoSuchEntry"), -1);
  assert_int_equal(t4a_testing_call_count(NULL), -1);
}

static int g_hook_calls;
static void count_hook(void *arg) { *(int *)arg += 1; }
static void check_testing_admission_hook(void) {
  /* no runtime exists without a driver: installing and removing is all */
  t4a_testing_admission_hook(count_hook, &g_hook_calls);
  t4a_testing_admission_hook(NULL, NULL);
  assert_int_equal(g_hook_calls, 0);
}

static void check_testing_objects(void) {
  uint64_t start = t4a_testing_live_handles();
  uint64_t id = SENTINEL_ID, value = SENTINEL_ID;
  assert_int_equal(t4a_testing_object_create(77, &id), T4A_SUCCESS);
  assert_int_not_equal(id, T4A_NULL_ID);
  assert_int_equal(id >> 56, KIND_TEST_OBJECT);
  assert_int_equal(t4a_testing_live_handles(), start + 1);
  assert_int_equal(t4a_testing_object_value(id, &value), T4A_SUCCESS);
  assert_int_equal(value, 77);
  assert_int_equal(t4a_testing_object_retain(id), T4A_SUCCESS);
  assert_int_equal(t4a_testing_object_release(id), T4A_SUCCESS);
  assert_int_equal(t4a_testing_live_handles(), start + 1);
  assert_int_equal(t4a_testing_object_release(id), T4A_SUCCESS);
  assert_int_equal(t4a_testing_live_handles(), start);
  value = SENTINEL_ID;
  expect_bad_handle(t4a_testing_object_value(id, &value),
                    "t4a_testing_object_value", "object", id);
  assert_int_equal(value, SENTINEL_ID);
  assert_int_equal(t4a_testing_object_value(id, NULL),
                   T4A_ERROR_INVALID_ARGUMENT);
  id = SENTINEL_ID;
  assert_int_equal(t4a_testing_object_create(1, NULL),
                   T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(t4a_testing_live_handles(), start);
}

static t4a_status call_object_retain(uint64_t id) {
  return t4a_testing_object_retain(id);
}

static t4a_status call_object_release(uint64_t id) {
  return t4a_testing_object_release(id);
}

static t4a_status call_object_value(uint64_t id) {
  uint64_t value = SENTINEL_ID;
  t4a_status s = t4a_testing_object_value(id, &value);
  if (s != T4A_SUCCESS) assert_int_equal(value, SENTINEL_ID);
  return s;
}
#endif

/* -- DLPack: the tensor's deleter runs exactly once on every failure -- */

static int g_dl_deleted;
static void dl_delete(DLManagedTensorVersioned *t) {
  (void)t;
  ++g_dl_deleted;
}
static void dl_delete_legacy(DLManagedTensor *t) {
  (void)t;
  ++g_dl_deleted;
}

static t4a_status call_buffer_to_dlpack(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_buffer b = {FORGED_BUFFER_A};
  DLManagedTensorVersioned *sentinel = (DLManagedTensorVersioned *)&rt;
  DLManagedTensorVersioned *out = sentinel;
  t4a_status s = t4a_buffer_to_dlpack(rt, b, NULL, -1, &out);
  if (s != T4A_SUCCESS) assert_ptr_equal(out, sentinel);
  return s;
}

static t4a_status call_buffer_to_dlpack_legacy(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_buffer b = {FORGED_BUFFER_A};
  DLManagedTensor *sentinel = (DLManagedTensor *)&rt;
  DLManagedTensor *out = sentinel;
  t4a_status s = t4a_buffer_to_dlpack_legacy(rt, b, NULL, 1, &out);
  if (s != T4A_SUCCESS) assert_ptr_equal(out, sentinel);
  return s;
}

static t4a_status call_buffer_from_dlpack(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_buffer out = {SENTINEL_ID};
  DLManagedTensorVersioned t;
  memset(&t, 0, sizeof t);
  t.version.major = 1;
  t.deleter = dl_delete;
  int before = g_dl_deleted;
  t4a_status s = t4a_buffer_from_dlpack(rt, &t, &out);
  if (s != T4A_SUCCESS) {
    assert_int_equal(out.id, SENTINEL_ID);
    assert_int_equal(g_dl_deleted, before + 1);
  }
  return s;
}

static t4a_status call_buffer_from_dlpack_legacy(uint64_t id) {
  t4a_runtime rt = {id};
  t4a_buffer out = {SENTINEL_ID};
  DLManagedTensor t;
  memset(&t, 0, sizeof t);
  t.deleter = dl_delete_legacy;
  int before = g_dl_deleted;
  t4a_status s = t4a_buffer_from_dlpack_legacy(rt, &t, &out);
  if (s != T4A_SUCCESS) {
    assert_int_equal(out.id, SENTINEL_ID);
    assert_int_equal(g_dl_deleted, before + 1);
  }
  return s;
}

#define ROW(name, cat, check)                                                  \
  { #name, cat, check, NULL, 0, NULL, 0 }
#define RUNTIME_ROW(verb, null_ok)                                             \
  {                                                                            \
    "t4a_runtime_" #verb, HANDLE_FIRST, NULL, call_runtime_##verb,             \
        KIND_RUNTIME, "runtime", null_ok                                       \
  }
/* A function whose handle argument `arg` (of kind `kind`) is checked
 * first; `fn` is its name without the t4a_ prefix. */
#define HANDLE_ROW(fn, kind, arg, null_ok)                                     \
  { "t4a_" #fn, HANDLE_FIRST, NULL, call_##fn, kind, arg, null_ok }

static const row k_rows[] = {
    /* versions and status names */
    ROW(t4a_version, CONTEXT_FREE, check_version),
    ROW(t4a_version_string, CONTEXT_FREE, check_version_string),
    ROW(t4a_built_cuda_version, CONTEXT_FREE, check_built_cuda_version),
    ROW(t4a_status_name, CONTEXT_FREE, check_status_name),
    ROW(t4a_status_description, CONTEXT_FREE, check_status_description),
    /* last error and logging */
    ROW(t4a_last_error, CONTEXT_FREE, check_last_error),
    ROW(t4a_last_error_message, CONTEXT_FREE, check_last_error_message),
    ROW(t4a_last_error_clear, CONTEXT_FREE, check_last_error_clear),
    ROW(t4a_set_log_callback, CONTEXT_FREE, check_set_log_callback),
    /* driver, compiler, devices */
    ROW(t4a_nvrtc_version, CONTEXT_FREE, check_nvrtc_version),
    ROW(t4a_driver_version, NEEDS_DRIVER, check_driver_version),
    ROW(t4a_driver_lacks, NEEDS_DRIVER, check_driver_lacks),
    ROW(t4a_device_count, NEEDS_DRIVER, check_device_count),
    ROW(t4a_device_info_get, NEEDS_DRIVER, check_device_info_get),
    ROW(t4a_device_can_access_peer, NEEDS_DRIVER, check_device_can_access_peer),
    /* runtimes */
    ROW(t4a_runtime_create, NEEDS_DRIVER, check_runtime_create),
    RUNTIME_ROW(destroy, 1),
    RUNTIME_ROW(synchronize, 0),
    RUNTIME_ROW(trim, 0),
    RUNTIME_ROW(info_get, 0),
    RUNTIME_ROW(stats_get, 0),
    RUNTIME_ROW(enable_peer, 0),
    /* device buffers */
    HANDLE_ROW(buffer_alloc, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(buffer_retain, KIND_BUFFER, "buffer", 0),
    HANDLE_ROW(buffer_release, KIND_BUFFER, "buffer", 1),
    HANDLE_ROW(buffer_info_get, KIND_BUFFER, "buffer", 0),
    HANDLE_ROW(buffer_fill, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(buffer_copy, KIND_RUNTIME, "runtime", 0),
    /* host transfers and pending downloads */
    HANDLE_ROW(buffer_upload, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(buffer_download, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(buffer_download_sync, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(download_poll, KIND_DOWNLOAD, "download", 0),
    HANDLE_ROW(download_wait, KIND_DOWNLOAD, "download", 0),
    HANDLE_ROW(download_size, KIND_DOWNLOAD, "download", 0),
    HANDLE_ROW(download_release, KIND_DOWNLOAD, "download", 1),
    /* host buffers */
    HANDLE_ROW(host_buffer_alloc, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(host_buffer_retain, KIND_HOST_BUFFER, "host_buffer", 0),
    HANDLE_ROW(host_buffer_release, KIND_HOST_BUFFER, "host_buffer", 1),
    HANDLE_ROW(host_buffer_pointer, KIND_HOST_BUFFER, "host_buffer", 0),
    HANDLE_ROW(buffer_upload_host, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(buffer_download_host, KIND_RUNTIME, "runtime", 0),
    /* compile and artifacts */
    ROW(t4a_compile, CONTEXT_FREE, check_compile),
    ROW(t4a_last_compile_log, CONTEXT_FREE, check_last_compile_log),
    ROW(t4a_toolkit_headers, CONTEXT_FREE, check_toolkit_headers),
    ROW(t4a_compile_stats_get, CONTEXT_FREE, check_compile_stats_get),
    HANDLE_ROW(artifact_retain, KIND_ARTIFACT, "artifact", 0),
    HANDLE_ROW(artifact_release, KIND_ARTIFACT, "artifact", 1),
    HANDLE_ROW(artifact_info_get, KIND_ARTIFACT, "artifact", 0),
    HANDLE_ROW(artifact_image, KIND_ARTIFACT, "artifact", 0),
    HANDLE_ROW(artifact_log, KIND_ARTIFACT, "artifact", 0),
    HANDLE_ROW(artifact_lowered_name, KIND_ARTIFACT, "artifact", 0),
    HANDLE_ROW(artifact_lowered_name_of, KIND_ARTIFACT, "artifact", 0),
    HANDLE_ROW(artifact_key, KIND_ARTIFACT, "artifact", 0),
    /* modules, kernels, launches, completions */
    HANDLE_ROW(module_load, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(module_load_data, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(module_retain, KIND_MODULE, "module", 0),
    HANDLE_ROW(module_release, KIND_MODULE, "module", 1),
    HANDLE_ROW(kernel_get, KIND_MODULE, "module", 0),
    HANDLE_ROW(module_global, KIND_MODULE, "module", 0),
    HANDLE_ROW(kernel_retain, KIND_KERNEL, "kernel", 0),
    HANDLE_ROW(kernel_release, KIND_KERNEL, "kernel", 1),
    HANDLE_ROW(kernel_info_get, KIND_KERNEL, "kernel", 0),
    HANDLE_ROW(kernel_param, KIND_KERNEL, "kernel", 0),
    HANDLE_ROW(kernel_occupancy, KIND_KERNEL, "kernel", 0),
    HANDLE_ROW(kernel_suggest_block_size, KIND_KERNEL, "kernel", 0),
    HANDLE_ROW(kernel_max_cooperative_blocks, KIND_KERNEL, "kernel", 0),
    HANDLE_ROW(kernel_declare_barrier, KIND_KERNEL, "kernel", 0),
    HANDLE_ROW(kernel_barrier_audit, KIND_KERNEL, "kernel", 0),
    HANDLE_ROW(launch, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(launch_ex, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(kernel_cluster_occupancy, KIND_KERNEL, "desc->kernel", 0),
    HANDLE_ROW(runtime_record, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(runtime_wait, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(completion_poll, KIND_COMPLETION, "completion", 0),
    HANDLE_ROW(completion_wait, KIND_COMPLETION, "completion", 0),
    HANDLE_ROW(completion_retain, KIND_COMPLETION, "completion", 0),
    HANDLE_ROW(completion_release, KIND_COMPLETION, "completion", 1),
    /* DLPack (t4acuda_dlpack.h) */
    HANDLE_ROW(buffer_to_dlpack, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(buffer_to_dlpack_legacy, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(buffer_from_dlpack, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(buffer_from_dlpack_legacy, KIND_RUNTIME, "runtime", 0),
    /* raw seam */
    HANDLE_ROW(raw_begin, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(raw_buffer, KIND_RAW_SCOPE, "scope", 0),
    HANDLE_ROW(raw_end, KIND_RAW_SCOPE, "scope", 0),
    HANDLE_ROW(runtime_wait_stream, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(runtime_signal_stream, KIND_RUNTIME, "runtime", 0),
    /* graphs (experimental) */
    HANDLE_ROW(capture_begin, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(capture_end, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(graph_launch, KIND_RUNTIME, "runtime", 0),
    HANDLE_ROW(graph_retain, KIND_GRAPH, "graph", 0),
    HANDLE_ROW(graph_release, KIND_GRAPH, "graph", 1),
    HANDLE_ROW(graph_info_get, KIND_GRAPH, "graph", 0),
    /* process-wide counters */
    ROW(t4a_process_stats_get, CONTEXT_FREE, check_process_stats_get),
    ROW(t4a_process_fault_get, CONTEXT_FREE, check_process_fault_get),
#if defined(T4A_TEST_HAVE_TESTING)
    /* test-only entry points */
    ROW(t4a_testing_fault_arm, TESTING_ONLY, check_testing_fault_arm),
    ROW(t4a_testing_fault_reset, TESTING_ONLY, check_testing_fault_reset),
    ROW(t4a_testing_count_calls, TESTING_ONLY, check_testing_count_calls),
    ROW(t4a_testing_call_count, TESTING_ONLY, check_testing_call_count),
    ROW(t4a_testing_object_create, TESTING_ONLY, check_testing_objects),
    {"t4a_testing_object_retain", TESTING_ONLY, check_testing_objects,
     call_object_retain, KIND_TEST_OBJECT, "object", 0},
    {"t4a_testing_object_release", TESTING_ONLY, check_testing_objects,
     call_object_release, KIND_TEST_OBJECT, "object", 1},
    {"t4a_testing_object_value", TESTING_ONLY, check_testing_objects,
     call_object_value, KIND_TEST_OBJECT, "object", 0},
    ROW(t4a_testing_live_handles, TESTING_ONLY, check_testing_objects),
    ROW(t4a_testing_admission_hook, TESTING_ONLY, check_testing_admission_hook),
#endif
};
#define ROW_COUNT (sizeof k_rows / sizeof k_rows[0])

/* ---- exports vs rows ---------------------------------------------------- */

#define MAX_SYMBOLS 512
static t4a_test_symbol g_symbols[MAX_SYMBOLS];
static long g_symbol_count = -1;

static void load_exports(void) {
  char why[1024];
  if (g_symbol_count >= 0) return;
  g_symbol_count = t4a_test_read_dynamic_symbols(
      T4A_TEST_LIBRARY_PATH, g_symbols, MAX_SYMBOLS, why, sizeof why);
  if (g_symbol_count < 0) fail_msg("cannot list the exports: %s", why);
  if (g_symbol_count > MAX_SYMBOLS)
    fail_msg("%ld symbols: raise MAX_SYMBOLS", g_symbol_count);
}

static int is_exported_function(const char *name) {
  long i;
  for (i = 0; i < g_symbol_count; ++i)
    if (g_symbols[i].type == 'T' && strcmp(g_symbols[i].name, name) == 0)
      return 1;
  return 0;
}

static const row *find_row(const char *name) {
  size_t i;
  for (i = 0; i < ROW_COUNT; ++i)
    if (strcmp(k_rows[i].name, name) == 0) return &k_rows[i];
  return NULL;
}

static void test_every_export_has_a_row(void **state) {
  int missing = 0, functions = 0;
  long i;
  (void)state;
  load_exports();
  for (i = 0; i < g_symbol_count; ++i) {
    if (g_symbols[i].type != 'T') continue;
    ++functions;
    if (find_row(g_symbols[i].name) == NULL) {
      print_error("exported %s has no row in %s\n", g_symbols[i].name,
                  __FILE__);
      ++missing;
    }
  }
  assert_true(is_exported_function("t4a_version")); /* nm really worked */
  assert_true(functions > 0);
  assert_int_equal(missing, 0);
}

static void test_every_row_is_exported(void **state) {
  int has_testing = 0, stray = 0;
  long i;
  size_t r;
  (void)state;
  load_exports();
  for (i = 0; i < g_symbol_count; ++i)
    if (t4a_test_starts_with(g_symbols[i].name, "t4a_testing_"))
      has_testing = 1;
  for (r = 0; r < ROW_COUNT; ++r) {
    const row *w = &k_rows[r];
    if (is_exported_function(w->name)) continue;
    if (w->cat == TESTING_ONLY && !has_testing) continue;
    print_error("row %s names a function the library does not export\n",
                w->name);
    ++stray;
  }
  for (r = 0; r < ROW_COUNT; ++r) /* one row per function */
    assert_ptr_equal(find_row(k_rows[r].name), &k_rows[r]);
  assert_int_equal(stray, 0);
}

/* ---- per-row tests ------------------------------------------------------ */

/* A forged id of the row's kind: without a driver no runtime can exist,
 * nor any buffer, host buffer or download (each needs a runtime). */
#define FORGED_OF_KIND(kind) MAKE_ID(kind, 1, 0)

static void run_no_driver_row(void **state) {
  const row *w = *state;
  switch (w->cat) {
  case NEEDS_DRIVER:
  case CONTEXT_FREE:
  case TESTING_ONLY: w->check(); break;
  case HANDLE_FIRST:
    expect_bad_handle(w->with_handle(FORGED_OF_KIND(w->kind)), w->name, w->arg,
                      FORGED_OF_KIND(w->kind));
    break;
  }
}

static uint64_t g_rng = UINT64_C(0x9E3779B97F4A7C15);
static uint64_t next_random(void) { /* xorshift64: fixed, reproducible */
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

static void expect_rejected(const row *w, uint64_t id) {
  expect_bad_handle(w->with_handle(id), w->name, w->arg, id);
}

static void expect_rejected_why(const row *w, uint64_t id, const char *why) {
  expect_bad_handle_why(w->with_handle(id), w->name, w->arg, id, why);
}

static const uint8_t k_kinds[] = {
    KIND_RUNTIME, KIND_BUFFER, KIND_HOST_BUFFER, KIND_DOWNLOAD,   KIND_ARTIFACT,
    KIND_MODULE,  KIND_KERNEL, KIND_COMPLETION,  KIND_TEST_OBJECT};

typedef struct forged_id {
  uint64_t id;
  const char *why; /* NULL where the reason depends on the registry's state */
} forged_id;

static void run_handle_row(void **state) {
  const row *w = *state;
  const forged_id forged[] = {
      {UINT64_C(0xFFFFFFFFFFFFFFFF), NULL},
      {UINT64_C(0x0000000100000000), WHY_KIND}, /* kind 0 */
      {MAKE_ID(0x7F, 1, 0), WHY_KIND},          /* no such kind */
      /* generation 0 is never issued */
      {MAKE_ID(w->kind, 0, 0), WHY_UNKNOWN},
      {MAKE_ID(w->kind, 0, 5), WHY_UNKNOWN},
      {MAKE_ID(w->kind, 1, 0), NULL},
      {MAKE_ID(w->kind, 1, 0x7FFFFFFF), WHY_UNKNOWN}, /* no such slot */
      {MAKE_ID(w->kind, 0xFFFFFF, 0), NULL},
      {MAKE_ID(w->kind, 0xFFFFFF, 0xFFFFFFFF), WHY_UNKNOWN},
      {MAKE_ID(w->kind, 2, 0xFFFFFFFF), WHY_UNKNOWN},
      {MAKE_ID(w->kind, 0x123456, 3), NULL},
  };
  uint64_t base_live = 0;
  size_t k;
  int i;

  /* null */
  {
    t4a_status s;
    t4a_last_error_clear();
    s = w->with_handle(T4A_NULL_ID);
    if (w->null_ok) {
      t4a_error_info info;
      char message[2048];
      assert_int_equal(s, T4A_SUCCESS);
      read_last(&info, message, sizeof message); /* nothing recorded */
      assert_int_equal(info.status, T4A_SUCCESS);
      assert_string_equal(message, "");
    } else {
      expect_bad_handle_why(s, w->name, w->arg, T4A_NULL_ID, WHY_NULL);
    }
  }
  /* forged, fixed and random (with any kind byte and with this kind) */
  for (k = 0; k < sizeof forged / sizeof forged[0]; ++k)
    expect_rejected_why(w, forged[k].id, forged[k].why);
  /* ids of every other kind: a buffer id given as a host buffer, ... */
  for (k = 0; k < sizeof k_kinds; ++k) {
    if (k_kinds[k] == w->kind) continue;
    expect_rejected_why(w, MAKE_ID(k_kinds[k], 1, 0), WHY_KIND);
    expect_rejected_why(w, MAKE_ID(k_kinds[k], 1, 1), WHY_KIND);
    expect_rejected_why(w, MAKE_ID(k_kinds[k], 7, 0x1234), WHY_KIND);
  }
  for (i = 0; i < 64; ++i) {
    uint64_t id = next_random();
    if (id == T4A_NULL_ID) continue;
    expect_rejected(w, id);
    expect_rejected(w, WITH_KIND(id, w->kind));
  }

#if defined(T4A_TEST_HAVE_TESTING)
  base_live = t4a_testing_live_handles();
  {
    uint64_t live = 0, gone = 0, reused = 0, value = 0;
    /* A live object this row must not disturb. */
    assert_int_equal(t4a_testing_object_create(1001, &live), T4A_SUCCESS);
    /* A released one. */
    assert_int_equal(t4a_testing_object_create(1002, &gone), T4A_SUCCESS);
    assert_int_equal(t4a_testing_object_release(gone), T4A_SUCCESS);
    /* Another object, most likely in the released one's slot (the
     * registry reuses slots): the old id must stay stale. */
    assert_int_equal(t4a_testing_object_create(1003, &reused), T4A_SUCCESS);
    assert_int_not_equal(reused, gone);

    if (w->kind != KIND_TEST_OBJECT) {
      /* Real handles of another kind, live or not. */
      expect_rejected_why(w, live, WHY_KIND);
      expect_rejected_why(w, gone, WHY_KIND);
      expect_rejected_why(w, reused, WHY_KIND);
      /* Their ids with the kind byte rewritten to this kind: a live slot
       * holding an object of another kind, a released slot. */
      expect_rejected(w, WITH_KIND(live, w->kind));
      expect_rejected_why(w, WITH_KIND(gone, w->kind), WHY_STALE);
      expect_rejected(w, WITH_KIND(reused, w->kind));
      /* A generation the live slot has not reached yet. */
      expect_rejected_why(w, WITH_KIND(live, w->kind) + (UINT64_C(1) << 32),
                          WHY_UNKNOWN);
    } else {
      expect_rejected_why(w, gone, WHY_STALE); /* released */
      for (k = 0; k < sizeof k_kinds; ++k)     /* another kind */
        if (k_kinds[k] != KIND_TEST_OBJECT) {
          expect_rejected_why(w, WITH_KIND(live, k_kinds[k]), WHY_KIND);
          expect_rejected_why(w, WITH_KIND(reused, k_kinds[k]), WHY_KIND);
        }
      expect_rejected_why(w, live + (UINT64_C(1) << 32), /* future gen. */
                          WHY_UNKNOWN);
    }
    /* Nothing was disturbed: the live objects still hold their values and
     * exactly one handle reference each. */
    assert_int_equal(t4a_testing_object_value(live, &value), T4A_SUCCESS);
    assert_int_equal(value, 1001);
    assert_int_equal(t4a_testing_object_value(reused, &value), T4A_SUCCESS);
    assert_int_equal(value, 1003);
    assert_int_equal(t4a_testing_object_release(live), T4A_SUCCESS);
    assert_int_equal(t4a_testing_object_release(reused), T4A_SUCCESS);
    assert_int_equal(t4a_testing_object_value(live, &value),
                     T4A_ERROR_INVALID_HANDLE);
    assert_int_equal(t4a_testing_object_value(reused, &value),
                     T4A_ERROR_INVALID_HANDLE);
    /* Released ids stay rejected by this row too, rewritten to its kind. */
    expect_rejected_why(w, WITH_KIND(live, w->kind), WHY_STALE);
    expect_rejected_why(w, WITH_KIND(reused, w->kind), WHY_STALE);
  }
  assert_int_equal(t4a_testing_live_handles(), base_live);
#else
  (void)base_live;
#endif
}

/* ---- main --------------------------------------------------------------- */

static void test_runs_without_driver(void **state) {
  const char *v = getenv("T4A_CUDA_DRIVER_PATH");
  (void)state;
  assert_non_null(v);
  assert_string_equal(v, DRIVER_PATH);
}

int main(void) {
  static struct CMUnitTest no_driver[ROW_COUNT];
  static struct CMUnitTest handles[ROW_COUNT];
  static char names[ROW_COUNT][160];
  const struct CMUnitTest coverage[] = {
      cmocka_unit_test(test_runs_without_driver),
      cmocka_unit_test(test_every_export_has_a_row),
      cmocka_unit_test(test_every_row_is_exported),
  };
  size_t i, n_handles = 0;
  int failed = 0;

  /* Before any t4acuda call: no driver can be loaded from here. */
  if (setenv("T4A_CUDA_DRIVER_PATH", DRIVER_PATH, 1) != 0) return 1;

  for (i = 0; i < ROW_COUNT; ++i) {
    no_driver[i].name = k_rows[i].name;
    no_driver[i].test_func = run_no_driver_row;
    no_driver[i].initial_state = (void *)&k_rows[i];
    if (k_rows[i].with_handle != NULL) {
      snprintf(names[n_handles], sizeof names[n_handles], "%s (bad handles)",
               k_rows[i].name);
      handles[n_handles].name = names[n_handles];
      handles[n_handles].test_func = run_handle_row;
      handles[n_handles].initial_state = (void *)&k_rows[i];
      ++n_handles;
    }
  }
  failed += cmocka_run_group_tests_name("exports", coverage, NULL, NULL);
  /* cmocka_run_group_tests_name takes an array of fixed size; these are
   * filled at run time, so call the function it expands to. */
  failed +=
      _cmocka_run_group_tests("no_driver", no_driver, ROW_COUNT, NULL, NULL);
  failed += _cmocka_run_group_tests("handles", handles, n_handles, NULL, NULL);
  return failed == 0 ? 0 : 1;
}
