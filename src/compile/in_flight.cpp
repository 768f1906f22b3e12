#include "compile/in_flight.hpp"

#include "core/log.hpp"
#include <new>

namespace t4a::compile {

InFlight &InFlight::instance() {
  static InFlight *self = new InFlight(); // never destroyed
  return *self;
}

InFlight::Turn InFlight::lead_or_wait(const core::Digest &key) {
  std::unique_lock<std::mutex> lock(mu_);
  auto [at, inserted] = leading_.emplace(key, std::this_thread::get_id());
  if (inserted) return Turn::Lead;
  if (at->second == std::this_thread::get_id()) return Turn::Nested;
  done_.wait(lock, [&] { return leading_.count(key) == 0; });
  return Turn::Waited;
}

void InFlight::end(const core::Digest &key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    leading_.erase(key);
  }
  done_.notify_all();
}

void InFlight::Lead::start(const core::Digest &key) {
  core::log_defer_begin();
  key_ = key;
  held_ = true;
}

InFlight::Lead::~Lead() {
  if (!held_) return;
  InFlight::instance().end(key_);
  core::log_defer_end(); // delivered now that no thread waits on this one
}

void InFlight::at_fork(core::ForkPhase phase) {
  if (phase == core::ForkPhase::Prepare) return mu_.lock();
  if (phase == core::ForkPhase::Child) {
    leading_.clear(); // their leaders are not in the child
    new (&done_) std::condition_variable(); // its waiters are gone too
  }
  mu_.unlock();
}

} // namespace t4a::compile
