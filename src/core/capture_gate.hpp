// The capture gate (core/capture.hpp): a reader-writer lock for a hot
// reader side. Readers (stream-ordered allocation and free, which are not
// admitted) take it shared around "not capturing? then enqueue": one
// inline atomic add to enter and one to leave, no call into libc (a
// std::shared_mutex costs a pthread rwlock lock and unlock, about 70
// instructions each, on every allocation and every free). Writers
// (capture begin and end, rare) set the writer bit, which turns new
// readers back, then wait for the readers inside to leave; both sides
// wait by yielding, since a writer holds it only for a flag change and
// one driver call, and a reader for one enqueue. Used through
// std::shared_lock / std::unique_lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace t4a::core {

class CaptureGate {
public:
  void lock_shared() {
    if (state_.fetch_add(k_reader, std::memory_order_acquire) & k_writer)
        [[unlikely]]
      lock_shared_contended();
  }
  void unlock_shared() {
    state_.fetch_sub(k_reader, std::memory_order_release);
  }
  void lock() {
    uint32_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
      if (s & k_writer) { // another writer: wait for it
        std::this_thread::yield();
        s = state_.load(std::memory_order_relaxed);
        continue;
      }
      if (state_.compare_exchange_weak(s, s | k_writer,
                                       std::memory_order_acquire,
                                       std::memory_order_relaxed))
        break;
    }
    // New readers back off now; wait for those inside.
    while (state_.load(std::memory_order_acquire) != k_writer)
      std::this_thread::yield();
  }
  void unlock() { state_.fetch_and(~k_writer, std::memory_order_release); }

private:
  static constexpr uint32_t k_writer = 1, k_reader = 2;
  void lock_shared_contended() {
    do {
      state_.fetch_sub(k_reader, std::memory_order_relaxed); // back off
      while (state_.load(std::memory_order_relaxed) & k_writer)
        std::this_thread::yield();
    } while (state_.fetch_add(k_reader, std::memory_order_acquire) & k_writer);
  }

  std::atomic<uint32_t> state_{0}; // readers inside * 2 | writer bit
};

} // namespace t4a::core
