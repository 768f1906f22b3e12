/*
 * Host lane (fake driver, T4A_TESTING): the runtime lifecycle.
 *
 *   create_failures   issue 8 item 12: a create that fails after the
 *                     context was retained (cuStreamCreate, cuMemPoolCreate
 *                     writing a garbage handle, as a driver may;
 *                     cuMemPoolSetAttribute) creates nothing: the status and
 *                     last error name the step, the out-parameter is
 *                     untouched, no stream, pool or context reference is
 *                     left, runtimes_live and runtimes_leaked are unchanged
 *                     and nothing is logged at ERROR.
 *   destroy_refuses   issue 8 item 4: an operation that resolved its runtime
 *                     before t4a_runtime_destroy and reaches admission after
 *                     destroy began (stopped there by the admission hook)
 *                     fails with INVALID_HANDLE and keeps nothing alive: a
 *                     module load (would refill the module cache), a launch
 *                     (would keep its module) and a host-buffer upload
 *                     (would keep a host buffer that holds the runtime).
 *                     After every handle is released the runtime is torn
 *                     down: runtimes_live back, runtimes_leaked unchanged.
 *   destroy_race      issue 8 item 4: threads loading modules, launching and
 *                     uploading from a host buffer while the main thread
 *                     destroys, many times; every call succeeds or gives
 *                     INVALID_HANDLE, and every runtime is torn down.
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

#include "admission_stop.h"
#include "t4acuda.h"
#include "t4acuda_testing.h"
#include "test_assert.h"
#include "test_helpers.h"

/* ---- fake driver controls and process counters -------------------------- */

static int (*fake_fail_next)(const char *, int);
static int (*fake_live)(const char *);

/* 0 when the fake driver's controls were found. */
static int load_fake_controls(const char *path) {
  /* the library loaded this same file: dlopen returns that instance */
  void *h = dlopen(path, RTLD_NOW);
  if (h == NULL) return -1;
  *(void **)&fake_fail_next = dlsym(h, "fake_cuda_fail_next");
  *(void **)&fake_live = dlsym(h, "fake_cuda_live");
  return fake_fail_next != NULL && fake_live != NULL ? 0 : -1;
}

static atomic_int g_errors_logged;
static void count_errors(void *user, int32_t level, const char *message) {
  (void)user;
  if (level == T4A_LOG_ERROR) {
    atomic_fetch_add(&g_errors_logged, 1);
    fprintf(stderr, "ERROR logged: %s\n", message);
  }
}

/* ---- item 12: a failed create creates nothing ---------------------------- */

typedef enum how { FAKE_GARBAGE, SEAM } how;

static void expect_clean_failure(how h, const char *entry, const char *step) {
  t4a_runtime probe = {0};
  ASSERT_OK(t4a_runtime_create(NULL, &probe)); /* driver loaded, counters */
  ASSERT_OK(t4a_runtime_destroy(probe));
  t4a_process_stats before = process_stats();
  int streams = fake_live("streams"), pools = fake_live("pools");
  int refs = fake_live("context_refs");
  atomic_store(&g_errors_logged, 0);
  ASSERT_OK(t4a_set_log_callback(count_errors, NULL, T4A_LOG_DEBUG));

  if (h == FAKE_GARBAGE)
    assert_int_equal(fake_fail_next(entry, 1 /* INVALID_VALUE */), 0);
  else
    ASSERT_OK(t4a_testing_fault_arm(entry, 1, 1 /* INVALID_VALUE */,
                                    T4A_TESTING_FAULT_INSTEAD));
  t4a_runtime rt = {0x5EED};
  t4a_status s = t4a_runtime_create(NULL, &rt);
  t4a_testing_fault_reset();
  ASSERT_OK(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN));

  if (s != T4A_ERROR_DRIVER)
    fail_msg("%s failing: create gave %s (%s)", entry, t4a_status_name(s),
             last_message());
  if (strstr(last_message(), step) == NULL)
    fail_msg("%s failing: the last error does not name '%s': %s", entry, step,
             last_message());
  assert_int_equal(rt.id, 0x5EED); /* out-parameter untouched */
  t4a_process_stats after = process_stats();
  assert_int_equal(after.runtimes_live, before.runtimes_live);
  assert_int_equal(after.runtimes_leaked, before.runtimes_leaked);
  assert_int_equal(atomic_load(&g_errors_logged), 0);
  assert_int_equal(fake_live("streams"), streams);
  assert_int_equal(fake_live("pools"), pools);
  assert_int_equal(fake_live("context_refs"), refs);

  /* and the next create works */
  ASSERT_OK(t4a_runtime_create(NULL, &rt));
  ASSERT_OK(t4a_runtime_destroy(rt));
  assert_int_equal(process_stats().runtimes_live, before.runtimes_live);
  assert_int_equal(process_stats().runtimes_leaked, before.runtimes_leaked);
}

