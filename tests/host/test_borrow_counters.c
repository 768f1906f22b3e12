/*
 * Host lane (fake driver): the device-allocation counters of a runtime
 * (src/core/counters.hpp, RuntimeCounters::owned). One thread at a time,
 * the holder of the runtime's owning borrow record, counts allocations
 * and frees with plain stores; every other thread counts with atomic
 * read-modify-writes; the stats report the sums.
 *  - quiescent: allocations and frees counted by the owner and by another
 *    thread (a buffer allocated by one and released by the other) give
 *    the exact counts, live bytes and peak.
 *  - concurrent: threads (two rounds, so that thread records, and with
 *    them the ownership, pass to new threads) allocate and release buffers
 *    of several sizes, half of them released by another thread, while the
 *    main thread reads the stats: frees never exceed allocations and the
 *    live bytes and peak never exceed all the bytes ever allocated (no
 *    wrap; under concurrency they may count a buffer freed meanwhile as
 *    live); once the threads are joined every count is exact (a lost
 *    update of the single-writer part would show here). The tsan lane runs
 *    it under TSan.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "fake_driver.h"
#include "t4acuda.h"
#include "test_assert.h"

#ifndef T4A_RACE_ITERATIONS
#define T4A_RACE_ITERATIONS 10000
#endif
#define THREADS 4
#define RING 3    /* buffers a thread keeps live */
#define UNIT 256u /* buffer sizes: 1..7 units */
#define MAX_BYTES (7u * UNIT)

static t4a_runtime g_rt;

static t4a_runtime_stats stats(void) {
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(g_rt, &st));
  return st;
}

static t4a_buffer alloc_bytes(uint64_t bytes) {
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(g_rt, bytes, 0, &b));
  return b;
}

/* ---- quiescent ---------------------------------------------------------- */

typedef struct {
  t4a_buffer release; /* released by the other thread */
  t4a_buffer made;    /* allocated by it */
} Other;

static void *other_thread(void *p) {
  Other *o = p;
  o->made = alloc_bytes(5000);
  ASSERT_OK(t4a_buffer_release(o->release));
  return NULL;
}

static void test_quiescent(void **state) {
  (void)state;
  ASSERT_OK(t4a_runtime_create(NULL, &g_rt));
  /* The main thread counts first: it owns the counters. */
  t4a_buffer a = alloc_bytes(1000);
  t4a_buffer b = alloc_bytes(3000);
  t4a_runtime_stats st = stats();
  assert_int_equal(st.allocations, 2);
  assert_int_equal(st.frees, 0);
  assert_int_equal(st.bytes_allocated, 4000);
  assert_int_equal(st.bytes_allocated_peak, 4000);

  /* Another thread allocates one and releases one of the main thread's. */
  Other o = {.release = a};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, other_thread, &o), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  st = stats();
  assert_int_equal(st.allocations, 3);
  assert_int_equal(st.frees, 1);
  assert_int_equal(st.bytes_allocated, 8000);
  assert_int_equal(st.bytes_allocated_peak, 9000);

  /* The main thread releases the other thread's buffer and its own. */
  ASSERT_OK(t4a_buffer_release(o.made));
  ASSERT_OK(t4a_buffer_release(b));
  st = stats();
  assert_int_equal(st.allocations, 3);
  assert_int_equal(st.frees, 3);
  assert_int_equal(st.bytes_allocated, 0);
  assert_int_equal(st.bytes_allocated_peak, 9000);
  assert_int_equal(st.leaked_allocations, 0);
  ASSERT_OK(t4a_runtime_destroy(g_rt));
}

/* ---- concurrent --------------------------------------------------------- */

/* One exchange slot per thread: a thread puts a buffer into its right
 * neighbour's slot and releases what it finds in its own. */
static _Atomic uint64_t g_slot[THREADS];
static atomic_int g_running;

static void *churn(void *p) {
  int me = (int)(intptr_t)p;
  t4a_buffer ring[RING] = {{0}};
  for (int i = 0; i < T4A_RACE_ITERATIONS; ++i) {
    int k = i % RING;
    if (ring[k].id != 0) {
      if (i % 2 == 0) { /* released by the neighbour */
        uint64_t old = atomic_exchange(&g_slot[(me + 1) % THREADS], ring[k].id);
        if (old != 0) ASSERT_OK(t4a_buffer_release((t4a_buffer){old}));
      } else {
        ASSERT_OK(t4a_buffer_release(ring[k]));
      }
    }
    uint64_t mine = atomic_exchange(&g_slot[me], 0);
    if (mine != 0) ASSERT_OK(t4a_buffer_release((t4a_buffer){mine}));
    ring[k] = alloc_bytes(UNIT * (uint64_t)(1 + (i + me) % 7));
  }
  for (int k = 0; k < RING; ++k) ASSERT_OK(t4a_buffer_release(ring[k]));
  return NULL;
}

static void test_concurrent(void **state) {
  (void)state;
  ASSERT_OK(t4a_runtime_create(NULL, &g_rt));
  /* Every byte allocated by both rounds: a wrapped value exceeds it. */
  const uint64_t bound = 2ull * THREADS * T4A_RACE_ITERATIONS * MAX_BYTES;
  for (int round = 0; round < 2; ++round) {
    pthread_t t[THREADS];
    atomic_store(&g_running, 1);
    for (int i = 0; i < THREADS; ++i)
      assert_int_equal(pthread_create(&t[i], NULL, churn, (void *)(intptr_t)i),
                       0);
    for (int reads = 0; reads < T4A_RACE_ITERATIONS; ++reads) {
      t4a_runtime_stats st = stats();
      assert_true(st.frees <= st.allocations);
      assert_true(st.bytes_allocated <= bound);
      assert_true(st.bytes_allocated_peak <= bound);
    }
    for (int i = 0; i < THREADS; ++i)
      assert_int_equal(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < THREADS; ++i) {
      uint64_t left = atomic_exchange(&g_slot[i], 0);
      if (left != 0) ASSERT_OK(t4a_buffer_release((t4a_buffer){left}));
    }
    t4a_runtime_stats st = stats();
    uint64_t made = (uint64_t)(round + 1) * THREADS * T4A_RACE_ITERATIONS;
    assert_int_equal(st.allocations, made);
    assert_int_equal(st.frees, made);
    assert_int_equal(st.bytes_allocated, 0);
    assert_true(st.bytes_allocated_peak >= MAX_BYTES);
    assert_true(st.bytes_allocated_peak <= bound);
    assert_int_equal(st.leaked_allocations, 0);
  }
  ASSERT_OK(t4a_runtime_destroy(g_rt));
}

int main(void) {
  if (use_fake_driver() != 0) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quiescent),
      cmocka_unit_test(test_concurrent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
