// A runtime: one device's primary context (retained), one non-blocking
// stream, one explicit memory pool, one allocation-domain id, an
// admission lock, completion epochs and its counters.
// Teardown (the destructor, run when the last reference goes) frees what
// was created only when completion of all work was proven; otherwise it
// leaks and counts. A sticky driver error marks the runtime
// broken: from then on its operations return DEVICE_FAULT naming the
// original fault.
#pragma once

#include <atomic>
#include <cuda.h>
#include <memory>
#include <mutex>
#include <string>

#include "core/admission.hpp"
#include "core/capture.hpp"
#include "core/component.hpp"
#include "core/counters.hpp"
#include "core/epochs.hpp"
#include "core/event_pool.hpp"
#include "core/object.hpp"
#include "driver/cuda_api.hpp"
#include "t4acuda.h"

namespace t4a::core {

// Aligned, with what a warm launch touches in two cache lines: line 0 holds
// the object header (its reference count), the stream, the context and the
// open epoch's hot fields (read); the admission group, 64-byte aligned,
// holds the admission lock, the broken/drained flags and the launch counter
// (written under admission), away from the rarely-written fields.
class alignas(64) Runtime final : public Object {
public:
  static t4a_status create(const t4a_runtime_options &options,
                           Ref<Runtime> *out);
  ~Runtime() override;

  // Host wait for the stream (counted); retires what it proves complete.
  t4a_status synchronize(const char *what);
  t4a_status trim();
  // t4a_runtime_destroy: close admission (nothing is admitted from then
  // on), drain, then retire (or, unproven, leak) epochs and clear the
  // parts' references (on_destroy). See admission.hpp.
  t4a_status destroy();
  // t4a_runtime_destroy's first step, before the handle goes: under
  // admission, CAPTURING while a capture is open (nothing changed);
  // otherwise no capture may begin from then on (destroying()).
  t4a_status begin_destroy();
  bool destroying() const {
    return destroying_.load(std::memory_order_acquire);
  }

  void info(t4a_runtime_info *out) const;
  void stats(t4a_runtime_stats *out) const;

  // DEVICE_FAULT (with the original fault) once broken, else SUCCESS.
  t4a_status check_usable() const {
    if (!broken_.load(std::memory_order_acquire)) [[likely]]
      return T4A_SUCCESS;
    return report_broken();
  }
  // Records a driver failure; a sticky one marks the runtime broken.
  T4A_COLD t4a_status fail_op(driver::DrvResult r, const char *what);
  // The same without recording the thread's last error (for follow-up
  // work of an operation that itself succeeded): marks broken if sticky,
  // logs, returns the status.
  t4a_status note_failure(driver::DrvResult r, const char *what);
  // True once completion of enqueued work can no longer be proven (broken,
  // or a drain failed): memory is then leaked instead of freed.
  bool completion_unprovable() const {
    return broken_.load(std::memory_order_acquire) ||
           !drained_.load(std::memory_order_acquire);
  }

  int32_t ordinal() const { return ordinal_; }
  CUdevice device() const { return device_; }
  CUcontext context() const { return ctx_; }
  CUstream stream() const { return stream_; }
  CUmemoryPool pool() const { return pool_; }
  uint64_t domain() const { return domain_; }
  uint64_t handle_id() const { return handle_id_; }
  void set_handle_id(uint64_t id) { handle_id_ = id; }
  const t4a_runtime_options &options() const { return options_; }

  AdmissionLock &admission() { return admission_; }
  RuntimeCounters &counters() { return counters_; }
  EventPool &events() { return events_; }
  Epochs &epochs() { return epochs_; } // under admission
  // Parts owned by higher layers, each in the slot its layer registered
  // (core/component.hpp), created on first use under admission.
  RuntimeComponent *part(PartSlot s) { return parts_[s.index].get(); }
  void set_part(PartSlot s, std::unique_ptr<RuntimeComponent> c) {
    parts_[s.index] = std::move(c);
    made_[s.index].store(true, std::memory_order_release);
  }
  // Whether the part of slot `s` was ever made (any thread, no lock): a
  // caller that finds it false skips taking admission to look for it;
  // one that finds it true reads part() under admission (the part may be
  // gone at teardown).
  bool part_made(PartSlot s) const {
    return made_[s.index].load(std::memory_order_acquire);
  }
  // Graph capture (core/capture.hpp): whether the stream captures now
  // (any thread, one relaxed load), and the capture's state.
  bool capturing() const { return capturing_.load(std::memory_order_relaxed); }
  void set_capturing(bool on) {
    capturing_.store(on, std::memory_order_release);
  }
  Capture &capture() { return capture_; }
  // Host drains of the stream begun under admission and still waiting
  // (synchronize releases admission for its wait): capture begin waits for
  // them, since a drain of a capturing stream would invalidate the capture.
  uint32_t drains_in_progress() const {
    return drains_.load(std::memory_order_acquire);
  }
  // The internal stream that drains download snapshots; created on first
  // use, under admission, with the context current.
  t4a_status delivery_stream(CUstream *out);

private:
  Runtime();
  void mark_broken(driver::DrvResult r, const char *what);
  T4A_COLD t4a_status report_broken() const;
  void teardown();
  // Counts this runtime as leaked (and no longer live), once.
  void account_leak();

  // Line 0, after the 16-byte object header: read by every launch (the
  // epochs' first 32 bytes are its launch-hot fields).
  CUstream stream_ = nullptr;
  CUcontext ctx_ = nullptr;
  Epochs epochs_;
  int32_t ordinal_ = 0;
  CUdevice device_ = 0;
  CUstream delivery_ = nullptr;
  CUmemoryPool pool_ = nullptr;
  uint64_t domain_ = 0;
  uint64_t handle_id_ = 0;

  // Written by every launch (see the class comment). no_unique_address:
  // the flags below go into the lock's tail padding (after its `closed`
  // flag), so the launch counter stays on this cache line.
  alignas(64) [[no_unique_address]] AdmissionLock admission_;
  // False once a drain failed: completion is not proven.
  std::atomic<bool> drained_{true};
  std::atomic<bool> broken_{false};
  std::atomic<bool> capturing_{false}; // read by every launch
  RuntimeCounters counters_;           // launches first

  EventPool events_;
  Capture capture_;
  std::unique_ptr<RuntimeComponent> parts_[k_max_parts]; // by slot
  std::atomic<bool> made_[k_max_parts] = {};             // see part_made()
  t4a_runtime_options options_{};
  bool ctx_retained_ = false;
  int32_t stream_priority_ = 0; // t4a_runtime_info::stream_priority
  // runtimes_live/runtimes_leaked already settled for this runtime.
  std::atomic<bool> leak_accounted_{false};
  std::atomic<uint32_t> drains_{0};     // see drains_in_progress()
  std::atomic<bool> destroying_{false}; // see begin_destroy()
  mutable std::mutex fault_mu_;
  std::string fault_message_;
  int32_t fault_result_ = 0;
};

} // namespace t4a::core
