/*
 * Host lane (fake driver, two devices): the raw seam (docs/raw-seam.md).
 *   - begin hands out the runtime's context and stream, makes the context
 *     current; end restores the one current before, also when the restore
 *     or the begin fails (fault injection);
 *   - inside a scope, admitted calls on the same runtime from the same
 *     thread return REENTRANT naming the raw scope; allocation works;
 *     another runtime works;
 *   - a buffer registered and released right after end stays allocated
 *     until the runtime's epoch retires (synchronize);
 *   - nested scopes on two runtimes end in LIFO order (out of order is
 *     refused and changes nothing); each end restores its context;
 *   - misuse: wrong runtime, empty buffer, NULL out-pointer, another
 *     thread's raw_buffer/end, a stale scope, destroy on the owning thread
 *     (REENTRANT, nothing changed) and on another thread (waits for end);
 *   - wait_stream / signal_stream with a caller's stream, and a stream of
 *     another context refused.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_driver.h"
#include "t4acuda.h"
#include "t4acuda_testing.h"
#include "test_assert.h"
#include "test_helpers.h"

/* ---- the fake driver's controls and entry points ----------------------- */

typedef int (*ctx_get_fn)(void **);
typedef int (*ctx_set_fn)(void *);
typedef int (*stream_create_fn)(void **, unsigned);
typedef int (*stream_destroy_fn)(void *);

static void *current_context(void) {
  void *c = (void *)1;
  assert_int_equal(((ctx_get_fn)driver_entry("cuCtxGetCurrent"))(&c), 0);
  return c;
}
static void set_current_context(void *c) {
  assert_int_equal(((ctx_set_fn)driver_entry("cuCtxSetCurrent"))(c), 0);
}

/* ---- begin, REENTRANT inside, context restored ------------------------- */

static void test_begin_end_context(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0), other = runtime_on(0);
  t4a_runtime_info ri = runtime_info(rt);
  set_current_context(NULL);
  t4a_raw_scope scope = {0};
  t4a_raw_info info = T4A_RAW_INFO_INIT;
  ASSERT_OK(t4a_raw_begin(rt, &scope, &info));
  assert_int_not_equal(scope.id, T4A_NULL_ID);
  assert_int_equal(info.struct_size, sizeof info);
  assert_int_equal(info.device_ordinal, 0);
  assert_ptr_equal(info.context, ri.context);
  assert_ptr_equal(info.stream, ri.stream);
  assert_ptr_equal(current_context(), ri.context);

  /* Admitted calls on the same runtime: REENTRANT, naming the scope. */
  unsigned char bytes[64] = {0};
  t4a_buffer b;
  ASSERT_OK(t4a_buffer_alloc(rt, sizeof bytes, 0, &b)); /* not admitted */
  ASSERT_STATUS(t4a_buffer_upload(rt, b, 0, bytes, sizeof bytes),
                T4A_ERROR_REENTRANT);
  ASSERT_MESSAGE_HAS("raw scope");
  ASSERT_MESSAGE_HAS("t4a_raw_end");
  ASSERT_STATUS(t4a_buffer_fill(rt, b, 0, 8, 1), T4A_ERROR_REENTRANT);
  ASSERT_STATUS(t4a_runtime_synchronize(rt), T4A_ERROR_REENTRANT);
  t4a_completion c = {0};
  ASSERT_STATUS(t4a_runtime_record(rt, &c), T4A_ERROR_REENTRANT);
  ASSERT_STATUS(t4a_runtime_wait_stream(rt, info.stream), T4A_ERROR_REENTRANT);
  ASSERT_STATUS(t4a_runtime_signal_stream(rt, info.stream),
                T4A_ERROR_REENTRANT);
  t4a_raw_scope again = {0};
  t4a_raw_info info2 = T4A_RAW_INFO_INIT;
  ASSERT_STATUS(t4a_raw_begin(rt, &again, &info2), T4A_ERROR_REENTRANT);
  assert_int_equal(again.id, T4A_NULL_ID);
  /* Destroy on the owning thread: REENTRANT, nothing changed. */
  ASSERT_STATUS(t4a_runtime_destroy(rt), T4A_ERROR_REENTRANT);
  ASSERT_MESSAGE_HAS("raw scope");
  ASSERT_OK(t4a_runtime_info_get(rt, &ri));
  /* Another runtime works inside the scope. */
  t4a_buffer ob;
  ASSERT_OK(t4a_buffer_alloc(other, sizeof bytes, 0, &ob));
  ASSERT_OK(t4a_buffer_upload(other, ob, 0, bytes, sizeof bytes));
  ASSERT_OK(t4a_runtime_synchronize(other));
  assert_ptr_equal(current_context(), ri.context); /* still the scope's */

  ASSERT_OK(t4a_raw_end(scope));
  assert_ptr_equal(current_context(), NULL);
  /* The handle is gone; the runtime works again. */
  ASSERT_STATUS(t4a_raw_end(scope), T4A_ERROR_INVALID_HANDLE);
  ASSERT_MESSAGE_HAS("released (stale)");
  ASSERT_OK(t4a_buffer_upload(rt, b, 0, bytes, sizeof bytes));
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_buffer_release(ob));
  ASSERT_OK(t4a_runtime_destroy(other));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* ---- a released buffer outlives the raw work ---------------------------- */

