/*
 * Multi-GPU lane: memory on two devices. Runtimes on
 * devices 0 and 1 move data concurrently from two threads, each through
 * its own staging; a host buffer allocated through device 0's runtime is
 * portable pinned memory that device 1's runtime DMAs directly; buffers of
 * one device are rejected by the other device's runtime.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_support.h"
#include "t4acuda.h"
#include "test_assert.h"

static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = (unsigned char)(x >> 24);
  }
}

static t4a_runtime make_runtime(int ordinal) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  o.device_ordinal = ordinal;
  t4a_runtime rt = {0};
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  return rt;
}

typedef struct {
  t4a_runtime rt;
  int ordinal;
  int failures;
  char why[512];
} mover;

static void *move_data(void *p) {
  mover *m = p;
  const size_t n = (48u << 20) + 7;
  unsigned char *src = malloc(n), *out = malloc(n);
  for (int round = 0; round < 4 && m->failures == 0; ++round) {
    fill_pattern(src, n, (unsigned)(m->ordinal * 100 + round));
    memset(out, 0, n);
    t4a_buffer b = {0};
    t4a_status s = t4a_buffer_alloc(m->rt, n, 0, &b);
    if (s == T4A_SUCCESS) s = t4a_buffer_upload(m->rt, b, 0, src, n);
    if (s == T4A_SUCCESS) s = t4a_buffer_download_sync(m->rt, b, 0, out, n);
    if (s != T4A_SUCCESS) {
      m->failures++;
      snprintf(m->why, sizeof m->why, "device %d: %s: %s", m->ordinal,
               t4a_status_name(s), last_message());
    } else if (memcmp(src, out, n) != 0) {
      m->failures++;
      snprintf(m->why, sizeof m->why, "device %d: bytes differ, round %d",
               m->ordinal, round);
    }
    t4a_buffer_release(b);
  }
  free(src);
  free(out);
  return NULL;
}

/* Two devices moving data at once, each runtime from its own thread. */
static void test_concurrent_devices(void **state) {
  (void)state;
  mover m[2] = {{make_runtime(0), 0, 0, ""}, {make_runtime(1), 1, 0, ""}};
  pthread_t th[2];
  for (int i = 0; i < 2; ++i)
    assert_int_equal(pthread_create(&th[i], NULL, move_data, &m[i]), 0);
  for (int i = 0; i < 2; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; ++i)
    if (m[i].failures) fail_msg("%s", m[i].why);
  for (int i = 0; i < 2; ++i) {
    t4a_runtime_stats s = T4A_RUNTIME_STATS_INIT;
    ASSERT_OK(t4a_runtime_stats_get(m[i].rt, &s));
    assert_int_equal(s.uploads, 4);
    assert_int_equal(s.downloads, 4);
    assert_int_equal(s.bytes_uploaded, 4 * ((48u << 20) + 7));
    assert_int_equal(s.bytes_allocated, 0);
    ASSERT_OK(t4a_runtime_destroy(m[i].rt));
  }
}

/* A host buffer made through device 0's runtime serves device 1's. */
static void test_portable_host_buffer(void **state) {
  (void)state;
  t4a_runtime r0 = make_runtime(0), r1 = make_runtime(1);
  const size_t n = 32u << 20;
  t4a_host_buffer h = {0}, back = {0};
  ASSERT_OK(t4a_host_buffer_alloc(r0, n, &h));
  ASSERT_OK(t4a_host_buffer_alloc(r0, n, &back));
  void *hp = NULL, *bp = NULL;
  ASSERT_OK(t4a_host_buffer_pointer(h, &hp, NULL));
  ASSERT_OK(t4a_host_buffer_pointer(back, &bp, NULL));
  fill_pattern(hp, n, 7);
  unsigned char *want = malloc(n);
  assert_non_null(want);
  memcpy(want, hp, n);
  memset(bp, 0, n);
  t4a_buffer b1 = {0};
  ASSERT_OK(t4a_buffer_alloc(r1, n, 0, &b1));
  ASSERT_OK(t4a_buffer_upload_host(r1, b1, 0, h, 0, n));
  ASSERT_OK(t4a_buffer_download_host(r1, b1, 0, back, 0, n));
  /* Device 0's runtime is destroyed first and the source host buffer is
   * released with its DMA in flight: device 1's epoch keeps it (and, through
   * it, device 0's runtime) until the copy is done; hp must not be read
   * after the synchronize below, which frees it. */
  ASSERT_OK(t4a_host_buffer_release(h));
  ASSERT_OK(t4a_runtime_destroy(r0));
  ASSERT_OK(t4a_runtime_synchronize(r1));
  if (memcmp(want, bp, n) != 0) fail_msg("%s", "bytes differ through device 1");
  free(want);
  /* A buffer of device 1 given to a runtime of device 0. */
  t4a_runtime r0b = make_runtime(0);
  unsigned char tiny[16] = {0};
  ASSERT_STATUS(t4a_buffer_upload(r0b, b1, 0, tiny, sizeof tiny),
                T4A_ERROR_WRONG_RUNTIME);
  ASSERT_OK(t4a_buffer_release(b1));
  ASSERT_OK(t4a_host_buffer_release(back));
  ASSERT_OK(t4a_runtime_destroy(r1));
  ASSERT_OK(t4a_runtime_destroy(r0b));
  t4a_process_stats p = T4A_PROCESS_STATS_INIT;
  ASSERT_OK(t4a_process_stats_get(&p));
  assert_int_equal(p.leaked_host_buffers, 0);
  assert_int_equal(p.leaked_device_allocations, 0);
}

int main(void) {
  gpu_lane_require(2);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concurrent_devices),
      cmocka_unit_test(test_portable_host_buffer),
  };
  return cmocka_run_group_tests_name("memory_multi_gpu", tests, NULL, NULL);
}
