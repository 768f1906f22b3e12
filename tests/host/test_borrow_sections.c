/*
 * Host lane (fake driver, T4A_TESTING): the borrow protocol of the
 * lock-free launch path (src/core/borrow.hpp). A launch borrows its
 * runtime, kernel and buffers without taking references; a handle released
 * meanwhile must read as released at once, while its object stays usable
 * by the launch that borrowed it and is destroyed when that launch's
 * section ends, not before and not never.
 *  - stopped: a launch is stopped (admission hook) after it borrowed its
 *    objects; the kernel's and a buffer's last handles are released: the
 *    handles are stale at once, the buffer is not freed yet; the launch
 *    then succeeds, and the buffer is freed by the time it returns.
 *  - churn: threads (two rounds, so thread records are reused) each
 *    allocate, launch with and release their own buffers and a shared
 *    one that the main thread keeps replacing; every launch succeeds or
 *    names a released buffer, and once the threads are joined every
 *    allocation has been freed (no deferred release outlives the last
 *    section). The tsan lane runs it under TSan.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T4A_EXPERIMENTAL 1 /* graph and cooperative launches */
#include "t4acuda.h"
#include "t4acuda_testing.h"
#include "test_assert.h"

#ifndef T4A_RACE_ITERATIONS
#define T4A_RACE_ITERATIONS 2000
#endif
#define CHURNERS 4

static t4a_runtime g_rt;
static t4a_module g_module;

static t4a_runtime_stats stats(void) {
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(g_rt, &st));
  return st;
}

static t4a_buffer new_buffer(void) {
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(g_rt, 256, 0, &b));
  return b;
}

static void setup_runtime(void) {
  ASSERT_OK(t4a_runtime_create(NULL, &g_rt));
  /* the fake driver loads any bytes as a module */
  static const unsigned char image[16] = {1};
  ASSERT_OK(t4a_module_load_data(g_rt, image, sizeof image, &g_module));
}

static void teardown_runtime(void) {
  ASSERT_OK(t4a_module_release(g_module));
  ASSERT_OK(t4a_runtime_synchronize(g_rt));
  t4a_runtime_stats st = stats();
  assert_int_equal(st.allocations, st.frees);
  assert_int_equal(st.leaked_allocations, 0);
  ASSERT_OK(t4a_runtime_destroy(g_rt));
  t4a_process_stats ps = T4A_PROCESS_STATS_INIT;
  ASSERT_OK(t4a_process_stats_get(&ps));
  assert_int_equal(ps.runtimes_leaked, 0);
  assert_int_equal(ps.leaked_device_allocations, 0);
}

/* ---- stopped ---------------------------------------------------------- */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_arrived, g_go;
static _Thread_local int tl_stop;

static void stop_here(void *arg) {
  (void)arg;
  if (!tl_stop) return;
  tl_stop = 0;
  pthread_mutex_lock(&g_mu);
  g_arrived = 1;
  pthread_cond_broadcast(&g_cv);
  while (!g_go) pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
}

typedef struct stopped_launch {
  t4a_kernel kernel;
  t4a_buffer a, b;
  t4a_status status;
  char message[512];
  int mode;        /* 0 plain, 1 cooperative, 2 graph replay */
  t4a_graph graph; /* mode 2 */
} stopped_launch;

static void *stopped_thread(void *arg) {
  stopped_launch *c = arg;
  t4a_arg args[2] = {T4A_ARG_INIT, T4A_ARG_INIT};
  args[0].kind = args[1].kind = T4A_ARG_BUFFER;
  args[0].buffer = c->a;
  args[1].buffer = c->b;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = c->kernel;
  d.grid[0] = 1;
  d.block[0] = 1;
  d.args = args;
  d.arg_count = 2;
  if (c->mode == 1) d.flags = T4A_LAUNCH_COOPERATIVE;
  tl_stop = 1;
  c->status =
      c->mode == 2 ? t4a_graph_launch(g_rt, c->graph) : t4a_launch(g_rt, &d);
  snprintf(c->message, sizeof c->message, "%s", last_message());
  return NULL;
}

