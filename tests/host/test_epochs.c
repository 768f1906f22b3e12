/*
 * Host lane (fake driver): completion epochs on the warm launch path and
 * sticky driver results. One process per group (argv[1]):
 *   epochs  issue 8, item 1: a thread with no context current launches
 *           alternately from more modules than an open epoch holds. Every
 *           launch keeps its module,
 *           so the open epoch must be sealed every
 *           T4A_OPEN_EPOCH_LIMIT (core/epoch_limits.h) keeps and sealed
 *           epochs retired, without a current context: the event count is
 *           launches/T4A_OPEN_EPOCH_LIMIT (not 0), the open epoch stays
 *           at or under its bound and the sealed epochs few, and a successful
 * launch leaves no last error (it left DRIVER/201 before the fix). With two
 * or 64 alternating modules nothing new is kept after the first launch of
 * each (the open epoch holds each module once), so nothing is sealed at all. A
 * seal that fails fails the launch needing it before the launch is enqueued
 * (the epoch stays bounded). A device that lags (queries answer NOT_READY)
 * keeps at most 64 sealed epochs: beyond, a seal waits for the oldest. sticky
 * issue 8, item 6: a launch returning CUDA_ERROR_CONTAINED (226) breaks the
 * runtime: DEVICE_FAULT then and afterwards. SPDX-License-Identifier: MIT OR
 * Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/epoch_limits.h"
#define T4A_EXPERIMENTAL 1 /* graph capture */
#include "t4acuda.h"
#include "t4acuda_testing.h"
#include "test_assert.h"
#include "test_helpers.h"

#define MODULES 24 /* more than the keep deduplication window (8) */
/* More modules than an open epoch holds: cycling through them, every launch
 * keeps its module (each is kept once per epoch). */
#define MANY (T4A_OPEN_EPOCH_LIMIT + 44)
#define LAUNCHES 100000
#define OPEN_LIMIT T4A_OPEN_EPOCH_LIMIT /* Epochs::k_open_limit */
#define SEALED_MAX 5 /* Epochs::k_poll_above + 1: every fake event is done */

typedef struct setup {
  t4a_runtime rt;
  t4a_module modules[MANY];
  t4a_kernel kernels[MANY];
} setup;

static void make(setup *s, int modules) {
  memset(s, 0, sizeof *s);
  ASSERT_OK(t4a_runtime_create(NULL, &s->rt));
  for (int i = 0; i < modules; ++i) {
    /* the fake driver loads any bytes as a module; distinct bytes make
     * distinct modules (the module cache keys on the image) */
    unsigned char image[16] = {1, (unsigned char)i, (unsigned char)(i >> 8)};
    ASSERT_OK(t4a_module_load_data(s->rt, image, sizeof image, &s->modules[i]));
    ASSERT_OK(t4a_kernel_get(s->modules[i], "k", &s->kernels[i]));
  }
}

static void unmake(setup *s, int modules) {
  for (int i = 0; i < modules; ++i) {
    ASSERT_OK(t4a_kernel_release(s->kernels[i]));
    ASSERT_OK(t4a_module_release(s->modules[i]));
  }
  ASSERT_OK(t4a_runtime_destroy(s->rt));
}

/* Launches `count` times, cycling through `modules` kernels; fails on any
 * error, on a last error left by a success, or when a gauge exceeds its
 * bound. */
static void launch_cycling(setup *s, int modules, long count) {
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  t4a_last_error_clear();
  for (long i = 0; i < count; ++i) {
    d.kernel = s->kernels[i % modules];
    ASSERT_OK(t4a_launch(s->rt, &d));
    t4a_error_info ei = T4A_ERROR_INFO_INIT;
    (void)t4a_last_error(&ei);
    if (ei.status != T4A_SUCCESS)
      fail_msg("launch %ld succeeded but left a last error: %s (CUresult "
               "%d): %s",
               i, t4a_status_name(ei.status), (int)ei.driver_result,
               last_message());
    if (i % 997 == 0) {
      t4a_runtime_stats st = stats_of(s->rt);
      if (st.open_epoch_items > OPEN_LIMIT || st.sealed_epochs > SEALED_MAX)
        fail_msg("after %ld launches: %llu keepalives open (bound %d), "
                 "%llu sealed epochs (bound %d)",
                 i + 1, (unsigned long long)st.open_epoch_items, OPEN_LIMIT,
                 (unsigned long long)st.sealed_epochs, SEALED_MAX);
    }
  }
}

