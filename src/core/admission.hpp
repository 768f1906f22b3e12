// Admission: every enqueuing operation of a runtime runs reserve -> enqueue
// -> commit holding the runtime's admission lock, so operations are admitted
// one at a time and the stream sees them in one order. A thread
// that already holds the lock (a log callback calling back into the same
// runtime) gets REENTRANT instead of deadlocking. What a thread
// logs while it holds admission is delivered after it unlocks, so log
// callbacks never run under the lock.
//
// Closing (t4a_runtime_destroy): destroy sets `closed` holding the lock,
// before it drains. From then on an ordinary Admission fails with
// INVALID_HANDLE, also for a thread that was already waiting for the lock
// when destroy closed it (the flag is read after the lock is taken), so
// nothing admitted after destroy can refill the module cache or add a
// keepalive that would hold the runtime in a cycle
// (docs/runtime.md#destroying-a-runtime).
// Paths that only retire or release what earlier work kept (completion
// retirement, destroy's own drain) use Admission::Internal, which ignores
// `closed`; TryAdmission (retirement polling only) ignores it too.
#pragma once

#include <atomic>
#include <thread>

#include "core/error.hpp"
#include "core/fast_mutex.hpp"
#include "core/log.hpp"

namespace t4a::core {

class AdmissionLock {
public:
  FastMutex mu;
  std::atomic<std::thread::id> owner{};
  // Set once, by destroy, holding `mu`; read holding `mu`.
  bool closed = false;
  // True while the owner holds the lock for a raw scope (t4a_raw_begin ..
  // t4a_raw_end, core/raw_scope.hpp): written by the owner holding `mu`,
  // read only by a thread that finds itself the owner.
  bool raw_scope = false;
};

#if defined(T4A_TESTING)
// Test builds: t4a_testing_admission_hook() installs a function called by
// every ordinary admission just before it waits for the lock (to stop a
// thread between resolving a runtime and being admitted). runtime.cpp.
using AdmissionHook = void (*)(void *);
extern std::atomic<AdmissionHook> g_admission_hook;
extern std::atomic<void *> g_admission_hook_arg;
#endif

class Admission {
public:
  // Ignores `closed`: only for work that retires or releases what was
  // admitted before destroy closed the runtime.
  enum InternalTag { Internal };

  // Admits only if the lock is free now, never waits: busy() then says it
  // was not (status SUCCESS, nothing held). REENTRANT and `closed` as for
  // an ordinary admission. For a second runtime taken while holding a
  // first one (cross_copy.cpp's PairAdmission): a thread never waits for
  // one runtime while it holds another.
  enum TryTag { Try };

  explicit Admission(AdmissionLock &lock) : Admission(lock, false, false) {}
  Admission(AdmissionLock &lock, InternalTag) : Admission(lock, true, false) {}
  Admission(AdmissionLock &lock, TryTag) : Admission(lock, false, true) {}
  ~Admission() { unlock(); }
  Admission(const Admission &) = delete;
  Admission &operator=(const Admission &) = delete;

  t4a_status status() const { return status_; }
  // Try only: the lock was held by another thread; nothing is held.
  bool busy() const { return busy_; }
  // Whether the calling thread holds `lock` (an operation or a raw scope
  // of that runtime further up this thread).
  static bool held_here(const AdmissionLock &lock) {
    return lock.owner.load(std::memory_order_relaxed) ==
           std::this_thread::get_id();
  }
  void unlock() {
    if (!held_) return;
    lock_.owner.store(std::thread::id(), std::memory_order_relaxed);
    lock_.mu.unlock();
    held_ = false;
    log_defer_end(); // what was logged meanwhile is delivered now
  }
  // Forgets the lock without unlocking it: for a raw scope destroyed
  // without its end (only possible at exit), whose lock must not be
  // unlocked by a thread that does not own it.
  void abandon() { held_ = false; }

private:
  Admission(AdmissionLock &lock, bool internal, bool try_only) : lock_(lock) {
    if (held_here(lock_)) {
      status_ = lock_.raw_scope
                    ? fail(T4A_ERROR_REENTRANT,
                           "this thread holds a raw scope of this runtime "
                           "(t4a_raw_begin); end it with t4a_raw_end before "
                           "calling into this runtime (other runtimes work "
                           "inside the scope)")
                    : fail(T4A_ERROR_REENTRANT,
                           "this thread is already inside an operation of "
                           "this runtime (called from a callback); waiting "
                           "would deadlock");
      return;
    }
#if defined(T4A_TESTING)
    if (!internal)
      if (AdmissionHook h = g_admission_hook.load(std::memory_order_acquire))
        h(g_admission_hook_arg.load(std::memory_order_acquire));
#endif
    if (!try_only) {
      lock_.mu.lock();
    } else if (!lock_.mu.try_lock()) {
      busy_ = true;
      return;
    }
    if (lock_.closed && !internal) [[unlikely]] {
      lock_.mu.unlock();
      status_ = fail(T4A_ERROR_INVALID_HANDLE,
                     "the runtime is being destroyed or was destroyed "
                     "(t4a_runtime_destroy began before this operation was "
                     "admitted); nothing was enqueued");
      return;
    }
    lock_.owner.store(std::this_thread::get_id(), std::memory_order_relaxed);
    held_ = true;
    log_defer_begin();
  }

  AdmissionLock &lock_;
  t4a_status status_ = T4A_SUCCESS;
  bool held_ = false;
  bool busy_ = false;
};

// Admission only if it is free right now (for optional work, such as the
// allocation path's amortized epoch poll): never waits, never REENTRANT.
class TryAdmission {
public:
  explicit TryAdmission(AdmissionLock &lock) : lock_(lock) {
    if (lock_.owner.load(std::memory_order_relaxed) ==
            std::this_thread::get_id() ||
        !lock_.mu.try_lock())
      return;
    lock_.owner.store(std::this_thread::get_id(), std::memory_order_relaxed);
    held_ = true;
    log_defer_begin();
  }
  ~TryAdmission() {
    if (!held_) return;
    lock_.owner.store(std::thread::id(), std::memory_order_relaxed);
    lock_.mu.unlock();
    log_defer_end();
  }
  TryAdmission(const TryAdmission &) = delete;
  TryAdmission &operator=(const TryAdmission &) = delete;
  bool held() const { return held_; }

private:
  AdmissionLock &lock_;
  bool held_ = false;
};

} // namespace t4a::core
