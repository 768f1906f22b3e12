#include "core/epochs.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

#include "core/log.hpp"
#include "core/runtime.hpp"
#include "core/stream_context.hpp"

namespace t4a::core {

using namespace t4a::driver;

Epochs::~Epochs() {
  // Teardown retired or leaked every keepalive before this runs; what is
  // still here (nothing, unless a runtime failed before it could keep
  // anything) is leaked rather than dropped without proof; so are parked
  // objects (none after teardown).
  delete[] open_;
  for (Sealed &s : ring_) delete[] s.items;
}

void Epochs::keep_unreserved(Ref<Object> obj) noexcept {
  assert(!"Epochs::keep without a live reservation");
  if (open_ != nullptr && count() + reserved_ < k_open_limit) {
    if (!recently_kept(obj.get())) push(obj.detach());
    return;
  }
  (void)obj.detach(); // no room: leaked, so never freed while in use
  logf(T4A_LOG_ERROR, "internal: a keepalive without a reservation is "
                      "leaked (the open completion epoch is full)");
}

t4a_status Epochs::make_room(Runtime &rt) {
  if (open_ == nullptr) open_ = new Object *[k_open_limit]; // may throw
  if (count() + reserved_ < k_open_limit) return T4A_SUCCESS;
  // Full: seal it (recorded: the reserving operation fails with it, before
  // its enqueue). The new open array is empty, so there is room unless
  // every slot is reserved already (at most k_open_limit reservations
  // outstanding, which no operation makes).
  if (t4a_status s = seal(rt, true); s != T4A_SUCCESS) return s;
  if (count() + reserved_ >= k_open_limit)
    return fail(T4A_ERROR_INTERNAL,
                "the open completion epoch has %u keepalives reserved and "
                "cannot take more",
                reserved_);
  return T4A_SUCCESS;
}

Epochs::Sealed &Epochs::next_slot() {
  uint32_t size = static_cast<uint32_t>(ring_.size());
  uint32_t sealed = sealed_epochs();
  if (sealed == size) { // grow (a power of two), oldest first at 0
    std::vector<Sealed> grown(size == 0 ? 8 : 2 * size);
    for (uint32_t i = 0; i < size; ++i)
      grown[i] = ring_[(head_ + i) & (size - 1)];
    ring_.swap(grown);
    head_ = 0;
    size = static_cast<uint32_t>(ring_.size());
  }
  return ring_[(head_ + sealed) & (size - 1)];
}

t4a_status Epochs::seal_for_drain(Runtime &rt) {
  if (count() == 0) return T4A_SUCCESS;
  // Captured keepalives go to the capture, as seal() moves them.
  if (rt.capturing()) [[unlikely]]
    return seal(rt);
  // No room is made first (no query, no wait): the caller's drain retires
  // this epoch and every older one right after.
  // Without an event: proven by a drain (or a later proof), never queried.
  commit_seal(make_slot(), nullptr);
  return T4A_SUCCESS;
}

Epochs::Sealed &Epochs::make_slot() {
  Sealed &slot = next_slot(); // may throw: first, nothing moved yet
  if (slot.items == nullptr) slot.items = new Object *[k_open_limit];
  return slot;
}

void Epochs::commit_seal(Sealed &slot, CUevent e) {
  slot.seq = next_seq_++;
  slot.event = e;
  slot.n = count();
  std::swap(slot.items, open_);
  clear_open();
  set_sealed(sealed_epochs() + 1);
}

t4a_status Epochs::seal(Runtime &rt, bool record) {
  if (count() == 0) return T4A_SUCCESS;
  // While the runtime captures, an event recorded on its stream would be
  // captured, not run (and a query of it would invalidate the capture):
  // the open epoch's keepalives, all kept by captured work since
  // capture_begin sealed the epoch, move to the capture instead, which
  // hands them to the graph (core/capture.hpp).
  if (rt.capturing()) [[unlikely]] {
    Capture::Items &to = rt.capture().items();
    uint32_t n = count();
    to.reserve(to.size() + n); // may throw: first, nothing moved yet
    for (uint32_t i = 0; i < n; ++i) to.push_back(Ref<Object>::adopt(open_[i]));
    clear_open();
    return T4A_SUCCESS;
  }
  // Room among the sealed epochs first: retire the completed ones (one
  // query when the oldest is still running), and at the limit wait for
  // the oldest. Amortized: this runs once per seal, not per operation.
  if (sealed_epochs() > k_poll_above)
    if (t4a_status s = poll(rt, nullptr, record); s != T4A_SUCCESS) return s;
  if (sealed_epochs() >= k_sealed_limit)
    if (t4a_status s = wait_oldest(rt, nullptr, record); s != T4A_SUCCESS)
      return s;
  // The slot and the open epoch's next array are made before anything is
  // enqueued: once the event is recorded, nothing below can fail and drop
  // the keepalives.
  Sealed &slot = make_slot();
  const char *what = "recording the event that seals a completion epoch";
  CUevent e = nullptr;
  if (t4a_status s = rt.events().take(&e, record); s != T4A_SUCCESS) return s;
  // The event names its context; a driver that still wants one current
  // gets the runtime's (core/stream_context.hpp).
  DrvResult r =
      in_stream_context(rt, [&] { return cu::event_record(e, rt.stream()); });
  if (!r) {
    rt.events().give_back(e);
    return record ? rt.fail_op(r, what) : rt.note_failure(r, what);
  }
  rt.counters().events_recorded.add();
  commit_seal(slot, e);
  return T4A_SUCCESS;
}

void Epochs::take_parked(Items *out) {
  uint32_t n = parked_n_;
  if (out != nullptr) {
    out->reserve(out->size() + n); // may throw: first, nothing moved yet
    for (uint32_t i = 0; i < n; ++i)
      out->push_back(Ref<Object>::adopt(parked_[i]));
  } else {
    for (uint32_t i = 0; i < n; ++i) parked_[i]->drop_ref();
  }
  parked_n_ = 0;
}

bool Epochs::retire_front(Runtime &rt, Items *out, Mode mode) {
  uint32_t size = static_cast<uint32_t>(ring_.size());
  Sealed &s = ring_[head_];
  Object **items = s.items;
  uint32_t n = s.n;
  if (mode == Mode::Out) {
    out->reserve(out->size() + n); // may throw: first, nothing moved yet
    for (uint32_t i = 0; i < n; ++i)
      out->push_back(Ref<Object>::adopt(items[i]));
  } else if (mode == Mode::Park) {
    // Nothing is freed here: a staging chunk's last drop recycles it into
    // its ring (a mutex, no driver call), a reference that is not the last
    // one is dropped in place, and a last one is parked. Dropping never
    // seals, so the slot's array is not reused while this loop reads it.
    uint32_t i = 0;
    for (; i < n; ++i) {
      Object *o = items[i];
      if (o->kind() == Kind::Internal) {
        o->drop_ref();
      } else if (!o->drop_ref_unless_last()) {
        if (parked_n_ == k_parked_limit) break;
        parked_[parked_n_++] = o;
      }
    }
    if (i < n) { // parked list full: the rest stays with its epoch
      std::copy(items + i, items + n, items);
      s.n = n - i;
      return false;
    }
  } else {
    for (uint32_t i = 0; i < n; ++i) items[i]->drop_ref();
  }
  // The slot is free now (its array stays with it for reuse).
  s.n = 0;
  if (s.event != nullptr) rt.events().give_back(s.event);
  s.event = nullptr;
  head_ = (head_ + 1) & (size - 1);
  set_sealed(sealed_epochs() - 1);
  return true;
}

t4a_status Epochs::poll(Runtime &rt, Items *out, bool record) {
  const char *what = "querying a completion epoch";
  if (out != nullptr) take_parked(out);
  while (sealed_epochs() != 0) {
    CUevent e = ring_[head_].event;
    // An epoch sealed for a drain has no event. It is proven by the next
    // sealed epoch's event (later in stream order) when that one has
    // completed, else it waits for its drain (a drain that failed leaves
    // it to the next seal). The loop then queries that next epoch again.
    if (e == nullptr && sealed_epochs() > 1)
      e = ring_[(head_ + 1) & (static_cast<uint32_t>(ring_.size()) - 1)].event;
    if (e == nullptr) return T4A_SUCCESS;
    DrvResult r = in_stream_context(rt, [&] { return cu::event_query(e); });
    if (r.code == CUDA_ERROR_NOT_READY) return T4A_SUCCESS;
    if (!r) return record ? rt.fail_op(r, what) : rt.note_failure(r, what);
    // Without `out` (a seal on an enqueuing operation's path) the retired
    // keepalives are parked; a full parked list stops the retirement.
    if (!retire_front(rt, out, out != nullptr ? Mode::Out : Mode::Park))
      return T4A_SUCCESS;
  }
  return T4A_SUCCESS;
}

t4a_status Epochs::wait_oldest(Runtime &rt, Items *out, bool record) {
  if (out != nullptr) take_parked(out);
  if (sealed_epochs() == 0) return T4A_SUCCESS;
  rt.counters().host_waits.add();
  const char *what = "waiting for the oldest completion epoch";
  CUevent e = ring_[head_].event;
  // An epoch sealed for a drain has no event: waiting for it is waiting
  // for the stream, as its drain does.
  if (DrvResult r =
          e != nullptr
              ? in_stream_context(rt, [&] { return cu::event_synchronize(e); })
              : in_stream_context(
                    rt, [&] { return cu::stream_synchronize(rt.stream()); });
      !r)
    return record ? rt.fail_op(r, what) : rt.note_failure(r, what);
  if (out != nullptr) {
    retire_front(rt, out, Mode::Out);
    return T4A_SUCCESS;
  }
  // A seal at k_sealed_limit: this wait is counted, so the parked objects
  // are dropped here (a free that may synchronize is not hidden), and the
  // oldest epoch's keepalives are parked in their place. The parked list is
  // empty now and holds k_open_limit, so the whole epoch retires and the
  // sealed epochs stay within their limit.
  take_parked(nullptr);
  retire_front(rt, nullptr, Mode::Park);
  return T4A_SUCCESS;
}

void Epochs::retire_through(Runtime &rt, uint64_t seq, Items *out) {
  take_parked(out);
  Mode mode = out != nullptr ? Mode::Out : Mode::Drop;
  while (sealed_epochs() != 0 && ring_[head_].seq <= seq)
    retire_front(rt, out, mode);
}

void Epochs::retire_all(Runtime &rt, Items *out) {
  take_parked(out);
  Mode mode = out != nullptr ? Mode::Out : Mode::Drop;
  while (sealed_epochs() != 0) retire_front(rt, out, mode);
  uint32_t n = count();
  if (out != nullptr) out->reserve(out->size() + n);
  clear_open();
  for (uint32_t i = 0; i < n; ++i) {
    if (out != nullptr)
      out->push_back(Ref<Object>::adopt(open_[i]));
    else
      open_[i]->drop_ref();
  }
}

void Epochs::leak_all() {
  // The references are simply never dropped, parked ones included.
  parked_n_ = 0;
  while (sealed_epochs() != 0) {
    Sealed &s = ring_[head_];
    s.n = 0;
    s.event = nullptr; // leaked with its epoch: completion is unproven
    head_ = (head_ + 1) & (static_cast<uint32_t>(ring_.size()) - 1);
    set_sealed(sealed_epochs() - 1);
  }
  clear_open();
}

} // namespace t4a::core
