// Borrow sections: lock-free handle reads without reference counting.
//
// A thread inside a BorrowSection may use the objects it resolved from the
// registry (Registry::borrow) through plain pointers until the section
// ends: no registry lock and no reference increment or decrement per
// object. What keeps such an object alive is that its registry reference
// is never dropped while a section that might have read it is open: the
// registry unpublishes a slot first (generation, then object pointer) and
// hands the slot's reference to retire(), which drops it at once only when
// no thread is inside a section, and otherwise defers it until the
// sections open then have ended (below).
//
// Why that is enough (Dekker's pattern, seq_cst where marked):
//   reader: active := its section (seq_cst);  p := slot.obj (seq_cst);  (use p)
//           ... active := 0 (release)
//   writer: slot.obj := null (seq_cst);  scan every thread's `active`
//           (seq_cst)
// In the single total order of seq_cst operations either the reader's load
// of slot.obj comes after the writer's store (it reads null, or a later
// object whose generation differs from its id's: the borrow fails as a
// stale handle), or the reader's store to `active` comes before the
// writer's scan, which then sees it and defers the drop, or sees a later
// store: the release store that ended the section, or the store that
// began a later one (made after the end, in program order), after which
// the reader no longer uses p (the release/acquire pair orders its last
// use before the drop). A deferred batch is closed by a scan made after
// every one of its references was unpublished (the list's lock orders
// them), so the same argument holds for the sections it records.
//
// Deferred references wait for the sections that were open when they
// were deferred, and only for those (a grace period): each outermost
// section has a number, carried in `active` with the section, and a
// deferred batch records the (record, value) of every section open when
// it was closed. The batch is dropped once each of those records shows
// no section or another section's number. So a thread that is always in
// some section (threads launching back to back) delays a drop only until
// the sections it had open then have ended; it never waits for a moment
// with no section open anywhere (issue 14: under a sustained launch load
// such a moment comes only by chance, and released buffers kept their
// memory for an unbounded time).
// The end of a section reads `pending` without a fence, so it may miss a
// flag set at that very moment; retire() looks again after setting it,
// and every later section end on any thread looks again, so a deferred
// reference waits at most until the library is next entered anywhere
// after its sections ended (an entry point resolving a handle ends a
// section before its body runs: a test that joins its threads and then
// reads the counters sees the frees).
//
// Cost on the warm path: entering the outermost section is one seq_cst
// store (an xchg on x86) of its number and mark, leaving it a plain store
// and a load of `pending`; the thread's record is reached through an
// initial-exec TLS pointer. Sections nest (a log callback calling back
// in): only the outermost one takes a number. Each thread's record is on
// its own cache line; a directory of pointers to the records of live
// threads (null where a thread has exited) is what retire() scans, so it
// reads the dense directory and the records of the threads alive now, not
// one line per thread that ever called in.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/fork.hpp"
#include "core/object.hpp"

namespace t4a::core {

struct alignas(64) BorrowRecord {
  // 0 outside every section. Inside one: the outermost section's number
  // in the high 32 bits, and in the low 32 bits k_plain, or while a
  // capture-gate window is open (GateSection below) that window's stamp
  // (odd). The low half is never 0, so a section never reads as none.
  std::atomic<uint64_t> active{0};
  static constexpr uint32_t k_plain = 2;
  uint32_t depth = 0;      // sections open, this thread only
  uint32_t gate_depth = 0; // gate windows open, this thread only
  // The stamp of the gate window open now or last (this thread only): odd,
  // moves on by 2 per window, so that a waiting writer can tell a new
  // window from the one it saw (it repeats after 2^31 windows, far more
  // than a thread opens while a writer yields once).
  uint32_t stamp = 1;
  // The number of the outermost section open now or last (this thread
  // only; kept when the record passes to another thread). A deferred drop
  // waits while the record shows the number it saw (borrow.cpp); after
  // 2^32 sections a number repeats, which can only make a drop wait
  // longer, never happen early.
  uint32_t section = 0;
  // Its entry in the directory of live threads (borrow.cpp).
  std::atomic<BorrowRecord *> *entry = nullptr;

