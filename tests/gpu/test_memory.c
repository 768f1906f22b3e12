/*
 * GPU lane: device buffers, staging, transfers, pending downloads, host
 * buffers, admission, completion epochs, teardown and the runtime
 * counters. Every round trip compares every byte; counters are checked
 * against exact expected values.
 *
 * Groups (argv[1]): "basic", "faults" (fault injection leaks on purpose, so
 * it runs in its own process), "all"; or "fake-basic" / "fake-faults": the
 * same tests, less those that depend on device timing or need gigabytes,
 * against the fake driver of tests/fake (host lane: CI and sanitizers).
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_support.h"
#include "t4acuda.h"
#include "t4acuda_testing.h"
#include "test_assert.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static void fill_random(unsigned char *p, size_t n, uint64_t seed) {
  uint64_t x = seed ^ g_rng;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = (unsigned char)(x >> 24);
  }
}

/* Compares every byte; reports the first difference. */
static void assert_bytes_equal(const unsigned char *got,
                               const unsigned char *want, size_t n,
                               const char *what) {
  for (size_t i = 0; i < n; ++i)
    if (got[i] != want[i])
      fail_msg("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, n,
               got[i], want[i]);
}

static t4a_runtime make_runtime(uint64_t staging, uint64_t chunk) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  if (staging != 0) o.staging_bytes = staging;
  if (chunk != 0) o.staging_chunk_bytes = chunk;
  t4a_runtime rt = {0};
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  return rt;
}

static t4a_runtime_stats stats_of(t4a_runtime rt) {
  t4a_runtime_stats s = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(rt, &s));
  return s;
}

static t4a_process_stats process_stats(void) {
  t4a_process_stats s = T4A_PROCESS_STATS_INIT;
  ASSERT_OK(t4a_process_stats_get(&s));
  return s;
}

/* ------------------------------------------------------------------------ */

/* Round trips at many sizes and offsets, three ways: pageable upload +
 * synchronous download, pageable upload + pending download, and host
 * buffers both ways. */
