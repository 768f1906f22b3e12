/*
 * Host lane (fake driver, T4A_TESTING): the launch path's keep stamps and
 * the device-allocation counters' owner, under the ways they can go wrong.
 *  - stamps: the launch path's keep stamps (open epoch numbers on kernels
 *    and modules) never skip a keep the module needs. With a module cache
 *    of one entry, a module's last handle and kernel are released right
 *    after a launch, after each way the open epoch can be emptied or moved
 *    (synchronize, a capture begin/end, a full epoch sealed by other
 *    modules, a cache eviction's seal, a failed seal, another kernel of the
 *    module keeping it): the module must not be unloaded before the launch
 *    is proven complete (synchronize). A skipped keep unloads it at the
 *    release (a CUmodule unloaded under a pending launch on a GPU).
 *  - counters: frees deferred past another thread's borrow section are
 *    counted by whichever thread drains them (here a thread that is not the
 *    counters' owner, while the owner keeps allocating and releasing):
 *    exact counts and bytes once joined; run under TSan too.
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

#include "core/epoch_limits.h"
#define T4A_EXPERIMENTAL 1 /* graph capture */
#include "admission_stop.h"
#include "t4acuda.h"
#include "t4acuda_testing.h"
#include "test_assert.h"
#include "test_helpers.h"

#define OPEN_LIMIT T4A_OPEN_EPOCH_LIMIT
#define FILLERS (OPEN_LIMIT + 8)

static void load(t4a_runtime rt, int i, t4a_module *m, t4a_kernel *k) {
  unsigned char image[16] = {7, (unsigned char)i, (unsigned char)(i >> 8)};
  ASSERT_OK(t4a_module_load_data(rt, image, sizeof image, m));
  ASSERT_OK(t4a_kernel_get(*m, "k", k));
}

static void launch(t4a_runtime rt, t4a_kernel k) {
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  d.kernel = k;
  ASSERT_OK(t4a_launch(rt, &d));
}

enum {
  V_FIRST,          /* first launch in the open epoch */
  V_AFTER_SYNC,     /* launched, synchronized, launched again */
  V_AFTER_CAPTURE,  /* launched, synchronized, captured a launch (graph
                       dropped), launched again */
  V_EMPTY_CAPTURE,  /* synchronized, empty capture begin/end, launched */
  V_AFTER_FULL,     /* launched, the open epoch filled and sealed, again */
  V_AFTER_EVICT,    /* launched, another module loaded (evicts: seals) */
  V_SIBLING,        /* another kernel of the module kept it this epoch */
  V_AFTER_FAILSEAL, /* the full epoch's seal failed once, then launched */
  V_COUNT
};

