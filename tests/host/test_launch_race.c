/*
 * Host lane (fake driver): launches racing the release of the handles they
 * name. Launcher threads launch with a kernel and two
 * buffers read from a shared table while a releaser thread replaces the
 * table's buffers and kernel and releases the handles it replaced. Every
 * launch returns SUCCESS or INVALID_HANDLE naming the kernel or a buffer
 * argument as released; afterwards the launches counted equal the
 * successes, every buffer allocated was freed, and the runtime is
 * destroyed with nothing leaked. The tsan lane runs it under TSan.
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
#include <string.h>

#include "fake_driver.h"
#include "t4acuda.h"
#include "test_assert.h"

#define LAUNCHERS 2
#define SLOTS 4
/* Buffers replaced (the kernel every 16th time): at least REPLACEMENTS,
 * and until the launchers made ATTEMPTS launches meanwhile (however the
 * threads are scheduled). */
#define REPLACEMENTS 3000
#define ATTEMPTS 4000

static t4a_runtime g_rt;
static t4a_module g_module;
static _Atomic uint64_t g_kernel;
static _Atomic uint64_t g_buffers[SLOTS];
static atomic_int g_done;
static atomic_long g_attempts;
static atomic_int g_failed; /* a launcher stopped on an unexpected result */

typedef struct launcher {
  long launched, rejected;
  char failure[512]; /* empty unless something unexpected happened */
} launcher;

static void *launch_loop(void *arg) {
  launcher *l = arg;
  t4a_arg args[2] = {T4A_ARG_INIT, T4A_ARG_INIT};
  args[0].kind = args[1].kind = T4A_ARG_BUFFER;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  d.args = args;
  d.arg_count = 2;
  for (unsigned j = 0; !atomic_load(&g_done); ++j) {
    d.kernel.id = atomic_load(&g_kernel);
    args[0].buffer.id = atomic_load(&g_buffers[j % SLOTS]);
    args[1].buffer.id = atomic_load(&g_buffers[(j + 1) % SLOTS]);
    t4a_status s = t4a_launch(g_rt, &d);
    atomic_fetch_add(&g_attempts, 1);
    if (s == T4A_SUCCESS) {
      ++l->launched;
      continue;
    }
    const char *m = last_message();
    if (s != T4A_ERROR_INVALID_HANDLE ||
        (strstr(m, "desc->kernel (id") == NULL &&
         strstr(m, "desc->args[0].buffer (id") == NULL &&
         strstr(m, "desc->args[1].buffer (id") == NULL) ||
        strstr(m, "released (stale)") == NULL) {
      snprintf(l->failure, sizeof l->failure, "launch gave %s: %s",
               t4a_status_name(s), m);
      atomic_store(&g_failed, 1);
      return NULL;
    }
    ++l->rejected;
  }
  return NULL;
}

static t4a_buffer new_buffer(void) {
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(g_rt, 256, 0, &b));
  return b;
}

static t4a_kernel new_kernel(void) {
  t4a_kernel k = {0};
  ASSERT_OK(t4a_kernel_get(g_module, "two_buffers", &k));
  return k;
}

static void test_launch_while_releasing(void **state) {
  (void)state;
  ASSERT_OK(t4a_runtime_create(NULL, &g_rt));
  /* the fake driver loads any bytes as a module */
  static const unsigned char image[16] = {1};
  ASSERT_OK(t4a_module_load_data(g_rt, image, sizeof image, &g_module));
  atomic_store(&g_kernel, new_kernel().id);
  for (int i = 0; i < SLOTS; ++i) atomic_store(&g_buffers[i], new_buffer().id);
  atomic_store(&g_done, 0);
  atomic_store(&g_attempts, 0);
  atomic_store(&g_failed, 0);

  static launcher ls[LAUNCHERS];
  pthread_t threads[LAUNCHERS];
  for (int i = 0; i < LAUNCHERS; ++i) {
    memset(&ls[i], 0, sizeof ls[i]);
    assert_int_equal(pthread_create(&threads[i], NULL, launch_loop, &ls[i]), 0);
  }
  long r = 0;
  for (; (r < REPLACEMENTS || atomic_load(&g_attempts) < ATTEMPTS) &&
         !atomic_load(&g_failed);
       ++r) {
    t4a_buffer old = {atomic_exchange(&g_buffers[r % SLOTS], new_buffer().id)};
    ASSERT_OK(t4a_buffer_release(old));
    if (r % 16 == 0) {
      t4a_kernel k = {atomic_exchange(&g_kernel, new_kernel().id)};
      ASSERT_OK(t4a_kernel_release(k));
    }
  }
  atomic_store(&g_done, 1);
  long launched = 0, rejected = 0;
  for (int i = 0; i < LAUNCHERS; ++i) {
    assert_int_equal(pthread_join(threads[i], NULL), 0);
    if (ls[i].failure[0] != '\0') fail_msg("%s", ls[i].failure);
    launched += ls[i].launched;
    rejected += ls[i].rejected;
  }
  printf("launches: %ld succeeded, %ld rejected (released handles)\n", launched,
         rejected);
  assert_true(launched > 0);

  for (int i = 0; i < SLOTS; ++i) {
    t4a_buffer b = {atomic_load(&g_buffers[i])};
    ASSERT_OK(t4a_buffer_release(b));
  }
  t4a_kernel k = {atomic_load(&g_kernel)};
  ASSERT_OK(t4a_kernel_release(k));
  ASSERT_OK(t4a_module_release(g_module));
  ASSERT_OK(t4a_runtime_synchronize(g_rt));
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(g_rt, &st));
  assert_int_equal(st.launches, (uint64_t)launched);
  assert_int_equal(st.allocations, SLOTS + r);
  assert_int_equal(st.frees, SLOTS + r);
  assert_int_equal(st.leaked_allocations, 0);
  ASSERT_OK(t4a_runtime_destroy(g_rt));
  t4a_process_stats ps = T4A_PROCESS_STATS_INIT;
  ASSERT_OK(t4a_process_stats_get(&ps));
  assert_int_equal(ps.runtimes_leaked, 0);
  assert_int_equal(ps.leaked_device_allocations, 0);
}

int main(void) {
  if (use_fake_driver() != 0) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_launch_while_releasing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
