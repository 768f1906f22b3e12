#include "core/event_pool.hpp"

#include "core/context_scope.hpp"
#include "core/error.hpp"
#include "core/runtime.hpp"

namespace t4a::core {

using namespace t4a::driver;

t4a_status EventPool::take(CUevent *out, bool record) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      *out = free_.back();
      free_.pop_back();
      return T4A_SUCCESS;
    }
  }
  const char *what = "creating an event";
  ContextScope scope;
  if (owner_ != nullptr)
    if (t4a_status s = scope.enter(owner_->context(), what, record);
        s != T4A_SUCCESS)
      return s;
  CUevent e = nullptr;
  if (auto r = cu::event_create(&e, CU_EVENT_DISABLE_TIMING); !r) {
    if (owner_ == nullptr)
      return record ? fail_driver(r, "%s", what) : status_for(r.code);
    return record ? owner_->fail_op(r, what) : owner_->note_failure(r, what);
  }
  *out = e;
  return T4A_SUCCESS;
}

void EventPool::give_back(CUevent e) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(e);
}

void EventPool::destroy_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (CUevent e : free_) (void)cu::event_destroy(e);
  free_.clear();
}

} // namespace t4a::core
