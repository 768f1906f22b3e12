/*
 * Host lane (fake driver, 3 devices; devices 0 and 2 are made non-peers):
 * copies between runtimes (t4a_buffer_copy with buffers of two runtimes)
 * and t4a_runtime_enable_peer. The fake driver copies bytes for real, so
 * every path is data-verified:
 *   - same device: the event bracket (2 records, 2 stream waits, 1 DtoD),
 *     odd sizes and offsets, the source released right after the call;
 *   - staged (peer access not enabled, or not peers): multi-chunk through
 *     a small staging budget, one D2H + event + wait + H2D per chunk;
 *   - peer (after t4a_runtime_enable_peer, or T4A_PEER_ACCESS_AUTO in both
 *     runtimes): cuMemcpyPeerAsync, which the fake refuses unless context
 *     peer access and pool access were both granted;
 *   - counters of each path, exact, in both runtimes;
 *   - enable_peer: refusal naming both devices, idempotence, same device;
 *   - admission of both runtimes in domain order (the admission hook
 *     stops a copy between its two admissions), and two threads copying
 *     A to B and B to A at once (also under TSan);
 *   - WRONG_RUNTIME naming the three runtimes.
 * Group "fault" (own process): a sticky fault during a cross-runtime copy
 * breaks the destination runtime only; later copies name the broken one;
 * the source is not freed while the broken runtime might use it.
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

#include "t4acuda.h"
#include "t4acuda_testing.h"
#include "test_assert.h"
#include "test_helpers.h"

/* The fake driver's controls (tests/fake/fake_cuda.c). */
static void (*fake_set_peer)(int, int, int);
static int (*fake_ctx_peer)(int, int);
static unsigned (*fake_pool_access)(void *);

static void load_fake(void) {
  void *h = dlopen(T4A_FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (h == NULL) h = dlopen(T4A_FAKE_CUDA_PATH, RTLD_NOW);
  assert_non_null(h);
  *(void **)&fake_set_peer = dlsym(h, "fake_cuda_set_peer");
  *(void **)&fake_ctx_peer = dlsym(h, "fake_cuda_ctx_peer");
  *(void **)&fake_pool_access = dlsym(h, "fake_cuda_pool_access");
  assert_non_null(fake_set_peer);
  assert_non_null(fake_ctx_peer);
  assert_non_null(fake_pool_access);
}

/* A runtime on `ordinal` with a small staging budget (4 chunks of 16 KiB),
 * so that staged copies of 100 KB use many chunks and recycle them. */
static t4a_runtime make_runtime(int32_t ordinal, uint32_t peer_access) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime rt = {0};
  o.device_ordinal = ordinal;
  o.staging_bytes = 64 << 10;
  o.staging_chunk_bytes = 16 << 10;
  o.peer_access = peer_access;
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  return rt;
}

static uint64_t domain_of(t4a_runtime rt) { return runtime_info(rt).domain_id; }

static void *pool_of(t4a_runtime rt) { return runtime_info(rt).memory_pool; }

static unsigned char pattern(uint64_t i, unsigned seed) {
  return (unsigned char)((i * 131u + seed * 7u + (i >> 9)) & 0xFF);
}

/* A buffer of `bytes` on `rt` holding pattern(i, seed). */
static t4a_buffer filled(t4a_runtime rt, uint64_t bytes, unsigned seed) {
  t4a_buffer b = {0};
  unsigned char *h = malloc(bytes);
  assert_non_null(h);
  for (uint64_t i = 0; i < bytes; ++i) h[i] = pattern(i, seed);
  ASSERT_OK(t4a_buffer_alloc(rt, bytes, 0, &b));
  ASSERT_OK(t4a_buffer_upload(rt, b, 0, h, bytes));
  free(h);
  return b;
}

/* dst (of dst_rt, `dst_bytes`, filled with 0xEE) must hold the source
 * pattern's bytes [src_off, src_off + n) at dst_off and 0xEE elsewhere;
 * prints the first difference. */
static void expect_copied(t4a_runtime dst_rt, t4a_buffer dst,
                          uint64_t dst_bytes, uint64_t dst_off,
                          uint64_t src_off, uint64_t n, unsigned seed) {
  unsigned char *h = malloc(dst_bytes);
  assert_non_null(h);
  ASSERT_OK(t4a_buffer_download_sync(dst_rt, dst, 0, h, dst_bytes));
  for (uint64_t i = 0; i < dst_bytes; ++i) {
    unsigned char want = 0xEE;
    if (i >= dst_off && i < dst_off + n)
      want = pattern(src_off + (i - dst_off), seed);
    if (h[i] != want) {
      unsigned char got = h[i];
      free(h);
      fail_msg("destination byte %llu is 0x%02x, expected 0x%02x (copy of %llu "
               "bytes from source offset %llu to destination offset %llu)",
               (unsigned long long)i, got, want, (unsigned long long)n,
               (unsigned long long)src_off, (unsigned long long)dst_off);
    }
  }
  free(h);
}

