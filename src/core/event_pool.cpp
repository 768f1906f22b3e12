#include "core/event_pool.hpp"

#include "core/runtime.hpp"

#include "core/error.hpp"

namespace t4a::core {

using namespace t4a::driver;

t4a_status EventPool::take(CUevent *out) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      *out = free_.back();
      free_.pop_back();
      return T4A_SUCCESS;
    }
  }
  CUevent e = nullptr;
  if (auto r = cu::event_create(&e, CU_EVENT_DISABLE_TIMING); !r)
    return owner_ != nullptr ? owner_->fail_op(r, "creating an event")
                             : fail_driver(r, "creating an event");
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
