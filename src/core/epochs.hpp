// Completion epochs. Resources that must outlive enqueued work but
// are not freed in stream order (staging chunks, host buffers, modules and
// other runtimes' objects) are kept alive by the runtime's open epoch. The
// open epoch is sealed by one event record only when something must wait
// on it or its keepalives must be retired (staging pressure, a full open
// epoch, synchronize, teardown): never one event per operation.
//
// Bounds (issue 8, item 1). The open epoch holds at most k_open_limit
// keepalives: a reservation that finds it full seals it first, and when
// that seal fails the reserving operation fails before it enqueues
// anything (the epoch never grows past the limit). Sealed epochs retire
// oldest first, amortized: sealing another epoch while more than
// k_poll_above are sealed queries the oldest (non-blocking) and retires
// what completed; at k_sealed_limit sealed epochs, sealing waits on the
// host for the oldest (counted). A full open epoch holds k_open_limit
// distinct keeps, so a launch path records at most one event per
// k_open_limit keeping launches. Elsewhere sealed epochs retire by a
// non-blocking query where it pays (staging, allocation), a counted host
// wait when the staging budget is exhausted, and without any query after
// a proven drain of the stream. Sealing needs no current context: the
// event pool enters the runtime's context to create an event, and a
// record or query refused for want of one is repeated in it.
//
// Reserve -> enqueue -> commit (issue 8, item 5). A keepalive is added in
// two steps: reserve_keep() returns a Reservation (only Epochs makes one;
// move-only, [[nodiscard]]), made before the work is enqueued, and keep()
// consumes it after the enqueue and cannot fail. keep() takes no other
// form, so the commit cannot be written without a reservation made first.
//
// Parking (no hidden host wait on the warm launch path). A seal made for room
// (a full open epoch, inside t4a_launch or a transfer) retires completed epochs
// without `out`, and must not free there: a released host buffer's
// cuMemFreeHost or a released module's cuModuleUnload may synchronize the
// device. So such a retirement drops a keepalive in place only when that frees
// nothing (a reference that is not the last one, or a staging chunk, whose last
// drop recycles it into its ring without a driver call) and parks a last
// reference in a fixed list of k_parked_limit entries (no heap allocation). A
// full parked list stops the retirement: the rest stays with its completed
// epoch (never freed early, never dropped). Parked objects are handed out
// (`out`) wherever a host wait or driver work is expected anyway: synchronize,
// completion waits, staging's poll and wait, allocation's amortized poll
// (poll/wait_oldest/retire_through with `out`) and teardown (retire_all;
// leak_all leaks them). One exception, still counted: a seal at
// k_sealed_limit waits on the host for the oldest epoch (a counted host
// wait) and drops the parked objects there, which makes room to park that
// epoch's keepalives, so the sealed epochs stay bounded.
//
// All methods run under the runtime's admission lock. Retired keepalives
// are parked (above), dropped in place, or moved to the caller when it
// passes `out`. That is safe under the lock because no destructor of a
// kept object takes an admission lock (buffers, host buffers, modules and
// staging chunks free in stream order or with the driver alone). The two
// gauges (open items, sealed epochs) are atomics written with plain stores
// under admission, so stats read them without it.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/epoch_limits.h"
#include "core/object.hpp"
#include "t4acuda.h"

namespace t4a::core {

class Runtime;

class Epochs {
public:
  using Items = std::vector<Ref<Object>>;
  // Keepalives of the open epoch at most.
  static constexpr uint32_t k_open_limit = T4A_OPEN_EPOCH_LIMIT;
  // Sealing with more sealed epochs than this queries the oldest first.
  static constexpr uint32_t k_poll_above = 4;
  // Sealed epochs at most: sealing one more waits for the oldest.
  static constexpr uint32_t k_sealed_limit = 64;
  // A keep of an object among the open epoch's last this many keeps adds
  // nothing (alternating launches of a few modules keep each once).
  static constexpr uint32_t k_dedup_window = 8;
  // Parked objects at most (last references retired by a seal, see above):
  // one full epoch's worth, so a counted wait that empties the list can
  // always retire the oldest epoch whole.
  static constexpr uint32_t k_parked_limit = k_open_limit;

