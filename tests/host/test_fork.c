/*
 * Host lane (fake driver, T4A_TESTING): fork safety (issue 8 item 10).
 * A thread hammers the library (compiles answered by the memory
 * cache, registry create/retain/release, logging through a callback, and
 * runtime operations on the fake driver) while the main thread forks
 * CHILDREN children. Each child, under alarm(10), makes context-free calls
 * (version, status names, last error, logging, registry objects, a compile
 * from the memory cache), which must work, and driver-needing ones (device
 * count, runtime create, an operation on the parent's runtime, a release of
 * the parent's buffer), which must return NO_DRIVER naming the fork; then
 * it exits 0, or 1 saying what was wrong. Every child must exit 0: none
 * may hang (SIGALRM) or crash. Before the fix, children hung on a lock a
 * parent thread held at the fork.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_driver.h"
#include "t4acuda.h"
#include "t4acuda_testing.h"
#include "test_assert.h"

#define CHILDREN 200

static const char k_source[] =
    "extern \"C\" __global__ void fork_kernel(float *a) { a[0] = 1.0f; }\n";

static t4a_compile_request request(void) {
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  r.source = k_source;
  r.cc_major = 9;
  r.cc_minor = 0;
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  return r;
}

static int g_have_compiler;
static t4a_runtime g_rt;
static t4a_buffer g_parent_buffer;
static t4a_module g_parent_module;
static t4a_kernel g_parent_kernel;
static atomic_int g_stop;
static atomic_long g_rounds;
static atomic_long g_logged;

static void count_log(void *user, int32_t level, const char *message) {
  (void)user, (void)level, (void)message;
  atomic_fetch_add(&g_logged, 1);
}

static void *hammer(void *arg) {
  (void)arg;
  static const unsigned char image[16] = {3};
  unsigned char bytes[256] = {0}, back[256];
  while (!atomic_load(&g_stop)) {
    if (g_have_compiler) {
      t4a_compile_request r = request();
      t4a_artifact a = {0};
      if (t4a_compile(&r, &a) == T4A_SUCCESS) (void)t4a_artifact_release(a);
    }
    uint64_t id = 0;
    if (t4a_testing_object_create(1, &id) == T4A_SUCCESS) {
      (void)t4a_testing_object_retain(id);
      (void)t4a_testing_object_release(id);
      (void)t4a_testing_object_release(id);
    }
    /* a failure: records a last error and logs (DEBUG) */
    t4a_buffer forged = {UINT64_C(0x0200000100000777)};
    (void)t4a_buffer_release(forged);
    t4a_buffer b = {0};
    if (t4a_buffer_alloc(g_rt, sizeof bytes, 0, &b) == T4A_SUCCESS) {
      (void)t4a_buffer_upload(g_rt, b, 0, bytes, sizeof bytes);
      (void)t4a_buffer_download_sync(g_rt, b, 0, back, sizeof back);
      (void)t4a_buffer_release(b);
    }
    t4a_module m = {0};
    if (t4a_module_load_data(g_rt, image, sizeof image, &m) == T4A_SUCCESS)
      (void)t4a_module_release(m);
    (void)t4a_runtime_synchronize(g_rt);
    atomic_fetch_add(&g_rounds, 1);
  }
  return NULL;
}

/* The child's checks; returns 0 or exits 1 with a reason on stderr. */
#define CHILD_CHECK(cond, ...)                                                 \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "child %d: ", (int)getpid());                            \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      _exit(1);                                                                \
    }                                                                          \
  } while (0)

static void expect_fork_refusal(t4a_status s, const char *what) {
  CHILD_CHECK(s == T4A_ERROR_NO_DRIVER, "%s gave %s: %s", what,
              t4a_status_name(s), last_message());
  CHILD_CHECK(strstr(last_message(), "child process forked") != NULL,
              "%s: the message does not name the fork: %s", what,
              last_message());
}