static void test_round_trips(void **state) {
  (void)state;
  static const uint64_t sizes[] = {
      0, 1, 255, 256, 4097, (1u << 20) + 3, (64u << 20) + 1};
  static const uint64_t offsets[] = {0, 1, 256, 4099};
  t4a_runtime rt = make_runtime(0, 0);
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; ++si) {
    for (size_t oi = 0; oi < sizeof offsets / sizeof *offsets; ++oi) {
      uint64_t n = sizes[si], off = offsets[oi];
      if (n > (1u << 20) + 3 && oi > 1) continue; /* keep it quick */
      unsigned char *src = malloc(n + 1), *dst = malloc(n + 1);
      assert_non_null(src);
      assert_non_null(dst);
      fill_random(src, n, n * 31 + off);
      t4a_buffer b = {0};
      ASSERT_OK(t4a_buffer_alloc(rt, off + n, 0, &b));
      ASSERT_OK(t4a_buffer_upload(rt, b, off, src, n));
      memset(dst, 0xA5, n + 1);
      ASSERT_OK(t4a_buffer_download_sync(rt, b, off, dst, n));
      assert_bytes_equal(dst, src, n, "upload + download_sync");
      assert_int_equal(dst[n], 0xA5); /* nothing written past the end */

      t4a_download d = {0};
      ASSERT_OK(t4a_buffer_download(rt, b, off, n, &d));
      uint64_t dsize = 0;
      ASSERT_OK(t4a_download_size(d, &dsize));
      assert_int_equal(dsize, n);
      memset(dst, 0x5A, n + 1);
      ASSERT_OK(t4a_download_wait(d, n ? dst : NULL));
      assert_bytes_equal(dst, src, n, "pending download");
      assert_int_equal(dst[n], 0x5A);
      ASSERT_OK(t4a_download_release(d));

      t4a_host_buffer hin = {0}, hout = {0};
      ASSERT_OK(t4a_host_buffer_alloc(rt, n, &hin));
      ASSERT_OK(t4a_host_buffer_alloc(rt, n, &hout));
      void *pin = NULL, *pout = NULL;
      uint64_t hbytes = 1;
      ASSERT_OK(t4a_host_buffer_pointer(hin, &pin, &hbytes));
      assert_int_equal(hbytes, n);
      ASSERT_OK(t4a_host_buffer_pointer(hout, &pout, NULL));
      if (n > 0) {
        memcpy(pin, src, n);
        memset(pout, 0, n);
      }
      t4a_buffer b2 = {0};
      ASSERT_OK(t4a_buffer_alloc(rt, off + n, 0, &b2));
      ASSERT_OK(t4a_buffer_upload_host(rt, b2, off, hin, 0, n));
      ASSERT_OK(t4a_buffer_download_host(rt, b2, off, hout, 0, n));
      ASSERT_OK(t4a_runtime_synchronize(rt));
      if (n > 0) assert_bytes_equal(pout, src, n, "host buffers");
      ASSERT_OK(t4a_host_buffer_release(hin));
      ASSERT_OK(t4a_host_buffer_release(hout));
      ASSERT_OK(t4a_buffer_release(b2));
      ASSERT_OK(t4a_buffer_release(b));
      free(src);
      free(dst);
    }
  }
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* Exact counters for a known sequence of operations. */
static void test_counters_exact(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0, 0);
  t4a_runtime_stats s0 = stats_of(rt);
  assert_int_equal(s0.allocations, 0);
  assert_int_equal(s0.bytes_allocated, 0);
  t4a_buffer a = {0}, b = {0}, z = {0}, e = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, 1000, 0, &a));
  ASSERT_OK(t4a_buffer_alloc(rt, 3000, T4A_BUFFER_ZERO, &b));
  ASSERT_OK(t4a_buffer_alloc(rt, 0, 0, &e)); /* empty: no allocation */
  ASSERT_OK(t4a_buffer_alloc(rt, 5000, 0, &z));
  t4a_runtime_stats s = stats_of(rt);
  assert_int_equal(s.allocations, 3);
  assert_int_equal(s.zero_fills, 1);
  assert_int_equal(s.bytes_allocated, 9000);
  assert_int_equal(s.bytes_allocated_peak, 9000);
  ASSERT_OK(t4a_buffer_release(z));
  s = stats_of(rt);
  assert_int_equal(s.frees, 1); /* counted when the free is enqueued */
  assert_int_equal(s.bytes_allocated, 4000);
  assert_int_equal(s.bytes_allocated_peak, 9000);

  unsigned char buf[1000];
  fill_random(buf, sizeof buf, 7);
  ASSERT_OK(t4a_buffer_upload(rt, a, 0, buf, 1000));
  ASSERT_OK(t4a_buffer_upload(rt, b, 10, buf, 500));
  ASSERT_OK(t4a_buffer_fill(rt, b, 0, 10, 0x33));
  ASSERT_OK(t4a_buffer_copy(rt, b, 1000, a, 0, 1000));
  unsigned char out[3000];
  ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, out, 3000));
  for (int i = 0; i < 10; ++i) assert_int_equal(out[i], 0x33);
  assert_bytes_equal(out + 10, buf, 500, "upload at offset");
  for (int i = 510; i < 1000; ++i) assert_int_equal(out[i], 0); /* ZERO */
  assert_bytes_equal(out + 1000, buf, 1000, "device copy");
  for (int i = 2000; i < 3000; ++i) assert_int_equal(out[i], 0);

  s = stats_of(rt);
  assert_int_equal(s.uploads, 2);
  assert_int_equal(s.bytes_uploaded, 1500);
  assert_int_equal(s.downloads, 1);
  assert_int_equal(s.bytes_downloaded, 3000);
  assert_int_equal(s.fills, 1);
  assert_int_equal(s.device_copies, 1);
  /* One staged download piece: no event (the stream is drained), one
   * host wait. No upload recorded an event (small uploads share the open
   * epoch). */
  assert_int_equal(s.events_recorded, 0);
  assert_int_equal(s.host_waits, 1);
  assert_int_equal(s.staging_waits, 0);
  assert_int_equal(s.staging_bytes_peak, T4A_DEFAULT_STAGING_CHUNK_BYTES);

  /* A small pending download: a pinned host snapshot slot (no device
   * allocation), one event. */
  t4a_download d = {0};
  ASSERT_OK(t4a_buffer_download(rt, a, 0, 1000, &d));
  s = stats_of(rt);
  assert_int_equal(s.allocations, 3);
  assert_int_equal(s.bytes_allocated, 4000);
  assert_int_equal(s.events_recorded, 1);
  assert_int_equal(s.downloads, 2);
  ASSERT_OK(t4a_download_wait(d, out));
  assert_bytes_equal(out, buf, 1000, "pending download");
  s = stats_of(rt);
  assert_int_equal(s.frees, 1);
  assert_int_equal(s.bytes_allocated, 4000);
  assert_int_equal(s.bytes_downloaded, 4000);
  ASSERT_STATUS(t4a_download_wait(d, out), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("already delivered");
  ASSERT_STATUS(t4a_download_poll(d, out), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(t4a_download_release(d));

  uint64_t waits_before = stats_of(rt).host_waits;
  ASSERT_OK(t4a_runtime_synchronize(rt));
  s = stats_of(rt);
  assert_int_equal(s.host_waits, waits_before + 1);
  assert_int_equal(s.quarantined, 0);
  assert_int_equal(s.leaked_allocations, 0);
  ASSERT_OK(t4a_buffer_release(a));
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_buffer_release(e));
  s = stats_of(rt);
  assert_int_equal(s.frees, 3);
  assert_int_equal(s.bytes_allocated, 0);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* An undelivered download released: nothing stays held. */
static void test_undelivered_download(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0, 0);
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, 1 << 20, T4A_BUFFER_ZERO, &b));
  t4a_download d = {0};
  ASSERT_OK(t4a_buffer_download(rt, b, 0, 1 << 20, &d));
  assert_int_equal(stats_of(rt).bytes_allocated, 2u << 20);
  ASSERT_OK(t4a_download_release(d));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  t4a_runtime_stats s = stats_of(rt);
  assert_int_equal(s.bytes_allocated, 1u << 20);
  assert_int_equal(s.frees, 1);
  assert_int_equal(s.staging_bytes_in_use, 0);
  ASSERT_STATUS(t4a_download_wait(d, NULL), T4A_ERROR_INVALID_HANDLE);
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* A buffer released right after a copy that reads it is enqueued: the copy
 * still sees its bytes (the free is stream-ordered). The upload source is
 * overwritten at once after return: the device holds the original. */