static void test_release_while_borrowed(void **state) {
  (void)state;
  setup_runtime();
  stopped_launch c = {{0}, new_buffer(), new_buffer(), T4A_SUCCESS, "", 0, {0}};
  ASSERT_OK(t4a_kernel_get(g_module, "two_buffers", &c.kernel));
  uint64_t frees = stats().frees;

  g_arrived = g_go = 0;
  t4a_testing_admission_hook(stop_here, NULL);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, stopped_thread, &c), 0);
  pthread_mutex_lock(&g_mu);
  while (!g_arrived) pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);

  /* The launch borrowed everything and waits to be admitted: its kernel's
   * and first buffer's last handles go now. */
  ASSERT_OK(t4a_kernel_release(c.kernel));
  ASSERT_OK(t4a_buffer_release(c.a));
  t4a_buffer_info info = T4A_BUFFER_INFO_INIT;
  ASSERT_STATUS(t4a_buffer_info_get(c.a, &info), T4A_ERROR_INVALID_HANDLE);
  assert_non_null(strstr(last_message(), "released (stale)"));
  t4a_kernel_info kinfo = T4A_KERNEL_INFO_INIT;
  ASSERT_STATUS(t4a_kernel_info_get(c.kernel, &kinfo),
                T4A_ERROR_INVALID_HANDLE);
  /* ... but the borrowed buffer is not freed under the launch. */
  assert_int_equal(stats().frees, frees);

  pthread_mutex_lock(&g_mu);
  g_go = 1;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  assert_int_equal(pthread_join(t, NULL), 0);
  t4a_testing_admission_hook(NULL, NULL);
  if (c.status != T4A_SUCCESS)
    fail_msg("the borrowing launch gave %s: %s", t4a_status_name(c.status),
             c.message);
  /* Freed when the launch's section ended, before it returned. */
  t4a_runtime_stats st = stats();
  assert_int_equal(st.launches, 1);
  assert_int_equal(st.frees, frees + 1);

  ASSERT_OK(t4a_buffer_release(c.b));
  teardown_runtime();
}

/* ---- churn ------------------------------------------------------------ */

static _Atomic uint64_t g_shared;
static t4a_kernel g_kernel;
static atomic_int g_failed;

typedef struct churner {
  long launched, rejected;
  char failure[512];
} churner;

static void *churn(void *arg) {
  churner *ch = arg;
  t4a_arg args[2] = {T4A_ARG_INIT, T4A_ARG_INIT};
  args[0].kind = args[1].kind = T4A_ARG_BUFFER;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = g_kernel;
  d.grid[0] = 1;
  d.block[0] = 1;
  d.args = args;
  d.arg_count = 2;
  for (int i = 0; i < T4A_RACE_ITERATIONS && !atomic_load(&g_failed); ++i) {
    t4a_buffer own = {0};
    if (t4a_buffer_alloc(g_rt, 256, 0, &own) != T4A_SUCCESS) {
      snprintf(ch->failure, sizeof ch->failure, "alloc: %s", last_message());
      atomic_store(&g_failed, 1);
      return NULL;
    }
    args[0].buffer = own;
    args[1].buffer.id = atomic_load(&g_shared);
    t4a_status s = t4a_launch(g_rt, &d);
    if (s == T4A_SUCCESS) {
      ++ch->launched;
    } else if (s == T4A_ERROR_INVALID_HANDLE &&
               strstr(last_message(), "desc->args[1].buffer (id") != NULL &&
               strstr(last_message(), "released (stale)") != NULL) {
      ++ch->rejected;
    } else {
      snprintf(ch->failure, sizeof ch->failure, "launch gave %s: %s",
               t4a_status_name(s), last_message());
      atomic_store(&g_failed, 1);
    }
    if (t4a_buffer_release(own) != T4A_SUCCESS) {
      snprintf(ch->failure, sizeof ch->failure, "release: %s", last_message());
      atomic_store(&g_failed, 1);
    }
  }
  return NULL;
}

static void test_churn(void **state) {
  (void)state;
  setup_runtime();
  ASSERT_OK(t4a_kernel_get(g_module, "two_buffers", &g_kernel));
  atomic_store(&g_shared, new_buffer().id);
  atomic_store(&g_failed, 0);
  long launched = 0;
  for (int round = 0; round < 2; ++round) {
    static churner cs[CHURNERS];
    pthread_t threads[CHURNERS];
    for (int i = 0; i < CHURNERS; ++i) {
      memset(&cs[i], 0, sizeof cs[i]);
      assert_int_equal(pthread_create(&threads[i], NULL, churn, &cs[i]), 0);
    }
    for (int r = 0; r < T4A_RACE_ITERATIONS && !atomic_load(&g_failed); ++r) {
      t4a_buffer old = {atomic_exchange(&g_shared, new_buffer().id)};
      ASSERT_OK(t4a_buffer_release(old));
    }
    for (int i = 0; i < CHURNERS; ++i) {
      assert_int_equal(pthread_join(threads[i], NULL), 0);
      if (cs[i].failure[0] != '\0') fail_msg("%s", cs[i].failure);
      launched += cs[i].launched;
    }
    /* Joined: no section is open, so nothing released is still deferred:
     * every buffer but the shared one is freed (frees are counted when
     * enqueued, synchronously on the fake driver). */
    t4a_runtime_stats st = stats();
    assert_int_equal(st.allocations, st.frees + 1);
    assert_int_equal(st.launches, (uint64_t)launched);
  }
  printf("launches: %ld succeeded\n", launched);
  assert_true(launched > 0);
  t4a_buffer last = {atomic_load(&g_shared)};
  ASSERT_OK(t4a_buffer_release(last));
  ASSERT_OK(t4a_kernel_release(g_kernel));
  teardown_runtime();
}