static void test_create_failures(void **state) {
  (void)state;
  expect_clean_failure(FAKE_GARBAGE, "cuStreamCreate", "creating the stream");
  expect_clean_failure(FAKE_GARBAGE, "cuMemPoolCreate",
                       "creating the memory pool");
  expect_clean_failure(SEAM, "cuStreamCreate", "creating the stream");
  expect_clean_failure(SEAM, "cuMemPoolCreate", "creating the memory pool");
  expect_clean_failure(SEAM, "cuMemPoolSetAttribute",
                       "setting the pool release threshold");
}

/* ---- item 4: destroy refuses admission ---------------------------------- */

/* A runtime with what the operations below need. */
typedef struct fixture {
  t4a_runtime rt;
  t4a_module module;
  t4a_kernel kernel;
  t4a_buffer buffer;
  t4a_host_buffer host;
} fixture;

static void make_fixture(fixture *f) {
  static const unsigned char image[16] = {1}; /* the fake loads any bytes */
  memset(f, 0, sizeof *f);
  ASSERT_OK(t4a_runtime_create(NULL, &f->rt));
  ASSERT_OK(t4a_module_load_data(f->rt, image, sizeof image, &f->module));
  ASSERT_OK(t4a_kernel_get(f->module, "two_buffers", &f->kernel));
  ASSERT_OK(t4a_buffer_alloc(f->rt, 4096, 0, &f->buffer));
  ASSERT_OK(t4a_host_buffer_alloc(f->rt, 4096, &f->host));
}

static void release_fixture(fixture *f) {
  ASSERT_OK(t4a_kernel_release(f->kernel));
  ASSERT_OK(t4a_module_release(f->module));
  ASSERT_OK(t4a_buffer_release(f->buffer));
  ASSERT_OK(t4a_host_buffer_release(f->host));
}

typedef enum op { OP_MODULE_LOAD, OP_LAUNCH, OP_UPLOAD_HOST, OP_COUNT } op;
static const char *const k_op_names[OP_COUNT] = {"module load", "launch",
                                                 "host-buffer upload"};

/* Runs `o` on `f`; a module it loads is released at once. `salt` makes the
 * module image new (a cache miss: a load). */
static t4a_status run_op(const fixture *f, op o, unsigned salt) {
  switch (o) {
  case OP_MODULE_LOAD: {
    unsigned char image[16] = {2};
    memcpy(image + 4, &salt, sizeof salt);
    t4a_module m = {0};
    t4a_status s = t4a_module_load_data(f->rt, image, sizeof image, &m);
    if (s == T4A_SUCCESS) ASSERT_OK(t4a_module_release(m));
    return s;
  }
  case OP_LAUNCH: {
    t4a_arg args[2] = {T4A_ARG_INIT, T4A_ARG_INIT};
    args[0].kind = args[1].kind = T4A_ARG_BUFFER;
    args[0].buffer = args[1].buffer = f->buffer;
    t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
    d.grid[0] = 1;
    d.block[0] = 1;
    d.kernel = f->kernel;
    d.args = args;
    d.arg_count = 2;
    return t4a_launch(f->rt, &d);
  }
  case OP_UPLOAD_HOST:
    return t4a_buffer_upload_host(f->rt, f->buffer, 0, f->host, 0, 4096);
  default: return T4A_ERROR_INTERNAL;
  }
}

typedef struct stopped_call {
  const fixture *f;
  op o;
  t4a_status status;
  char message[512];
} stopped_call;

static void *stopped_thread(void *arg) {
  stopped_call *c = arg;
  tl_stop = 1;
  c->status = run_op(c->f, c->o, 7);
  snprintf(c->message, sizeof c->message, "%s", last_message());
  return NULL;
}

static void test_destroy_refuses(void **state) {
  (void)state;
  t4a_process_stats base = process_stats();
  t4a_testing_admission_hook(stop_here, NULL);
  for (op o = 0; o < OP_COUNT; ++o) {
    fixture f;
    make_fixture(&f);
    stop_reset();
    stopped_call c = {&f, o, T4A_SUCCESS, ""};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, stopped_thread, &c), 0);
    stop_wait_arrived();
    /* the thread resolved the runtime and waits to be admitted */
    ASSERT_OK(t4a_runtime_destroy(f.rt));
    stop_let_go();
    assert_int_equal(pthread_join(t, NULL), 0);
    if (c.status != T4A_ERROR_INVALID_HANDLE ||
        strstr(c.message, "being destroyed") == NULL)
      fail_msg("%s admitted after destroy began: %s (%s)", k_op_names[o],
               t4a_status_name(c.status), c.message);
    release_fixture(&f);
    t4a_process_stats ps = process_stats();
    if (ps.runtimes_live != base.runtimes_live)
      fail_msg("after a %s raced destroy: %llu runtimes live, %llu before",
               k_op_names[o], (unsigned long long)ps.runtimes_live,
               (unsigned long long)base.runtimes_live);
    assert_int_equal(ps.runtimes_leaked, base.runtimes_leaked);
  }
  t4a_testing_admission_hook(NULL, NULL);

  /* An object of a destroyed runtime that would enqueue (a download's
   * delivery) is refused too; completions still work, and releasing
   * everything tears the runtime down. */
  fixture f;
  make_fixture(&f);
  t4a_download d = {0};
  ASSERT_OK(t4a_buffer_download(f.rt, f.buffer, 0, 64, &d));
  t4a_completion c = {0};
  ASSERT_OK(t4a_runtime_record(f.rt, &c));
  ASSERT_OK(t4a_runtime_destroy(f.rt));
  unsigned char out[64];
  ASSERT_STATUS(t4a_download_wait(d, out), T4A_ERROR_INVALID_HANDLE);
  assert_non_null(strstr(last_message(), "being destroyed"));
  ASSERT_OK(t4a_completion_wait(c));
  ASSERT_OK(t4a_completion_release(c));
  ASSERT_OK(t4a_download_release(d));
  release_fixture(&f);
  assert_int_equal(process_stats().runtimes_live, base.runtimes_live);
  assert_int_equal(process_stats().runtimes_leaked, base.runtimes_leaked);
  assert_int_equal(t4a_testing_live_handles(), 0);
}

