/*
 * Host lane: the handle registry under concurrency.
 * Threads create test objects with distinct values, retain and release
 * them, resolve their own ids (the value must match) and other threads'
 * possibly released ids (SUCCESS with the right value or INVALID_HANDLE,
 * never a wrong value), then release everything: the live count returns to
 * where it started, every id ever issued is distinct and rejected.
 * Iterations per thread: T4A_STRESS_ITERATIONS (default below); the
 * sanitizer builds set a smaller count.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t4acuda.h"
#include "t4acuda_testing.h"

#define THREADS 8
#if defined(T4A_STRESS_DEFAULT_ITERATIONS)
#define DEFAULT_ITERATIONS T4A_STRESS_DEFAULT_ITERATIONS
#else
#define DEFAULT_ITERATIONS 100000L
#endif
#define WINDOW 8 /* own objects each thread keeps alive */
#define KIND_TEST_OBJECT 255u

static long g_iterations = DEFAULT_ITERATIONS;

typedef struct worker {
  int index;
  struct worker *all;
  _Atomic uint64_t *ids; /* ids[i]: the object of iteration i */
  atomic_long published; /* ids[0..published-1] are set */
  pthread_barrier_t *start;
  uint64_t rng;
  /* results, read after join */
  long errors;
  char first_error[512];
  long others_tried, others_live, others_stale, others_retained;
} worker;

static uint64_t value_of(int thread, long iteration) {
  return ((uint64_t)(thread + 1) << 40) | (uint64_t)iteration;
}

static uint64_t next_random(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void record_error(worker *w, const char *fmt, ...) {
  if (w->errors++ == 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->first_error, sizeof w->first_error, fmt, ap);
    va_end(ap);
  }
}

/* Resolves (and sometimes retains) one of another thread's ids. */
static void touch_other(worker *w, long iteration) {
  int o =
      (w->index + 1 + (int)(next_random(&w->rng) % (THREADS - 1))) % THREADS;
  worker *other = &w->all[o];
  long n = atomic_load_explicit(&other->published, memory_order_acquire);
  long back, j;
  uint64_t id, value = 0;
  t4a_status s;
  if (n == 0) return;
  ++w->others_tried;
  /* Mostly recent ids (likely live), sometimes any. */
  back = (long)(next_random(&w->rng) % (uint64_t)(n < 32 ? n : 32));
  j = (iteration % 5 == 0) ? (long)(next_random(&w->rng) % (uint64_t)n)
                           : n - 1 - back;
  id = atomic_load_explicit(&other->ids[j], memory_order_relaxed);
  s = t4a_testing_object_value(id, &value);
  if (s == T4A_SUCCESS) {
    ++w->others_live;
    if (value != value_of(o, j))
      record_error(w,
                   "thread %d: id 0x%016" PRIx64 " of thread %d, "
                   "iteration %ld resolved to value 0x%" PRIx64
                   ", expected 0x%" PRIx64,
                   w->index, id, o, j, value, value_of(o, j));
  } else if (s == T4A_ERROR_INVALID_HANDLE) {
    ++w->others_stale;
  } else {
    record_error(w, "thread %d: resolving another's id gave %s", w->index,
                 t4a_status_name(s));
  }
  if (iteration % 4 != 0) return;
  s = t4a_testing_object_retain(id);
  if (s == T4A_SUCCESS) {
    ++w->others_retained;
    value = 0;
    s = t4a_testing_object_value(id, &value);
    if (s != T4A_SUCCESS || value != value_of(o, j))
      record_error(w,
                   "thread %d: retained id 0x%016" PRIx64
                   " gave %s, value 0x%" PRIx64 ", expected 0x%" PRIx64,
                   w->index, id, t4a_status_name(s), value, value_of(o, j));
    s = t4a_testing_object_release(id);
    if (s != T4A_SUCCESS)
      record_error(w, "thread %d: releasing a retained id gave %s", w->index,
                   t4a_status_name(s));
  } else if (s != T4A_ERROR_INVALID_HANDLE) {
    record_error(w, "thread %d: retaining another's id gave %s", w->index,
                 t4a_status_name(s));
  }
}