static void test_many_modules_no_context(void **state) {
  (void)state;
  setup s;
  make(&s, MANY);
  t4a_runtime_stats before = stats_of(s.rt);
  /* t4a_runtime_create and t4a_module_load_data restore the caller's
   * current context: none, on this thread. */
  launch_cycling(&s, MANY, LAUNCHES);
  t4a_runtime_stats after = stats_of(s.rt);
  uint64_t events = after.events_recorded - before.events_recorded;
  /* one seal per OPEN_LIMIT keeps: the OPEN_LIMIT keeps of a full epoch,
   * sealed by the next reservation */
  uint64_t want = (LAUNCHES - 1) / OPEN_LIMIT;
  printf("%d launches over %d modules: %llu events, %llu open, %llu "
         "sealed\n",
         LAUNCHES, MANY, (unsigned long long)events,
         (unsigned long long)after.open_epoch_items,
         (unsigned long long)after.sealed_epochs);
  if (events < want || events > want + 2)
    fail_msg("%llu events recorded for %d keeping launches; expected %llu "
             "(one per %d)",
             (unsigned long long)events, LAUNCHES, (unsigned long long)want,
             OPEN_LIMIT);
  assert_int_equal(after.launches - before.launches, LAUNCHES);
  assert_true(after.open_epoch_items >= 1 &&
              after.open_epoch_items <= OPEN_LIMIT);
  assert_true(after.sealed_epochs <= SEALED_MAX);
  /* host waits: none (the sealed epochs retire by query) */
  assert_int_equal(after.host_waits, before.host_waits);
  ASSERT_OK(t4a_runtime_synchronize(s.rt));
  t4a_runtime_stats synced = stats_of(s.rt);
  assert_int_equal(synced.open_epoch_items, 0);
  assert_int_equal(synced.sealed_epochs, 0);
  unmake(&s, MANY);
}

static void test_two_modules_deduplicated(void **state) {
  (void)state;
  setup s;
  make(&s, 2);
  t4a_runtime_stats before = stats_of(s.rt);
  launch_cycling(&s, 2, LAUNCHES / 10);
  t4a_runtime_stats after = stats_of(s.rt);
  /* each module is kept once: nothing fills the epoch, nothing is sealed */
  assert_int_equal(after.open_epoch_items, 2);
  assert_int_equal(after.events_recorded, before.events_recorded);
  unmake(&s, 2);
}

/* 64 alternating modules, far more than the window of recent keeps (8): the
 * open epoch still holds each module once (a launch of a module kept in the
 * open epoch adds nothing), so nothing fills it and nothing is sealed: no
 * event over many launches (one per OPEN_LIMIT launches when every launch
 * kept its module). */
static void test_64_modules_kept_once(void **state) {
  (void)state;
  setup s;
  make(&s, 64);
  t4a_runtime_stats before = stats_of(s.rt);
  launch_cycling(&s, 64, LAUNCHES / 4);
  t4a_runtime_stats after = stats_of(s.rt);
  assert_int_equal(after.launches - before.launches, LAUNCHES / 4);
  assert_int_equal(after.open_epoch_items, 64);
  assert_int_equal(after.events_recorded, before.events_recorded);
  assert_int_equal(after.sealed_epochs, before.sealed_epochs);
  /* a synchronize empties the open epoch: each module is kept again, once */
  ASSERT_OK(t4a_runtime_synchronize(s.rt));
  assert_int_equal(stats_of(s.rt).open_epoch_items, 0);
  launch_cycling(&s, 64, 640);
  assert_int_equal(stats_of(s.rt).open_epoch_items, 64);
  unmake(&s, 64);
}

/* A module kept in the open epoch is not kept again while that epoch is
 * open (the launch compares the open epoch's number stamped on the kernel
 * and module), and is kept again once the open epoch was emptied: by a
 * synchronize, and by a capture, whose begin seals the open epoch and whose
 * end moves the keeps made while capturing to the graph. A launch after the
 * capture must keep the module in the runtime's new open epoch (it would
 * not if the move had not given the open epoch a new number). */
