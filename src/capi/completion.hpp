// Completions: an event recorded on a runtime's stream after
// everything enqueued so far. Recording seals the runtime's open
// completion epoch first, so what it keeps (modules of launches, staging,
// host buffers) retires when the completion is observed complete — by a
// poll, a counted host wait, or a synchronize. Observed complete once, a
// completion stays complete (memoized), even if its context faults later.
#pragma once

#include <atomic>
#include <cuda.h>

#include "core/object.hpp"
#include "core/runtime.hpp"

namespace t4a::capi {

class Completion final : public core::Object {
public:
  static t4a_status record(core::Ref<core::Runtime> rt,
                           core::Ref<Completion> *out);
  ~Completion() override;

  // SUCCESS (complete), NOT_READY, or an error; never blocks.
  t4a_status poll();
  // Host wait (counted in the recording runtime's host_waits).
  t4a_status wait();
  // Makes `waiter`'s stream wait for this completion (any runtime, any
  // device); no host wait.
  t4a_status wait_on(core::Runtime &waiter);
  core::Runtime &runtime() const { return *rt_; }

private:
  explicit Completion(core::Ref<core::Runtime> rt);
  // Retires the recording runtime's epochs sealed at or before this one.
  void retire(bool blocking);

  core::Ref<core::Runtime> rt_;
  CUevent event_ = nullptr;
  uint64_t sealed_through_ = 0;
  std::atomic<bool> done_{false};
};

} // namespace t4a::capi