static void *work(void *arg) {
  worker *w = arg;
  uint64_t window[WINDOW] = {0};
  long i;
  int k;
  pthread_barrier_wait(w->start);
  for (i = 0; i < g_iterations && w->errors == 0; ++i) {
    uint64_t id = 0, value = 0, want = value_of(w->index, i);
    t4a_status s = t4a_testing_object_create(want, &id);
    if (s != T4A_SUCCESS || id == T4A_NULL_ID ||
        (id >> 56) != KIND_TEST_OBJECT) {
      record_error(w, "thread %d: create gave %s, id 0x%016" PRIx64, w->index,
                   t4a_status_name(s), id);
      break;
    }
    if ((s = t4a_testing_object_value(id, &value)) != T4A_SUCCESS ||
        value != want)
      record_error(w,
                   "thread %d: own id resolved with %s to 0x%" PRIx64
                   ", expected 0x%" PRIx64,
                   w->index, t4a_status_name(s), value, want);
    if ((s = t4a_testing_object_retain(id)) != T4A_SUCCESS)
      record_error(w, "thread %d: retain gave %s", w->index,
                   t4a_status_name(s));
    atomic_store_explicit(&w->ids[i], id, memory_order_relaxed);
    atomic_store_explicit(&w->published, i + 1, memory_order_release);
    if ((s = t4a_testing_object_release(id)) != T4A_SUCCESS)
      record_error(w, "thread %d: release after retain gave %s", w->index,
                   t4a_status_name(s));
    touch_other(w, i);
    /* Keep WINDOW objects; the oldest gets its final release. */
    k = (int)(i % WINDOW);
    if (window[k] != 0 &&
        (s = t4a_testing_object_release(window[k])) != T4A_SUCCESS)
      record_error(w, "thread %d: final release gave %s", w->index,
                   t4a_status_name(s));
    window[k] = id;
  }
  for (k = 0; k < WINDOW; ++k) {
    t4a_status s;
    if (window[k] != 0 &&
        (s = t4a_testing_object_release(window[k])) != T4A_SUCCESS)
      record_error(w, "thread %d: final release gave %s", w->index,
                   t4a_status_name(s));
  }
  return NULL;
}