static void test_keep_again_after_capture(void **state) {
  (void)state;
  setup s;
  make(&s, 1);
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  d.kernel = s.kernels[0];
  ASSERT_OK(t4a_runtime_synchronize(s.rt));
  assert_int_equal(stats_of(s.rt).open_epoch_items, 0);
  ASSERT_OK(t4a_launch(s.rt, &d));
  ASSERT_OK(t4a_launch(s.rt, &d));
  assert_int_equal(stats_of(s.rt).open_epoch_items, 1);
  ASSERT_OK(t4a_capture_begin(s.rt, NULL)); /* seals the open epoch */
  assert_int_equal(stats_of(s.rt).open_epoch_items, 0);
  ASSERT_OK(t4a_launch(s.rt, &d)); /* captured */
  ASSERT_OK(t4a_launch(s.rt, &d));
  assert_int_equal(stats_of(s.rt).open_epoch_items, 1);
  t4a_graph g = {0};
  ASSERT_OK(t4a_capture_end(s.rt, &g)); /* the keeps go to the graph */
  assert_int_equal(stats_of(s.rt).open_epoch_items, 0);
  ASSERT_OK(t4a_launch(s.rt, &d));
  ASSERT_OK(t4a_launch(s.rt, &d));
  assert_int_equal(stats_of(s.rt).open_epoch_items, 1);
  ASSERT_OK(t4a_graph_release(g));
  ASSERT_OK(t4a_runtime_synchronize(s.rt));
  assert_int_equal(stats_of(s.rt).open_epoch_items, 0);
  ASSERT_OK(t4a_launch(s.rt, &d));
  assert_int_equal(stats_of(s.rt).open_epoch_items, 1);
  unmake(&s, 1);
}

/* A full open epoch whose seal fails: the launch that needed the seal
 * fails with the seal's error, before enqueuing anything; the open epoch
 * stays at its bound; the next launch seals and succeeds. */
static void test_failed_seal_fails_launch_before_enqueue(void **state) {
  (void)state;
  setup s;
  make(&s, MANY);
  ASSERT_OK(t4a_runtime_synchronize(s.rt)); /* the open epoch is empty */
  launch_cycling(&s, MANY, OPEN_LIMIT);     /* and now full */
  assert_int_equal(stats_of(s.rt).open_epoch_items, OPEN_LIMIT);
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  d.kernel = s.kernels[OPEN_LIMIT % MANY];
  t4a_testing_count_calls(1);
  ASSERT_OK(t4a_testing_fault_arm("cuEventRecord", 1, 1 /* INVALID_VALUE */,
                                  T4A_TESTING_FAULT_INSTEAD));
  ASSERT_STATUS(t4a_launch(s.rt, &d), T4A_ERROR_DRIVER);
  ASSERT_MESSAGE_HAS("seals a completion epoch");
  assert_int_equal(t4a_testing_call_count("cuLaunchKernel"), 0);
  t4a_runtime_stats st = stats_of(s.rt);
  assert_int_equal(st.open_epoch_items, OPEN_LIMIT);
  assert_int_equal(st.launches, (uint64_t)OPEN_LIMIT);
  t4a_testing_fault_reset();
  t4a_last_error_clear();
  ASSERT_OK(t4a_launch(s.rt, &d));
  t4a_error_info ei = T4A_ERROR_INFO_INIT;
  (void)t4a_last_error(&ei);
  assert_int_equal(ei.status, T4A_SUCCESS);
  assert_int_equal(stats_of(s.rt).open_epoch_items, 1);
  unmake(&s, MANY);
}

/* A device that falls behind: every query of a sealed epoch answers
 * NOT_READY (injected), so sealed epochs pile up to their bound (64) and
 * from then on each seal waits for the oldest (a counted host wait); the
 * sealed epochs never exceed the bound and nothing fails. */
static void test_sealed_epochs_bounded_when_device_lags(void **state) {
  (void)state;
  setup s;
  make(&s, MANY);
  t4a_runtime_stats before = stats_of(s.rt);
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  const long launches = 80L * OPEN_LIMIT;
  uint64_t max_sealed = 0;
  t4a_last_error_clear();
  for (long i = 0; i < launches; ++i) {
    ASSERT_OK(t4a_testing_fault_arm("cuEventQuery", 1, 600 /* NOT_READY */,
                                    T4A_TESTING_FAULT_INSTEAD));
    d.kernel = s.kernels[i % MANY];
    ASSERT_OK(t4a_launch(s.rt, &d));
    uint64_t sealed = stats_of(s.rt).sealed_epochs;
    if (sealed > max_sealed) max_sealed = sealed;
  }
  t4a_testing_fault_reset();
  t4a_error_info ei = T4A_ERROR_INFO_INIT;
  (void)t4a_last_error(&ei);
  assert_int_equal(ei.status, T4A_SUCCESS);
  t4a_runtime_stats after = stats_of(s.rt);
  printf("device lagging: %llu sealed at most, %llu host waits for %ld "
         "launches\n",
         (unsigned long long)max_sealed,
         (unsigned long long)(after.host_waits - before.host_waits), launches);
  assert_int_equal(max_sealed, 64);
  /* 79 seals; the 65th to the 79th each waited for the oldest */
  assert_int_equal(after.host_waits - before.host_waits, 79 - 64);
  ASSERT_OK(t4a_runtime_synchronize(s.rt));
  assert_int_equal(stats_of(s.rt).sealed_epochs, 0);
  unmake(&s, MANY);
}

