// Admission: every enqueuing operation of a runtime runs reserve -> enqueue
// -> commit holding the runtime's admission lock, so operations are admitted
// one at a time and the stream sees them in one order (R-RT-3). A thread
// that already holds the lock (a log callback calling back into the same
// runtime) gets REENTRANT instead of deadlocking (R-ABI-8). What a thread
// logs while it holds admission is delivered after it unlocks, so log
// callbacks never run under the lock.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "core/log.hpp"

namespace t4a::core {

class AdmissionLock {
public:
  std::mutex mu;
  std::atomic<std::thread::id> owner{};
};

class Admission {
public:
  explicit Admission(AdmissionLock &lock) : lock_(lock) {
    if (lock_.owner.load(std::memory_order_relaxed) ==
        std::this_thread::get_id()) {
      status_ = fail(T4A_ERROR_REENTRANT,
                     "this thread is already inside an operation of this "
                     "runtime (called from a callback); waiting would "
                     "deadlock");
      return;
    }
    lock_.mu.lock();
    lock_.owner.store(std::this_thread::get_id(), std::memory_order_relaxed);
    held_ = true;
    log_defer_begin();
  }
  ~Admission() { unlock(); }
  Admission(const Admission &) = delete;
  Admission &operator=(const Admission &) = delete;

  t4a_status status() const { return status_; }
  void unlock() {
    if (!held_) return;
    lock_.owner.store(std::thread::id(), std::memory_order_relaxed);
    lock_.mu.unlock();
    held_ = false;
    log_defer_end(); // what was logged meanwhile is delivered now
  }

private:
  AdmissionLock &lock_;
  t4a_status status_ = T4A_SUCCESS;
  bool held_ = false;
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
