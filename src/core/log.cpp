#include "core/log.hpp"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/fork.hpp"
#include "driver/env.hpp"

namespace t4a::core {

namespace {

// T4A_LOG (driver/env.hpp), when set to a known level name, overrides
// `fallback`. An unknown value is not silently ignored: it is reported
// once per process on stderr (the sink may not exist yet), naming the
// accepted values.
int32_t level_from_env(int32_t fallback) {
  static const char *const names[] = {"off", "error", "warn", "info", "debug"};
  if (fallback < T4A_LOG_OFF || fallback > T4A_LOG_DEBUG)
    fallback = T4A_LOG_WARN;
  if (env::raw(env::Var::log) == nullptr) return fallback; // the usual case
  env::Setting<size_t> s = env::choice(
      env::Var::log, names, 5, static_cast<size_t>(fallback), "a log level",
      std::string("the level stays '") + names[fallback] + "'");
  static std::atomic<bool> warned{false};
  if (!s.error.empty() && !warned.exchange(true, std::memory_order_relaxed))
    std::fprintf(stderr, "t4acuda warn: %s\n", s.error.c_str());
  return static_cast<int32_t>(s.value);
}

struct Sink {
  std::mutex mu;
  t4a_log_fn fn = nullptr;
  void *user = nullptr;
  std::atomic<int32_t> level{level_from_env(T4A_LOG_WARN)};
};

Sink &sink() {
  static Sink *s = new Sink(); // never destroyed: logging works during exit
  return *s;
}

const char *level_name(int32_t level) {
  switch (level) {
  case T4A_LOG_ERROR: return "error";
  case T4A_LOG_WARN: return "warn";
  case T4A_LOG_INFO: return "info";
  default: return "debug";
  }
}

void deliver(int32_t level, const char *message);

} // namespace

namespace detail {
__thread int tl_defer_depth __attribute__((tls_model("initial-exec"))) = 0;
__thread DeferredLog *tl_deferred __attribute__((tls_model("initial-exec"))) =
    nullptr;

// Out of line: log_defer_end() runs at the end of every admission and
// almost never has anything to deliver.
__attribute__((noinline)) void deliver_deferred() {
  // Taken off the thread first: a callback may log (and defer) again.
  std::unique_ptr<std::vector<std::pair<int32_t, std::string>>> pending(
      tl_deferred);
  tl_deferred = nullptr;
  // A callback may call a failing t4acuda function on this thread: the
  // failure that the deferring code recorded stays the thread's last error.
  // Restored only if the copy succeeded: restoring a default record after
  // a failed copy would wipe the very error it protects.
  LastError saved;
  bool have_saved = false;
  try {
    saved = last_error();
    have_saved = true;
  } catch (...) { // out of host memory: deliver anyway, the record may change
  }
  for (auto &[level, message] : *pending) deliver(level, message.c_str());
  if (have_saved) restore_last_error(std::move(saved));
}
} // namespace detail

using detail::tl_defer_depth;
using detail::tl_deferred;

bool log_enabled(int32_t level) {
  return level > T4A_LOG_OFF &&
         level <= sink().level.load(std::memory_order_relaxed);
}

void log(int32_t level, const char *message) {
  if (!log_enabled(level)) return;
  if (tl_defer_depth > 0) {
    try {
      if (tl_deferred == nullptr)
        tl_deferred = new std::vector<std::pair<int32_t, std::string>>();
      tl_deferred->emplace_back(level, message);
    } catch (...) { // out of host memory: this message is lost
    }
    return;
  }
  deliver(level, message);
}

namespace {
void deliver(int32_t level, const char *message) {
  Sink &s = sink();
  t4a_log_fn fn;
  void *user;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    fn = s.fn;
    user = s.user;
  }
  if (fn != nullptr) {
    // Outside the lock. A callback that makes t4acuda log again on this
    // thread is not re-entered (no unbounded recursion).
    static thread_local bool tl_in_callback = false;
    if (tl_in_callback) return;
    struct Guard {
      Guard() { tl_in_callback = true; }
      ~Guard() { tl_in_callback = false; }
    } guard;
    fn(user, level, message);
  } else {
    std::fprintf(stderr, "t4acuda %s: %s\n", level_name(level), message);
  }
}
} // namespace

void logf(int32_t level, const char *fmt, ...) {
  if (!log_enabled(level)) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  log(level, buf);
}

t4a_status set_log_callback(t4a_log_fn fn, void *user, int32_t max_level) {
  if (max_level < T4A_LOG_OFF || max_level > T4A_LOG_DEBUG)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "max_level is %d; it must be between T4A_LOG_OFF (0) and "
                "T4A_LOG_DEBUG (4)",
                max_level);
  Sink &s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  s.fn = fn;
  s.user = user;
  s.level.store(level_from_env(max_level), std::memory_order_relaxed);
  return T4A_SUCCESS;
}

// Fork safety (core/fork.hpp): the sink's lock, taken by prepare.
void log_at_fork(ForkPhase phase) {
  if (phase == ForkPhase::Prepare)
    sink().mu.lock();
  else
    sink().mu.unlock(); // the child's only thread locked it
}

} // namespace t4a::core
