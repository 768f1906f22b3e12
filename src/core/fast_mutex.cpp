#include "core/fast_mutex.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

namespace t4a::core {

namespace {
// The futex word is the state: std::atomic<uint32_t> has its layout.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

long futex(std::atomic<uint32_t> *word, int op, uint32_t value) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t *>(word),
                 op | FUTEX_PRIVATE_FLAG, value, nullptr, nullptr, 0);
}
} // namespace

void FastMutex::lock_contended() {
  // A short spin first: the holder usually leaves within a launch.
  for (int i = 0; i < 100; ++i) {
    uint32_t expected = 0;
    if (state_.load(std::memory_order_relaxed) == 0 &&
        state_.compare_exchange_weak(expected, 1, std::memory_order_acquire,
                                     std::memory_order_relaxed))
      return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  // Marked "with waiters" from here on, so the holder's unlock wakes one.
  // The wait's result is not needed: EAGAIN (the word changed) and EINTR
  // both mean "look again", which the loop does.
  while (state_.exchange(2, std::memory_order_acquire) != 0)
    (void)futex(&state_, FUTEX_WAIT, 2);
}

void FastMutex::wake_one() {
  // The result is the number woken (0 when the waiter already left).
  (void)futex(&state_, FUTEX_WAKE, 1);
}

} // namespace t4a::core