static void stamp_case(int variant) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  o.module_cache_entries = 1;
  t4a_runtime rt = {0};
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  t4a_module m = {0}, other = {0};
  t4a_kernel k = {0}, k2 = {0}, ko = {0};
  load(rt, 1, &m, &k);
  ASSERT_OK(t4a_kernel_get(m, "k2", &k2));
  static t4a_module fm[FILLERS];
  static t4a_kernel fk[FILLERS];
  int fillers = 0;
  if (variant == V_AFTER_FULL || variant == V_AFTER_FAILSEAL) {
    /* Loading them evicts m from the cache (one entry): m lives by its
     * handle, kernels and the epochs only. */
    fillers = FILLERS;
    for (int i = 0; i < fillers; ++i) load(rt, 100 + i, &fm[i], &fk[i]);
  } else {
    load(rt, 2, &other, &ko); /* evicts m from the cache */
  }
  ASSERT_OK(t4a_runtime_synchronize(rt));
  launch(rt, k); /* kept, stamped */
  switch (variant) {
  case V_FIRST: break;
  case V_AFTER_SYNC:
    ASSERT_OK(t4a_runtime_synchronize(rt));
    launch(rt, k);
    break;
  case V_AFTER_CAPTURE: {
    /* Synchronized first: m's only keeps are then the capture's (dropped
     * with the graph) and the next launch's. */
    ASSERT_OK(t4a_runtime_synchronize(rt));
    ASSERT_OK(t4a_capture_begin(rt, NULL));
    launch(rt, k);
    t4a_graph g = {0};
    ASSERT_OK(t4a_capture_end(rt, &g));
    ASSERT_OK(t4a_graph_release(g));
    launch(rt, k);
    break;
  }
  case V_EMPTY_CAPTURE: {
    ASSERT_OK(t4a_runtime_synchronize(rt));
    ASSERT_OK(t4a_capture_begin(rt, NULL)); /* nothing to seal */
    t4a_graph g = {0};
    (void)t4a_capture_end(rt, &g); /* an empty capture: may fail */
    if (g.id != 0) ASSERT_OK(t4a_graph_release(g));
    t4a_last_error_clear();
    launch(rt, k);
    break;
  }
  case V_AFTER_FULL:
    for (int i = 0; i < fillers; ++i) launch(rt, fk[i]); /* seals */
    launch(rt, k);
    break;
  case V_AFTER_EVICT: {
    t4a_module m3 = {0};
    t4a_kernel k3 = {0};
    load(rt, 3, &m3, &k3); /* evicts `other`: seals the open epoch */
    launch(rt, k);
    ASSERT_OK(t4a_kernel_release(k3));
    ASSERT_OK(t4a_module_release(m3));
    break;
  }
  case V_SIBLING:
    ASSERT_OK(t4a_runtime_synchronize(rt));
    launch(rt, k2); /* keeps m in the new open epoch, stamps m and k2 */
    launch(rt, k);  /* k's own stamp is old; m's is current: no keep */
    break;
  case V_AFTER_FAILSEAL: {
    ASSERT_OK(t4a_runtime_synchronize(rt));
    for (int i = 0; i < OPEN_LIMIT; ++i) launch(rt, fk[i]); /* full */
    ASSERT_OK(t4a_testing_fault_arm("cuEventRecord", 1, 1,
                                    T4A_TESTING_FAULT_INSTEAD));
    t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
    d.grid[0] = 1;
    d.block[0] = 1;
    d.kernel = k;
    assert_int_not_equal(t4a_launch(rt, &d), T4A_SUCCESS);
    t4a_testing_fault_reset();
    t4a_last_error_clear();
    launch(rt, k);
    break;
  }
  default: fail();
  }
  uint64_t unloads = stats_of(rt).module_unloads;
  /* Nothing but the epochs keeps m now. */
  ASSERT_OK(t4a_kernel_release(k));
  ASSERT_OK(t4a_kernel_release(k2));
  ASSERT_OK(t4a_module_release(m));
  uint64_t after = stats_of(rt).module_unloads;
  if (after != unloads)
    fail_msg("variant %d: the module was unloaded at its release, with a "
             "launch of it not proven complete (its keep was skipped)",
             variant);
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(stats_of(rt).module_unloads, unloads + 1);
  if (ko.id != 0) ASSERT_OK(t4a_kernel_release(ko));
  if (other.id != 0) ASSERT_OK(t4a_module_release(other));
  for (int i = 0; i < fillers; ++i) {
    ASSERT_OK(t4a_kernel_release(fk[i]));
    ASSERT_OK(t4a_module_release(fm[i]));
  }
  ASSERT_OK(t4a_runtime_destroy(rt));
}

static void test_stamps_never_skip_a_needed_keep(void **state) {
  (void)state;
  for (int v = 0; v < V_COUNT; ++v) stamp_case(v);
}

/* ---- counters ----------------------------------------------------------- */

static t4a_runtime g_rt;
static t4a_kernel g_k;

/* Stops inside its launch's borrow section (the tried admission's hook),
 * then ends the section: it drains the releases deferred meanwhile. */
