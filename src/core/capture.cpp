#include "core/capture.hpp"

#include <pthread.h>

#include <thread>
#include <utility>

#include "core/admission.hpp"
#include "core/context_scope.hpp"
#include "core/error.hpp"
#include "core/fork.hpp"
#include "core/log.hpp"
#include "core/runtime.hpp"
#include "core/stream_context.hpp"

namespace t4a::core {

using namespace t4a::driver;

bool Capture::defer_free(Runtime &rt, FreeFn fn, CUdeviceptr ptr,
                         uint64_t bytes) {
  (void)rt; // the runtime the deferred free gets is the one it ends on
  std::lock_guard<std::mutex> lock(mu_);
  try {
    deferred_.push_back({fn, ptr, bytes});
    return true;
  } catch (...) {
    // No room to remember it: the caller counts it leaked. A free node in
    // the graph or a free before the graph's use are both worse.
    return false;
  }
}

namespace {

// The captures this thread began and has not ended, each with the
// generation (Capture::begun) it began as. A thread that exits with one
// open ends it on its way out, on that thread (CUDA lets only the thread
// that began a global or thread-local capture end it), with a warning:
// otherwise the runtime would answer CAPTURING to destroy and synchronize
// for the rest of the process. Heap-allocated behind a trivially
// destructible pointer, so it is still there when the key's destructor
// runs (after the thread's C++ thread_locals are gone).
struct OpenCaptures {
  std::vector<std::pair<Ref<Runtime>, uint64_t>> open;
};
thread_local OpenCaptures *tl_open = nullptr;

// Ends one capture left by this exiting thread: the graph is discarded
// (never instantiated), what the captured work kept is released, the
// deferred frees run.
void end_abandoned(Runtime &rt, uint64_t generation) {
  Capture::Items keeps;
  CUgraph graph = nullptr;
  t4a_status s = T4A_SUCCESS;
  {
    Admission adm(rt.admission());
    if (adm.status() != T4A_SUCCESS) return;
    Capture &c = rt.capture();
    if (!rt.capturing() || c.begun != generation ||
        c.owner != std::this_thread::get_id())
      return; // ended meanwhile (a relaxed capture, from another thread)
    s = capture_end_graph(rt, &graph, &keeps);
  }
  logf(T4A_LOG_WARN,
       "a thread exited with a capture of runtime %#llx still open; it is "
       "ended now and its graph discarded (t4a_capture_end belongs before "
       "the thread's exit)%s",
       static_cast<unsigned long long>(rt.handle_id()),
       s == T4A_SUCCESS ? "" : "; ending it failed (see the log)");
  if (graph != nullptr) {
    ContextScope scope;
    // Teardown: a failure to enter is logged; the destroy is tried anyway.
    (void)scope.enter(rt.context(), "discarding an abandoned capture", false);
    if (DrvResult r = cu::graph_destroy(graph); !r)
      logf(T4A_LOG_WARN, "discarding the graph of an abandoned capture: %s",
           error_name(r.code));
  }
}

void end_at_thread_exit(void *p) {
  auto *open = static_cast<OpenCaptures *>(p);
  tl_open = nullptr;
  if (in_forked_child()) return; // the parent's objects: leaked
  for (auto &[rt, generation] : open->open) end_abandoned(*rt, generation);
  delete open;
}

struct ExitKey {
  pthread_key_t key{};
  // Without a key (PTHREAD_KEYS_MAX reached) a thread that exits while
  // capturing leaves the runtime capturing, as before: nothing else breaks.
  bool made = pthread_key_create(&key, end_at_thread_exit) == 0;
};
const ExitKey &exit_key() {
  static const ExitKey k;
  return k;
}

// Before the driver's begin (may throw std::bad_alloc): room for one more
// open capture of this thread; entries of captures ended by other
// threads are dropped.
void reserve_open(Runtime &rt) {
  if (tl_open == nullptr) {
    tl_open = new OpenCaptures();
    if (exit_key().made)
      (void)pthread_setspecific(exit_key().key, tl_open); // ENOMEM only
  }
  auto &v = tl_open->open;
  std::erase_if(v, [&](const auto &e) {
    return &*e.first == &rt || !e.first->capturing();
  });
  v.reserve(v.size() + 1);
}

// After capture_end_graph on this thread: no longer open here.
void forget_open(Runtime &rt) {
  if (tl_open == nullptr) return;
  std::erase_if(tl_open->open, [&](const auto &e) { return &*e.first == &rt; });
}

} // namespace

void Capture::run_deferred(Runtime &rt) {
  std::vector<Deferred> frees;
  {
    std::lock_guard<std::mutex> lock(mu_);
    frees.swap(deferred_);
  }
  for (const Deferred &d : frees) d.fn(rt, d.ptr, d.bytes);
}

t4a_status refuse_capturing(Runtime &rt, const char *op) {
  if (!rt.capturing()) [[likely]]
    return T4A_SUCCESS;
  return fail_capturing(rt, op);
}

t4a_status fail_capturing(Runtime &rt, const char *op) {
  return fail(T4A_ERROR_CAPTURING,
              "%s: runtime %#llx is capturing a graph (t4a_capture_begin); "
              "this operation cannot be captured and nothing was enqueued; "
              "end the capture first (t4a_capture_end)",
              op, static_cast<unsigned long long>(rt.handle_id()));
}

t4a_status capture_begin(Runtime &rt, int32_t mode) {
  for (Entry e :
       {Entry::cuStreamBeginCapture, Entry::cuStreamEndCapture,
        Entry::cuStreamIsCapturing, Entry::cuThreadExchangeStreamCaptureMode,
        Entry::cuGraphInstantiateWithFlags, Entry::cuGraphLaunch,
        Entry::cuGraphExecDestroy, Entry::cuGraphDestroy})
    if (!has(e))
      return fail(T4A_ERROR_UNSUPPORTED, "t4a_capture_begin: %s",
                  driver::lacks_text(e).c_str());
  if (rt.destroying())
    return fail(T4A_ERROR_INVALID_HANDLE,
                "t4a_capture_begin: runtime %#llx is being destroyed "
                "(t4a_runtime_destroy began); nothing was captured",
                static_cast<unsigned long long>(rt.handle_id()));
  if (rt.capturing())
    return fail(T4A_ERROR_CAPTURING,
                "t4a_capture_begin: runtime %#llx is already capturing a "
                "graph; end that capture first (t4a_capture_end)",
                static_cast<unsigned long long>(rt.handle_id()));
  // A synchronize admitted before this capture may still be draining the
  // stream (it waits without admission): a drain of a capturing stream
  // would invalidate the capture, so wait for it to return. It needs no
  // admission to return, so waiting here under admission cannot deadlock;
  // synchronizes admitted after this point see the capture and refuse.
  while (rt.drains_in_progress() > 0) std::this_thread::yield();
  // Everything kept so far belongs to work enqueued before the capture:
  // sealed now, outside it, so that the open epoch at capture end holds
  // only what captured work kept.
  if (t4a_status s = rt.epochs().seal(rt); s != T4A_SUCCESS) return s;
  Capture &c = rt.capture();
  c.items_.clear();
  c.items_.reserve(16); // may throw: before the capture begins
  {
    std::lock_guard<std::mutex> lock(c.mu_);
    c.deferred_.reserve(8);
  }
  reserve_open(rt); // may throw: before the capture begins
  CUstreamCaptureMode m =
      mode == T4A_CAPTURE_THREAD_LOCAL ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
      : mode == T4A_CAPTURE_RELAXED    ? CU_STREAM_CAPTURE_MODE_RELAXED
                                       : CU_STREAM_CAPTURE_MODE_GLOBAL;
  // Counted before the begin, so that from the moment the capture exists
  // the library's unsafe calls relax (a global capture refuses them in
  // every thread). Counting one too many for a moment only relaxes calls
  // that were safe anyway.
  g_active_captures.fetch_add(1, std::memory_order_relaxed);
  // The flags are set before the driver's begin, and the gate windows open
  // then waited for (core/capture_gate.hpp): a free (or allocation) that
  // saw the gate open has been enqueued before the capture began; one that
  // comes later is deferred (refused). The windows wait for nothing this
  // thread holds.
  rt.set_capturing(true);
  c.gate_.set_closed(true);
  DrvResult r = in_stream_context(
      rt, [&] { return cu::stream_begin_capture(rt.stream(), m); });
  if (!r) {
    // No capture: the gate opens again; frees deferred meanwhile run now.
    rt.set_capturing(false);
    c.gate_.set_closed(false);
    c.run_deferred(rt);
    g_active_captures.fetch_sub(1, std::memory_order_relaxed);
    return rt.fail_op(r, "t4a_capture_begin: beginning the capture of the "
                         "runtime's stream");
  }
  c.owns_mode_count = true;
  ++c.begun;
  c.owner = std::this_thread::get_id();
  tl_open->open.emplace_back(Ref<Runtime>(&rt), c.begun); // reserved
  return T4A_SUCCESS;
}

t4a_status capture_end_graph(Runtime &rt, CUgraph *graph,
                             Capture::Items *keeps) {
  if (!rt.capturing())
    return fail(T4A_ERROR_CAPTURING,
                "t4a_capture_end: runtime %#llx is not capturing a graph "
                "(t4a_capture_begin first)",
                static_cast<unsigned long long>(rt.handle_id()));
  Capture &c = rt.capture();
  // Room for the open epoch's keepalives first: nothing below may fail
  // once the capture ended.
  c.items_.reserve(c.items_.size() + rt.epochs().open_items());
  CUgraph g = nullptr;
  DrvResult r = in_stream_context(
      rt, [&] { return cu::stream_end_capture(rt.stream(), &g); });
  if (!r) {
    // Still capturing (ended from the wrong thread)? Then the capture
    // stays; the right thread may end it.
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    DrvResult q = in_stream_context(
        rt, [&] { return cu::stream_is_capturing(rt.stream(), &st); });
    if (q && st != CU_STREAM_CAPTURE_STATUS_NONE)
      return fail_driver(r,
                         "t4a_capture_end: the capture of runtime %#llx "
                         "continues (end it from the thread that began it)",
                         static_cast<unsigned long long>(rt.handle_id()));
  }
  // The capture is over. The open epoch holds what captured work kept
  // (capture_begin sealed it before): with the flag still set, sealing it
  // moves its keepalives to the capture's list (room reserved above, so
  // this cannot fail) instead of recording an event.
  (void)rt.epochs().seal(rt, false); // the capturing branch always succeeds
  // The gate opens; once the windows open now have closed, every free
  // deferred during the capture is in the list run below.
  rt.set_capturing(false);
  c.gate_.set_closed(false);
  if (c.owns_mode_count) {
    g_active_captures.fetch_sub(1, std::memory_order_relaxed);
    c.owns_mode_count = false;
  }
  keeps->swap(c.items_);
  c.items_.clear();
  c.run_deferred(rt);
  c.owner = std::thread::id();
  forget_open(rt);
  if (!r) {
    return fail_driver(r,
                       "t4a_capture_end: the capture of runtime %#llx "
                       "failed and is over; nothing it captured runs",
                       static_cast<unsigned long long>(rt.handle_id()));
  }
  if (g == nullptr)
    return fail(T4A_ERROR_CAPTURING,
                "t4a_capture_end: the driver returned no graph for the "
                "capture of runtime %#llx (invalidated)",
                static_cast<unsigned long long>(rt.handle_id()));
  *graph = g;
  return T4A_SUCCESS;
}

} // namespace t4a::core
