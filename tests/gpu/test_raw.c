/*
 * GPU lane: the raw seam (docs/raw-seam.md) on a real device. Raw work is
 * cuMemsetD32Async through the test's own libcuda (dlopen, never linked)
 * on the scope's stream.
 *   - ordering with the runtime's own work, verified by data: an upload
 *     before the scope is overwritten by the raw memset, a fill after the
 *     scope overwrites part of it;
 *   - a buffer released right after end is kept until the raw work is done
 *     (the memcheck run of the lane catches a use after free), and a
 *     buffer allocated next reads back exactly what was uploaded;
 *   - the context current before begin (a separate context) is current
 *     again after end;
 *   - t4a_runtime_signal_stream / t4a_runtime_wait_stream with a stream
 *     the test creates: upload -> memset on that stream -> download, data
 *     verified.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_support.h"
#include "t4acuda.h"
#include "test_assert.h"

typedef CUresult (*memset_d32_fn)(CUdeviceptr, unsigned, size_t, CUstream);
typedef CUresult (*stream_create_fn)(CUstream *, unsigned);
typedef CUresult (*stream_destroy_fn)(CUstream);
static memset_d32_fn g_memset_d32;
static stream_create_fn g_stream_create;
static stream_destroy_fn g_stream_destroy;

static void *entry(const char *name) {
  typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                             CUdriverProcAddressQueryResult *);
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) fail_msg("dlopen libcuda.so.1: %s", dlerror());
  gpa_fn gpa = (gpa_fn)dlsym(lib, "cuGetProcAddress_v2");
  void *fn = NULL;
  if (gpa == NULL || gpa(name, &fn, CUDA_VERSION, 0, NULL) != CUDA_SUCCESS ||
      fn == NULL)
    fail_msg("libcuda.so.1 does not give %s", name);
  return fn;
}

#define CU_OK(call)                                                            \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    if (r_ != CUDA_SUCCESS)                                                    \
      fail_msg("%s returned %s", #call, gpu_error_name(r_));                   \
  } while (0)

static t4a_runtime make_runtime(void) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime rt;
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  return rt;
}

/* Words [from, to) of `got` equal `want`; prints the first difference. */
static void expect_words(const uint32_t *got, size_t from, size_t to,
                         uint32_t want, const char *what) {
  for (size_t i = from; i < to; ++i)
    if (got[i] != want)
      fail_msg("%s: word %zu is 0x%08x, expected 0x%08x (words %zu..%zu "
               "should all be that)",
               what, i, got[i], want, from, to);
}

static void test_ordering(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime();
  const size_t n = (size_t)16 << 20; /* 64 MiB of words */
  uint32_t *host = malloc(n * 4);
  assert_non_null(host);
  for (size_t i = 0; i < n; ++i) host[i] = 0xAAAAAAAAu;
  t4a_buffer b;
  ASSERT_OK(t4a_buffer_alloc(rt, n * 4, 0, &b));
  ASSERT_OK(t4a_buffer_upload(rt, b, 0, host, n * 4)); /* before the scope */
  t4a_raw_scope s;
  t4a_raw_info info = T4A_RAW_INFO_INIT;
  ASSERT_OK(t4a_raw_begin(rt, &s, &info));
  uint64_t p = 0;
  ASSERT_OK(t4a_raw_buffer(s, b, &p));
  CU_OK(g_memset_d32((CUdeviceptr)p, 0x3F800000u, n, (CUstream)info.stream));
  ASSERT_OK(t4a_raw_end(s));
  ASSERT_OK(t4a_buffer_fill(rt, b, 0, 4096, 0x00)); /* after the scope */
  ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, host, n * 4));
  expect_words(host, 0, 1024, 0, "the fill after the scope");
  expect_words(host, 1024, n, 0x3F800000u,
               "the raw memset (after the upload, before the fill)");
  ASSERT_OK(t4a_buffer_release(b));
  free(host);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