/* ---- blocked ------------------------------------------------------------ */

/* A launch that waits for admission (the main thread holds a raw scope of
 * its runtime) must not hold up releases elsewhere: a buffer of another
 * runtime, released meanwhile and never borrowed, is freed at once. */
static atomic_int g_blocked_arrived;

static void arrive(void *arg) {
  (void)arg;
  if (tl_stop) atomic_store(&g_blocked_arrived, 1);
}

/* The same for a cooperative launch (mode 1) and a graph replay (mode 2),
 * which take admission on paths of their own. */
static void blocked_case(int mode) {
  setup_runtime();
  stopped_launch c = {{0}, new_buffer(), new_buffer(), T4A_SUCCESS,
                      "",  mode,         {0}};
  ASSERT_OK(t4a_kernel_get(g_module, "two_buffers", &c.kernel));
  if (mode == 2) {
    t4a_arg args[2] = {T4A_ARG_INIT, T4A_ARG_INIT};
    args[0].kind = args[1].kind = T4A_ARG_BUFFER;
    args[0].buffer = c.a;
    args[1].buffer = c.b;
    t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
    d.kernel = c.kernel;
    d.grid[0] = d.block[0] = 1;
    d.args = args;
    d.arg_count = 2;
    ASSERT_OK(t4a_capture_begin(g_rt, NULL));
    ASSERT_OK(t4a_launch(g_rt, &d));
    ASSERT_OK(t4a_capture_end(g_rt, &c.graph));
  }
  t4a_runtime other = {0};
  ASSERT_OK(t4a_runtime_create(NULL, &other));

  t4a_raw_scope scope = {0};
  t4a_raw_info info = T4A_RAW_INFO_INIT;
  ASSERT_OK(t4a_raw_begin(g_rt, &scope, &info));
  atomic_store(&g_blocked_arrived, 0);
  t4a_testing_admission_hook(arrive, NULL);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, stopped_thread, &c), 0);
  while (!atomic_load(&g_blocked_arrived)) sched_yield();
  /* The launch has borrowed its objects and waits for the raw scope. */
  for (int i = 0; i < 16; ++i) {
    t4a_buffer x = {0};
    ASSERT_OK(t4a_buffer_alloc(other, 256, 0, &x));
    ASSERT_OK(t4a_buffer_release(x));
  }
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(other, &st));
  assert_int_equal(st.allocations, 16);
  assert_int_equal(st.frees, 16);
  ASSERT_OK(t4a_runtime_destroy(other));

  ASSERT_OK(t4a_raw_end(scope));
  assert_int_equal(pthread_join(t, NULL), 0);
  t4a_testing_admission_hook(NULL, NULL);
  if (c.status != T4A_SUCCESS)
    fail_msg("the blocked launch gave %s: %s", t4a_status_name(c.status),
             c.message);
  ASSERT_OK(t4a_kernel_release(c.kernel));
  ASSERT_OK(t4a_buffer_release(c.a));
  ASSERT_OK(t4a_buffer_release(c.b));
  if (mode == 2) ASSERT_OK(t4a_graph_release(c.graph));
  teardown_runtime();
}

static void test_blocked_launch_does_not_hold_releases(void **state) {
  (void)state;
  blocked_case(0);
}

static void test_blocked_cooperative_launch(void **state) {
  (void)state;
  blocked_case(1);
}

static void test_blocked_graph_launch(void **state) {
  (void)state;
  blocked_case(2);
}

int main(void) {
#if !defined(T4A_FAKE_CUDA_PATH)
  fprintf(stderr, "built without the fake driver\n");
  return 1;
#else
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_release_while_borrowed),
      cmocka_unit_test(test_churn),
      cmocka_unit_test(test_blocked_launch_does_not_hold_releases),
      cmocka_unit_test(test_blocked_cooperative_launch),
      cmocka_unit_test(test_blocked_graph_launch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