static void test_release_and_overwrite_ordering(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0, 0);
  const size_t n = 16u << 20;
  unsigned char *src = malloc(n), *want = malloc(n), *out = malloc(n);
  fill_random(src, n, 99);
  memcpy(want, src, n);
  t4a_buffer a = {0}, b = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, n, 0, &a));
  ASSERT_OK(t4a_buffer_alloc(rt, n, 0, &b));
  ASSERT_OK(t4a_buffer_upload(rt, a, 0, src, n));
  memset(src, 0xFF, n); /* the caller reuses its memory at once */
  ASSERT_OK(t4a_buffer_copy(rt, b, 0, a, 0, n));
  ASSERT_OK(t4a_buffer_release(a)); /* freed after the copy, by stream order */
  /* Reuse of the freed memory by a new allocation must not disturb b. */
  t4a_buffer c = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, n, 0, &c));
  ASSERT_OK(t4a_buffer_fill(rt, c, 0, n, 0xEE));
  ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, out, n));
  assert_bytes_equal(out, want, n, "copy of a released buffer");
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_buffer_release(c));
  ASSERT_OK(t4a_runtime_destroy(rt));
  free(src);
  free(want);
  free(out);
}

/* 2 x 1 MiB staging moving 64 MiB each way: correct, bounded, waits. */
static void test_small_staging_budget(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(2u << 20, 1u << 20);
  const size_t n = 64u << 20;
  unsigned char *src = malloc(n), *out = malloc(n);
  fill_random(src, n, 5);
  t4a_buffer b = {0}, big1 = {0}, big2 = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, n, 0, &b));
  /* Warm-up: both staging chunks allocated (pinned allocation takes about
   * a millisecond each) and the copy workers started, then drained, so the
   * timed part below does not spend the device copy's time allocating. */
  ASSERT_OK(t4a_buffer_upload(rt, b, 0, src, 4u << 20));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  t4a_runtime_stats s0 = stats_of(rt);
  assert_int_equal(s0.staging_bytes_peak, 2u << 20);
  /* Two 4 GiB device copies first (about 2 ms each) hold the stream, so
   * the third staging chunk cannot have retired when the upload needs it:
   * the upload must wait on the host for the oldest chunk at least once. */
  const uint64_t big = 4ull << 30;
  ASSERT_OK(t4a_buffer_alloc(rt, big, 0, &big1));
  ASSERT_OK(t4a_buffer_alloc(rt, big, 0, &big2));
  ASSERT_OK(t4a_buffer_copy(rt, big2, 0, big1, 0, big));
  ASSERT_OK(t4a_buffer_copy(rt, big1, 0, big2, 0, big));
  ASSERT_OK(t4a_buffer_upload(rt, b, 0, src, n));
  ASSERT_OK(t4a_buffer_release(big1));
  ASSERT_OK(t4a_buffer_release(big2));
  t4a_runtime_stats s = stats_of(rt);
  /* 64 chunks through 2: the budget is never exceeded, and at least one
   * staging wait happened (never more than one per chunk after the first
   * two). The upload queues copies ahead of its DMAs, so both chunks are
   * taken before the first piece is kept (the seals there find nothing to
   * record); from the third piece on, each fresh chunk seals the epoch
   * keeping the piece enqueued to make room for it: 62 events. */
  const uint64_t waits = s.staging_waits - s0.staging_waits;
  assert_int_equal(s.staging_bytes_peak, 2u << 20);
  assert_true(waits >= 1);
  assert_true(waits <= 62);
  assert_true(s.host_waits - s0.host_waits >= waits);
  assert_int_equal(s.events_recorded - s0.events_recorded, 62);
  ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, out, n));
  assert_bytes_equal(out, src, n, "64 MiB through 2 MiB of staging");
  s = stats_of(rt);
  assert_int_equal(s.staging_bytes_peak, 2u << 20);
  memset(out, 0, n);
  t4a_download d = {0};
  ASSERT_OK(t4a_buffer_download(rt, b, 0, n, &d));
  ASSERT_OK(t4a_download_wait(d, out));
  assert_bytes_equal(out, src, n, "pending 64 MiB through 2 MiB");
  ASSERT_OK(t4a_download_release(d));
  assert_int_equal(stats_of(rt).staging_bytes_peak, 2u << 20);
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt));
  free(src);
  free(out);
}

