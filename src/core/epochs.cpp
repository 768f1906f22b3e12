#include "core/epochs.hpp"

#include "core/runtime.hpp"

namespace t4a::core {

using namespace t4a::driver;

void Epochs::keep(Ref<Object> obj) {
  if (last_ == obj.get()) return;
  last_ = obj.get();
  open_.push_back(std::move(obj)); // capacity reserved by reserve_keep()
}

t4a_status Epochs::seal(Runtime &rt, bool record) {
  if (open_.empty()) return T4A_SUCCESS;
  // The entry is made before anything is enqueued: once the event is
  // recorded, nothing below can fail and drop the keepalives.
  sealed_.emplace_back();
  CUevent e = nullptr;
  t4a_status s = rt.events().take(&e);
  DrvResult r{};
  if (s == T4A_SUCCESS) {
    r = cu::event_record(e, rt.stream());
    if (!r) rt.events().give_back(e);
  }
  if (s != T4A_SUCCESS || !r) {
    sealed_.pop_back();
    if (s != T4A_SUCCESS) return s;
    const char *what = "recording the event that seals a completion epoch";
    return record ? rt.fail_op(r, what) : rt.note_failure(r, what);
  }
  rt.counters().events_recorded.add();
  Sealed &last = sealed_.back();
  last.seq = next_seq_++;
  last.event = e;
  last.items.swap(open_);
  last_ = nullptr;
  return T4A_SUCCESS;
}

void Epochs::retire_front(Runtime &rt, Items *out) {
  Sealed &s = sealed_.front();
  for (auto &item : s.items) out->push_back(std::move(item));
  rt.events().give_back(s.event);
  sealed_.pop_front();
}

t4a_status Epochs::poll(Runtime &rt, Items *out) {
  while (!sealed_.empty()) {
    DrvResult r = cu::event_query(sealed_.front().event);
    if (r.code == CUDA_ERROR_NOT_READY) return T4A_SUCCESS;
    if (!r) return rt.fail_op(r, "querying a completion epoch");
    retire_front(rt, out);
  }
  return T4A_SUCCESS;
}

t4a_status Epochs::wait_oldest(Runtime &rt, Items *out) {
  if (sealed_.empty()) return T4A_SUCCESS;
  rt.counters().host_waits.add();
  if (auto r = cu::event_synchronize(sealed_.front().event); !r)
    return rt.fail_op(r, "waiting for the oldest completion epoch");
  retire_front(rt, out);
  return T4A_SUCCESS;
}

void Epochs::retire_through(Runtime &rt, uint64_t seq, Items *out) {
  while (!sealed_.empty() && sealed_.front().seq <= seq) retire_front(rt, out);
}

void Epochs::retire_all(Runtime &rt, Items *out) {
  while (!sealed_.empty()) retire_front(rt, out);
  for (auto &item : open_) out->push_back(std::move(item));
  open_.clear();
  last_ = nullptr;
}

void Epochs::leak_all() {
  for (auto &s : sealed_)
    for (auto &item : s.items) (void)item.detach();
  sealed_.clear();
  for (auto &item : open_) (void)item.detach();
  open_.clear();
  last_ = nullptr;
}

} // namespace t4a::core