/* ---- item 4: the same, raced ------------------------------------------- */

#ifndef T4A_RACE_ITERATIONS
#define T4A_RACE_ITERATIONS 150
#endif
#define RACERS 2

typedef struct racer {
  const fixture *f;
  unsigned seed;
  long ok, refused;
  atomic_int *started;
  char failure[512];
} racer;

static void *race_loop(void *arg) {
  racer *r = arg;
  atomic_fetch_add(r->started, 1);
  for (unsigned j = 0;; ++j) {
    op o = (op)((r->seed + j) % OP_COUNT);
    t4a_status s = run_op(r->f, o, r->seed * 100003u + j);
    if (s == T4A_SUCCESS) {
      ++r->ok;
      continue;
    }
    const char *m = last_message();
    if (s != T4A_ERROR_INVALID_HANDLE ||
        (strstr(m, "being destroyed") == NULL &&
         strstr(m, "runtime (id") == NULL)) {
      snprintf(r->failure, sizeof r->failure, "%s gave %s: %s", k_op_names[o],
               t4a_status_name(s), m);
      return NULL;
    }
    ++r->refused; /* destroyed: stop */
    return NULL;
  }
}

static void test_destroy_race(void **state) {
  (void)state;
  t4a_process_stats base = process_stats();
  long ok = 0, refused = 0;
  for (int i = 0; i < T4A_RACE_ITERATIONS; ++i) {
    fixture f;
    make_fixture(&f);
    atomic_int started = 0;
    racer rs[RACERS];
    pthread_t ts[RACERS];
    for (int k = 0; k < RACERS; ++k) {
      rs[k] = (racer){&f, (unsigned)(i * RACERS + k), 0, 0, &started, ""};
      assert_int_equal(pthread_create(&ts[k], NULL, race_loop, &rs[k]), 0);
    }
    while (atomic_load(&started) < RACERS) {
    }
    for (int spin = 0; spin < (i % 8) * 200; ++spin)
      (void)process_stats(); /* destroy at varying points */
    ASSERT_OK(t4a_runtime_destroy(f.rt));
    for (int k = 0; k < RACERS; ++k) {
      assert_int_equal(pthread_join(ts[k], NULL), 0);
      if (rs[k].failure[0] != '\0') fail_msg("%s", rs[k].failure);
      ok += rs[k].ok;
      refused += rs[k].refused;
    }
    release_fixture(&f);
    t4a_process_stats ps = process_stats();
    if (ps.runtimes_live != base.runtimes_live ||
        ps.runtimes_leaked != base.runtimes_leaked)
      fail_msg("iteration %d: %llu runtimes live (%llu before), %llu leaked "
               "(%llu before)",
               i, (unsigned long long)ps.runtimes_live,
               (unsigned long long)base.runtimes_live,
               (unsigned long long)ps.runtimes_leaked,
               (unsigned long long)base.runtimes_leaked);
  }
  printf("destroy race: %ld operations succeeded, %ld refused\n", ok, refused);
  assert_int_equal(refused, (long)T4A_RACE_ITERATIONS * RACERS);
  assert_int_equal(t4a_testing_live_handles(), 0);
}

int main(void) {
#if !defined(T4A_FAKE_CUDA_PATH)
  fprintf(stderr, "built without the fake driver\n");
  return 1;
#else
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_failures),
      cmocka_unit_test(test_destroy_refuses),
      cmocka_unit_test(test_destroy_race),
  };
  t4a_runtime probe = {0};
  if (t4a_runtime_create(NULL, &probe) != T4A_SUCCESS) {
    fprintf(stderr, "the fake driver did not load: %s\n", last_message());
    return 1;
  }
  (void)t4a_runtime_destroy(probe);
  if (load_fake_controls(T4A_FAKE_CUDA_PATH) != 0) {
    fprintf(stderr, "the fake driver has no test controls\n");
    return 1;
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