/* 1 PiB: OUT_OF_MEMORY naming the size; the runtime still works. */
static void test_out_of_memory(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0, 0);
  t4a_buffer b = {0};
  b.id = 0x1234;
  ASSERT_STATUS(t4a_buffer_alloc(rt, 1ull << 50, 0, &b),
                T4A_ERROR_OUT_OF_MEMORY);
  ASSERT_MESSAGE_HAS("1125899906842624");
  assert_int_equal(b.id, 0x1234); /* untouched */
  t4a_runtime_stats s = stats_of(rt);
  assert_int_equal(s.allocations, 0);
  assert_int_equal(s.bytes_allocated, 0);
  unsigned char in[4097], out[4097];
  fill_random(in, sizeof in, 3);
  ASSERT_OK(t4a_buffer_alloc(rt, sizeof in, 0, &b));
  ASSERT_OK(t4a_buffer_upload(rt, b, 0, in, sizeof in));
  ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, out, sizeof out));
  assert_bytes_equal(out, in, sizeof in, "after OOM");
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* Every argument error, with its status and a message naming it. */
static void test_argument_errors(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0, 0), other = make_runtime(0, 0);
  t4a_buffer b = {0}, ob = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, 100, 0, &b));
  ASSERT_OK(t4a_buffer_alloc(other, 100, 0, &ob));
  unsigned char buf[200];
  ASSERT_STATUS(t4a_buffer_alloc(rt, 1, 0, NULL), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("buffer is NULL");
  t4a_buffer tmp = {0};
  ASSERT_STATUS(t4a_buffer_alloc(rt, 1, 0x10, &tmp),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("flags");
  ASSERT_STATUS(t4a_buffer_upload(rt, b, 0, NULL, 1),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("src is NULL");
  ASSERT_STATUS(t4a_buffer_upload(rt, b, 50, buf, 51),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("[50, 101)");
  ASSERT_STATUS(t4a_buffer_upload(rt, b, UINT64_MAX, buf, 2),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("overflows");
  ASSERT_STATUS(t4a_buffer_upload(rt, ob, 0, buf, 1), T4A_ERROR_WRONG_RUNTIME);
  ASSERT_MESSAGE_HAS("dst belongs to runtime");
  ASSERT_STATUS(t4a_buffer_download_sync(rt, b, 0, NULL, 1),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("dst is NULL");
  ASSERT_STATUS(t4a_buffer_download_sync(rt, b, 99, buf, 2),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(t4a_buffer_download_sync(other, b, 0, buf, 1),
                T4A_ERROR_WRONG_RUNTIME);
  ASSERT_STATUS(t4a_buffer_download(rt, b, 0, 1, NULL),
                T4A_ERROR_INVALID_ARGUMENT);
  t4a_download d = {0};
  ASSERT_STATUS(t4a_buffer_download(rt, b, 1, 100, &d),
                T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(d.id, 0);
  ASSERT_STATUS(t4a_buffer_fill(rt, b, 0, 101, 0), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(t4a_buffer_fill(rt, ob, 0, 1, 0), T4A_ERROR_WRONG_RUNTIME);
  /* A copy runs on the runtime of dst; src may be of another runtime
   * (tests/host/test_cross_runtime.c covers those copies). */
  ASSERT_STATUS(t4a_buffer_copy(rt, ob, 0, b, 0, 1), T4A_ERROR_WRONG_RUNTIME);
  ASSERT_MESSAGE_HAS("dst belongs");
  ASSERT_STATUS(t4a_buffer_copy(rt, b, 0, b, 10, 20),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("overlaps");
  ASSERT_STATUS(t4a_buffer_copy(rt, b, 90, b, 0, 20),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("dst");
  ASSERT_OK(t4a_buffer_copy(rt, b, 50, b, 0, 50)); /* adjacent: fine */
  t4a_host_buffer h = {0};
  ASSERT_OK(t4a_host_buffer_alloc(rt, 64, &h));
  ASSERT_STATUS(t4a_buffer_upload_host(rt, b, 0, h, 10, 55),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("src");
  ASSERT_STATUS(t4a_buffer_download_host(rt, b, 0, h, 0, 65),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(t4a_host_buffer_pointer(h, NULL, NULL),
                T4A_ERROR_INVALID_ARGUMENT);
  /* Null, forged, released and mistyped handles on a valid runtime: each
   * is INVALID_HANDLE naming its argument; nothing is enqueued. */
  t4a_buffer forged = {0x0200000100007777ull}, none = {0}, gone = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, 8, 0, &gone));
  ASSERT_OK(t4a_buffer_release(gone));
  ASSERT_STATUS(t4a_buffer_copy(rt, forged, 0, b, 0, 1),
                T4A_ERROR_INVALID_HANDLE);
  ASSERT_MESSAGE_HAS("dst (id 0x0200000100007777)");
  ASSERT_STATUS(t4a_buffer_copy(rt, b, 0, gone, 0, 1),
                T4A_ERROR_INVALID_HANDLE);
  ASSERT_MESSAGE_HAS("src (id");
  ASSERT_MESSAGE_HAS("released");
  ASSERT_STATUS(t4a_buffer_upload(rt, none, 0, buf, 1),
                T4A_ERROR_INVALID_HANDLE);
  ASSERT_MESSAGE_HAS("dst (id 0x0000000000000000) is the null handle");
  ASSERT_STATUS(t4a_buffer_download_sync(rt, gone, 0, buf, 1),
                T4A_ERROR_INVALID_HANDLE);
  ASSERT_MESSAGE_HAS("src (id");
  ASSERT_STATUS(t4a_buffer_download(rt, forged, 0, 1, &d),
                T4A_ERROR_INVALID_HANDLE);
  ASSERT_MESSAGE_HAS("src (id");
  assert_int_equal(d.id, 0);
  ASSERT_STATUS(t4a_buffer_fill(rt, none, 0, 1, 0), T4A_ERROR_INVALID_HANDLE);
  ASSERT_MESSAGE_HAS("buffer (id");
  t4a_host_buffer hb_as_buffer = {b.id};
  ASSERT_STATUS(t4a_buffer_upload_host(rt, b, 0, hb_as_buffer, 0, 1),
                T4A_ERROR_INVALID_HANDLE);
  ASSERT_MESSAGE_HAS("src (id");
  ASSERT_MESSAGE_HAS("another type");
  ASSERT_STATUS(t4a_buffer_download_host(rt, forged, 0, h, 0, 1),
                T4A_ERROR_INVALID_HANDLE);
  ASSERT_MESSAGE_HAS("src (id");
  t4a_buffer_info binfo = T4A_BUFFER_INFO_INIT;
  binfo.bytes = 99;
  ASSERT_STATUS(t4a_buffer_info_get(gone, &binfo), T4A_ERROR_INVALID_HANDLE);
  assert_int_equal(binfo.bytes, 99);
  /* Handles of the wrong type. */
  t4a_buffer as_buffer = {h.id};
  ASSERT_STATUS(t4a_buffer_release(as_buffer), T4A_ERROR_INVALID_HANDLE);
  t4a_runtime_options bad = T4A_RUNTIME_OPTIONS_INIT;
  bad.staging_chunk_bytes = 1000;
  t4a_runtime r2 = {0};
  ASSERT_STATUS(t4a_runtime_create(&bad, &r2), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("staging_chunk_bytes");
  bad = (t4a_runtime_options)T4A_RUNTIME_OPTIONS_INIT;
  bad.staging_threads = 65;
  ASSERT_STATUS(t4a_runtime_create(&bad, &r2), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("staging_threads");
  assert_int_equal(stats_of(rt).uploads, 0);
  ASSERT_OK(t4a_host_buffer_release(h));
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_STATUS(t4a_buffer_release(b), T4A_ERROR_INVALID_HANDLE);
  ASSERT_OK(t4a_buffer_release(ob));
  ASSERT_OK(t4a_runtime_destroy(rt));
  ASSERT_OK(t4a_runtime_destroy(other));
}

/* An empty buffer: valid, pointer 0, zero-byte transfers work. */
static void test_empty_buffer(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0, 0);
  t4a_buffer e = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, 0, T4A_BUFFER_ZERO, &e));
  t4a_buffer_info info = T4A_BUFFER_INFO_INIT;
  ASSERT_OK(t4a_buffer_info_get(e, &info));
  assert_int_equal(info.bytes, 0);
  assert_int_equal(info.device_pointer, 0);
  assert_int_equal(info.runtime.id, rt.id);
  ASSERT_OK(t4a_buffer_upload(rt, e, 0, NULL, 0));
  ASSERT_OK(t4a_buffer_download_sync(rt, e, 0, NULL, 0));
  ASSERT_STATUS(t4a_buffer_upload(rt, e, 1, NULL, 0),
                T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(stats_of(rt).allocations, 0);
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, 1000, 0, &b));
  ASSERT_OK(t4a_buffer_info_get(b, &info));
  assert_int_equal(info.bytes, 1000);
  assert_int_equal(info.device_pointer % 256, 0);
  assert_true(info.device_pointer != 0);
  ASSERT_OK(t4a_buffer_retain(b));
  ASSERT_OK(t4a_buffer_release(b));
  assert_int_equal(stats_of(rt).frees, 0); /* one reference left */
  ASSERT_OK(t4a_buffer_release(b));
  assert_int_equal(stats_of(rt).frees, 1);
  ASSERT_OK(t4a_buffer_release(e));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* Zeroed allocations really are zero, even where memory is reused. */
static void test_zero_flag(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0, 0);
  const size_t n = 4u << 20;
  unsigned char *out = malloc(n);
  for (int round = 0; round < 4; ++round) {
    t4a_buffer dirty = {0}, z = {0};
    ASSERT_OK(t4a_buffer_alloc(rt, n, 0, &dirty));
    ASSERT_OK(t4a_buffer_fill(rt, dirty, 0, n, 0xCD));
    ASSERT_OK(t4a_buffer_release(dirty)); /* its memory is reused below */
    ASSERT_OK(t4a_buffer_alloc(rt, n, T4A_BUFFER_ZERO, &z));
    ASSERT_OK(t4a_buffer_download_sync(rt, z, 0, out, n));
    for (size_t i = 0; i < n; ++i)
      if (out[i] != 0)
        fail_msg("byte %zu of a zeroed buffer is 0x%02x", i, out[i]);
    ASSERT_OK(t4a_buffer_release(z));
  }
  ASSERT_OK(t4a_runtime_destroy(rt));
  free(out);
}

/* Releasing a host buffer with DMA in flight defers its free. */
static void test_host_buffer_deferred_free(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0, 0);
  const size_t n = 256u << 20;
  t4a_host_buffer h = {0};
  ASSERT_OK(t4a_host_buffer_alloc(rt, n, &h));
  void *p = NULL;
  ASSERT_OK(t4a_host_buffer_pointer(h, &p, NULL));
  fill_random(p, n, 11);
  unsigned char *want = malloc(n), *out = malloc(n);
  memcpy(want, p, n);
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, n, 0, &b));
  t4a_testing_fault_reset();
  t4a_testing_count_calls(1);
  ASSERT_OK(t4a_buffer_upload_host(rt, b, 0, h, 0, n));
  ASSERT_OK(t4a_host_buffer_release(h)); /* DMA in flight */
  assert_int_equal(t4a_testing_call_count("cuMemFreeHost"), 0);
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(t4a_testing_call_count("cuMemFreeHost"), 1);
  t4a_testing_fault_reset();
  ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, out, n));
  assert_bytes_equal(out, want, n, "host buffer upload");
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt));
  free(want);
  free(out);
}

/* 8 threads share one runtime: allocs, uploads, downloads, releases. */
typedef struct {
  t4a_runtime rt;
  int index;
  int failures;
  char why[256];
} worker_arg;

static void *worker(void *p) {
  worker_arg *w = p;
  for (int it = 0; it < 40 && w->failures == 0; ++it) {
    size_t n = (size_t)(1 + ((it * 7919 + w->index * 104729) % (3u << 20)));
    unsigned char *src = malloc(n), *out = malloc(n);
    fill_random(src, n, (uint64_t)w->index * 1000 + it);
    t4a_buffer b = {0};
    t4a_status s = t4a_buffer_alloc(w->rt, n, 0, &b);
    if (s == T4A_SUCCESS) s = t4a_buffer_upload(w->rt, b, 0, src, n);
    if (s == T4A_SUCCESS) {
      if (it % 2) {
        s = t4a_buffer_download_sync(w->rt, b, 0, out, n);
      } else {
        t4a_download d = {0};
        s = t4a_buffer_download(w->rt, b, 0, n, &d);
        t4a_buffer_release(b); /* released before the download delivers */
        b.id = 0;
        if (s == T4A_SUCCESS) s = t4a_download_wait(d, out);
        t4a_download_release(d);
      }
    }
    if (s != T4A_SUCCESS) {
      w->failures++;
      snprintf(w->why, sizeof w->why, "thread %d: %s: %s", w->index,
               t4a_status_name(s), last_message());
    } else if (memcmp(out, src, n) != 0) {
      w->failures++;
      snprintf(w->why, sizeof w->why, "thread %d: bytes differ (n=%zu)",
               w->index, n);
    }
    t4a_buffer_release(b);
    free(src);
    free(out);
  }
  return NULL;
}

/* Reads the counters while the workers run: live device bytes must never
 * read as a wrapped-around huge number. */
typedef struct {
  t4a_runtime rt;
  atomic_int stop;
  uint64_t max_seen;
  int failures;
} stats_reader;

static void *read_stats(void *p) {
  stats_reader *r = p;
  while (!atomic_load(&r->stop)) {
    t4a_runtime_stats s = T4A_RUNTIME_STATS_INIT;
    if (t4a_runtime_stats_get(r->rt, &s) != T4A_SUCCESS) r->failures++;
    if (s.bytes_allocated > r->max_seen) r->max_seen = s.bytes_allocated;
  }
  return NULL;
}

static void test_threads_share_runtime(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(8u << 20, 1u << 20);
  pthread_t th[8], reader;
  worker_arg args[8];
  stats_reader sr = {rt, 0, 0, 0};
  atomic_init(&sr.stop, 0);
  assert_int_equal(pthread_create(&reader, NULL, read_stats, &sr), 0);
  for (int i = 0; i < 8; ++i) {
    args[i] = (worker_arg){rt, i, 0, ""};
    assert_int_equal(pthread_create(&th[i], NULL, worker, &args[i]), 0);
  }
  for (int i = 0; i < 8; ++i) pthread_join(th[i], NULL);
  atomic_store(&sr.stop, 1);
  pthread_join(reader, NULL);
  assert_int_equal(sr.failures, 0);
  /* 8 workers hold at most a 3 MiB buffer and a 3 MiB snapshot each. */
  if (sr.max_seen > (48u << 20))
    fail_msg("bytes_allocated read as %llu while 8 threads used at most "
             "48 MiB",
             (unsigned long long)sr.max_seen);
  for (int i = 0; i < 8; ++i)
    if (args[i].failures) fail_msg("%s", args[i].why);
  ASSERT_OK(t4a_runtime_synchronize(rt));
  t4a_runtime_stats s = stats_of(rt);
  assert_int_equal(s.bytes_allocated, 0);
  assert_int_equal(s.allocations, s.frees);
  assert_int_equal(s.uploads, 8 * 40);
  assert_int_equal(s.downloads, 8 * 40);
  assert_true(s.staging_bytes_peak <= (8u << 20));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* Synchronize on one thread while another uploads through a two-chunk
 * budget: retired staging chunks are back in the ring before the next
 * reservation, so no upload ever finds "nothing to wait for". */
typedef struct {
  t4a_runtime rt;
  t4a_buffer b;
  int iterations;
  t4a_status first_error;
  char why[512];
} churn_arg;

static void *upload_churn(void *p) {
  churn_arg *c = p;
  unsigned char chunk[4096];
  memset(chunk, 0x3C, sizeof chunk);
  for (int i = 0; i < c->iterations; ++i) {
    t4a_status s = t4a_buffer_upload(c->rt, c->b, 0, chunk, sizeof chunk);
    if (s != T4A_SUCCESS) {
      c->first_error = s;
      snprintf(c->why, sizeof c->why, "%s", last_message());
      return NULL;
    }
  }
  return NULL;
}

static void *sync_churn(void *p) {
  churn_arg *c = p;
  for (int i = 0; i < c->iterations; ++i) {
    t4a_status s = t4a_runtime_synchronize(c->rt);
    if (s != T4A_SUCCESS) {
      c->first_error = s;
      snprintf(c->why, sizeof c->why, "%s", last_message());
      return NULL;
    }
  }
  return NULL;
}

static void test_synchronize_races_uploads(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(8192, 4096);
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, 4096, 0, &b));
  churn_arg up = {rt, b, 60000, T4A_SUCCESS, ""};
  churn_arg sy = {rt, b, 60000, T4A_SUCCESS, ""};
  pthread_t t1, t2;
  assert_int_equal(pthread_create(&t1, NULL, upload_churn, &up), 0);
  assert_int_equal(pthread_create(&t2, NULL, sync_churn, &sy), 0);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  if (up.first_error != T4A_SUCCESS)
    fail_msg("upload failed: %s: %s", t4a_status_name(up.first_error), up.why);
  if (sy.first_error != T4A_SUCCESS)
    fail_msg("synchronize failed: %s: %s", t4a_status_name(sy.first_error),
             sy.why);
  assert_int_equal(stats_of(rt).uploads, 60000);
  assert_true(stats_of(rt).staging_bytes_peak <= 8192);
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* ---- faults: post-enqueue failures and unproven teardown ---- */

/* A log callback that polls the very download whose delivery is logging
 * (a sticky fault while observing its event): it must run after the
 * download's own lock is released, and get an answer, not hang. */
typedef struct {
  t4a_download d;
  int calls;
  t4a_status nested;
} poll_probe;

static void polling_logger(void *user, int32_t level, const char *message) {
  poll_probe *p = user;
  (void)message;
  if (level > T4A_LOG_ERROR || p->calls > 0) return;
  unsigned char byte;
  p->calls++;
  p->nested = t4a_download_poll(p->d, &byte);
}

static void test_fault_callback_polls_download(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0, 0);
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, 4096, T4A_BUFFER_ZERO, &b));
  poll_probe probe = {{0}, 0, T4A_SUCCESS};
  ASSERT_OK(t4a_buffer_download(rt, b, 0, 4096, &probe.d));
  ASSERT_OK(t4a_set_log_callback(polling_logger, &probe, T4A_LOG_ERROR));
  ASSERT_OK(t4a_testing_fault_arm("cuEventQuery", 1, CUDA_ERROR_ILLEGAL_ADDRESS,
                                  T4A_TESTING_FAULT_INSTEAD));
  unsigned char out[4096];
  ASSERT_STATUS(t4a_download_poll(probe.d, out), T4A_ERROR_DEVICE_FAULT);
  ASSERT_OK(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN));
  assert_int_equal(probe.calls, 1);
  assert_int_equal(probe.nested, T4A_ERROR_DEVICE_FAULT); /* not a hang */
  ASSERT_OK(t4a_download_release(probe.d));
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_STATUS(t4a_runtime_destroy(rt), T4A_ERROR_DEVICE_FAULT);
}

