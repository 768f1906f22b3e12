// Host lane, pure: deferred drops wait for the borrow sections that were
// open when they were deferred, and only for those (src/core/borrow.cpp,
// compiled into this test). What must hold:
//  - relay: two threads take turns so that a section is always open
//    somewhere; each object retired while one section is open is dropped
//    when that section ends, although the other thread's is open then.
//    (Before issue 14's fix a drop waited for a moment with no section
//    open anywhere, which this relay never gives.)
//  - nested window: a section that opens and closes a capture-gate window
//    after the retire is still the same section: the drop waits for its
//    end, not for the window's.
//  - pause: a paused section has ended; the drop does not wait for the
//    section resumed after it.
//  - own section: a retire inside the caller's own section (a log
//    callback releasing a handle) is dropped when that section ends.
//  - a long section and many short ones: a batch per release, each drain
//    checking only the oldest until the long section ends.
//  - a thread that exits inside a section: what waited for it drops.
//  - no memory to defer: the object is leaked, and the error is logged
//    outside the list's lock (a log callback calling back in would
//    deadlock under it).
//  - stress: reader threads borrow the object a writer keeps replacing and
//    retiring; none ever sees a dropped object, and every retired object
//    is dropped while the readers are still running.
#include <atomic>
#include <chrono>
#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#define T4A_TEST_NAME "test_borrow_retire"
#include "new_hook.hpp" // before cmocka.h, whose fail() is a macro

extern "C" {
#include <cmocka.h>
}

#include "core/borrow.hpp"
#include "core/log.hpp"
#include "core/object.hpp"

// The logger is not compiled in: borrow.cpp logs only when a deferred
// release finds no memory (provoked once, in test_defer_without_memory).
#include "log_stub.hpp"