static void test_buffer_kept_until_completion(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0);
  t4a_buffer b;
  ASSERT_OK(t4a_buffer_alloc(rt, 4096, T4A_BUFFER_ZERO, &b));
  t4a_buffer_info bi = T4A_BUFFER_INFO_INIT;
  ASSERT_OK(t4a_buffer_info_get(b, &bi));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  int before = live_allocations();
  t4a_runtime_stats st0 = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(rt, &st0));

  t4a_raw_scope scope;
  t4a_raw_info info = T4A_RAW_INFO_INIT;
  ASSERT_OK(t4a_raw_begin(rt, &scope, &info));
  uint64_t p = 0, p2 = 0;
  ASSERT_OK(t4a_raw_buffer(scope, b, &p));
  ASSERT_OK(t4a_raw_buffer(scope, b, &p2)); /* twice: allowed, one keep */
  assert_int_equal(p, bi.device_pointer);
  assert_int_equal(p2, p);
  /* "raw work": the fake's device memory is host memory */
  memset((void *)(uintptr_t)p, 0x3C, 4096);
  ASSERT_OK(t4a_raw_end(scope));
  ASSERT_OK(t4a_buffer_release(b)); /* right after end */
  if (live_allocations() != before)
    fail_msg("the registered buffer was freed at its release (%d live "
             "allocations, %d before): it must stay until the raw work "
             "completes",
             live_allocations(), before);
  t4a_runtime_stats st1 = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(rt, &st1));
  assert_int_equal(st1.open_epoch_items, st0.open_epoch_items + 1);
  ASSERT_OK(t4a_runtime_synchronize(rt)); /* the epoch retires */
  assert_int_equal(live_allocations(), before - 1);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* ---- nested scopes on two runtimes (two devices) ------------------------ */

