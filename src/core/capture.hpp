// Stream capture of a runtime (t4a_capture_begin .. t4a_capture_end) and
// the state a runtime keeps while it captures.
//
// While a runtime captures, its stream is in CUDA capture mode: work
// enqueued on it becomes graph nodes instead of running. The library then
//  - refuses, before enqueuing anything, every operation that cannot be
//    captured (refuse_capturing(): T4A_ERROR_CAPTURING naming it);
//  - keeps what a captured operation uses in the capture, not in a
//    completion epoch: a launch's buffers go to the capture's list
//    (reserve() before the enqueue, keep() after: the keep cannot fail),
//    and a seal of the open epoch (a full epoch, make_room) records no
//    event on the capturing stream but moves the open epoch's keepalives
//    to the capture (Epochs::seal). Capture begin seals the open epoch
//    first (outside the capture), so what the open epoch holds at capture
//    end was kept by captured work only: it goes to the graph too;
//  - defers the stream-ordered free of a buffer released during the
//    capture (defer_free(); a cuMemFreeAsync on the capturing stream would
//    become a free node of the graph) until the capture ends.
// The flag that says "capturing" is the runtime's (Runtime::capturing(),
// on the launch's cache line); the rest is here. Begin and end run under
// admission. The runtime's stream work that is not admitted (stream-ordered
// allocation and its zeroing, free, an imported buffer's release event)
// checks the gate's flag and enqueues inside a gate window
// (core/capture_gate.hpp); begin closes the gate and waits for the windows
// open then before the driver's begin, end opens it after the driver's end
// and waits for them before running the deferred frees, so none of that
// work can land inside a capture (a free checked before a begin on another
// thread and enqueued after it would be a free node of the graph).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/capture_gate.hpp"
#include "core/object.hpp"
#include "t4acuda.h"

namespace t4a::core {

class Runtime;

class Capture {
public:
  using Items = std::vector<Ref<Object>>;
  // A deferred free: the memory layer's free function and its arguments.
  using FreeFn = void (*)(Runtime &, CUdeviceptr, uint64_t);

  Capture() = default;
  Capture(const Capture &) = delete;
  Capture &operator=(const Capture &) = delete;

  // Room for `n` keeps (before the enqueue; may throw std::bad_alloc).
  void reserve(size_t n) { items_.reserve(items_.size() + n); }
  // After the enqueue: never reallocates when reserved.
  void keep(Object &obj) { items_.push_back(Ref<Object>(&obj)); }
  // The list itself (Epochs::seal moves the open epoch here).
  Items &items() { return items_; }

  // In a gate window that saw the gate closed: `fn(rt, ptr, bytes)` runs
  // when the capture ends (or its begin fails). Takes only the capture's
  // leaf lock. False: it could not be remembered (no memory); the caller
  // counts it leaked.
  bool defer_free(Runtime &rt, FreeFn fn, CUdeviceptr ptr, uint64_t bytes);
  // Checked in a gate window around "not capturing? then enqueue" by
  // unadmitted stream work; closed by capture begin, opened by capture end
  // (see above). Nothing that logs or waits runs in a window.
  CaptureGate &gate() { return gate_; }

  // Capture state, under admission (see capture.cpp).
  bool owns_mode_count = false; // counted in driver::g_active_captures
  uint64_t begun = 0;           // captures begun (stats, tests)
  // The thread that began the open capture (none when not capturing); a
  // thread that exits with one open ends it (capture.cpp).
  std::thread::id owner{};

private:
  friend t4a_status capture_begin(Runtime &, int32_t);
  friend t4a_status capture_end_graph(Runtime &, CUgraph *, Items *);
  struct Deferred {
    FreeFn fn;
    CUdeviceptr ptr;
    uint64_t bytes;
  };
  // Runs the deferred frees (the gate open again, its windows closed).
  void run_deferred(Runtime &rt);
  Items items_;
  CaptureGate gate_;
  std::mutex mu_; // deferred_
  std::vector<Deferred> deferred_;
};

// The keeps of one captured operation, under admission: made before the
// enqueue (reserving room for `n` when the runtime captures; nothing
// otherwise), keep() after it (cannot fail). Outside a capture it costs
// one relaxed load.
class CaptureKeeps {
public:
  CaptureKeeps(Capture &c, bool capturing, size_t n)
      : c_(capturing ? &c : nullptr) {
    if (c_ != nullptr) [[unlikely]]
      c_->reserve(n); // may throw: before the enqueue
  }
  void keep(Object &obj) {
    if (c_ != nullptr) [[unlikely]]
      c_->keep(obj);
  }
  bool active() const { return c_ != nullptr; }

private:
  Capture *c_;
};

// T4A_ERROR_CAPTURING when `rt` captures: "<op>: runtime ... is capturing
// a graph; ... cannot be captured; nothing was enqueued". SUCCESS
// otherwise (one relaxed load).
t4a_status refuse_capturing(Runtime &rt, const char *op);
// That T4A_ERROR_CAPTURING, unconditionally (the caller saw the flag).
t4a_status fail_capturing(Runtime &rt, const char *op);

// t4a_capture_begin with a mode (T4A_CAPTURE_*), under admission: seals
// the open epoch, then cuStreamBeginCapture.
t4a_status capture_begin(Runtime &rt, int32_t mode);
// t4a_capture_end's first half, under admission: cuStreamEndCapture; on
// success `*graph` is the captured graph and `*keeps` holds everything the
// captured work uses. Whether it succeeded or not, once the stream is no
// longer capturing the capture is over: deferred frees run, and on failure
// the keeps are handed out in `*keeps` to be dropped (the captured work
// never ran). A failure that leaves the stream capturing (another thread
// called end: CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) keeps the capture.
t4a_status capture_end_graph(Runtime &rt, CUgraph *graph,
                             Capture::Items *keeps);

} // namespace t4a::core