static t4a_buffer blank(t4a_runtime rt, uint64_t bytes) {
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, bytes, 0, &b));
  ASSERT_OK(t4a_buffer_fill(rt, b, 0, bytes, 0xEE));
  return b;
}

#define N 100003u   /* odd, over six 16 KiB staging chunks */
#define SRC_OFF 13u /* odd offsets */
#define DST_OFF 7u

/* One copy of N bytes from a fresh source on `src_rt` to a fresh
 * destination on `dst_rt`, the source released right after the call;
 * verified. */
static void copy_verified(t4a_runtime dst_rt, t4a_runtime src_rt,
                          unsigned seed) {
  t4a_buffer src = filled(src_rt, N + SRC_OFF + 5, seed);
  t4a_buffer dst = blank(dst_rt, N + DST_OFF + 3);
  ASSERT_OK(t4a_buffer_copy(dst_rt, dst, DST_OFF, src, SRC_OFF, N));
  ASSERT_OK(t4a_buffer_release(src)); /* right after the enqueue */
  expect_copied(dst_rt, dst, N + DST_OFF + 3, DST_OFF, SRC_OFF, N, seed);
  ASSERT_OK(t4a_buffer_release(dst));
}

static int64_t calls(const char *entry) {
  return t4a_testing_call_count(entry);
}

static void start_counting(void) {
  t4a_testing_fault_reset();
  t4a_testing_count_calls(1);
}

/* ---- same device --------------------------------------------------------- */

static void test_same_device(void **state) {
  (void)state;
  t4a_runtime a = make_runtime(0, 0), b = make_runtime(0, 0);
  t4a_buffer src = filled(a, N + SRC_OFF + 5, 1);
  t4a_buffer dst = blank(b, N + DST_OFF + 3);
  t4a_runtime_stats a0 = stats_of(a), b0 = stats_of(b);
  start_counting();
  ASSERT_OK(t4a_buffer_copy(b, dst, DST_OFF, src, SRC_OFF, N));
  /* The bracket: ready event on a, b waits, copy on b, done event on b, a
   * waits; no staging, no peer copy, no host wait. */
  assert_int_equal(calls("cuEventRecord"), 2);
  assert_int_equal(calls("cuStreamWaitEvent"), 2);
  assert_int_equal(calls("cuMemcpyDtoDAsync"), 1);
  assert_int_equal(calls("cuMemcpyPeerAsync"), 0);
  assert_int_equal(calls("cuMemcpyDtoHAsync"), 0);
  assert_int_equal(calls("cuStreamSynchronize"), 0);
  assert_int_equal(calls("cuEventSynchronize"), 0);
  t4a_testing_fault_reset();
  ASSERT_OK(t4a_buffer_release(src));
  expect_copied(b, dst, N + DST_OFF + 3, DST_OFF, SRC_OFF, N, 1);
  t4a_runtime_stats a1 = stats_of(a), b1 = stats_of(b);
  /* Both runtimes count the path; the copy itself counts on b. */
  assert_int_equal(a1.same_device_copies - a0.same_device_copies, 1);
  assert_int_equal(b1.same_device_copies - b0.same_device_copies, 1);
  assert_int_equal(a1.same_device_bytes - a0.same_device_bytes, N);
  assert_int_equal(b1.same_device_bytes - b0.same_device_bytes, N);
  assert_int_equal(b1.device_copies - b0.device_copies, 1);
  assert_int_equal(a1.device_copies - a0.device_copies, 0);
  assert_int_equal(a1.peer_copies + b1.peer_copies, 0);
  assert_int_equal(a1.staged_copies + b1.staged_copies, 0);
  assert_int_equal(a1.events_recorded - a0.events_recorded, 1);
  /* Both directions, the source released right after. */
  copy_verified(a, b, 2);
  copy_verified(b, a, 3);
  /* Zero bytes: admitted and counted as a copy, in no path. */
  ASSERT_OK(t4a_buffer_copy(b, dst, 0, dst, 0, 0));
  t4a_buffer s2 = filled(a, 64, 4);
  t4a_runtime_stats b2 = stats_of(b);
  ASSERT_OK(t4a_buffer_copy(b, dst, 5, s2, 0, 0));
  t4a_runtime_stats b3 = stats_of(b);
  assert_int_equal(b3.device_copies - b2.device_copies, 1);
  assert_int_equal(b3.same_device_copies, b2.same_device_copies);
  /* enable_peer on one device: nothing to do, no driver call. */
  start_counting();
  ASSERT_OK(t4a_runtime_enable_peer(a, b));
  ASSERT_OK(t4a_runtime_enable_peer(a, a));
  assert_int_equal(calls("cuCtxEnablePeerAccess"), 0);
  assert_int_equal(calls("cuMemPoolSetAccess"), 0);
  t4a_testing_fault_reset();
  ASSERT_OK(t4a_buffer_release(s2));
  ASSERT_OK(t4a_buffer_release(dst));
  ASSERT_OK(t4a_runtime_destroy(a));
  ASSERT_OK(t4a_runtime_destroy(b));
}