static void test_nested_lifo(void **state) {
  (void)state;
  t4a_runtime r0 = runtime_on(0), r1 = runtime_on(1);
  t4a_runtime_info i0 = runtime_info(r0), i1 = runtime_info(r1);
  assert_ptr_not_equal(i0.context, i1.context);
  set_current_context(NULL);
  t4a_raw_scope s0, s1;
  t4a_raw_info a = T4A_RAW_INFO_INIT, b = T4A_RAW_INFO_INIT;
  ASSERT_OK(t4a_raw_begin(r0, &s0, &a));
  assert_ptr_equal(current_context(), i0.context);
  ASSERT_OK(t4a_raw_begin(r1, &s1, &b));
  assert_int_equal(b.device_ordinal, 1);
  assert_ptr_equal(current_context(), i1.context);
  /* Each registers only its own runtime's buffers. */
  t4a_buffer b0, b1;
  uint64_t p = 0;
  ASSERT_OK(t4a_buffer_alloc(r0, 256, 0, &b0));
  ASSERT_OK(t4a_buffer_alloc(r1, 256, 0, &b1));
  ASSERT_STATUS(t4a_raw_buffer(s1, b0, &p), T4A_ERROR_WRONG_RUNTIME);
  ASSERT_MESSAGE_HAS("buffer belongs to runtime domain");
  assert_int_equal(p, 0);
  ASSERT_OK(t4a_raw_buffer(s0, b0, &p));
  ASSERT_OK(t4a_raw_buffer(s1, b1, &p));
  /* Out of order: refused, nothing changes. */
  ASSERT_STATUS(t4a_raw_end(s0), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("reverse order");
  assert_ptr_equal(current_context(), i1.context);
  ASSERT_STATUS(t4a_buffer_fill(r0, b0, 0, 8, 0), T4A_ERROR_REENTRANT);
  ASSERT_OK(t4a_raw_end(s1));
  assert_ptr_equal(current_context(), i0.context);
  ASSERT_OK(t4a_buffer_fill(r1, b1, 0, 8, 0)); /* r1 free again */
  ASSERT_OK(t4a_raw_end(s0));
  assert_ptr_equal(current_context(), NULL);
  ASSERT_OK(t4a_buffer_release(b0));
  ASSERT_OK(t4a_buffer_release(b1));
  ASSERT_OK(t4a_runtime_destroy(r1));
  ASSERT_OK(t4a_runtime_destroy(r0));
}

/* ---- misuse ------------------------------------------------------------- */

typedef struct cross {
  t4a_raw_scope scope;
  t4a_buffer buffer;
  t4a_runtime rt;
  t4a_status buffer_status, end_status, destroy_status;
  char message[1024];
  atomic_int done;
} cross;

static void *use_from_other_thread(void *arg) {
  cross *x = arg;
  uint64_t p = 0;
  x->buffer_status = t4a_raw_buffer(x->scope, x->buffer, &p);
  x->end_status = t4a_raw_end(x->scope);
  snprintf(x->message, sizeof x->message, "%s", last_message());
  return NULL;
}

static void *destroy_from_other_thread(void *arg) {
  cross *x = arg;
  x->destroy_status = t4a_runtime_destroy(x->rt);
  atomic_store(&x->done, 1);
  return NULL;
}

static void test_misuse(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0);
  t4a_raw_scope scope = {0};
  t4a_raw_info info = T4A_RAW_INFO_INIT;
  ASSERT_STATUS(t4a_raw_begin(rt, NULL, &info), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("scope is NULL");
  ASSERT_STATUS(t4a_raw_begin(rt, &scope, NULL), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("info is NULL");
  info.struct_size = 2;
  ASSERT_STATUS(t4a_raw_begin(rt, &scope, &info), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("info->struct_size");
  assert_int_equal(scope.id, T4A_NULL_ID);
  /* A smaller (older) info struct is filled up to its size. */
  info.struct_size = 8;
  info.context = (void *)0x1234;
  ASSERT_OK(t4a_raw_begin(rt, &scope, &info));
  assert_int_equal(info.struct_size, 8);
  assert_ptr_equal(info.context, (void *)0x1234);

  t4a_buffer empty, b;
  uint64_t p = 77;
  ASSERT_OK(t4a_buffer_alloc(rt, 0, 0, &empty));
  ASSERT_OK(t4a_buffer_alloc(rt, 512, 0, &b));
  ASSERT_STATUS(t4a_raw_buffer(scope, empty, &p), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("empty");
  ASSERT_STATUS(t4a_raw_buffer(scope, b, NULL), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("device_pointer is NULL");
  t4a_raw_scope forged = {scope.id ^ 0x100000000ull};
  ASSERT_STATUS(t4a_raw_buffer(forged, b, &p), T4A_ERROR_INVALID_HANDLE);
  assert_int_equal(p, 77);

  /* Another thread may neither register nor end: both threads named. */
  cross x;
  memset(&x, 0, sizeof x);
  x.scope = scope;
  x.buffer = b;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, use_from_other_thread, &x), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(x.buffer_status, T4A_ERROR_INVALID_ARGUMENT);
  assert_int_equal(x.end_status, T4A_ERROR_INVALID_ARGUMENT);
  if (strstr(x.message, "was begun on thread") == NULL ||
      strstr(x.message, "this is thread") == NULL)
    fail_msg("the other thread's end did not name both threads: %s", x.message);

  /* Another thread's destroy waits for the end, then succeeds. */
  memset(&x, 0, sizeof x);
  x.rt = rt;
  assert_int_equal(pthread_create(&t, NULL, destroy_from_other_thread, &x), 0);
  struct timespec pause = {0, 100 * 1000 * 1000};
  nanosleep(&pause, NULL);
  if (atomic_load(&x.done))
    fail_msg("t4a_runtime_destroy on another thread returned %s while the "
             "raw scope was open",
             t4a_status_name(x.destroy_status));
  ASSERT_OK(t4a_raw_buffer(scope, b, &p)); /* the scope still works */
  ASSERT_OK(t4a_raw_end(scope));
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(x.destroy_status, T4A_SUCCESS);
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_buffer_release(empty));
}

/* ---- failures: the context is restored, admission released ------------- */

static void test_failures_restore(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0);
  t4a_runtime_info ri = runtime_info(rt);
  set_current_context(NULL);
  t4a_raw_scope scope = {0};
  t4a_raw_info info = T4A_RAW_INFO_INIT;
  /* Begin cannot make the context current: nothing held or changed. */
  ASSERT_OK(t4a_testing_fault_arm("cuCtxSetCurrent", 1, 201 /* INVALID_CONTEXT
                                                             */
                                  ,
                                  T4A_TESTING_FAULT_INSTEAD));
  ASSERT_STATUS(t4a_raw_begin(rt, &scope, &info), T4A_ERROR_DRIVER);
  ASSERT_MESSAGE_HAS("cuCtxSetCurrent");
  t4a_testing_fault_reset();
  assert_int_equal(scope.id, T4A_NULL_ID);
  assert_ptr_equal(current_context(), NULL);
  ASSERT_OK(t4a_runtime_synchronize(rt)); /* not REENTRANT: released */

  /* End's restore fails: reported, the scope is ended anyway. */
  ASSERT_OK(t4a_raw_begin(rt, &scope, &info));
  assert_ptr_equal(current_context(), ri.context);
  ASSERT_OK(t4a_testing_fault_arm("cuCtxSetCurrent", 1, 201,
                                  T4A_TESTING_FAULT_INSTEAD));
  ASSERT_STATUS(t4a_raw_end(scope), T4A_ERROR_DRIVER);
  ASSERT_MESSAGE_HAS("restoring the context");
  t4a_testing_fault_reset();
  ASSERT_STATUS(t4a_raw_end(scope), T4A_ERROR_INVALID_HANDLE);
  ASSERT_OK(t4a_runtime_synchronize(rt)); /* admission was released */
  set_current_context(NULL);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* ---- external streams --------------------------------------------------- */

static void test_wait_signal_stream(void **state) {
  (void)state;
  t4a_runtime rt = runtime_on(0), r1 = runtime_on(1);
  t4a_runtime_info ri = runtime_info(rt), i1 = runtime_info(r1);
  stream_create_fn create = (stream_create_fn)driver_entry("cuStreamCreate");
  stream_destroy_fn destroy =
      (stream_destroy_fn)driver_entry("cuStreamDestroy");
  void *mine = NULL, *foreign = NULL;
  set_current_context(ri.context);
  assert_int_equal(create(&mine, 1), 0);
  set_current_context(i1.context);
  assert_int_equal(create(&foreign, 1), 0);
  set_current_context(NULL);

  t4a_runtime_stats s0 = T4A_RUNTIME_STATS_INIT, s1 = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(rt, &s0));
  t4a_testing_count_calls(1);
  ASSERT_OK(t4a_runtime_wait_stream(rt, mine));
  assert_int_equal(t4a_testing_call_count("cuEventRecord"), 1);
  assert_int_equal(t4a_testing_call_count("cuStreamWaitEvent"), 1);
  ASSERT_OK(t4a_runtime_signal_stream(rt, mine));
  ASSERT_OK(t4a_runtime_signal_stream(rt, foreign)); /* any context */
  assert_int_equal(t4a_testing_call_count("cuEventRecord"), 3);
  assert_int_equal(t4a_testing_call_count("cuStreamWaitEvent"), 3);
  /* Waiting for a stream of another context: refused, nothing enqueued. */
  ASSERT_STATUS(t4a_runtime_wait_stream(rt, foreign),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("not to the runtime's context");
  assert_int_equal(t4a_testing_call_count("cuEventRecord"), 3);
  t4a_testing_count_calls(0);
  t4a_testing_fault_reset();
  ASSERT_OK(t4a_runtime_stats_get(rt, &s1));
  assert_int_equal(s1.events_recorded, s0.events_recorded + 3);
  /* The stream of the other runtime's device is its own. */
  ASSERT_OK(t4a_runtime_wait_stream(r1, foreign));
  assert_ptr_equal(current_context(), NULL);

  set_current_context(ri.context);
  assert_int_equal(destroy(mine), 0);
  assert_int_equal(destroy(foreign), 0);
  set_current_context(NULL);
  ASSERT_OK(t4a_runtime_destroy(r1));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

/* ---- a thread that exits with its scopes open ----------------------------
 * Only the thread that began a scope may end it (it owns the admission
 * lock). Before the fix, a thread that exited without t4a_raw_end left the
 * runtime's admission locked by a dead thread: every later operation of the
 * runtime, and its destroy, waited forever. Now the scopes are ended at
 * that thread's exit, on that thread, last first: buffers kept as at an
 * ordinary end, admission released, handles stale, and a warning logged. */

typedef struct exiting {
  t4a_runtime rt, r1;
  t4a_buffer b;
  t4a_raw_scope s0, s1;
  t4a_status begin0, begin1, reg;
} exiting;

static void *begin_and_exit(void *arg) {
  exiting *x = arg;
  t4a_raw_info info = T4A_RAW_INFO_INIT;
  uint64_t p = 0;
  x->begin0 = t4a_raw_begin(x->rt, &x->s0, &info);
  x->begin1 = t4a_raw_begin(x->r1, &x->s1, &info);
  x->reg = t4a_raw_buffer(x->s0, x->b, &p);
  return NULL; /* no t4a_raw_end */
}

typedef struct timed_fill {
  t4a_runtime rt;
  t4a_buffer b;
  atomic_int done;
  t4a_status status;
} timed_fill;

static void *fill_job(void *arg) {
  timed_fill *f = arg;
  f->status = t4a_buffer_fill(f->rt, f->b, 0, 16, 7);
  atomic_store(&f->done, 1);
  return NULL;
}

static atomic_int g_exit_warnings;

static void count_exit_warning(void *user, int32_t level, const char *msg) {
  (void)user;
  if (level == T4A_LOG_WARN && strstr(msg, "exited") != NULL)
    atomic_fetch_add(&g_exit_warnings, 1);
}

static void test_thread_exit_ends_scopes(void **state) {
  (void)state;
  exiting x;
  memset(&x, 0, sizeof x);
  x.rt = runtime_on(0);
  x.r1 = runtime_on(1);
  ASSERT_OK(t4a_buffer_alloc(x.rt, 4096, 0, &x.b));
  ASSERT_OK(t4a_runtime_synchronize(x.rt));
  int before = live_allocations();
  atomic_store(&g_exit_warnings, 0);
  ASSERT_OK(t4a_set_log_callback(count_exit_warning, NULL, T4A_LOG_WARN));
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, begin_and_exit, &x), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  ASSERT_OK(x.begin0);
  ASSERT_OK(x.begin1);
  ASSERT_OK(x.reg);
  /* Each runtime admits other threads again (a fill on a helper thread,
   * so that a runtime still locked shows as a timeout, not a hang). */
  t4a_buffer b1;
  ASSERT_OK(t4a_buffer_alloc(x.r1, 64, 0, &b1));
  timed_fill fills[2];
  memset(fills, 0, sizeof fills);
  fills[0].rt = x.rt;
  fills[0].b = x.b;
  fills[1].rt = x.r1;
  fills[1].b = b1;
  for (int i = 0; i < 2; ++i) {
    pthread_t f;
    assert_int_equal(pthread_create(&f, NULL, fill_job, &fills[i]), 0);
    for (int ms = 0; ms < 5000 && !atomic_load(&fills[i].done); ++ms) {
      struct timespec d = {0, 1000000};
      nanosleep(&d, NULL);
    }
    if (!atomic_load(&fills[i].done)) {
      fprintf(stderr,
              "HANG: runtime %d still holds the admission of a raw "
              "scope whose thread exited without t4a_raw_end\n",
              i);
      fflush(stderr);
      _exit(1);
    }
    assert_int_equal(pthread_join(f, NULL), 0);
    ASSERT_OK(fills[i].status);
  }
  ASSERT_OK(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN));
  assert_int_equal(atomic_load(&g_exit_warnings), 2);
  /* The handles are stale; the registered buffer is kept by the epoch. */
  ASSERT_STATUS(t4a_raw_end(x.s0), T4A_ERROR_INVALID_HANDLE);
  ASSERT_STATUS(t4a_raw_end(x.s1), T4A_ERROR_INVALID_HANDLE);
  ASSERT_OK(t4a_buffer_release(x.b));
  assert_int_equal(live_allocations(), before + 1); /* + b1 */
  ASSERT_OK(t4a_runtime_synchronize(x.rt));
  assert_int_equal(live_allocations(), before);
  ASSERT_OK(t4a_buffer_release(b1));
  ASSERT_OK(t4a_runtime_destroy(x.r1));
  ASSERT_OK(t4a_runtime_destroy(x.rt));
}

int main(void) {
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  setenv("FAKE_CUDA_DEVICES", "2", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_begin_end_context),
      cmocka_unit_test(test_buffer_kept_until_completion),
      cmocka_unit_test(test_nested_lifo),
      cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_failures_restore),
      cmocka_unit_test(test_wait_signal_stream),
      cmocka_unit_test(test_thread_exit_ends_scopes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