/* A log callback that calls back into the runtime being logged about:
 * it must never run under that runtime's admission lock, so the
 * nested allocation succeeds instead of returning REENTRANT. */
typedef struct {
  t4a_runtime rt;
  int calls;
  t4a_status nested;
} reentry_probe;

static void reentrant_logger(void *user, int32_t level, const char *message) {
  reentry_probe *p = user;
  (void)message;
  if (level > T4A_LOG_WARN) return;
  t4a_buffer b = {0};
  p->nested = t4a_buffer_alloc(p->rt, 64, 0, &b);
  t4a_buffer_release(b);
  p->calls++;
}

static void test_fault_upload_after_enqueue(void **state) {
  (void)state;
  t4a_runtime rt = make_runtime(0, 0);
  reentry_probe probe = {rt, 0, T4A_ERROR_INTERNAL};
  ASSERT_OK(t4a_set_log_callback(reentrant_logger, &probe, T4A_LOG_WARN));
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, 4096, 0, &b));
  unsigned char in[4096], out[4096];
  fill_random(in, sizeof in, 1);
  t4a_testing_fault_reset();
  /* The copy is really enqueued, then reported failed. */
  ASSERT_OK(t4a_testing_fault_arm("cuMemcpyHtoDAsync", 1,
                                  CUDA_ERROR_INVALID_VALUE,
                                  T4A_TESTING_FAULT_AFTER));
  ASSERT_STATUS(t4a_buffer_upload(rt, b, 0, in, sizeof in), T4A_ERROR_DRIVER);
  t4a_error_info e = T4A_ERROR_INFO_INIT;
  ASSERT_OK(t4a_last_error(&e));
  assert_int_equal(e.driver_result, CUDA_ERROR_INVALID_VALUE);
  ASSERT_MESSAGE_HAS("cuMemcpyHtoDAsync");
  t4a_runtime_stats s = stats_of(rt);
  assert_int_equal(s.quarantined, 1); /* the staging chunk */
  assert_int_equal(s.uploads, 0);
  /* The quarantine warning reached the callback after the lock was gone. */
  ASSERT_OK(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN));
  assert_true(probe.calls >= 1);
  assert_int_equal(probe.nested, T4A_SUCCESS);
  t4a_testing_fault_reset();
  /* The runtime stays usable, with fresh staging. */
  ASSERT_OK(t4a_buffer_upload(rt, b, 0, in, sizeof in));
  ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, out, sizeof out));
  assert_bytes_equal(out, in, sizeof in, "after a quarantined upload");
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