  // Room for one keep, made before the enqueue that the keep follows, so
  // that the keep cannot fail once work is enqueued. Check status() before
  // enqueuing; pass it to keep() after. Dropped unconsumed (the operation
  // failed before its enqueue), it gives the room back.
  class [[nodiscard]] Reservation {
  public:
    Reservation(Reservation &&o) noexcept : ep_(o.ep_), status_(o.status_) {
      o.ep_ = nullptr;
    }
    Reservation(const Reservation &) = delete;
    Reservation &operator=(const Reservation &) = delete;
    Reservation &operator=(Reservation &&) = delete;
    ~Reservation() {
      if (ep_ != nullptr) --ep_->reserved_;
    }
    t4a_status status() const { return status_; }

  private:
    friend class Epochs;
    Reservation(Epochs *ep, t4a_status s) : ep_(ep), status_(s) {}
    Epochs *ep_; // null once consumed, or when the reservation failed
    t4a_status status_;
  };

  Epochs() = default;
  ~Epochs();
  Epochs(const Epochs &) = delete;
  Epochs &operator=(const Epochs &) = delete;

  // Reserves room for one keep. A full open epoch is sealed first (and the
  // oldest sealed ones retired, see above); should that fail, the
  // reservation carries the failure (recorded) and nothing is reserved. May
  // throw std::bad_alloc (before anything is enqueued).
  Reservation reserve_keep(Runtime &rt) {
    if (keep_needs_room()) [[unlikely]]
      if (t4a_status s = make_room(rt); s != T4A_SUCCESS)
        return Reservation(nullptr, s);
    ++reserved_;
    return Reservation(this, T4A_SUCCESS);
  }
  // Whether reserve_keep() must make room first: seal the full open epoch
  // (which may wait on the host for the oldest sealed epoch, and drops
  // what retires). A caller inside a borrow section leaves it for that
  // (core/section_admission.hpp).
  bool keep_needs_room() const {
    return open_ == nullptr || count() + reserved_ >= k_open_limit;
  }
  // Commits a reservation: keeps `obj` alive until the open epoch retires
  // (a new reference, taken only when the keep adds an item).
  void keep(Reservation &&r, Object &obj) noexcept {
    if (!consume(r)) [[unlikely]]
      return keep_unreserved(Ref<Object>(&obj));
    if (recently_kept(&obj)) return;
    obj.add_ref();
    push(&obj);
  }
  // The same, taking over the caller's reference.
  void keep(Reservation &&r, Ref<Object> obj) noexcept {
    if (!consume(r)) [[unlikely]]
      return keep_unreserved(std::move(obj));
    if (!recently_kept(obj.get())) push(obj.detach());
  }

  // Whether `obj` is among the open epoch's last k_dedup_window keeps (a
  // keep of it would add nothing): lets the launch path skip the
  // reservation and the keep altogether.
  bool recently_kept(const Object *obj) const {
    if (last_ == obj) return true;
    uint32_t n = count();
    uint32_t stop = n > k_dedup_window ? n - k_dedup_window : 0;
    for (uint32_t i = n; i > stop; --i)
      if (open_[i - 1] == obj) return true;
    return false;
  }

  // The open epoch's number: moves on each time the open epoch is emptied
  // (sealed, moved to a capture, retired or leaked at teardown), never
  // repeats for this object, never 0. An object may record the number under
  // which it was kept (a stamp) and skip later keeps while it is still the
  // open one: an O(1) test where recently_kept() looks at a window only.
  // The stamp must be written and read under the admission of the runtime
  // owning this object, and be kept by no other runtime's epochs (the
  // number is unique per Epochs only): launch.cpp stamps kernels and
  // modules, which only their own runtime's launches keep.
  uint64_t open_epoch() const { return open_id_; }

  // The gauges (any thread): keepalives in the open epoch, sealed epochs.
  uint32_t open_items() const { return n_.load(std::memory_order_relaxed); }
  uint32_t sealed_epochs() const {
    return sealed_n_.load(std::memory_order_relaxed);
  }
  bool has_sealed() const { return sealed_epochs() != 0; }
  uint64_t sealed_through() const { return next_seq_ - 1; }

