// A replacement operator new for the C++ host tests that check the
// library's allocations: every call is counted (g_news), and g_countdown > 0
// makes the g_countdown-th call from now throw std::bad_alloc. Plus fail()
// and CHECK() for t4a_status results. Include it in exactly one source file
// of a test program, after defining T4A_TEST_NAME (used in messages).
// SPDX-License-Identifier: MIT OR Apache-2.0
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "t4acuda.h"

#ifndef T4A_TEST_NAME
#error "define T4A_TEST_NAME before including new_hook.hpp"
#endif

// The replacements pair malloc with free; GCC's inliner sees a new-ed
// pointer reach free() and warns (test_facade_edges.cpp has the same).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

static std::atomic<long> g_news{0};      // operator new calls so far
static std::atomic<long> g_countdown{0}; // > 0: the n-th new from now fails

void *operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (g_countdown.load(std::memory_order_relaxed) > 0 &&
      g_countdown.fetch_sub(1, std::memory_order_relaxed) == 1)
    throw std::bad_alloc();
  if (void *p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void *operator new[](std::size_t n) { return operator new(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }

// Prints the failed call, its status and the thread's last error; 1.
static inline int fail(const char *what, t4a_status s) {
  char msg[2048];
  t4a_last_error_message(msg, sizeof msg, nullptr);
  std::fprintf(stderr, "%s: %s: %s: %s\n", T4A_TEST_NAME, what,
               t4a_status_name(s), msg);
  return 1;
}

#define CHECK(call)                                                            \
  do {                                                                         \
    t4a_status s_ = (call);                                                    \
    if (s_ != T4A_SUCCESS) return fail(#call, s_);                             \
  } while (0)
