// Logging: one sink (a user callback or the default stderr writer) and a
// level threshold; T4A_LOG overrides the threshold (an unknown value is
// reported once on stderr and ignored). The sink is called with no internal
// lock, call_once or compile lead held: code that logs while holding
// something another thread (or a callback calling back in) could wait on
// does so inside a LogDefer scope.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "t4acuda.h"

namespace t4a::core {

bool log_enabled(int32_t level);
void log(int32_t level, const char *message);
void logf(int32_t level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
t4a_status set_log_callback(t4a_log_fn fn, void *user, int32_t max_level);

// While a thread is inside a deferral scope (a runtime's admission lock, a
// LogDefer: a mutex, call_once or compile lead held), what it logs is kept
// and delivered when it leaves its outermost scope, so that no log
// callback ever runs with an internal lock held. Delivery keeps
// the thread's last error as it was (a callback may call a failing
// t4acuda function). Inline: every admission runs both.
namespace detail {
using DeferredLog = std::vector<std::pair<int32_t, std::string>>;
// Admission locks this thread holds (initial-exec: read without a
// __tls_get_addr call), and what it logged meanwhile.
extern __thread int tl_defer_depth __attribute__((tls_model("initial-exec")));
extern __thread DeferredLog *tl_deferred
    __attribute__((tls_model("initial-exec")));
void deliver_deferred();
} // namespace detail

inline void log_defer_begin() { ++detail::tl_defer_depth; }
inline void log_defer_end() {
  if (--detail::tl_defer_depth > 0 || detail::tl_deferred == nullptr) return;
  detail::deliver_deferred();
}

// RAII form of log_defer_begin/log_defer_end: declare it before taking
// the lock (call_once, compile lead) so that it is destroyed after the
// lock is released, and the logs are delivered then.
class LogDefer {
public:
  LogDefer() { log_defer_begin(); }
  ~LogDefer() { log_defer_end(); }
  LogDefer(const LogDefer &) = delete;
  LogDefer &operator=(const LogDefer &) = delete;
};

} // namespace t4a::core