  // The values `active` takes: a plain section, a gate window.
  uint64_t plain() const { return uint64_t(section) << 32 | k_plain; }
  uint64_t window() const { return uint64_t(section) << 32 | stamp; }
  // Enters a new outermost section (plain, or a window when `window`).
  void enter_outermost(bool as_window) {
    ++section;
    active.store(as_window ? window() : plain(), std::memory_order_seq_cst);
  }
};

namespace borrow {
extern __thread BorrowRecord *tl_record
    __attribute__((tls_model("initial-exec")));
extern std::atomic<bool> g_pending;

BorrowRecord *attach(); // the calling thread's record, made on first use
// Drops the deferred references whose sections have all ended.
void drain();
// Deferred references not dropped yet, and the batches among them waiting
// for their sections (tests).
size_t deferred_count();
size_t waiting_batches();
// Batches the drains have checked so far (tests).
uint64_t batch_checks();

inline BorrowRecord *record() {
  BorrowRecord *r = tl_record;
  if (r == nullptr) [[unlikely]]
    r = attach();
  return r;
}
// Ends the outermost section of `r`.
inline void leave_outermost(BorrowRecord *r) {
  r->active.store(0, std::memory_order_release);
  if (g_pending.load(std::memory_order_acquire)) [[unlikely]]
    drain();
}

// The writer's side of the capture gate (core/capture_gate.hpp): returns
// once every gate window that was open in another thread when it was
// called has closed. The caller has just made its seq_cst store of the
// gate's flag (see GateSection). It waits by yielding, and must hold
// nothing that a gate window may wait for.
void wait_for_gate_windows();
} // namespace borrow

class BorrowSection {
public:
  BorrowSection() {
    BorrowRecord *r = borrow::record();
    rec_ = r;
    if (r->depth++ == 0) r->enter_outermost(false);
  }
  ~BorrowSection() {
    if (paused_) [[unlikely]]
      return; // left by pause(), not resumed (an exception in between)
    if (--rec_->depth != 0) return;
    borrow::leave_outermost(rec_);
  }
  // Leaves the outermost section for a wait that may be long (admission
  // held by another thread's raw scope): a thread waiting inside a section
  // would hold up every retire in the process. The caller holds references
  // to what it borrowed until resume(). Returns false, changing nothing,
  // when nested (the enclosing section's borrows are not the caller's) or
  // inside a gate window (which never waits).
  // While paused the thread is in no section: one opened meanwhile (a
  // destructor's gate window, a log callback calling in) is an outermost
  // one of its own. A section paused and not resumed (an exception thrown
  // in between) ends at its pause.
  bool pause() {
    if (rec_->depth != 1 || rec_->gate_depth != 0) return false;
    rec_->depth = 0;
    paused_ = true;
    borrow::leave_outermost(rec_);
    return true;
  }
  // Enters again after pause() (what is read from now on is borrowed anew).
  void resume() {
    rec_->depth = 1;
    paused_ = false;
    rec_->enter_outermost(false);
  }
  BorrowSection(const BorrowSection &) = delete;
  BorrowSection &operator=(const BorrowSection &) = delete;

private:
  BorrowRecord *rec_;
  bool paused_ = false;
};

// A borrow section that is also a capture-gate window (core/capture_gate.hpp):
// while it is open, capture begin and end on any runtime wait for it to
// close. Entering the outermost one costs what a BorrowSection's entry
// costs (one seq_cst store, of its section and stamp); one nested in a plain
// section makes that store too (the section's number unchanged), and stores
// the plain value again when it ends. Nothing that
// waits (admission, a host wait, a lock another thread may hold while it waits)
// and nothing user-supplied (a log callback) runs inside one.
namespace borrow {
void open_window_nested(BorrowRecord *r);
void close_window_nested(BorrowRecord *r);
// GateSection's entry and exit, also CaptureGate's shared-lock interface.
// The warm case is a window that is the thread's only section.
inline BorrowRecord *open_window() {
  BorrowRecord *r = record();
  if (r->depth == 0) [[likely]] {
    r->depth = 1;
    r->gate_depth = 1;
    r->stamp += 2;
    r->enter_outermost(true);
  } else {
    open_window_nested(r);
  }
  return r;
}
inline void close_window(BorrowRecord *r) {
  if (r->depth == 1) [[likely]] { // then gate_depth is 1 too
    r->depth = 0;
    r->gate_depth = 0;
    leave_outermost(r);
  } else {
    close_window_nested(r);
  }
}
} // namespace borrow

class GateSection {
public:
  GateSection() : rec_(borrow::open_window()) {}
  ~GateSection() { close(); }
  // Closes the window (and ends the section) before the scope ends, e.g.
  // before an error is logged; a second call does nothing.
  void close() {
    if (rec_ != nullptr) borrow::close_window(std::exchange(rec_, nullptr));
  }
  GateSection(const GateSection &) = delete;
  GateSection &operator=(const GateSection &) = delete;

private:
  BorrowRecord *rec_;
};

// Drops `obj`'s reference (one a registry slot held, the slot unpublished
// already) now if no borrow section is open in any thread, else once the
// sections open now have ended (sections opened later are not waited
// for). Call it holding no lock: the drop may run
// the object's destructor.
void retire(Object *obj);

// Fork: prepare takes the deferred list's lock, the parent releases it;
// the child releases it and forgets the other threads' sections (those
// threads do not exist there).
void borrow_at_fork(ForkPhase phase);

} // namespace t4a::core
