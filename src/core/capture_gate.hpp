// The capture gate (core/capture.hpp): keeps the runtime's stream work
// that is not admitted (stream-ordered allocation and its zeroing, free,
// an imported buffer's release event) out of a capture begun or ended
// meanwhile by another thread, at one seq_cst store per operation on the
// reader side (no locked read-modify-write of a shared line).
//
// Readers open a gate window (core/borrow.hpp's GateSection: a borrow
// section whose record says "gate window"), then load the gate's flag
// (seq_cst) and, seeing it open, enqueue inside the window; seeing it
// closed, they refuse (allocation) or defer (free) instead. The writers
// (capture begin and end, under the runtime's admission) first set the
// runtime's capturing flag, then store the gate's flag (seq_cst), then
// wait until every gate window open in another thread has closed
// (borrow::wait_for_gate_windows), before the driver's capture begin (or
// before running the frees deferred during the capture). Dekker's pattern:
//   reader: active := stamp (seq_cst);  f := closed (seq_cst);  ...
//   writer: closed := x (seq_cst);      scan every thread's active (seq_cst)
// In the single order of seq_cst operations either the reader's load comes
// after the writer's store (it sees the new flag), or its window's store
// comes before the writer's scan, which sees the window (or a later value
// of the record) and waits for it to close. So at the capture begin no
// window that saw the gate open is still enqueueing, and every window that
// opens later sees it closed; at the end every free deferred by a window
// that saw it closed is in the capture's list before the list is taken.
//
// The runtime's capturing flag is stored before the gate's flag, so a
// reader that sees the gate's new value also sees the runtime's (the
// seq_cst store releases it): readers that check Runtime::capturing()
// inside a window (std::shared_lock on the gate: lock_shared opens a
// window and loads the flag) decide as consistently as those that use
// closed() (a reader that saw the old gate flag is waited for, whichever
// runtime flag it then read).
//
// A window never waits for anything (admission, a host wait, a lock held
// across a wait) and runs no user code: the writer waits for it holding
// the runtime's admission. A writer skips its own thread's record.
#pragma once

#include <atomic>

#include "core/borrow.hpp"
#include "core/log.hpp"

namespace t4a::core {

class CaptureGate {
public:
  // Inside a GateSection: whether the gate is closed (the runtime captures,
  // or a capture is beginning or ending).
  bool closed() const { return closed_.load(std::memory_order_seq_cst); }

  // std::shared_lock: opens a gate window on the calling thread and loads
  // the flag (the reader's half of the pattern above); the caller then
  // reads Runtime::capturing().
  // What the thread logs meanwhile (a driver call's context retry) is
  // delivered after the window closed.
  void lock_shared() {
    log_defer_begin();
    (void)borrow::open_window();
    (void)closed();
  }
  void unlock_shared() {
    borrow::close_window(borrow::tl_record);
    log_defer_end();
  }

  // The writer, under the runtime's admission, after the runtime's flag
  // changed: stores the gate's flag and waits for the windows open now.
  void set_closed(bool closed) {
    closed_.store(closed, std::memory_order_seq_cst);
    borrow::wait_for_gate_windows();
  }

private:
  std::atomic<bool> closed_{false};
};

} // namespace t4a::core