/* ---- WRONG_RUNTIME ------------------------------------------------------- */

static void test_wrong_runtime(void **state) {
  (void)state;
  t4a_runtime a = make_runtime(0, 0), b = make_runtime(1, 0),
              c = make_runtime(0, 0);
  t4a_buffer sa = filled(a, 64, 5), db = blank(b, 64);
  char want[256];
  /* runtime must be dst's: the source's runtime is refused, and so is a
   * third one; the message names all three. */
  ASSERT_STATUS(t4a_buffer_copy(a, db, 0, sa, 0, 16), T4A_ERROR_WRONG_RUNTIME);
  snprintf(want, sizeof want,
           "dst belongs to runtime domain %llu (device 1), not to the runtime "
           "given (domain %llu, device 0)",
           (unsigned long long)domain_of(b), (unsigned long long)domain_of(a));
  ASSERT_MESSAGE_HAS(want);
  snprintf(want, sizeof want, "src belongs to runtime domain %llu, device 0",
           (unsigned long long)domain_of(a));
  ASSERT_MESSAGE_HAS(want);
  ASSERT_STATUS(t4a_buffer_copy(c, db, 0, sa, 0, 16), T4A_ERROR_WRONG_RUNTIME);
  ASSERT_MESSAGE_HAS("a copy runs on the runtime of dst");
  /* Ranges are still checked for a source of another runtime. */
  ASSERT_STATUS(t4a_buffer_copy(b, db, 0, sa, 60, 16),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("src");
  ASSERT_OK(t4a_buffer_release(sa));
  ASSERT_OK(t4a_buffer_release(db));
  ASSERT_OK(t4a_runtime_destroy(a));
  ASSERT_OK(t4a_runtime_destroy(b));
  ASSERT_OK(t4a_runtime_destroy(c));
}

/* ---- other devices: staged, then peer ------------------------------------ */

static void test_staged_then_peer(void **state) {
  (void)state;
  t4a_runtime a = make_runtime(0, 0), b = make_runtime(1, 0);
  t4a_runtime_stats a0 = stats_of(a), b0 = stats_of(b);
  /* Peer access not enabled (explicit mode): staged, counted. */
  t4a_buffer src = filled(a, N + SRC_OFF + 5, 6);
  t4a_buffer dst = blank(b, N + DST_OFF + 3);
  start_counting();
  ASSERT_OK(t4a_buffer_copy(b, dst, DST_OFF, src, SRC_OFF, N));
  /* Seven chunks (16 KiB, 100003 bytes): per chunk one D2H on a, one
   * source event, one wait on b, one H2D on b. */
  assert_int_equal(calls("cuMemcpyDtoHAsync"), 7);
  assert_int_equal(calls("cuMemcpyHtoDAsync"), 7);
  assert_int_equal(calls("cuStreamWaitEvent"), 7);
  assert_int_equal(calls("cuMemcpyPeerAsync"), 0);
  assert_int_equal(calls("cuCtxEnablePeerAccess"), 0);
  assert_int_equal(calls("cuMemPoolSetAccess"), 0);
  /* Bounded by b's staging budget: at most 4 pinned chunks, recycled. */
  assert_true(calls("cuMemHostAlloc") <= 4);
  t4a_testing_fault_reset();
  ASSERT_OK(t4a_buffer_release(src));
  expect_copied(b, dst, N + DST_OFF + 3, DST_OFF, SRC_OFF, N, 6);
  t4a_runtime_stats a1 = stats_of(a), b1 = stats_of(b);
  assert_int_equal(a1.staged_copies - a0.staged_copies, 1);
  assert_int_equal(b1.staged_copies - b0.staged_copies, 1);
  assert_int_equal(a1.staged_bytes - a0.staged_bytes, N);
  assert_int_equal(b1.staged_bytes - b0.staged_bytes, N);
  assert_int_equal(a1.peer_copies + b1.peer_copies, 0);
  assert_int_equal(a1.same_device_copies + b1.same_device_copies, 0);
  assert_true(b1.staging_bytes_peak <= (64u << 10));
  copy_verified(a, b, 7); /* the other direction, staged too */

  /* Enabled: context access both ways, each pool granted to the other
   * device. */
  assert_int_equal(fake_ctx_peer(0, 1), 0);
  start_counting();
  ASSERT_OK(t4a_runtime_enable_peer(a, b));
  assert_int_equal(calls("cuCtxEnablePeerAccess"), 2);
  assert_int_equal(calls("cuMemPoolSetAccess"), 2);
  assert_int_equal(fake_ctx_peer(0, 1), 1);
  assert_int_equal(fake_ctx_peer(1, 0), 1);
  assert_int_equal(fake_pool_access(pool_of(a)), 1u << 1);
  assert_int_equal(fake_pool_access(pool_of(b)), 1u << 0);
  /* Idempotent, in either order. */
  ASSERT_OK(t4a_runtime_enable_peer(b, a));
  ASSERT_OK(t4a_runtime_enable_peer(a, b));
  assert_int_equal(calls("cuCtxEnablePeerAccess"), 2);
  assert_int_equal(calls("cuMemPoolSetAccess"), 2);
  t4a_testing_fault_reset();

  t4a_runtime_stats a2 = stats_of(a), b2 = stats_of(b);
  src = filled(a, N + SRC_OFF + 5, 8);
  start_counting();
  ASSERT_OK(t4a_buffer_copy(b, dst, DST_OFF, src, SRC_OFF, N));
  assert_int_equal(calls("cuMemcpyPeerAsync"), 1);
  assert_int_equal(calls("cuMemcpyDtoHAsync"), 0);
  assert_int_equal(calls("cuEventRecord"), 2);
  assert_int_equal(calls("cuStreamWaitEvent"), 2);
  t4a_testing_fault_reset();
  ASSERT_OK(t4a_buffer_release(src));
  expect_copied(b, dst, N + DST_OFF + 3, DST_OFF, SRC_OFF, N, 8);
  copy_verified(a, b, 9);
  t4a_runtime_stats a3 = stats_of(a), b3 = stats_of(b);
  assert_int_equal(a3.peer_copies - a2.peer_copies, 2);
  assert_int_equal(b3.peer_copies - b2.peer_copies, 2);
  assert_int_equal(a3.peer_bytes - a2.peer_bytes, 2 * N);
  assert_int_equal(a3.staged_copies, a2.staged_copies);

  /* A third runtime on device 1: its pool is not granted yet, so copies
   * with it are staged until the pair is enabled too. */
  t4a_runtime c = make_runtime(1, 0);
  copy_verified(c, a, 10);
  assert_int_equal(stats_of(c).staged_copies, 1);
  ASSERT_OK(t4a_runtime_enable_peer(c, a));
  assert_int_equal(fake_pool_access(pool_of(c)), 1u << 0);
  copy_verified(c, a, 11);
  assert_int_equal(stats_of(c).peer_copies, 1);

  ASSERT_OK(t4a_buffer_release(dst));
  ASSERT_OK(t4a_runtime_destroy(a));
  ASSERT_OK(t4a_runtime_destroy(b));
  ASSERT_OK(t4a_runtime_destroy(c));
}

/* ---- not peers, automatic mode ------------------------------------------- */

static void test_not_peers_and_auto(void **state) {
  (void)state;
  t4a_runtime a = make_runtime(0, T4A_PEER_ACCESS_AUTO),
              d = make_runtime(2, T4A_PEER_ACCESS_AUTO);
  /* Devices 0 and 2 are not peers: refused, naming both devices. */
  ASSERT_STATUS(t4a_runtime_enable_peer(a, d), T4A_ERROR_UNSUPPORTED);
  ASSERT_MESSAGE_HAS("device 0 and device 2 are not peers");
  ASSERT_MESSAGE_HAS("device 0 cannot access device 2");
  ASSERT_STATUS(t4a_runtime_enable_peer(d, a), T4A_ERROR_UNSUPPORTED);
  ASSERT_MESSAGE_HAS("device 2 and device 0 are not peers");
  /* Automatic mode between non-peers: staged, no error. */
  copy_verified(d, a, 12);
  copy_verified(a, d, 13);
  assert_int_equal(stats_of(a).staged_copies, 2);
  assert_int_equal(stats_of(a).peer_copies, 0);

  /* Automatic mode in both runtimes of peer devices: the first copy
   * enables peer access. */
  t4a_runtime b = make_runtime(1, T4A_PEER_ACCESS_AUTO);
  start_counting();
  copy_verified(b, a, 14);
  assert_int_equal(calls("cuMemPoolSetAccess"), 2);
  assert_int_equal(calls("cuMemcpyPeerAsync"), 1);
  t4a_testing_fault_reset();
  copy_verified(a, b, 15);
  assert_int_equal(stats_of(b).peer_copies, 2);
  assert_int_equal(stats_of(b).staged_copies, 0);

  /* Automatic in one runtime only: the other's pool is not granted
   * behind its back; staged. */
  t4a_runtime e = make_runtime(1, T4A_PEER_ACCESS_EXPLICIT);
  copy_verified(e, a, 16);
  assert_int_equal(stats_of(e).staged_copies, 1);
  assert_int_equal(fake_pool_access(pool_of(e)), 0);

  /* Bad option values. */
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime x = {0};
  o.peer_access = 2;
  ASSERT_STATUS(t4a_runtime_create(&o, &x), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("options->peer_access is 2");
  o.peer_access = 0;
  o.reserved2 = 1;
  ASSERT_STATUS(t4a_runtime_create(&o, &x), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("options->reserved2");

  ASSERT_OK(t4a_runtime_destroy(a));
  ASSERT_OK(t4a_runtime_destroy(b));
  ASSERT_OK(t4a_runtime_destroy(d));
  ASSERT_OK(t4a_runtime_destroy(e));
}

/* ---- domain order ---------------------------------------------------------
 * The admission hook runs before every ordinary admission waits for its
 * lock. A copy's thread is stopped at its second admission: it then holds
 * exactly the runtime of the lower domain id, whichever is the
 * destination. Another thread's fill on the higher-domain runtime must
 * finish meanwhile; one on the lower-domain runtime must not. */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static pthread_t g_stopped_thread;
static int g_stop_armed, g_hook_calls, g_stopped, g_released;

static void hook(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mu);
  if (g_stop_armed && pthread_equal(pthread_self(), g_stopped_thread) &&
      ++g_hook_calls == 2) {
    g_stopped = 1;
    pthread_cond_broadcast(&g_cv);
    while (!g_released) pthread_cond_wait(&g_cv, &g_mu);
  }
  pthread_mutex_unlock(&g_mu);
}

typedef struct job {
  t4a_runtime rt;
  t4a_buffer dst, src;
  uint64_t bytes;
  int is_copy;
  atomic_int done;
  t4a_status status;
} job;

static void *run_job(void *arg) {
  job *j = arg;
  if (j->is_copy) {
    pthread_mutex_lock(&g_mu);
    g_stopped_thread = pthread_self();
    g_stop_armed = 1;
    pthread_mutex_unlock(&g_mu);
    j->status = t4a_buffer_copy(j->rt, j->dst, 0, j->src, 0, j->bytes);
  } else {
    j->status = t4a_buffer_fill(j->rt, j->dst, 0, j->bytes, 0x11);
  }
  atomic_store(&j->done, 1);
  return NULL;
}

static int wait_done(job *j, int ms) {
  for (int i = 0; i < ms && !atomic_load(&j->done); ++i) {
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
  }
  return atomic_load(&j->done);
}

static void check_order(t4a_runtime dst_rt, t4a_runtime src_rt) {
  t4a_runtime lower = domain_of(dst_rt) < domain_of(src_rt) ? dst_rt : src_rt;
  t4a_runtime higher = lower.id == dst_rt.id ? src_rt : dst_rt;
  t4a_buffer src = filled(src_rt, 4096, 17), dst = blank(dst_rt, 4096);
  t4a_buffer on_lower = blank(lower, 64), on_higher = blank(higher, 64);
  g_hook_calls = g_stopped = g_released = 0;
  t4a_testing_admission_hook(hook, NULL);
  job copy = {dst_rt, dst, src, 4096, 1, 0, 0};
  pthread_t tc, th, tl;
  assert_int_equal(pthread_create(&tc, NULL, run_job, &copy), 0);
  pthread_mutex_lock(&g_mu);
  while (!g_stopped) pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
  job fh = {higher, on_higher, {0}, 64, 0, 0, 0};
  job fl = {lower, on_lower, {0}, 64, 0, 0, 0};
  assert_int_equal(pthread_create(&th, NULL, run_job, &fh), 0);
  assert_int_equal(pthread_create(&tl, NULL, run_job, &fl), 0);
  int higher_done = wait_done(&fh, 5000);
  int lower_done = wait_done(&fl, 200);
  pthread_mutex_lock(&g_mu);
  g_released = 1;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  pthread_join(tc, NULL);
  pthread_join(th, NULL);
  pthread_join(tl, NULL);
  t4a_testing_admission_hook(NULL, NULL);
  if (!higher_done)
    fail_msg("a fill on the higher-domain runtime waited while a copy was "
             "between its two admissions: the copy took the higher domain "
             "first");
  if (lower_done)
    fail_msg("a fill on the lower-domain runtime finished while a copy was "
             "between its two admissions: the copy did not hold the lower "
             "domain first");
  ASSERT_OK(copy.status);
  ASSERT_OK(fh.status);
  ASSERT_OK(fl.status);
  unsigned char h[4096];
  ASSERT_OK(t4a_buffer_download_sync(dst_rt, dst, 0, h, sizeof h));
  for (int i = 0; i < 4096; ++i)
    if (h[i] != pattern((uint64_t)i, 17))
      fail_msg("byte %d differs after the ordered copy", i);
  ASSERT_OK(t4a_buffer_release(src));
  ASSERT_OK(t4a_buffer_release(dst));
  ASSERT_OK(t4a_buffer_release(on_lower));
  ASSERT_OK(t4a_buffer_release(on_higher));
}

static void test_domain_order(void **state) {
  (void)state;
  t4a_runtime a = make_runtime(0, 0), b = make_runtime(0, 0),
              c = make_runtime(1, 0);
  check_order(b, a); /* destination of the higher domain */
  check_order(a, b); /* destination of the lower domain */
  check_order(a, c); /* other device, staged */
  check_order(c, a);
  ASSERT_OK(t4a_runtime_destroy(a));
  ASSERT_OK(t4a_runtime_destroy(b));
  ASSERT_OK(t4a_runtime_destroy(c));
}

/* ---- a raw scope on one runtime of the pair -------------------------------
 * A raw scope holds its runtime's admission across calls, and the scope's
 * thread may call into other runtimes. A copy between the two runtimes on
 * another thread must then never wait for the scope's runtime while it
 * holds the other: thread R holds a scope of the higher-domain runtime and
 * then fills a buffer of the lower one, while thread C copies between them
 * (stopped by the admission hook at its second admission, when it holds
 * the lower one). Before the fix C waited for the higher runtime holding
 * the lower one and R waited for the lower one: a deadlock. R's own copy
 * between the two is REENTRANT at once (it holds one of them). */

static pthread_t g_raw_copier;
static int g_raw_copier_set, g_raw_copier_calls;

static void raw_hook(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mu);
  if (g_raw_copier_set && pthread_equal(pthread_self(), g_raw_copier))
    ++g_raw_copier_calls;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
}

typedef struct raw_job {
  t4a_runtime scope_rt, other_rt;
  t4a_buffer on_other, on_scope;
  atomic_int opened, go, done;
  t4a_status begin, fill, copy, end;
  char copy_message[512];
} raw_job;

static void *raw_thread(void *arg) {
  raw_job *j = arg;
  t4a_raw_scope scope = {0};
  t4a_raw_info info = T4A_RAW_INFO_INIT;
  j->begin = t4a_raw_begin(j->scope_rt, &scope, &info);
  atomic_store(&j->opened, 1);
  if (j->begin != T4A_SUCCESS) {
    atomic_store(&j->done, 1);
    return NULL;
  }
  while (!atomic_load(&j->go)) {
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
  }
  j->fill = t4a_buffer_fill(j->other_rt, j->on_other, 0, 64, 0x22);
  j->copy = t4a_buffer_copy(j->other_rt, j->on_other, 0, j->on_scope, 0, 64);
  snprintf(j->copy_message, sizeof j->copy_message, "%s", last_message());
  j->end = t4a_raw_end(scope);
  atomic_store(&j->done, 1);
  return NULL;
}

static int wait_flag(atomic_int *flag, int ms) {
  for (int i = 0; i < ms && !atomic_load(flag); ++i) {
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
  }
  return atomic_load(flag);
}

static void *raw_copy_thread(void *arg) {
  job *j = arg;
  /* Named before its first admission: the hook counts this thread's calls
   * from the first one (set by the creating thread after pthread_create,
   * a fast copier's first call went uncounted and the test waited for a
   * second count that never came; seen under TSan). */
  pthread_mutex_lock(&g_mu);
  g_raw_copier = pthread_self();
  g_raw_copier_set = 1;
  pthread_mutex_unlock(&g_mu);
  j->status = t4a_buffer_copy(j->rt, j->dst, 0, j->src, 0, j->bytes);
  atomic_store(&j->done, 1);
  return NULL;
}

static void raw_scope_against_pair(t4a_runtime dst_rt, t4a_runtime src_rt) {
  t4a_runtime lower = domain_of(dst_rt) < domain_of(src_rt) ? dst_rt : src_rt;
  t4a_runtime higher = lower.id == dst_rt.id ? src_rt : dst_rt;
  t4a_buffer src = filled(src_rt, 4096, 50), dst = blank(dst_rt, 4096);
  raw_job r;
  memset(&r, 0, sizeof r);
  r.scope_rt = higher;
  r.other_rt = lower;
  r.on_other = blank(lower, 64);
  r.on_scope = blank(higher, 64);
  job c = {dst_rt, dst, src, 4096, 1, 0, 0};
  pthread_t tr, tc;
  assert_int_equal(pthread_create(&tr, NULL, raw_thread, &r), 0);
  while (!atomic_load(&r.opened)) {
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
  }
  ASSERT_OK(r.begin);
  t4a_testing_admission_hook(raw_hook, NULL);
  pthread_mutex_lock(&g_mu);
  g_raw_copier_set = 0;
  g_raw_copier_calls = 0; /* counted from the copier's first admission */
  pthread_mutex_unlock(&g_mu);
  assert_int_equal(pthread_create(&tc, NULL, raw_copy_thread, &c), 0);
  pthread_mutex_lock(&g_mu);
  /* The copy's second admission: it holds (or held) the lower runtime. */
  while (g_raw_copier_calls < 2) pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
  atomic_store(&r.go, 1);
  if (!wait_flag(&r.done, 5000) || !wait_flag(&c.done, 5000)) {
    /* Deadlocked threads cannot be joined: report and leave the process. */
    fprintf(stderr,
            "DEADLOCK: a copy between runtimes domain %llu and %llu waited "
            "for the higher one (held by a raw scope) while holding the "
            "lower one, which the raw scope's thread waited for (scope "
            "thread done %d, copy thread done %d)\n",
            (unsigned long long)domain_of(lower),
            (unsigned long long)domain_of(higher), atomic_load(&r.done),
            atomic_load(&c.done));
    fflush(stderr);
    _exit(1);
  }
  pthread_join(tr, NULL);
  pthread_join(tc, NULL);
  t4a_testing_admission_hook(NULL, NULL);
  pthread_mutex_lock(&g_mu);
  g_raw_copier_set = 0;
  pthread_mutex_unlock(&g_mu);
  ASSERT_OK(r.fill);
  if (r.copy != T4A_ERROR_REENTRANT)
    fail_msg("a copy between the scope's runtime and another one inside the "
             "scope returned %s (%s), expected T4A_ERROR_REENTRANT",
             t4a_status_name(r.copy), r.copy_message);
  if (strstr(r.copy_message, "raw scope") == NULL)
    fail_msg("the REENTRANT message does not name the raw scope: %s",
             r.copy_message);
  ASSERT_OK(r.end);
  ASSERT_OK(c.status);
  unsigned char h[4096];
  ASSERT_OK(t4a_buffer_download_sync(dst_rt, dst, 0, h, sizeof h));
  for (int i = 0; i < 4096; ++i)
    if (h[i] != pattern((uint64_t)i, 50))
      fail_msg("byte %d differs after the copy that waited for a raw scope", i);
  ASSERT_OK(t4a_buffer_release(src));
  ASSERT_OK(t4a_buffer_release(dst));
  ASSERT_OK(t4a_buffer_release(r.on_other));
  ASSERT_OK(t4a_buffer_release(r.on_scope));
}

static void test_raw_scope_against_pair(void **state) {
  (void)state;
  t4a_runtime a = make_runtime(0, 0), b = make_runtime(0, 0),
              c = make_runtime(1, 0);
  raw_scope_against_pair(a, b); /* same device, either direction */
  raw_scope_against_pair(b, a);
  raw_scope_against_pair(c, a); /* other device, staged */
  ASSERT_OK(t4a_runtime_destroy(a));
  ASSERT_OK(t4a_runtime_destroy(b));
  ASSERT_OK(t4a_runtime_destroy(c));
}

/* ---- both directions at once ----------------------------------------------
 */

#define ROUNDS 60
#define XBYTES 40001u

typedef struct direction {
  t4a_runtime dst_rt, src_rt;
  unsigned seed;
  char failure[512];
} direction;

static void *copy_loop(void *arg) {
  direction *d = arg;
  unsigned char *h = malloc(XBYTES);
  if (h == NULL) return NULL;
  for (int r = 0; r < ROUNDS && d->failure[0] == '\0'; ++r) {
    t4a_buffer src = {0}, dst = {0};
    for (uint64_t i = 0; i < XBYTES; ++i) h[i] = pattern(i, d->seed + r);
    t4a_status s = t4a_buffer_alloc(d->src_rt, XBYTES, 0, &src);
    if (s == T4A_SUCCESS) s = t4a_buffer_upload(d->src_rt, src, 0, h, XBYTES);
    if (s == T4A_SUCCESS) s = t4a_buffer_alloc(d->dst_rt, XBYTES, 0, &dst);
    if (s == T4A_SUCCESS)
      s = t4a_buffer_copy(d->dst_rt, dst, 0, src, 0, XBYTES);
    if (s == T4A_SUCCESS) s = t4a_buffer_release(src);
    memset(h, 0, XBYTES);
    if (s == T4A_SUCCESS)
      s = t4a_buffer_download_sync(d->dst_rt, dst, 0, h, XBYTES);
    if (s != T4A_SUCCESS) {
      snprintf(d->failure, sizeof d->failure, "round %d: %s: %s", r,
               t4a_status_name(s), last_message());
      break;
    }
    for (uint64_t i = 0; i < XBYTES; ++i)
      if (h[i] != pattern(i, d->seed + r)) {
        snprintf(d->failure, sizeof d->failure,
                 "round %d: byte %llu is 0x%02x, expected 0x%02x", r,
                 (unsigned long long)i, h[i], pattern(i, d->seed + r));
        break;
      }
    (void)t4a_buffer_release(dst);
  }
  free(h);
  return NULL;
}

static void both_directions(t4a_runtime x, t4a_runtime y) {
  direction d1 = {y, x, 20, ""}, d2 = {x, y, 40, ""};
  pthread_t t1, t2;
  assert_int_equal(pthread_create(&t1, NULL, copy_loop, &d1), 0);
  assert_int_equal(pthread_create(&t2, NULL, copy_loop, &d2), 0);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  if (d1.failure[0] != '\0') fail_msg("x to y: %s", d1.failure);
  if (d2.failure[0] != '\0') fail_msg("y to x: %s", d2.failure);
}

static void test_both_directions(void **state) {
  (void)state;
  t4a_runtime a = make_runtime(0, 0), b = make_runtime(0, 0),
              c = make_runtime(1, 0);
  both_directions(a, b); /* same device */
  both_directions(a, c); /* staged */
  ASSERT_OK(t4a_runtime_enable_peer(a, c));
  both_directions(c, a); /* peer */
  t4a_runtime_stats sa = stats_of(a);
  assert_int_equal(sa.same_device_copies, 2 * ROUNDS);
  assert_int_equal(sa.staged_copies, 2 * ROUNDS);
  assert_int_equal(sa.peer_copies, 2 * ROUNDS);
  assert_int_equal(sa.peer_bytes, 2 * ROUNDS * (uint64_t)XBYTES);
  ASSERT_OK(t4a_runtime_destroy(a));
  ASSERT_OK(t4a_runtime_destroy(b));
  ASSERT_OK(t4a_runtime_destroy(c));
}

/* ---- faults (own process) --------------------------------------------------
 * A sticky result (700, illegal address) of the copy itself breaks the
 * destination runtime, whose stream it was enqueued on; the source runtime
 * stays usable until its own driver calls report a fault (as docs/errors.md
 * says: each runtime is broken by its own calls). Later copies naming the
 * broken runtime fail with DEVICE_FAULT saying which side is broken. The source
 * buffer is kept by the broken runtime's epoch, which is never proven
 * complete: releasing it frees nothing. */

static void test_fault(void **state) {
  (void)state;
  t4a_runtime a = make_runtime(0, 0), b = make_runtime(0, 0);
  t4a_buffer src = filled(a, 4096, 30), dst = blank(b, 4096);
  ASSERT_OK(t4a_testing_fault_arm("cuMemcpyDtoDAsync", 1, 700,
                                  T4A_TESTING_FAULT_AFTER));
  ASSERT_STATUS(t4a_buffer_copy(b, dst, 0, src, 0, 4096),
                T4A_ERROR_DEVICE_FAULT);
  ASSERT_MESSAGE_HAS("device 0");
  t4a_testing_fault_reset();
  t4a_runtime_stats a0 = stats_of(a);
  ASSERT_OK(t4a_buffer_release(src)); /* kept by b's epoch: not freed */
  assert_int_equal(stats_of(a).frees, a0.frees);

  /* b is broken, a is not. */
  ASSERT_STATUS(t4a_buffer_fill(b, dst, 0, 16, 0), T4A_ERROR_DEVICE_FAULT);
  t4a_buffer s2 = filled(a, 4096, 31);
  ASSERT_STATUS(t4a_buffer_copy(b, dst, 0, s2, 0, 16), T4A_ERROR_DEVICE_FAULT);
  ASSERT_MESSAGE_HAS("the destination runtime");
  t4a_buffer d2 = blank(a, 4096);
  ASSERT_STATUS(t4a_buffer_copy(a, d2, 0, dst, 0, 16), T4A_ERROR_DEVICE_FAULT);
  ASSERT_MESSAGE_HAS("the source runtime");
  ASSERT_MESSAGE_HAS("cuMemcpyDtoDAsync");
  /* a stays usable: its own copies and transfers work. */
  ASSERT_OK(t4a_buffer_copy(a, d2, 0, s2, 0, 4096));
  unsigned char h[4096];
  ASSERT_OK(t4a_buffer_download_sync(a, d2, 0, h, sizeof h));
  for (int i = 0; i < 4096; ++i)
    if (h[i] != pattern((uint64_t)i, 31))
      fail_msg("byte %d differs on the runtime that was not broken", i);
  /* Destroying the broken runtime leaks what it keeps (the source of the
   * faulted copy), never frees it. */
  ASSERT_STATUS(t4a_runtime_destroy(b), T4A_ERROR_DEVICE_FAULT);
  assert_int_equal(stats_of(a).frees, a0.frees);
  ASSERT_OK(t4a_buffer_release(dst));
  ASSERT_OK(t4a_buffer_release(s2));
  ASSERT_OK(t4a_buffer_release(d2));
  ASSERT_OK(t4a_runtime_destroy(a));
}

int main(int argc, char **argv) {
  const char *group = argc > 1 ? argv[1] : "main";
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  setenv("FAKE_CUDA_DEVICES", "3", 1);
  load_fake();
  fake_set_peer(0, 2, 0);
  const struct CMUnitTest main_tests[] = {
      cmocka_unit_test(test_same_device),
      cmocka_unit_test(test_wrong_runtime),
      cmocka_unit_test(test_staged_then_peer),
      cmocka_unit_test(test_not_peers_and_auto),
      cmocka_unit_test(test_domain_order),
      cmocka_unit_test(test_raw_scope_against_pair),
      cmocka_unit_test(test_both_directions),
  };
  const struct CMUnitTest fault_tests[] = {
      cmocka_unit_test(test_fault),
  };
  if (strcmp(group, "fault") == 0)
    return cmocka_run_group_tests_name("fault", fault_tests, NULL, NULL);
  return cmocka_run_group_tests_name("main", main_tests, NULL, NULL);
}