/* Keeps MODULES modules in the open epoch, then synchronizes with the
 * drain failing once (INVALID_VALUE, not sticky): the open epoch is left
 * sealed without an event, unproven. */
static void keep_then_fail_drain(setup *s) {
  launch_cycling(s, MODULES, MODULES);
  ASSERT_OK(t4a_testing_fault_arm("cuStreamSynchronize", 1,
                                  1 /* INVALID_VALUE */,
                                  T4A_TESTING_FAULT_INSTEAD));
  ASSERT_STATUS(t4a_runtime_synchronize(s->rt), T4A_ERROR_DRIVER);
  t4a_testing_fault_reset();
}

/* Synchronize seals the open epoch without an event: the drain is the
 * proof, so it records none (no cuEventRecord) and retires everything. A
 * drain that fails (a non-sticky error, injected) leaves that eventless
 * epoch sealed; the next epoch sealed with an event proves it once that
 * event completes, so the sealed epochs stay as few as before, and the
 * next synchronize retires everything. */
static void test_synchronize_seals_without_event(void **state) {
  (void)state;
  setup s;
  make(&s, MODULES);
  launch_cycling(&s, MODULES, MODULES); /* MODULES keeps, nothing sealed */
  t4a_runtime_stats before = stats_of(s.rt);
  assert_int_equal(before.open_epoch_items, MODULES);
  t4a_testing_count_calls(1);
  ASSERT_OK(t4a_runtime_synchronize(s.rt));
  assert_int_equal(t4a_testing_call_count("cuEventRecord"), 0);
  assert_int_equal(t4a_testing_call_count("cuStreamSynchronize"), 1);
  t4a_runtime_stats after = stats_of(s.rt);
  assert_int_equal(after.events_recorded, before.events_recorded);
  assert_int_equal(after.open_epoch_items, 0);
  assert_int_equal(after.sealed_epochs, 0);
  /* a failed drain */
  keep_then_fail_drain(&s);
  after = stats_of(s.rt);
  assert_int_equal(after.open_epoch_items, 0);
  assert_int_equal(after.sealed_epochs, 1); /* eventless, unproven */
  /* many seals with events later: the eventless epoch retires with the
   * first of them, and launch_cycling checks the bound on sealed epochs */
  launch_cycling(&s, MODULES, 20L * OPEN_LIMIT);
  after = stats_of(s.rt);
  assert_true(after.sealed_epochs <= SEALED_MAX);
  assert_int_equal(after.host_waits, before.host_waits + 2);
  ASSERT_OK(t4a_runtime_synchronize(s.rt));
  after = stats_of(s.rt);
  assert_int_equal(after.open_epoch_items, 0);
  assert_int_equal(after.sealed_epochs, 0);
  t4a_testing_count_calls(0);
  unmake(&s, MODULES);
}

/* The drains that prove eventless epochs name the stream without making the
 * runtime's context current, so a driver that answers INVALID_CONTEXT for
 * want of one (injected once) gets the call again in the runtime's context,
 * as every other stream call does (core/stream_context.hpp): synchronize's
 * drain, and the drain wait_oldest() makes for an eventless oldest epoch
 * (a failed synchronize left it; a lagging device fills the sealed epochs
 * to their bound, so a seal waits for the oldest). Before the fix both
 * failed with DRIVER (201). */