  // Seals the open epoch with an event recorded on the runtime's stream.
  // Nothing happens when the open epoch is empty. With `record` false a
  // failure is not recorded as the thread's last error (the caller's own
  // operation succeeded); a sticky one still marks the runtime broken.
  t4a_status seal(Runtime &rt, bool record = true);
  // Seals the open epoch without an event, for a caller that drains the
  // stream next and then retires through sealed_through() (synchronize):
  // the drain is the proof, so no event is taken or recorded. Until then
  // poll() retires such an epoch only once the next sealed epoch's event
  // has completed (a drain that failed leaves it to the next seal), and
  // wait_oldest() waits for the stream instead of an event. While the
  // runtime captures, it is seal().
  t4a_status seal_for_drain(Runtime &rt);
  // Retires completed sealed epochs, oldest first, without blocking. With
  // `out`, the parked objects and the retired keepalives move to it; without
  // (a seal), last references are parked (see above).
  t4a_status poll(Runtime &rt, Items *out, bool record = true);
  // Waits on the host for the oldest sealed epoch (counted), retires it;
  // the parked objects move to `out`, or without it are dropped.
  t4a_status wait_oldest(Runtime &rt, Items *out, bool record = true);
  // After a drain proved all work up to sealed epoch `seq` complete. The
  // parked objects go too (to `out`, or dropped without it).
  void retire_through(Runtime &rt, uint64_t seq, Items *out);
  // Teardown with completion proven: everything retires, parked included.
  void retire_all(Runtime &rt, Items *out);
  // Teardown without proof: the keepalives (parked ones too) are leaked on
  // purpose.
  void leak_all();
  // Parked objects now (under admission; tests).
  uint32_t parked() const { return parked_n_; }

private:
  // A sealed epoch: its event and its keepalives (an array of capacity
  // k_open_limit, kept by the slot after retirement for reuse).
  struct Sealed {
    uint64_t seq = 0;
    CUevent event = nullptr;
    Object **items = nullptr;
    uint32_t n = 0;
  };

  uint32_t count() const { return n_.load(std::memory_order_relaxed); }
  // Empties the open epoch (its items moved or dropped by the caller): a
  // new open epoch, with a new number.
  void clear_open() {
    n_.store(0, std::memory_order_relaxed);
    last_ = nullptr;
    ++open_id_;
  }
  // A seal's ring slot with its item array (may throw; nothing moved yet).
  Sealed &make_slot();
  // Moves the open epoch into `slot` as the next sealed epoch, proven by
  // event `e` (null: by a drain). Cannot fail.
  void commit_seal(Sealed &slot, CUevent e);
  bool consume(Reservation &r) noexcept {
    if (r.ep_ != this) return false; // not a live reservation of this epoch
    r.ep_ = nullptr;
    --reserved_;
    return true;
  }
  void push(Object *obj) noexcept {
    uint32_t n = count();
    last_ = obj;
    open_[n] = obj; // room reserved: n + reserved < k_open_limit
    n_.store(n + 1, std::memory_order_relaxed);
  }
  // A keep without a live reservation (a failed or foreign one: a bug):
  // kept if there is room, else leaked, never dropped early.
  void keep_unreserved(Ref<Object> obj) noexcept;
  t4a_status make_room(Runtime &rt);
  Sealed &next_slot();
  // How retire_front disposes of the keepalives: moved to `out`, parked
  // (nothing freed; see above) or dropped in place.
  enum class Mode { Out, Park, Drop };
  // Retires the oldest sealed epoch; false (Park only) when the parked list
  // filled first: the rest of its keepalives stay with it, still sealed.
  bool retire_front(Runtime &rt, Items *out, Mode mode);
  // Moves the parked objects to `out`, or drops them without it.
  void take_parked(Items *out);
  void set_sealed(uint32_t n) { sealed_n_.store(n, std::memory_order_relaxed); }

  // First the open epoch's number (open_epoch(), the one field a warm
  // launch reads, where it read the last keep before), then what keeping
  // operations read: the last keep (null when the open epoch is empty;
  // compared without reading the array), the open epoch's array (capacity
  // k_open_limit, made on first use), its item count (a gauge) and the
  // keeps reserved but not yet committed.
  uint64_t open_id_ = 1;
  const Object *last_ = nullptr;
  Object **open_ = nullptr;
  std::atomic<uint32_t> n_{0};
  uint32_t reserved_ = 0;
  // Sealed epochs, oldest first: a ring of ring_.size() (a power of two)
  // slots from head_.
  std::atomic<uint32_t> sealed_n_{0};
  uint32_t head_ = 0;
  std::vector<Sealed> ring_;
  uint64_t next_seq_ = 1;
  // Parked last references (see above): a fixed array, no allocation.
  uint32_t parked_n_ = 0;
  Object *parked_[k_parked_limit];
};

} // namespace t4a::core
