// The raw seam (docs/raw-seam.md): a scope that hands a runtime's context
// and stream to code that calls vendor libraries (cuBLAS, cuFFT, NCCL)
// directly.
//
// begin takes the runtime's admission and HOLDS it until end, on the thread
// that began, so the raw work is ordered with the runtime's own work: no
// operation of that runtime is admitted meanwhile (other threads wait; the
// scope's own thread gets REENTRANT, admission.hpp). It makes the runtime's
// context current and remembers the context that was current before; end
// sets that one current again, also when something failed.
//
// Registered objects (t4a_raw_buffer) are held by the scope and, at end,
// kept by the runtime's open completion epoch, so they outlive the raw work
// enqueued on the scope's stream before end: the epoch is sealed by an
// event recorded after that work. A release right after end therefore
// frees nothing early. Should the keep fail (a seal that cannot record its
// event), end waits for the stream on the host instead and, if even that
// fails, leaks the objects: never freed early.
//
// Scopes of one thread nest and end in LIFO order (one per runtime: a
// second scope on the same runtime is REENTRANT), so each end restores the
// context the matching begin found. A thread-local stack tracks them. Only
// the beginning thread may register buffers and end the scope (it owns the
// admission lock); another thread gets INVALID_ARGUMENT naming both. A
// thread that exits with scopes open has them ended at its exit
// (raw_scope.cpp, end_at_thread_exit).
#pragma once

#include <cuda.h>

#include <optional>
#include <sys/types.h>
#include <thread>
#include <vector>

#include "core/admission.hpp"
#include "core/object.hpp"
#include "core/runtime.hpp"
#include "t4acuda.h"

namespace t4a::core {

class RawScope final : public Object {
public:
  // Admits on `rt` (waiting for its other operations), checks that it is
  // usable and makes its context current. On failure nothing is held and
  // the caller's context is current.
  static t4a_status begin(Ref<Runtime> rt, Ref<RawScope> *out);
  ~RawScope() override;

  Runtime &runtime() const { return *rt_; }
  void set_handle_id(uint64_t id) { handle_id_ = id; }
  uint64_t handle_id() const { return handle_id_; }

  // INVALID_ARGUMENT (naming `entry`, both threads) unless the calling
  // thread began this scope and it is still open.
  t4a_status check_owner_thread(const char *what) const;
  // Holds `obj` until end, then keeps it until the raw work completes.
  // On the owning thread only (check_owner_thread first).
  t4a_status hold(Ref<Object> obj);
  // Ends the scope: LIFO check (INVALID_ARGUMENT, nothing changes), then
  // the keeps, the caller's context restored and admission released,
  // whatever fails on the way (the first failure is returned). `*ended`
  // says whether the scope ended (false only for a refusal).
  t4a_status end(bool *ended);

private:
  explicit RawScope(Ref<Runtime> rt);
  // The end's keeps; SUCCESS or the failure (held objects then proven
  // complete by a host wait, or leaked).
  t4a_status keep_held();

  Ref<Runtime> rt_;
  std::optional<Admission> adm_;
  CUcontext saved_ = nullptr; // current at begin, restored at end
  std::thread::id owner_;
  pid_t owner_tid_ = 0; // for messages
  uint64_t handle_id_ = 0;
  bool open_ = false;
  RawScope *below_ = nullptr; // the scope begun before, on this thread
  std::vector<Ref<Object>> held_;
};

// Whether the calling thread holds a raw scope of `rt` (destroy refuses
// then: its drain would wait for the scope's own end).
bool raw_scope_open_here(Runtime &rt);

// The runtime's stream waits for the work enqueued so far on `stream` (a
// stream of the runtime's context; NULL is its legacy default stream): an
// event of the runtime's pool recorded on `stream`, cuStreamWaitEvent on
// the runtime's stream. Admitted (REENTRANT inside a raw scope of `rt`).
t4a_status wait_external_stream(Runtime &rt, CUstream stream);
// `stream` (any context, any device) waits for the runtime's work so far:
// an event recorded on the runtime's stream, cuStreamWaitEvent on
// `stream`. Admitted.
t4a_status signal_external_stream(Runtime &rt, CUstream stream);

} // namespace t4a::core