static void child_main(void) {
  alarm(10);
  /* context-free */
  CHILD_CHECK(t4a_version() == T4A_VERSION_NUMBER, "t4a_version");
  CHILD_CHECK(
      strcmp(t4a_status_name(T4A_ERROR_NO_DRIVER), "T4A_ERROR_NO_DRIVER") == 0,
      "t4a_status_name");
  t4a_last_error_clear();
  CHILD_CHECK(t4a_set_log_callback(count_log, NULL, T4A_LOG_DEBUG) ==
                  T4A_SUCCESS,
              "t4a_set_log_callback");
  uint64_t id = 0;
  CHILD_CHECK(t4a_testing_object_create(5, &id) == T4A_SUCCESS,
              "registry create: %s", last_message());
  CHILD_CHECK(t4a_testing_object_release(id) == T4A_SUCCESS,
              "registry release: %s", last_message());
  t4a_buffer forged = {UINT64_C(0x0200000100000777)};
  CHILD_CHECK(t4a_buffer_release(forged) == T4A_ERROR_INVALID_HANDLE,
              "a forged handle: %s", last_message());
  if (g_have_compiler) {
    t4a_compile_request r = request();
    t4a_artifact a = {0};
    t4a_status s = t4a_compile(&r, &a);
    CHILD_CHECK(s == T4A_SUCCESS, "compile gave %s: %s", t4a_status_name(s),
                last_message());
    CHILD_CHECK(t4a_artifact_release(a) == T4A_SUCCESS, "artifact release");
  }
  /* driver-needing */
  int32_t n = 0;
  expect_fork_refusal(t4a_device_count(&n), "t4a_device_count");
  t4a_runtime rt = {0};
  expect_fork_refusal(t4a_runtime_create(NULL, &rt), "t4a_runtime_create");
  t4a_buffer b = {0};
  expect_fork_refusal(t4a_buffer_alloc(g_rt, 64, 0, &b),
                      "t4a_buffer_alloc on the parent's runtime");
  expect_fork_refusal(t4a_buffer_release(g_parent_buffer),
                      "t4a_buffer_release of the parent's buffer");
  expect_fork_refusal(t4a_runtime_synchronize(g_rt),
                      "t4a_runtime_synchronize of the parent's runtime");
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  d.kernel = g_parent_kernel;
  expect_fork_refusal(t4a_launch(g_rt, &d),
                      "t4a_launch on the parent's runtime");
  t4a_buffer view = {0};
  expect_fork_refusal(t4a_module_global(g_parent_module, "counter", &view),
                      "t4a_module_global of the parent's module");
  expect_fork_refusal(t4a_kernel_release(g_parent_kernel),
                      "t4a_kernel_release of the parent's kernel");
  _exit(0);
}

static void test_fork_while_busy(void **state) {
  (void)state;
  ASSERT_OK(t4a_runtime_create(NULL, &g_rt));
  ASSERT_OK(t4a_buffer_alloc(g_rt, 64, 0, &g_parent_buffer));
  static const unsigned char image[16] = {4}; /* the fake loads any bytes */
  ASSERT_OK(t4a_module_load_data(g_rt, image, sizeof image, &g_parent_module));
  ASSERT_OK(t4a_kernel_get(g_parent_module, "fork_kernel", &g_parent_kernel));
  {
    t4a_compile_request r = request();
    t4a_artifact a = {0};
    t4a_status s = t4a_compile(&r, &a); /* warms the memory cache */
    g_have_compiler = s == T4A_SUCCESS;
    if (g_have_compiler)
      ASSERT_OK(t4a_artifact_release(a));
    else
      printf("no compiler (%s): compiles are left out\n", last_message());
  }
  ASSERT_OK(t4a_set_log_callback(count_log, NULL, T4A_LOG_DEBUG));
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, hammer, NULL), 0);
  while (atomic_load(&g_rounds) < 10) {
  }

  int hung = 0, failed = 0;
  for (int batch = 0; batch < CHILDREN; batch += 20) {
    pid_t pids[20];
    for (int i = 0; i < 20; ++i) {
      long seen = atomic_load(&g_rounds);
      while (atomic_load(&g_rounds) == seen) {
      } /* fork at varying points of the hammer's round */
      pids[i] = fork();
      assert_true(pids[i] >= 0);
      if (pids[i] == 0) child_main();
    }
    for (int i = 0; i < 20; ++i) {
      int status = 0;
      assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
      if (WIFSIGNALED(status)) {
        ++hung;
        fprintf(stderr, "child %d killed by signal %d%s\n", (int)pids[i],
                WTERMSIG(status), WTERMSIG(status) == SIGALRM ? " (hung)" : "");
      } else if (WEXITSTATUS(status) != 0) {
        ++failed;
      }
    }
  }
  atomic_store(&g_stop, 1);
  assert_int_equal(pthread_join(t, NULL), 0);
  ASSERT_OK(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN));
  printf("%d children: %d hung or crashed, %d failed; hammer rounds %ld, "
         "%ld messages logged\n",
         CHILDREN, hung, failed, atomic_load(&g_rounds),
         atomic_load(&g_logged));
  assert_int_equal(hung, 0);
  assert_int_equal(failed, 0);
  /* the parent is unaffected */
  ASSERT_OK(t4a_buffer_release(g_parent_buffer));
  ASSERT_OK(t4a_kernel_release(g_parent_kernel));
  ASSERT_OK(t4a_module_release(g_parent_module));
  ASSERT_OK(t4a_runtime_destroy(g_rt));
  t4a_process_stats ps = T4A_PROCESS_STATS_INIT;
  ASSERT_OK(t4a_process_stats_get(&ps));
  assert_int_equal(ps.runtimes_live, 0);
  assert_int_equal(ps.runtimes_leaked, 0);
}

int main(void) {
  if (use_fake_driver() != 0) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fork_while_busy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
