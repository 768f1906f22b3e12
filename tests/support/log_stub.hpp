// The logger for host tests that compile parts of src/core/ without
// core/log.cpp (which pulls in the driver layer): t4a::core::logf prints to
// stderr, counts the message and then calls g_log_hook when one is set; the
// deferral hooks of core/log.hpp do nothing. Include it in exactly one
// source file of a test program.
// SPDX-License-Identifier: MIT OR Apache-2.0
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "core/log.hpp"

namespace t4a::core {
inline std::atomic<int> g_logged{0};                // messages logged so far
inline std::atomic<void (*)()> g_log_hook{nullptr}; // called after each one
void logf(int32_t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  g_logged.fetch_add(1);
  if (void (*hook)() = g_log_hook.load()) hook();
}
namespace detail {
__thread int tl_defer_depth = 0;
__thread DeferredLog *tl_deferred = nullptr;
void deliver_deferred() {}
} // namespace detail
} // namespace t4a::core