static void test_release_after_end(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime();
  const size_t n = (size_t)64 << 20; /* 256 MiB of words */
  t4a_buffer b, c;
  ASSERT_OK(t4a_buffer_alloc(rt, n * 4, 0, &b));
  t4a_runtime_stats st0 = T4A_RUNTIME_STATS_INIT, st1 = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(rt, &st0));
  t4a_raw_scope s;
  t4a_raw_info info = T4A_RAW_INFO_INIT;
  ASSERT_OK(t4a_raw_begin(rt, &s, &info));
  uint64_t p = 0;
  ASSERT_OK(t4a_raw_buffer(s, b, &p));
  for (int k = 0; k < 20; ++k) /* queue enough work to still run later */
    CU_OK(g_memset_d32((CUdeviceptr)p, 0x11111111u * (unsigned)(k % 15 + 1), n,
                       (CUstream)info.stream));
  ASSERT_OK(t4a_raw_end(s));
  ASSERT_OK(t4a_buffer_release(b)); /* right after end */
  ASSERT_OK(t4a_runtime_stats_get(rt, &st1));
  if (st1.open_epoch_items < st0.open_epoch_items + 1)
    fail_msg("the registered buffer is not kept by the open epoch (%" PRIu64
             " items, %" PRIu64 " before)",
             st1.open_epoch_items, st0.open_epoch_items);
  /* The next allocation reads back exactly what is uploaded into it. */
  uint32_t *host = malloc(n * 4);
  assert_non_null(host);
  for (size_t i = 0; i < n; ++i) host[i] = (uint32_t)i * 2654435761u;
  ASSERT_OK(t4a_buffer_alloc(rt, n * 4, 0, &c));
  ASSERT_OK(t4a_buffer_upload(rt, c, 0, host, n * 4));
  uint32_t *back = malloc(n * 4);
  assert_non_null(back);
  ASSERT_OK(t4a_buffer_download_sync(rt, c, 0, back, n * 4));
  for (size_t i = 0; i < n; ++i)
    if (back[i] != host[i])
      fail_msg("word %zu of the buffer allocated after the release is "
               "0x%08x, uploaded 0x%08x: raw work wrote freed memory",
               i, back[i], host[i]);
  ASSERT_OK(t4a_buffer_release(c));
  free(host);
  free(back);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

static void test_context_restored(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime();
  t4a_runtime_info ri = T4A_RUNTIME_INFO_INIT;
  ASSERT_OK(t4a_runtime_info_get(rt, &ri));
  CUcontext mine = gpu_context_create(0); /* current now */
  gpu_set_current(mine);
  t4a_raw_scope s;
  t4a_raw_info info = T4A_RAW_INFO_INIT;
  ASSERT_OK(t4a_raw_begin(rt, &s, &info));
  if (gpu_current() != (CUcontext)ri.context)
    fail_msg("inside the scope %p is current, not the runtime's context %p",
             (void *)gpu_current(), ri.context);
  /* REENTRANT on the same runtime, with the raw scope named. */
  ASSERT_STATUS(t4a_runtime_synchronize(rt), T4A_ERROR_REENTRANT);
  ASSERT_MESSAGE_HAS("raw scope");
  ASSERT_OK(t4a_raw_end(s));
  if (gpu_current() != mine)
    fail_msg("after t4a_raw_end %p is current, not the caller's %p",
             (void *)gpu_current(), (void *)mine);
  gpu_set_current(NULL);
  gpu_context_destroy(mine);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

static void test_external_stream(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime();
  t4a_runtime_info ri = T4A_RUNTIME_INFO_INIT;
  ASSERT_OK(t4a_runtime_info_get(rt, &ri));
  const size_t n = (size_t)16 << 20;
  CUstream user = NULL;
  gpu_set_current((CUcontext)ri.context);
  CU_OK(g_stream_create(&user, CU_STREAM_NON_BLOCKING));
  gpu_set_current(NULL);
  uint32_t *host = malloc(n * 4);
  assert_non_null(host);
  for (size_t i = 0; i < n; ++i) host[i] = 0x5A5A5A5Au;
  t4a_buffer b;
  t4a_buffer_info bi = T4A_BUFFER_INFO_INIT;
  ASSERT_OK(t4a_buffer_alloc(rt, n * 4, 0, &b));
  ASSERT_OK(t4a_buffer_info_get(b, &bi));
  for (int round = 0; round < 4; ++round) {
    ASSERT_OK(t4a_buffer_upload(rt, b, 0, host, n * 4));
    ASSERT_OK(t4a_runtime_signal_stream(rt, user)); /* user waits for upload */
    gpu_set_current((CUcontext)ri.context);
    CU_OK(g_memset_d32((CUdeviceptr)bi.device_pointer, 0x01020304u + round, n,
                       user));
    gpu_set_current(NULL);
    ASSERT_OK(t4a_runtime_wait_stream(rt, user)); /* rt waits for memset */
    memset(host, 0, n * 4);
    ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, host, n * 4));
    expect_words(host, 0, n, 0x01020304u + round,
                 "the memset on the caller's stream between the upload and "
                 "the download");
    for (size_t i = 0; i < n; ++i) host[i] = 0x5A5A5A5Au;
  }
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  gpu_set_current((CUcontext)ri.context);
  CU_OK(g_stream_destroy(user));
  gpu_set_current(NULL);
  free(host);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

int main(void) {
  gpu_lane_require(1);
  g_memset_d32 = (memset_d32_fn)entry("cuMemsetD32Async");
  g_stream_create = (stream_create_fn)entry("cuStreamCreate");
  g_stream_destroy = (stream_destroy_fn)entry("cuStreamDestroy");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ordering),
      cmocka_unit_test(test_release_after_end),
      cmocka_unit_test(test_context_restored),
      cmocka_unit_test(test_external_stream),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