static void test_drains_retry_in_context(void **state) {
  (void)state;
  setup s;
  make(&s, MANY);
  launch_cycling(&s, MODULES, MODULES);
  ASSERT_OK(t4a_testing_fault_arm("cuStreamSynchronize", 1,
                                  201 /* INVALID_CONTEXT */,
                                  T4A_TESTING_FAULT_INSTEAD));
  ASSERT_OK(t4a_runtime_synchronize(s.rt));
  t4a_testing_fault_reset();
  t4a_runtime_stats st = stats_of(s.rt);
  assert_int_equal(st.open_epoch_items, 0);
  assert_int_equal(st.sealed_epochs, 0);
  /* an eventless oldest epoch: a failed drain */
  keep_then_fail_drain(&s);
  assert_int_equal(stats_of(s.rt).sealed_epochs, 1);
  /* the device lags: seals pile up until one waits for the oldest, which
   * has no event, by draining the stream (refused once) */
  ASSERT_OK(t4a_testing_fault_arm("cuStreamSynchronize", 1,
                                  201 /* INVALID_CONTEXT */,
                                  T4A_TESTING_FAULT_INSTEAD));
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  t4a_runtime_stats before = stats_of(s.rt);
  for (long i = 0; i < 70L * OPEN_LIMIT; ++i) {
    ASSERT_OK(t4a_testing_fault_arm("cuEventQuery", 1, 600 /* NOT_READY */,
                                    T4A_TESTING_FAULT_INSTEAD));
    d.kernel = s.kernels[i % MANY];
    ASSERT_OK(t4a_launch(s.rt, &d));
  }
  t4a_testing_fault_reset();
  st = stats_of(s.rt);
  assert_true(st.host_waits > before.host_waits); /* the oldest was waited */
  assert_true(st.sealed_epochs <= 64);
  ASSERT_OK(t4a_runtime_synchronize(s.rt));
  assert_int_equal(stats_of(s.rt).sealed_epochs, 0);
  unmake(&s, MANY);
}

static void test_contained_breaks_runtime(void **state) {
  (void)state;
  setup s;
  make(&s, 1);
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  d.kernel = s.kernels[0];
  ASSERT_OK(t4a_launch(s.rt, &d));
  ASSERT_OK(t4a_testing_fault_arm("cuLaunchKernel", 1, 226 /* CONTAINED */,
                                  T4A_TESTING_FAULT_INSTEAD));
  ASSERT_STATUS(t4a_launch(s.rt, &d), T4A_ERROR_DEVICE_FAULT);
  t4a_error_info ei = T4A_ERROR_INFO_INIT;
  ASSERT_OK(t4a_last_error(&ei));
  assert_int_equal(ei.driver_result, 226);
  t4a_testing_fault_reset();
  /* broken: later operations quote the fault without calling the driver */
  ASSERT_STATUS(t4a_launch(s.rt, &d), T4A_ERROR_DEVICE_FAULT);
  ASSERT_MESSAGE_HAS("CUDA_ERROR_CONTAINED");
  ASSERT_STATUS(t4a_runtime_synchronize(s.rt), T4A_ERROR_DEVICE_FAULT);
  t4a_process_fault pf = T4A_PROCESS_FAULT_INIT;
  ASSERT_OK(t4a_process_fault_get(&pf));
  assert_int_equal(pf.driver_result, 226);
  ASSERT_OK(t4a_kernel_release(s.kernels[0]));
  ASSERT_OK(t4a_module_release(s.modules[0]));
  /* unproven completion: destroy reports the fault and leaks */
  ASSERT_STATUS(t4a_runtime_destroy(s.rt), T4A_ERROR_DEVICE_FAULT);
}

int main(int argc, char **argv) {
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  const char *group = argc > 1 ? argv[1] : "epochs";
  const struct CMUnitTest epochs[] = {
      cmocka_unit_test(test_many_modules_no_context),
      cmocka_unit_test(test_two_modules_deduplicated),
      cmocka_unit_test(test_64_modules_kept_once),
      cmocka_unit_test(test_keep_again_after_capture),
      cmocka_unit_test(test_failed_seal_fails_launch_before_enqueue),
      cmocka_unit_test(test_sealed_epochs_bounded_when_device_lags),
      cmocka_unit_test(test_synchronize_seals_without_event),
      cmocka_unit_test(test_drains_retry_in_context),
  };
  const struct CMUnitTest sticky[] = {
      cmocka_unit_test(test_contained_breaks_runtime),
  };
  if (!strcmp(group, "epochs"))
    return cmocka_run_group_tests_name("epochs", epochs, NULL, NULL);
  if (!strcmp(group, "sticky"))
    return cmocka_run_group_tests_name("sticky", sticky, NULL, NULL);
  fprintf(stderr, "unknown group %s\n", group);
  return 2;
}