static void test_fault_destroy_unproven(void **state) {
  (void)state;
  t4a_process_stats p0 = process_stats();
  t4a_runtime rt = make_runtime(0, 0);
  t4a_buffer a = {0}, b = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, 1 << 20, 0, &a));
  ASSERT_OK(t4a_buffer_alloc(rt, 3 << 20, 0, &b));
  unsigned char in[1000];
  fill_random(in, sizeof in, 2);
  ASSERT_OK(t4a_buffer_upload(rt, a, 0, in, sizeof in)); /* staging made */
  t4a_testing_fault_reset();
  t4a_testing_count_calls(1);
  ASSERT_OK(t4a_testing_fault_arm("cuStreamSynchronize", 1, CUDA_ERROR_UNKNOWN,
                                  T4A_TESTING_FAULT_AFTER));
  ASSERT_STATUS(t4a_runtime_destroy(rt), T4A_ERROR_DRIVER);
  ASSERT_OK(t4a_buffer_release(a)); /* after the destroy: leaked too */
  ASSERT_OK(t4a_buffer_release(b));
  /* No free entry point was called for memory the device might touch. */
  assert_int_equal(t4a_testing_call_count("cuMemFreeAsync"), 0);
  assert_int_equal(t4a_testing_call_count("cuMemFreeHost"), 0);
  assert_int_equal(t4a_testing_call_count("cuMemPoolDestroy"), 0);
  assert_int_equal(t4a_testing_call_count("cuStreamDestroy"), 0);
  assert_int_equal(t4a_testing_call_count("cuDevicePrimaryCtxRelease"), 0);
  t4a_process_stats p = process_stats();
  assert_int_equal(p.leaked_device_allocations - p0.leaked_device_allocations,
                   2);
  assert_int_equal(p.leaked_device_bytes - p0.leaked_device_bytes, 4u << 20);
  assert_int_equal(p.leaked_staging_bytes - p0.leaked_staging_bytes,
                   T4A_DEFAULT_STAGING_CHUNK_BYTES);
  assert_int_equal(p.runtimes_leaked - p0.runtimes_leaked, 1);
  t4a_testing_fault_reset();
}