static int compare_ids(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void test_concurrent_create_resolve_release(void **state) {
  worker workers[THREADS];
  pthread_t threads[THREADS];
  pthread_barrier_t start;
  uint64_t live_before = t4a_testing_live_handles();
  uint64_t *all;
  long total = 0, i, tried = 0, live = 0, stale = 0, retained = 0;
  int t;
  (void)state;
  memset(workers, 0, sizeof workers);
  assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
  for (t = 0; t < THREADS; ++t) {
    workers[t].index = t;
    workers[t].all = workers;
    workers[t].start = &start;
    workers[t].rng = UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(t + 1);
    workers[t].ids = malloc(sizeof(_Atomic uint64_t) * (size_t)g_iterations);
    assert_non_null(workers[t].ids);
    for (i = 0; i < g_iterations; ++i) atomic_init(&workers[t].ids[i], 0);
    atomic_init(&workers[t].published, 0);
  }
  for (t = 0; t < THREADS; ++t)
    assert_int_equal(pthread_create(&threads[t], NULL, work, &workers[t]), 0);
  for (t = 0; t < THREADS; ++t)
    assert_int_equal(pthread_join(threads[t], NULL), 0);
  pthread_barrier_destroy(&start);

  for (t = 0; t < THREADS; ++t) {
    if (workers[t].errors != 0)
      fail_msg("%ld error(s), first: %s", workers[t].errors,
               workers[t].first_error);
    assert_int_equal(atomic_load(&workers[t].published), g_iterations);
    assert_int_equal(workers[t].others_live + workers[t].others_stale,
                     workers[t].others_tried);
    tried += workers[t].others_tried;
    live += workers[t].others_live;
    stale += workers[t].others_stale;
    retained += workers[t].others_retained;
  }
  print_message("%d threads x %ld iterations; other threads' ids tried "
                "%ld: live %ld, stale %ld; retained %ld\n",
                THREADS, g_iterations, tried, live, stale, retained);
  /* Everything released: back to the start. */
  assert_int_equal(t4a_testing_live_handles(), live_before);

  /* Every id ever issued is distinct and now rejected. */
  all = malloc(sizeof *all * (size_t)THREADS * (size_t)g_iterations);
  assert_non_null(all);
  for (t = 0; t < THREADS; ++t)
    for (i = 0; i < g_iterations; ++i) {
      uint64_t id = atomic_load(&workers[t].ids[i]), value = 0xBAD;
      assert_int_equal(t4a_testing_object_value(id, &value),
                       T4A_ERROR_INVALID_HANDLE);
      assert_int_equal(value, 0xBAD);
      all[total++] = id;
    }
  qsort(all, (size_t)total, sizeof *all, compare_ids);
  for (i = 1; i < total; ++i)
    if (all[i] == all[i - 1])
      fail_msg("id 0x%016" PRIx64 " was issued twice", all[i]);
  free(all);
  for (t = 0; t < THREADS; ++t) free(workers[t].ids);
}

/* One object with THREADS * K handle references released concurrently by
 * THREADS threads until refused: exactly THREADS * K releases succeed. */
#define SHARED_REFS_PER_THREAD 2000L

typedef struct releaser {
  uint64_t id;
  pthread_barrier_t *start;
  long succeeded, refused, other;
} releaser;

static void *release_until_refused(void *arg) {
  releaser *r = arg;
  pthread_barrier_wait(r->start);
  for (;;) {
    t4a_status s = t4a_testing_object_release(r->id);
    if (s == T4A_SUCCESS) {
      ++r->succeeded;
    } else if (s == T4A_ERROR_INVALID_HANDLE) {
      ++r->refused;
      break;
    } else {
      ++r->other;
      break;
    }
  }
  return NULL;
}

static void test_concurrent_release_counts_exactly(void **state) {
  releaser r[THREADS];
  pthread_t threads[THREADS];
  pthread_barrier_t start;
  uint64_t live_before = t4a_testing_live_handles(), id = 0, value = 0;
  long refs = THREADS * SHARED_REFS_PER_THREAD, k, succeeded = 0;
  int t;
  (void)state;
  assert_int_equal(t4a_testing_object_create(4242, &id), T4A_SUCCESS);
  for (k = 1; k < refs; ++k)
    assert_int_equal(t4a_testing_object_retain(id), T4A_SUCCESS);
  assert_int_equal(t4a_testing_live_handles(), live_before + 1);
  assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
  memset(r, 0, sizeof r);
  for (t = 0; t < THREADS; ++t) {
    r[t].id = id;
    r[t].start = &start;
    assert_int_equal(
        pthread_create(&threads[t], NULL, release_until_refused, &r[t]), 0);
  }
  for (t = 0; t < THREADS; ++t)
    assert_int_equal(pthread_join(threads[t], NULL), 0);
  pthread_barrier_destroy(&start);
  for (t = 0; t < THREADS; ++t) {
    assert_int_equal(r[t].other, 0);
    assert_int_equal(r[t].refused, 1);
    succeeded += r[t].succeeded;
  }
  assert_int_equal(succeeded, refs);
  assert_int_equal(t4a_testing_live_handles(), live_before);
  assert_int_equal(t4a_testing_object_value(id, &value),
                   T4A_ERROR_INVALID_HANDLE);
}

static void test_release_rules(void **state) {
  uint64_t live_before = t4a_testing_live_handles(), id = 0, value = 0;
  t4a_error_info info = T4A_ERROR_INFO_INIT;
  char message[1024];
  (void)state;
  /* Releasing the null handle is a successful no-op. */
  assert_int_equal(t4a_testing_object_release(T4A_NULL_ID), T4A_SUCCESS);
  assert_int_equal(t4a_testing_live_handles(), live_before);
  /* retain + 2 releases balance; the third is one too many. */
  assert_int_equal(t4a_testing_object_create(99, &id), T4A_SUCCESS);
  assert_int_equal(t4a_testing_object_retain(id), T4A_SUCCESS);
  assert_int_equal(t4a_testing_object_release(id), T4A_SUCCESS);
  assert_int_equal(t4a_testing_object_value(id, &value), T4A_SUCCESS);
  assert_int_equal(value, 99);
  assert_int_equal(t4a_testing_object_release(id), T4A_SUCCESS);
  assert_int_equal(t4a_testing_live_handles(), live_before);
  assert_int_equal(t4a_testing_object_release(id), T4A_ERROR_INVALID_HANDLE);
  assert_int_equal(t4a_last_error(&info), T4A_SUCCESS);
  assert_int_equal(info.status, T4A_ERROR_INVALID_HANDLE);
  assert_string_equal(info.entry_point, "t4a_testing_object_release");
  assert_int_equal(t4a_last_error_message(message, sizeof message, NULL),
                   T4A_SUCCESS);
  assert_non_null(strstr(message, "object"));
  assert_non_null(strstr(message, "released"));
  /* A released id cannot be revived. */
  assert_int_equal(t4a_testing_object_retain(id), T4A_ERROR_INVALID_HANDLE);
  assert_int_equal(t4a_testing_live_handles(), live_before);
}

int main(void) {
  const char *env = getenv("T4A_STRESS_ITERATIONS");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_release_rules),
      cmocka_unit_test(test_concurrent_create_resolve_release),
      cmocka_unit_test(test_concurrent_release_counts_exactly),
  };
  if (env != NULL && env[0] != '\0') {
    char *end = NULL;
    long n = strtol(env, &end, 10);
    if (*end != '\0' || n < 1 || n > 100000000L) {
      fprintf(stderr, "T4A_STRESS_ITERATIONS=%s: expected 1..100000000\n", env);
      return 1;
    }
    g_iterations = n;
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
}