// The log hook of test_defer_without_memory: calls back into the library
// as a user's log callback may, here a drain (what any section's end may
// run), on another thread, waited for at most 5 s (a deadlock shows as a
// timeout).
std::atomic<int> g_callback_stuck{0};
void drain_from_log() {
  std::atomic<bool> done{false};
  std::thread t([&] {
    t4a::core::borrow::drain();
    done.store(true);
  });
  for (int i = 0; i < 5000 && !done.load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (done.load()) {
    t.join();
  } else {
    g_callback_stuck.fetch_add(1);
    t.detach(); // blocked for good on the lock: the test reports it
  }
}

using t4a::core::BorrowSection;
using t4a::core::g_log_hook;
using t4a::core::g_logged;
using t4a::core::GateSection;
using t4a::core::Kind;
using t4a::core::Object;
using t4a::core::retire;
namespace borrow = t4a::core::borrow;

#ifndef T4A_RACE_ITERATIONS
#define T4A_RACE_ITERATIONS 2000
#endif

namespace {

std::atomic<uint64_t> g_dropped{0};

// An object that records its drop and is never freed (the stress readers
// may then look at a dropped one without undefined behaviour: that they
// never do is what the test checks).
class Probe : public Object {
public:
  Probe() : Object(Kind::TestObject) {}
  std::atomic<bool> dropped{false};
  // Whether the drop ran inside a borrow section of the dropping thread.
  std::atomic<bool> dropped_in_section{false};

protected:
  void last_ref_dropped() override {
    const t4a::core::BorrowRecord *r = borrow::tl_record;
    dropped_in_section.store(r != nullptr && r->depth != 0,
                             std::memory_order_seq_cst);
    dropped.store(true, std::memory_order_seq_cst);
    g_dropped.fetch_add(1, std::memory_order_seq_cst);
  }
};

std::vector<Probe *> g_all; // freed at the end of each test

Probe *make() {
  g_all.push_back(new Probe());
  return g_all.back();
}

void free_all() {
  for (Probe *p : g_all) delete p;
  g_all.clear();
}

// A thread that opens and closes a section (and a window in it) on
// command, so that the test decides exactly when sections overlap.
class Worker {
public:
  enum Cmd { Idle, Open, Close, OpenWindow, CloseWindow, Pause, Resume, Exit };
  Worker() : t_([this] { run(); }) {}
  ~Worker() {
    command(Exit);
    t_.join();
  }
  void command(Cmd c) {
    cmd_.store(c, std::memory_order_seq_cst);
    while (cmd_.load(std::memory_order_seq_cst) != Idle)
      std::this_thread::yield();
  }

private:
  void run() {
    std::unique_ptr<BorrowSection> section;
    std::unique_ptr<GateSection> window;
    for (;;) {
      int c = cmd_.load(std::memory_order_seq_cst);
      switch (c) {
      case Idle: std::this_thread::yield(); continue;
      case Open: section = std::make_unique<BorrowSection>(); break;
      case Close: section.reset(); break;
      case OpenWindow: window = std::make_unique<GateSection>(); break;
      case CloseWindow: window.reset(); break;
      case Pause: assert_true(section->pause()); break;
      case Resume: section->resume(); break;
      case Exit: cmd_.store(Idle, std::memory_order_seq_cst); return;
      }
      cmd_.store(Idle, std::memory_order_seq_cst);
    }
  }
  std::atomic<int> cmd_{Idle};
  std::thread t_;
};

// Workers live on the heap until the test's teardown: a failed assertion
// leaves the test function by longjmp, past any destructor, and a worker
// still holding a section open would fail the tests after it.
std::vector<std::unique_ptr<Worker>> g_workers;
Worker &new_worker() {
  g_workers.push_back(std::make_unique<Worker>());
  return *g_workers.back();
}
int stop_workers(void **) {
  g_workers.clear(); // each closes what it has open and exits
  return 0;
}

void test_relay(void **) {
  g_dropped = 0;
  Worker &a = new_worker(), &b = new_worker();
  a.command(Worker::Open);
  Worker *open = &a, *other = &b;
  const int rounds = 100;
  for (int i = 0; i < rounds; ++i) {
    // `open` is in a section, `other` is not.
    Probe *p = make();
    retire(p); // deferred: `open`'s section may have borrowed it
    assert_false(p->dropped.load());
    assert_int_equal(borrow::deferred_count(), 1);
    other->command(Worker::Open); // a section opened after the retire
    assert_false(p->dropped.load());
    open->command(Worker::Close); // the section it waited for ends
    // Dropped by that section's end, with `other`'s still open.
    assert_true(p->dropped.load());
    assert_int_equal(borrow::deferred_count(), 0);
    std::swap(open, other);
  }
  assert_int_equal(g_dropped.load(), rounds);
  open->command(Worker::Close);
  free_all();
}

void test_nested_window(void **) {
  g_dropped = 0;
  Worker &a = new_worker(), &b = new_worker();
  // Retired before the window: the window's store must not look like a
  // new section.
  a.command(Worker::Open);
  Probe *p = make();
  retire(p);
  a.command(Worker::OpenWindow);
  a.command(Worker::CloseWindow);
  b.command(Worker::Open); // other threads' section ends drain too
  b.command(Worker::Close);
  borrow::drain();
  assert_false(p->dropped.load()); // a's section is still the same
  a.command(Worker::Close);
  assert_true(p->dropped.load());
  // Retired while the window is open: back to the plain section is still
  // the same section.
  a.command(Worker::Open);
  a.command(Worker::OpenWindow);
  Probe *q = make();
  retire(q);
  a.command(Worker::CloseWindow);
  b.command(Worker::Open);
  b.command(Worker::Close);
  borrow::drain();
  assert_false(q->dropped.load());
  a.command(Worker::Close);
  assert_true(q->dropped.load());
  assert_int_equal(borrow::deferred_count(), 0);
  free_all();
}

void test_pause(void **) {
  g_dropped = 0;
  Worker &a = new_worker(), &b = new_worker();
  a.command(Worker::Open);
  b.command(Worker::Open);
  Probe *p = make();
  retire(p);
  a.command(Worker::Pause); // a's section ends here
  assert_false(p->dropped.load());
  a.command(Worker::Resume); // a new section: not waited for
  b.command(Worker::Close);
  assert_true(p->dropped.load());
  a.command(Worker::Close);
  free_all();
}

void test_own_section(void **) {
  g_dropped = 0;
  Worker &a = new_worker();
  a.command(Worker::Open);
  Probe *p = make();
  {
    BorrowSection mine; // as a log callback releasing a handle would be
    retire(p);
    a.command(Worker::Close);
    borrow::drain();
    assert_false(p->dropped.load()); // this thread's section is open
  }
  assert_true(p->dropped.load()); // dropped by its end
  free_all();
}

// A retire inside the caller's own section (a log callback releasing a
// handle, SectionAdmission dropping its references when nested) defers,
// and must not drop other deferred references there either: a drop may
// run a destructor that waits (a runtime's teardown), which inside a
// section would hold up every release made meanwhile, and the nested
// paths defer precisely so that no destructor runs inside the section.
// Here `p`'s batch has ended but was not drained yet: its section's end
// read `pending` as false (the fence-free load may miss a flag set at
// that very moment; simulated by clearing the flag around the end).
void test_no_drop_inside_own_section(void **) {
  g_dropped = 0;
  Worker &a = new_worker();
  a.command(Worker::Open);
  Probe *p = make();
  retire(p); // waits for a's section
  borrow::g_pending.store(false);
  a.command(Worker::Close); // ends it, missing the flag: p not drained
  borrow::g_pending.store(true);
  assert_false(p->dropped.load());
  Probe *q = make();
  {
    BorrowSection mine;
    retire(q); // deferred (this section); p's batch has ended meanwhile
    assert_false(p->dropped.load() && p->dropped_in_section.load());
  }
  // Both dropped by the section's end, outside it.
  assert_true(p->dropped.load());
  assert_false(p->dropped_in_section.load());
  assert_true(q->dropped.load());
  assert_false(q->dropped_in_section.load());
  assert_int_equal(borrow::deferred_count(), 0);
  free_all();
}

// Releases in a burst while the same sections stay open (a thread freeing
// a pool while another is in a launch): one batch, not one per release.
// With a batch per release each retire's drain checked every batch and a
// section's end erased them one at a time from the front: quadratic, 40,000
// releases took 2 s and the section's end 2.7 s under the deferred list's
// lock (0.4 ms before f0fc281).
void test_burst_one_batch(void **) {
  g_dropped = 0;
  Worker &a = new_worker(), &b = new_worker();
  a.command(Worker::Open);
  b.command(Worker::Open);
  const int n = 1000;
  for (int i = 0; i < n; ++i) retire(make());
  assert_int_equal(borrow::deferred_count(), n);
  assert_int_equal(borrow::waiting_batches(), 1);
  a.command(Worker::Close);
  assert_int_equal(g_dropped.load(), 0);
  // A section that ended is not waited for: still the same batch.
  for (int i = 0; i < n; ++i) retire(make());
  assert_int_equal(borrow::waiting_batches(), 1);
  b.command(Worker::Close);
  assert_int_equal(g_dropped.load(), 2 * n);
  assert_int_equal(borrow::waiting_batches(), 0);
  free_all();
}

// One long section (a thread blocked in the driver inside it) while
// another thread's short sections come and go: each release then has
// sections of its own to wait for (a batch each), all held by the long
// one. A drain checks batches oldest first and stops at the first still
// waiting (a younger one never ends first), so the short sections' ends
// cost one check each, not one per batch; once the long section ends all
// of them go, in order.
void test_long_section_many_batches(void **) {
  g_dropped = 0;
  Worker &lng = new_worker(), &shrt = new_worker();
  lng.command(Worker::Open);
  const int n = 300;
  for (int i = 0; i < n; ++i) {
    shrt.command(Worker::Open);
    retire(make()); // waits for lng's section and this one of shrt's
    shrt.command(Worker::Close);
  }
  assert_int_equal(borrow::waiting_batches(), n);
  assert_int_equal(g_dropped.load(), 0);
  const uint64_t before = borrow::batch_checks();
  for (int i = 0; i < 100; ++i) { // short sections ending, each draining
    shrt.command(Worker::Open);
    shrt.command(Worker::Close);
  }
  const uint64_t checks = borrow::batch_checks() - before;
  assert_true(checks >= 100);     // every end drained (pending is set)
  assert_true(checks <= 2 * 100); // one batch each, not n
  assert_int_equal(g_dropped.load(), 0);
  lng.command(Worker::Close);
  assert_int_equal(g_dropped.load(), n);
  assert_int_equal(borrow::waiting_batches(), 0);
  free_all();
}

// A thread that exits inside a section (left without its end: a longjmp
// out of a callback) uses nothing borrowed any more: what waited for its
// section drops once it has exited (its record shows no section), and the
// batches after it are not held behind it.
void test_thread_exits_inside_section(void **) {
  g_dropped = 0;
  alignas(BorrowSection) static unsigned char storage[sizeof(BorrowSection)];
  std::atomic<int> phase{0};
  std::thread t([&] {
    new (storage) BorrowSection(); // never ended
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
  });
  while (phase.load() != 1) std::this_thread::yield();
  Probe *p = make();
  retire(p); // waits for t's section
  Worker &a = new_worker();
  a.command(Worker::Open);
  Probe *q = make();
  retire(q); // waits for t's section and a's
  a.command(Worker::Close);
  assert_false(p->dropped.load());
  phase.store(2);
  t.join(); // exits with its section open
  borrow::drain();
  assert_true(p->dropped.load());
  assert_true(q->dropped.load());
  assert_int_equal(borrow::waiting_batches(), 0);
  free_all();
}

// No memory to defer a release: the object is leaked (never dropped under
// a reader) and the error logged outside the deferred list's lock, so a
// log callback that calls back into the library (whose section ends
// drain, taking that lock) does not deadlock.
void test_defer_without_memory(void **) {
  g_dropped = 0;
  Worker &a = new_worker();
  a.command(Worker::Open);
  // Each retire runs with the next allocation failing: while the deferred
  // list has room the failure hits the drain's batch instead (caught: the
  // references stay in the list, which grows by one), until the list must
  // grow for the retire itself.
  const int logged = g_logged.load();
  Probe *leaked = nullptr;
  int retired = 0;
  g_log_hook = drain_from_log;
  for (int i = 0; i < 1000 && leaked == nullptr; ++i) {
    Probe *p = make();
    g_countdown = 1;
    retire(p);
    g_countdown = 0;
    ++retired;
    if (g_logged.load() != logged) leaked = p;
  }
  g_log_hook = nullptr;
  assert_non_null(leaked);
  assert_int_equal(g_logged.load(), logged + 1);
  assert_int_equal(g_callback_stuck.load(), 0); // no deadlock
  a.command(Worker::Close);
  borrow::drain();
  assert_false(leaked->dropped.load()); // leaked, on purpose
  assert_int_equal(g_dropped.load(), retired - 1);
  assert_int_equal(borrow::deferred_count(), 0);
  free_all();
}

// Readers borrow the current object in back-to-back sections (so a section
// is open somewhere nearly always) while the writer replaces and retires.
struct Stress {
  std::atomic<Probe *> slot{nullptr};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0}, bad{0};
};

void reader(Stress *s) {
  while (!s->stop.load(std::memory_order_relaxed)) {
    BorrowSection section;
    Probe *read[4] = {};
    for (Probe *&p : read) {
      p = s->slot.load(std::memory_order_seq_cst);
      if (p != nullptr && p->dropped.load(std::memory_order_seq_cst))
        s->bad.fetch_add(1);
      s->reads.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::yield(); // a driver call in the section
    }
    // Still in the section: nothing read in it may have been dropped
    // meanwhile (checking only right after each read would miss a drop made
    // while the reader yielded).
    for (Probe *p : read)
      if (p != nullptr && p->dropped.load(std::memory_order_seq_cst))
        s->bad.fetch_add(1);
  }
}

void test_stress(void **) {
  g_dropped = 0;
  Stress s;
  s.slot = make();
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) readers.emplace_back(reader, &s);
  while (s.reads.load() < 100) std::this_thread::yield();
  const uint64_t n = T4A_RACE_ITERATIONS;
  for (uint64_t i = 0; i < n; ++i) {
    Probe *old = s.slot.exchange(make(), std::memory_order_seq_cst);
    retire(old);
    if (i % 16 == 0) std::this_thread::yield();
  }
  // The readers keep running: every retired object must be dropped as the
  // sections open at its retire end (10 s at most; milliseconds expected).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (g_dropped.load() < n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  uint64_t dropped = g_dropped.load();
  size_t left = borrow::deferred_count();
  s.stop = true;
  for (auto &t : readers) t.join();
  std::fprintf(stderr,
               "stress: %llu reads, %llu of %llu retired dropped while the "
               "readers ran, %zu still deferred\n",
               (unsigned long long)s.reads.load(), (unsigned long long)dropped,
               (unsigned long long)n, left);
  assert_int_equal(s.bad.load(), 0);
  assert_int_equal(dropped, n);
  assert_int_equal(left, 0);
  retire(s.slot.exchange(nullptr));
  assert_int_equal(g_dropped.load(), n + 1);
  free_all();
}

} // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_relay, stop_workers),
      cmocka_unit_test_teardown(test_nested_window, stop_workers),
      cmocka_unit_test_teardown(test_pause, stop_workers),
      cmocka_unit_test_teardown(test_own_section, stop_workers),
      cmocka_unit_test_teardown(test_no_drop_inside_own_section, stop_workers),
      cmocka_unit_test_teardown(test_burst_one_batch, stop_workers),
      cmocka_unit_test_teardown(test_long_section_many_batches, stop_workers),
      cmocka_unit_test_teardown(test_thread_exits_inside_section, stop_workers),
      cmocka_unit_test_teardown(test_defer_without_memory, stop_workers),
      cmocka_unit_test_teardown(test_stress, stop_workers),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