/* Completion proven, but the driver refuses to free a staging chunk: the
 * destroy still succeeds, and the chunk is counted as leaked staging. */
static void test_fault_staging_free_refused(void **state) {
  (void)state;
  t4a_process_stats p0 = process_stats();
  t4a_runtime rt = make_runtime(0, 0);
  t4a_buffer a = {0};
  unsigned char in[1000];
  ASSERT_OK(t4a_buffer_alloc(rt, 1 << 20, 0, &a));
  fill_random(in, sizeof in, 3);
  ASSERT_OK(t4a_buffer_upload(rt, a, 0, in, sizeof in)); /* staging made */
  ASSERT_OK(t4a_buffer_release(a));
  t4a_testing_fault_reset();
  t4a_testing_count_calls(1);
  ASSERT_OK(t4a_testing_fault_arm("cuMemFreeHost", 1, CUDA_ERROR_UNKNOWN,
                                  T4A_TESTING_FAULT_INSTEAD));
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(t4a_testing_call_count("cuMemFreeHost"), 1);
  t4a_process_stats p = process_stats();
  assert_int_equal(p.leaked_staging_bytes - p0.leaked_staging_bytes,
                   T4A_DEFAULT_STAGING_CHUNK_BYTES);
  assert_int_equal(p.runtimes_leaked - p0.runtimes_leaked, 0);
  t4a_testing_fault_reset();
}

