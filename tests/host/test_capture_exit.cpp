/*
 * Host lane, on the fake driver (tests/fake): captures left behind.
 *   - a thread that begins a capture and exits without ending it: the
 *     capture is ended at its exit (graph discarded, a warning logged), so
 *     the runtime synchronizes, captures again and is destroyed (before,
 *     destroy and synchronize answered CAPTURING for good);
 *   - a free deferred by a capture that cannot be remembered (no memory)
 *     is counted as a leaked allocation (before, it vanished uncounted).
 *     This program's operator new fails on demand: the library's
 *     allocations resolve to it.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define T4A_EXPERIMENTAL
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}

#include "t4acuda.h"

static const char *last_message() {
  static thread_local char buf[4096];
  if (t4a_last_error_message(buf, sizeof buf, nullptr) != T4A_SUCCESS)
    buf[0] = '\0';
  return buf;
}
#define ASSERT_OK(call)                                                        \
  do {                                                                         \
    t4a_status s_ = (call);                                                    \
    if (s_ != T4A_SUCCESS)                                                     \
      fail_msg("%s returned %s: %s", #call, t4a_status_name(s_),               \
               last_message());                                                \
  } while (0)

// ---- operator new that fails an allocation of one size, once, on demand

static std::atomic<size_t> g_fail_size{0};

void *operator new(size_t n) {
  size_t want = g_fail_size.load(std::memory_order_relaxed);
  if (want != 0 && n == want && g_fail_size.compare_exchange_strong(want, 0))
    throw std::bad_alloc();
  if (void *p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// Every unaligned form is replaced, so that each allocation and its release
// meet in malloc/free (a sanitizer's own nothrow new paired with this
// delete is a mismatch).
void *operator new[](size_t n) { return ::operator new(n); }
void *operator new(size_t n, const std::nothrow_t &) noexcept {
  try {
    return ::operator new(n);
  } catch (const std::bad_alloc &) {
    return nullptr;
  }
}
void *operator new[](size_t n, const std::nothrow_t &) noexcept {
  return ::operator new(n, std::nothrow);
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete[](void *p, size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept {
  std::free(p);
}

// ---- the log

static std::mutex g_log_mu;
static std::vector<std::string> g_warnings;
static void on_log(void *, int32_t level, const char *message) {
  if (level != T4A_LOG_WARN) return;
  std::lock_guard<std::mutex> lock(g_log_mu);
  g_warnings.emplace_back(message);
}
static bool warned(const char *needle) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  for (const std::string &w : g_warnings)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

static t4a_runtime make_runtime() {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime rt{};
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  return rt;
}

static void test_thread_exits_while_capturing(void **) {
  for (int32_t mode :
       {T4A_CAPTURE_GLOBAL, T4A_CAPTURE_THREAD_LOCAL, T4A_CAPTURE_RELAXED}) {
    t4a_runtime rt = make_runtime();
    t4a_buffer b{};
    ASSERT_OK(t4a_buffer_alloc(rt, 64, 0, &b));
    t4a_status begun = T4A_ERROR_INTERNAL, filled = T4A_ERROR_INTERNAL;
    std::thread t([&] {
      t4a_capture_options o = T4A_CAPTURE_OPTIONS_INIT;
      o.mode = mode;
      begun = t4a_capture_begin(rt, &o);
      filled = t4a_buffer_fill(rt, b, 0, 64, 0x5a); // captured, never run
    });
    t.join();
    ASSERT_OK(begun);
    ASSERT_OK(filled);
    if (!warned("exited with a capture"))
      fail_msg("mode %d: no warning for the abandoned capture", mode);
    ASSERT_OK(t4a_runtime_synchronize(rt));
    unsigned char out[64];
    ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, out, sizeof out));
    // The captured fill never ran (the fake zeroes nothing: compare with
    // a fill after the capture ended).
    ASSERT_OK(t4a_buffer_fill(rt, b, 0, 64, 0x11));
    ASSERT_OK(t4a_buffer_download_sync(rt, b, 0, out, sizeof out));
    assert_int_equal(out[63], 0x11);
    t4a_capture_options o = T4A_CAPTURE_OPTIONS_INIT;
    ASSERT_OK(t4a_capture_begin(rt, &o));
    t4a_graph g{};
    ASSERT_OK(t4a_capture_end(rt, &g));
    ASSERT_OK(t4a_graph_release(g));
    ASSERT_OK(t4a_buffer_release(b));
    ASSERT_OK(t4a_runtime_destroy(rt));
    std::lock_guard<std::mutex> lock(g_log_mu);
    g_warnings.clear();
  }
}

// A capture ended by its own thread leaves nothing for that thread's exit.
static void test_thread_that_ends_its_capture(void **) {
  t4a_runtime rt = make_runtime();
  std::thread t([&] {
    t4a_capture_options o = T4A_CAPTURE_OPTIONS_INIT;
    ASSERT_OK(t4a_capture_begin(rt, &o));
    t4a_graph g{};
    ASSERT_OK(t4a_capture_end(rt, &g));
    ASSERT_OK(t4a_graph_release(g));
  });
  t.join();
  assert_false(warned("exited with a capture"));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

static void test_lost_deferred_free_is_counted(void **) {
  t4a_runtime rt = make_runtime();
  std::vector<t4a_buffer> bufs(9);
  for (t4a_buffer &b : bufs) ASSERT_OK(t4a_buffer_alloc(rt, 256, 0, &b));
  t4a_process_stats before = T4A_PROCESS_STATS_INIT;
  ASSERT_OK(t4a_process_stats_get(&before));
  t4a_capture_options o = T4A_CAPTURE_OPTIONS_INIT;
  ASSERT_OK(t4a_capture_begin(rt, &o));
  // Room for 8 deferred frees is made at the capture's begin; the 9th
  // grows the list to 16 entries of three 8-byte fields: that fails.
  for (size_t i = 0; i < 8; ++i) ASSERT_OK(t4a_buffer_release(bufs[i]));
  g_fail_size.store(16 * 24);
  ASSERT_OK(t4a_buffer_release(bufs[8]));
  assert_int_equal(g_fail_size.load(), 0); // the failure was met
  t4a_graph g{};
  ASSERT_OK(t4a_capture_end(rt, &g));
  ASSERT_OK(t4a_graph_release(g));
  t4a_process_stats after = T4A_PROCESS_STATS_INIT;
  ASSERT_OK(t4a_process_stats_get(&after));
  assert_int_equal(after.leaked_device_allocations,
                   before.leaked_device_allocations + 1);
  ASSERT_OK(t4a_runtime_destroy(rt));
}

int main() {
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  ASSERT_OK(t4a_set_log_callback(on_log, nullptr, T4A_LOG_WARN));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_thread_exits_while_capturing),
      cmocka_unit_test(test_thread_that_ends_its_capture),
      cmocka_unit_test(test_lost_deferred_free_is_counted),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
