#include "capi/completion.hpp"

#include "core/admission.hpp"
#include "core/context_scope.hpp"
#include "core/op_scope.hpp"

namespace t4a::capi {

namespace {
// Completions recorded (a part counter, core/counters.hpp).
const core::CounterSlot k_completions_recorded = core::register_counter(
    "completions_recorded", &t4a_runtime_stats::completions_recorded);
} // namespace

using namespace t4a::core;

using namespace t4a::driver;

Completion::Completion(Ref<Runtime> rt)
    : Object(Kind::Completion), rt_(std::move(rt)) {}

t4a_status Completion::record(Ref<Runtime> rt, Ref<Completion> *out) {
  Runtime &r = *rt;
  Ref<Completion> c = Ref<Completion>::adopt(new Completion(std::move(rt)));
  OpScope op(r, "recording a completion", "t4a_runtime_record");
  if (op.status() != T4A_SUCCESS) return op.status();
  if (auto e = cu::event_create(&c->event_, CU_EVENT_DISABLE_TIMING); !e) {
    c->event_ = nullptr;
    return r.fail_op(e, "creating the event of a completion");
  }
  // The open epoch is sealed first (its own event), so that its keepalives
  // can retire once this completion is observed.
  if (t4a_status s = r.epochs().seal(r); s != T4A_SUCCESS) return s;
  c->sealed_through_ = r.epochs().sealed_through();
  if (auto e = cu::event_record(c->event_, r.stream()); !e)
    return r.fail_op(e, "recording a completion (cuEventRecord)");
  r.counters().events_recorded.add();
  r.counters().of(k_completions_recorded).add();
  *out = std::move(c);
  return T4A_SUCCESS;
}

Completion::~Completion() {
  if (event_ == nullptr) return;
  // Destroying an event whose work is pending is allowed: the driver
  // releases it once the work is done.
  ContextScope scope;
  if (scope.enter(rt_->context(), "destroying a completion", false) ==
      T4A_SUCCESS)
    (void)cu::event_destroy(event_);
}

void Completion::retire(bool blocking) {
  Runtime &r = *rt_;
  Epochs::Items retired;
  if (blocking) {
    Admission adm(r.admission(), Admission::Internal);
    if (adm.status() != T4A_SUCCESS) return; // REENTRANT: retire later
    r.epochs().retire_through(r, sealed_through_, &retired);
    // Dropped under admission (docs/runtime.md#completion-epochs).
    retired.clear();
  } else {
    TryAdmission adm(r.admission());
    if (!adm.held()) return;
    r.epochs().retire_through(r, sealed_through_, &retired);
    retired.clear();
  }
}

t4a_status Completion::poll() {
  if (done_.load(std::memory_order_acquire)) return T4A_SUCCESS;
  Runtime &r = *rt_;
  if (t4a_status s = r.check_usable(); s != T4A_SUCCESS) return s;
  DrvResult e = cu::event_query(event_);
  if (e.code == CUDA_ERROR_NOT_READY) return T4A_NOT_READY;
  if (!e) return r.fail_op(e, "polling a completion (cuEventQuery)");
  done_.store(true, std::memory_order_release);
  retire(false);
  return T4A_SUCCESS;
}

t4a_status Completion::wait() {
  if (done_.load(std::memory_order_acquire)) return T4A_SUCCESS;
  Runtime &r = *rt_;
  if (t4a_status s = r.check_usable(); s != T4A_SUCCESS) return s;
  r.counters().host_waits.add();
  if (auto e = cu::event_synchronize(event_); !e)
    return r.fail_op(e, "waiting for a completion (cuEventSynchronize)");
  done_.store(true, std::memory_order_release);
  retire(true);
  return T4A_SUCCESS;
}

t4a_status Completion::wait_on(Runtime &waiter) {
  OpScope op(waiter, "waiting for a completion on a stream",
             "t4a_runtime_wait");
  if (op.status() != T4A_SUCCESS) return op.status();
  if (done_.load(std::memory_order_acquire)) return T4A_SUCCESS;
  if (auto e = cu::stream_wait_event(waiter.stream(), event_, 0); !e)
    return waiter.fail_op(e, "waiting for a completion (cuStreamWaitEvent)");
  return T4A_SUCCESS;
}

} // namespace t4a::capi
