// Host lane, pure: the capture gate's protocol (src/core/capture_gate.hpp
// over src/core/borrow.cpp, compiled into this test). Reader threads open
// gate windows and, inside one, either "enqueue" (the gate seen open) or
// "defer" (seen closed), yielding in the middle as a slow driver call
// would; a writer closes the gate, marks a capture as begun, ends it and
// opens the gate, as capture begin and end do. What must hold:
//  - no reader that saw the gate open is still enqueueing once the writer
//    has closed it (its set_closed(true) waited for that window);
//  - every deferral made by a reader that saw the gate closed is complete
//    when the writer's set_closed(false) returns (the deferred frees are
//    then all in the list the capture end runs).
// With the writer's wait removed both fail at once. Also the nesting
// rules: a window in a plain section, a section in a window, pause()
// refused in a window, and the writer skipping its own thread's window.
#include <atomic>
#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "core/borrow.hpp"
#include "core/capture_gate.hpp"
#include "core/log.hpp"

// The logger is not compiled in: borrow.cpp logs only when a deferred
// release finds no memory, which this test never provokes, and the gate's
// shared-lock side only counts a deferral scope (checked below); nothing
// is ever deferred here.
#include "log_stub.hpp"

using t4a::core::BorrowRecord;
using t4a::core::BorrowSection;
using t4a::core::CaptureGate;
using t4a::core::GateSection;
namespace borrow = t4a::core::borrow;

#ifndef T4A_RACE_ITERATIONS
#define T4A_RACE_ITERATIONS 2000
#endif

namespace {

struct Shared {
  CaptureGate gate;
  std::atomic<bool> stop{false};
  std::atomic<bool> captured{false}; // between "driver begin" and "end"
  std::atomic<uint64_t> round{0};    // capture rounds begun
  std::atomic<uint64_t> opened{0};   // rounds whose gate opened again
  std::atomic<uint64_t> enqueued{0}, deferred{0};
  std::atomic<uint64_t> enqueued_in_capture{0}, deferred_late{0};
};

void reader(Shared *s) {
  while (!s->stop.load(std::memory_order_relaxed)) {
    GateSection window;
    if (!s->gate.closed()) {
      std::this_thread::yield(); // a slow enqueue
      if (s->captured.load(std::memory_order_seq_cst))
        s->enqueued_in_capture.fetch_add(1);
      s->enqueued.fetch_add(1);
    } else {
      // Deferred: the round it belongs to must not have opened yet.
      uint64_t r = s->round.load(std::memory_order_seq_cst);
      std::this_thread::yield();
      if (s->opened.load(std::memory_order_seq_cst) >= r)
        s->deferred_late.fetch_add(1);
      s->deferred.fetch_add(1);
    }
  }
}

void test_windows_race_capture(void **) {
  Shared s;
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; ++i) readers.emplace_back(reader, &s);
  // Both readers are running before the first capture.
  while (s.enqueued.load() < 2) std::this_thread::yield();
  for (int i = 0; i < T4A_RACE_ITERATIONS; ++i) {
    uint64_t r = s.round.fetch_add(1) + 1;
    s.gate.set_closed(true);
    s.captured.store(true, std::memory_order_seq_cst); // "driver begin"
    std::this_thread::yield();
    s.captured.store(false, std::memory_order_seq_cst); // "driver end"
    s.gate.set_closed(false);
    s.opened.store(r, std::memory_order_seq_cst);
    std::this_thread::yield();
  }
  s.stop = true;
  for (auto &t : readers) t.join();
  std::fprintf(stderr,
               "gate race: %llu enqueued (%llu inside a capture), %llu "
               "deferred (%llu after their round opened)\n",
               (unsigned long long)s.enqueued.load(),
               (unsigned long long)s.enqueued_in_capture.load(),
               (unsigned long long)s.deferred.load(),
               (unsigned long long)s.deferred_late.load());
  assert_int_equal(s.enqueued_in_capture.load(), 0);
  assert_int_equal(s.deferred_late.load(), 0);
  assert_true(s.deferred.load() > 0); // the closed branch was exercised
}

// The low half of the record's `active`: 0, k_plain or a window's stamp
// (the high half is the section's number).
uint32_t active_now() {
  return static_cast<uint32_t>(
      borrow::tl_record->active.load(std::memory_order_relaxed));
}

void test_nesting(void **) {
  {
    GateSection w;
    uint32_t stamp = active_now();
    assert_true((stamp & 1) != 0); // a window: odd stamp
    {
      BorrowSection inner; // nested plain section: the window stays
      assert_int_equal(active_now(), stamp);
      assert_false(inner.pause()); // never paused inside a window
    }
    {
      GateSection again; // nested window: same stamp
      assert_int_equal(active_now(), stamp);
    }
    assert_int_equal(active_now(), stamp);
    w.close();
    assert_int_equal(active_now(), 0);
    w.close(); // a second close does nothing
    assert_int_equal(active_now(), 0);
  }
  {
    BorrowSection outer;
    assert_int_equal(active_now(), BorrowRecord::k_plain);
    uint32_t stamp;
    {
      GateSection w; // a window inside a plain section
      stamp = active_now();
      assert_true((stamp & 1) != 0);
    }
    assert_int_equal(active_now(), BorrowRecord::k_plain);
    {
      GateSection w; // a new window has a new stamp
      assert_true(active_now() != stamp);
    }
    assert_true(outer.pause()); // plain again: pause works
    assert_int_equal(active_now(), 0);
    outer.resume();
  }
  assert_int_equal(active_now(), 0);
  // The shared-lock interface (std::shared_lock users) is a window too.
  CaptureGate gate;
  gate.lock_shared();
  assert_true((active_now() & 1) != 0);
  // ...in which what the thread logs is deferred until it closes.
  assert_int_equal(t4a::core::detail::tl_defer_depth, 1);
  // The writer skips its own thread's window (it would wait forever).
  gate.set_closed(true);
  assert_true(gate.closed());
  gate.set_closed(false);
  gate.unlock_shared();
  assert_int_equal(active_now(), 0);
  assert_int_equal(t4a::core::detail::tl_defer_depth, 0);
}

// A window open in another thread holds the writer until it closes.
void test_writer_waits(void **) {
  CaptureGate gate;
  std::atomic<int> phase{0};
  std::thread t([&] {
    GateSection w;
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
    // The writer is (very likely) waiting now; it must still be.
    for (int i = 0; i < 1000; ++i) std::this_thread::yield();
    phase.store(3);
  });
  while (phase.load() != 1) std::this_thread::yield();
  phase.store(2);
  gate.set_closed(true);
  assert_int_equal(phase.load(), 3); // returned only after the window closed
  t.join();
  gate.set_closed(false);
}

} // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nesting),
      cmocka_unit_test(test_writer_waits),
      cmocka_unit_test(test_windows_race_capture),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