static void *sectioned(void *arg) {
  (void)arg;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  d.kernel = g_k;
  tl_stop = 1;
  t4a_status s = t4a_launch(g_rt, &d);
  return (void *)(intptr_t)s;
}

static atomic_int g_owner_go;
static void *owner_churn(void *arg) {
  (void)arg;
  while (!atomic_load(&g_owner_go)) sched_yield();
  for (int i = 0; i < 2000; ++i) {
    t4a_buffer b = {0};
    if (t4a_buffer_alloc(g_rt, 512, 0, &b) != T4A_SUCCESS) return (void *)1;
    if (t4a_buffer_release(b) != T4A_SUCCESS) return (void *)1;
  }
  return NULL;
}

#define DEFERRED 200

static void test_deferred_frees_counted_exactly(void **state) {
  (void)state;
  ASSERT_OK(t4a_runtime_create(NULL, &g_rt));
  t4a_module m = {0};
  load(g_rt, 9, &m, &g_k);
  /* The main thread counts first: it owns the counters. */
  t4a_buffer bufs[DEFERRED];
  for (int i = 0; i < DEFERRED; ++i)
    ASSERT_OK(t4a_buffer_alloc(g_rt, 1000, 0, &bufs[i]));
  stop_reset();
  t4a_testing_admission_hook(stop_here, NULL);
  pthread_t x;
  assert_int_equal(pthread_create(&x, NULL, sectioned, NULL), 0);
  stop_wait_arrived();
  /* x is inside a section: these frees are deferred to it. */
  for (int i = 0; i < DEFERRED; ++i) ASSERT_OK(t4a_buffer_release(bufs[i]));
  t4a_runtime_stats st = stats_of(g_rt);
  assert_int_equal(st.frees, 0);
  /* The owner (another thread now: the main thread's record stays the
   * owner, so churn from a second thread is counted in the atomics) and
   * x's drain race. */
  atomic_store(&g_owner_go, 0);
  pthread_t o;
  assert_int_equal(pthread_create(&o, NULL, owner_churn, NULL), 0);
  atomic_store(&g_owner_go, 1);
  for (int i = 0; i < 2000; ++i) { /* the owner, counting meanwhile */
    t4a_buffer b = {0};
    ASSERT_OK(t4a_buffer_alloc(g_rt, 256, 0, &b));
    if (i == 10) stop_let_go();
    ASSERT_OK(t4a_buffer_release(b));
  }
  void *rx = NULL, *ro = NULL;
  assert_int_equal(pthread_join(x, &rx), 0);
  assert_int_equal(pthread_join(o, &ro), 0);
  t4a_testing_admission_hook(NULL, NULL);
  assert_int_equal((intptr_t)rx, T4A_SUCCESS);
  assert_null(ro);
  st = stats_of(g_rt);
  assert_int_equal(st.allocations, DEFERRED + 4000);
  assert_int_equal(st.frees, DEFERRED + 4000);
  assert_int_equal(st.bytes_allocated, 0);
  assert_true(st.bytes_allocated_peak >= DEFERRED * 1000);
  ASSERT_OK(t4a_kernel_release(g_k));
  ASSERT_OK(t4a_module_release(m));
  ASSERT_OK(t4a_runtime_destroy(g_rt));
}

int main(int argc, char **argv) {
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  const char *group = argc > 1 ? argv[1] : "stamps";
  const struct CMUnitTest stamps[] = {
      cmocka_unit_test(test_stamps_never_skip_a_needed_keep),
  };
  const struct CMUnitTest counters[] = {
      cmocka_unit_test(test_deferred_frees_counted_exactly),
  };
  if (!strcmp(group, "counters"))
    return cmocka_run_group_tests_name("counters", counters, NULL, NULL);
  if (!strcmp(group, "stamps"))
    return cmocka_run_group_tests_name("stamps", stamps, NULL, NULL);
  fprintf(stderr, "unknown group %s\n", group);
  return 2;
}