static int setup(void **state) {
  (void)state;
  t4a_testing_fault_reset();
  return 0;
}

#define T(fn) cmocka_unit_test_setup(fn, setup)

int main(int argc, char **argv) {
  const char *group = argc > 1 ? argv[1] : "all";
  int fake = strncmp(group, "fake-", 5) == 0;
  if (fake) {
#if defined(T4A_FAKE_CUDA_PATH)
    setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
    group += 5;
#else
    fprintf(stderr, "built without the fake driver\n");
    return 1;
#endif
  } else {
    gpu_lane_require(1);
  }
  const struct CMUnitTest basic[] = {
      T(test_round_trips),
      T(test_counters_exact),
      T(test_undelivered_download),
      T(test_release_and_overwrite_ordering),
      T(test_small_staging_budget),
      T(test_out_of_memory),
      T(test_argument_errors),
      T(test_empty_buffer),
      T(test_zero_flag),
      T(test_host_buffer_deferred_free),
      T(test_threads_share_runtime),
      T(test_synchronize_races_uploads),
  };
  /* The fake driver completes all work at once: no staging waits happen,
   * and its "device" is host memory. */
  const struct CMUnitTest fake_basic[] = {
      T(test_round_trips),
      T(test_counters_exact),
      T(test_undelivered_download),
      T(test_release_and_overwrite_ordering),
      T(test_out_of_memory),
      T(test_argument_errors),
      T(test_empty_buffer),
      T(test_zero_flag),
      T(test_host_buffer_deferred_free),
      T(test_threads_share_runtime),
      T(test_synchronize_races_uploads),
  };
  const struct CMUnitTest faults[] = {
      T(test_fault_upload_after_enqueue),
      T(test_fault_destroy_unproven),
      T(test_fault_staging_free_refused),
      T(test_fault_callback_polls_download),
  };
  int failed = 0;
  if (!strcmp(group, "basic") || !strcmp(group, "all")) {
    if (fake)
      failed += cmocka_run_group_tests_name("memory_fake_basic", fake_basic,
                                            NULL, NULL);
    else
      failed +=
          cmocka_run_group_tests_name("memory_gpu_basic", basic, NULL, NULL);
  }
  if (!strcmp(group, "faults") || !strcmp(group, "all"))
    failed += cmocka_run_group_tests_name(
        fake ? "memory_fake_faults" : "memory_gpu_faults", faults, NULL, NULL);
  return failed ? 1 : 0;
}
