#include "memory/cross_copy.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/admission.hpp"
#include "core/component.hpp"
#include "core/context_scope.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "memory/staging_ring.hpp"
#include "memory/transfer.hpp"

namespace t4a::memory {

using namespace t4a::driver;
using core::Runtime;

namespace {

// The memory layer's parts (ranks 100..199): peer state after the copy
// workers (110); it owns nothing the driver must free.
const core::PartSlot k_peer_slot = core::register_part("peer access", 120);

// What t4a_runtime_enable_peer did for one runtime: the devices whose
// context has peer access with this runtime's device both ways and that may
// read and write this runtime's pool. Read and written under the
// runtime's admission.
class PeerState final : public core::RuntimeComponent {
public:
  static PeerState &of(Runtime &rt) {
    auto *p = static_cast<PeerState *>(rt.part(k_peer_slot));
    if (p == nullptr) {
      auto made = std::make_unique<PeerState>();
      p = made.get();
      rt.set_part(k_peer_slot, std::move(made));
    }
    return *p;
  }
  // Nothing to free: pool access goes with the pool, context peer access
  // with the primary contexts (both owned by the runtime itself).
  void teardown(bool) override {}
  bool has(int32_t ordinal) const {
    return std::find(peers_.begin(), peers_.end(), ordinal) != peers_.end();
  }
  void add(int32_t ordinal) {
    if (!has(ordinal)) peers_.push_back(ordinal);
  }
  // The staging fallback between peer devices was logged once.
  bool warned = false;

private:
  std::vector<int32_t> peers_;
};

// Both runtimes' admission, taken in allocation-domain order, so that two
// threads copying A to B and B to A at once cannot deadlock. Also, a thread
// never waits for one runtime while holding the other: a raw scope holds
// its runtime's admission across calls, and its thread may call into the
// other runtime (a fill, an upload), so waiting for the scope's runtime
// while holding the other would deadlock with it. The second runtime is
// therefore only tried; when it is busy, the first is let go, the second
// waited for, and the first tried in turn (and so on: each round waits for
// one lock, holding none). A thread that already holds either runtime (a
// raw scope of it, a callback) gets REENTRANT at once, before waiting for
// anything.
class PairAdmission {
public:
  PairAdmission(Runtime &a, Runtime &b) {
    Runtime *first = &a, *second = &b;
    if (second->domain() < first->domain()) std::swap(first, second);
    for (Runtime *rt : {first, second})
      if (core::Admission::held_here(rt->admission())) {
        core::Admission reentrant(rt->admission()); // REENTRANT, recorded
        status_ = reentrant.status();
        return;
      }
    if (first == second) {
      first_.emplace(first->admission());
      status_ = first_->status();
      return;
    }
    for (;;) {
      if (take(first_, *first, second_, *second)) return;
      if (take(second_, *second, first_, *first)) return;
    }
  }
  t4a_status status() const { return status_; }

private:
  using Slot = std::optional<core::Admission>;
  // Waits for `wait_rt`, then tries `try_rt`: true when done (both held,
  // or a failure in status_), false when `try_rt` was busy (nothing held).
  bool take(Slot &wait, Runtime &wait_rt, Slot &tried, Runtime &try_rt) {
    wait.emplace(wait_rt.admission());
    status_ = wait->status();
    if (status_ != T4A_SUCCESS) return true;
    tried.emplace(try_rt.admission(), core::Admission::Try);
    status_ = tried->status();
    if (status_ != T4A_SUCCESS || !tried->busy()) return true;
    tried.reset();
    wait.reset();
    return false;
  }

  std::optional<core::Admission> first_;
  std::optional<core::Admission> second_;
  t4a_status status_ = T4A_SUCCESS;
};

// DEVICE_FAULT naming the role of a broken runtime in the copy.
t4a_status check_role(Runtime &rt, const char *role, const char *what) {
  t4a_status s = rt.check_usable();
  if (s == T4A_SUCCESS) return s;
  const core::LastError &e = core::last_error();
  std::string message = e.message;
  int32_t result = e.driver_result;
  return core::fail_message(
      s,
      core::format(
          "%s: the %s runtime (domain %llu, device %d) is broken: ", what, role,
          static_cast<unsigned long long>(rt.domain()), rt.ordinal()) +
          message,
      result);
}

// A driver failure of a step on `rt`'s stream: a sticky one breaks `rt`;
// after part of the copy was enqueued, the outcome is unknown (ABANDONED).
t4a_status fail_step(Runtime &rt, DrvResult r, bool enqueued_before,
                     const char *what) {
  t4a_status s = rt.fail_op(r, what);
  if (s == T4A_ERROR_DEVICE_FAULT || !enqueued_before) return s;
  return core::fail_message(
      T4A_ERROR_ABANDONED,
      core::format("%s: %s returned %s (device %d) after part of the copy "
                   "was enqueued; the outcome is unknown, the source stays "
                   "kept by the destination runtime and staging touched is "
                   "quarantined",
                   what, r.entry, core::describe(r.code).c_str(), rt.ordinal()),
      static_cast<int32_t>(r.code));
}

// A library failure (not a driver result) after part of the copy was
// enqueued: ABANDONED, keeping the original message.
t4a_status after_enqueue(t4a_status s, bool enqueued_before) {
  if (s == T4A_SUCCESS || s == T4A_ERROR_DEVICE_FAULT || !enqueued_before)
    return s;
  const core::LastError &e = core::last_error();
  std::string message = e.message;
  return core::fail_message(T4A_ERROR_ABANDONED,
                            "copying between runtimes: failed after part of "
                            "the copy was enqueued; the outcome is unknown: " +
                                message,
                            e.driver_result);
}

// Records an event (of `from`'s context) on `from`'s stream and makes
// `to`'s stream wait for it; each call with its stream's context current.
// The event goes back to `from`'s pool at once: a later record of it does
// not change a wait already enqueued.
t4a_status order_after(Runtime &from, Runtime &to, bool enqueued_before,
                       const char *what) {
  CUevent e = nullptr;
  if (t4a_status s = from.events().take(&e); s != T4A_SUCCESS)
    return after_enqueue(s, enqueued_before);
  {
    core::ContextScope ctx;
    if (t4a_status s = ctx.enter(from.context(), what); s != T4A_SUCCESS) {
      from.events().give_back(e);
      return after_enqueue(s, enqueued_before);
    }
    if (DrvResult r = cu::event_record(e, from.stream()); !r) {
      from.events().give_back(e);
      return fail_step(from, r, enqueued_before, what);
    }
  }
  from.counters().events_recorded.add();
  {
    core::ContextScope ctx;
    if (t4a_status s = ctx.enter(to.context(), what); s != T4A_SUCCESS) {
      from.events().give_back(e);
      return after_enqueue(s, enqueued_before);
    }
    if (DrvResult r = cu::stream_wait_event(to.stream(), e, 0); !r) {
      from.events().give_back(e);
      return fail_step(to, r, enqueued_before, what);
    }
  }
  from.events().give_back(e);
  return T4A_SUCCESS;
}

// Same device or peer access: the event bracket around one copy on the
// destination stream.
t4a_status bracket(Runtime &drt, Buffer &dst, uint64_t dst_offset, Buffer &src,
                   uint64_t src_offset, uint64_t bytes, bool peer) {
  Runtime &srt = src.runtime();
  const char *what = peer ? "copying between runtimes of peer devices"
                          : "copying between two runtimes of one device";
  // The source is kept by the destination's epoch: reserved before
  // anything is enqueued. Should the source stream's wait for the copy
  // fail to enqueue, this still keeps the source's memory from being
  // freed (its free is enqueued only when the epoch retires, after the
  // copy).
  core::Epochs::Reservation keep = drt.epochs().reserve_keep(drt);
  if (keep.status() != T4A_SUCCESS) return keep.status();
  // 1. The destination stream waits until the source is ready.
  if (t4a_status s = order_after(srt, drt, false, what); s != T4A_SUCCESS)
    return s;
  // 2. The copy, on the destination stream.
  {
    core::ContextScope ctx;
    if (t4a_status s = ctx.enter(drt.context(), what); s != T4A_SUCCESS)
      return s;
    CUdeviceptr d = dst.ptr() + dst_offset;
    CUdeviceptr from = src.ptr() + src_offset;
    DrvResult r =
        peer ? cu::memcpy_peer_async(d, drt.context(), from, srt.context(),
                                     bytes, drt.stream())
             : cu::memcpy_dtod_async(d, from, bytes, drt.stream());
    // Kept whatever the driver answered: after a failed enqueue the copy
    // may still run (its outcome is unknown), so the source is never
    // freed before the destination's stream is proven past it.
    drt.epochs().keep(std::move(keep), src);
    if (!r) return fail_step(drt, r, false, what);
  }
  // 3. The source stream waits for the copy: the source may be released
  // or overwritten by its runtime right after this call.
  return order_after(drt, srt, true, what);
}

// Not peers, or peer access not enabled: through the destination's pinned
// staging, chunk by chunk.
t4a_status staged(Runtime &drt, Buffer &dst, uint64_t dst_offset, Buffer &src,
                  uint64_t src_offset, uint64_t bytes) {
  Runtime &srt = src.runtime();
  const char *what = "copying between runtimes through staging";
  // The ring allocates its chunks (cuMemHostAlloc) in the destination's
  // context.
  core::ContextScope dctx;
  if (t4a_status s = dctx.enter(drt.context(), what); s != T4A_SUCCESS)
    return s;
  StagingRing &ring = StagingRing::of(drt);
  bool enqueued = false;
  for (uint64_t done = 0; done < bytes;) {
    size_t len = static_cast<size_t>(
        std::min<uint64_t>(ring.chunk_bytes(), bytes - done));
    Span span;
    bool blocked = false;
    if (t4a_status s = ring.reserve(len, &span, &blocked); s != T4A_SUCCESS)
      return after_enqueue(s, enqueued);
    if (blocked)
      return core::fail(T4A_ERROR_INTERNAL,
                        "%s: staging reported no chunk to wait for", what);
    // Reserve -> enqueue -> commit: the chunk is kept by the destination's
    // epoch until the host-to-device copy (which waited for the
    // device-to-host one) is proven done.
    core::Epochs::Reservation keep = drt.epochs().reserve_keep(drt);
    if (keep.status() != T4A_SUCCESS)
      return after_enqueue(keep.status(), enqueued);
    {
      core::ContextScope sctx;
      if (t4a_status s = sctx.enter(srt.context(), what); s != T4A_SUCCESS)
        return after_enqueue(s, enqueued);
      if (DrvResult r = cu::memcpy_dtoh_async(
              span.host, src.ptr() + src_offset + done, len, srt.stream());
          !r) {
        ring.quarantine(*span.chunk);
        return fail_step(srt, r, enqueued, what);
      }
    }
    enqueued = true;
    // The chunk's source event: the destination stream waits for this
    // chunk only (no host wait).
    if (t4a_status s = order_after(srt, drt, true, what); s != T4A_SUCCESS) {
      ring.quarantine(*span.chunk);
      return s;
    }
    if (DrvResult r = cu::memcpy_htod_async(dst.ptr() + dst_offset + done,
                                            span.host, len, drt.stream());
        !r) {
      ring.quarantine(*span.chunk);
      return fail_step(drt, r, true, what);
    }
    drt.epochs().keep(std::move(keep), std::move(span.chunk));
    done += len;
  }
  return T4A_SUCCESS;
}

// Whether the devices of `a` and `b` can reach each other's memory, both
// ways; `*ab` and `*ba` get the driver's answers.
t4a_status query_peers(Runtime &a, Runtime &b, int *ab, int *ba) {
  *ab = 0;
  *ba = 0;
  if (DrvResult r = cu::device_can_access_peer(ab, a.device(), b.device()); !r)
    return core::fail_driver(r, "asking whether device %d can access device %d",
                             a.ordinal(), b.ordinal());
  if (DrvResult r = cu::device_can_access_peer(ba, b.device(), a.device()); !r)
    return core::fail_driver(r, "asking whether device %d can access device %d",
                             b.ordinal(), a.ordinal());
  return T4A_SUCCESS;
}

bool peer_enabled(Runtime &a, Runtime &b) {
  return PeerState::of(a).has(b.ordinal()) && PeerState::of(b).has(a.ordinal());
}

// Context peer access from `from`'s context to `to`'s (one way); already
// enabled (by this library or by other code of the process) is fine.
t4a_status enable_context(Runtime &from, Runtime &to) {
  core::ContextScope ctx;
  if (t4a_status s = ctx.enter(from.context(), "enabling peer access");
      s != T4A_SUCCESS)
    return s;
  DrvResult r = cu::ctx_enable_peer_access(to.context(), 0);
  if (r || r.code == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) return T4A_SUCCESS;
  return from.fail_op(r, "enabling context peer access");
}

// Read-write access to `owner`'s pool for the device of `peer`.
t4a_status grant_pool(Runtime &owner, Runtime &peer) {
  core::ContextScope ctx;
  if (t4a_status s = ctx.enter(owner.context(), "granting pool access");
      s != T4A_SUCCESS)
    return s;
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = peer.ordinal();
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (DrvResult r = cu::mem_pool_set_access(owner.pool(), &desc, 1); !r)
    return owner.fail_op(
        r, "granting a peer device access to the runtime's memory pool");
  return T4A_SUCCESS;
}

// Under both admissions; `a` and `b` are of different devices. Refuses
// devices that are not peers (UNSUPPORTED naming both).
t4a_status enable_locked(Runtime &a, Runtime &b) {
  if (peer_enabled(a, b)) return T4A_SUCCESS;
  int ab = 0, ba = 0;
  if (t4a_status s = query_peers(a, b, &ab, &ba); s != T4A_SUCCESS) return s;
  if (ab == 0 || ba == 0)
    return core::fail(
        T4A_ERROR_UNSUPPORTED,
        "device %d and device %d are not peers: cuDeviceCanAccessPeer "
        "reports that device %d %s access device %d and that device %d %s "
        "access device %d; copies between their runtimes are staged through "
        "host memory",
        a.ordinal(), b.ordinal(), a.ordinal(), ab != 0 ? "can" : "cannot",
        b.ordinal(), b.ordinal(), ba != 0 ? "can" : "cannot", a.ordinal());
  if (t4a_status s = enable_context(a, b); s != T4A_SUCCESS) return s;
  if (t4a_status s = enable_context(b, a); s != T4A_SUCCESS) return s;
  if (t4a_status s = grant_pool(a, b); s != T4A_SUCCESS) return s;
  if (t4a_status s = grant_pool(b, a); s != T4A_SUCCESS) return s;
  PeerState::of(a).add(b.ordinal());
  PeerState::of(b).add(a.ordinal());
  core::logf(T4A_LOG_INFO,
             "peer access enabled between device %d (domain %llu) and "
             "device %d (domain %llu)",
             a.ordinal(), static_cast<unsigned long long>(a.domain()),
             b.ordinal(), static_cast<unsigned long long>(b.domain()));
  return T4A_SUCCESS;
}

// Different devices: peer if enabled (or enabled now in automatic mode),
// else staged. `*peer` tells which was chosen.
t4a_status choose_path(Runtime &drt, Runtime &srt, bool *peer) {
  *peer = peer_enabled(drt, srt);
  if (*peer) return T4A_SUCCESS;
  bool automatic = drt.options().peer_access == T4A_PEER_ACCESS_AUTO &&
                   srt.options().peer_access == T4A_PEER_ACCESS_AUTO;
  PeerState &state = PeerState::of(drt);
  if (!automatic && state.warned) return T4A_SUCCESS;
  int ab = 0, ba = 0;
  if (t4a_status s = query_peers(drt, srt, &ab, &ba); s != T4A_SUCCESS)
    return s;
  if (ab == 0 || ba == 0) return T4A_SUCCESS; // not peers: staged
  if (automatic) {
    if (t4a_status s = enable_locked(drt, srt); s != T4A_SUCCESS) return s;
    *peer = true;
    return T4A_SUCCESS;
  }
  state.warned = true;
  core::logf(T4A_LOG_WARN,
             "a copy from device %d (domain %llu) to device %d (domain %llu) "
             "is staged through host memory: the devices are peers but peer "
             "access is not enabled (t4a_runtime_enable_peer, or "
             "T4A_PEER_ACCESS_AUTO in both runtimes' options); logged once "
             "per destination runtime, counted in staged_copies",
             srt.ordinal(), static_cast<unsigned long long>(srt.domain()),
             drt.ordinal(), static_cast<unsigned long long>(drt.domain()));
  return T4A_SUCCESS;
}

// Copies between runtimes, counted by both runtimes of each copy, per
// path (part counters, core/counters.hpp): copies and bytes.
struct PathCounters {
  core::CounterSlot copies, bytes;
};
const PathCounters k_same_device{
    core::register_counter("same_device_copies",
                           &t4a_runtime_stats::same_device_copies),
    core::register_counter("same_device_bytes",
                           &t4a_runtime_stats::same_device_bytes)};
const PathCounters k_peer{
    core::register_counter("peer_copies", &t4a_runtime_stats::peer_copies),
    core::register_counter("peer_bytes", &t4a_runtime_stats::peer_bytes)};
const PathCounters k_staged{
    core::register_counter("staged_copies", &t4a_runtime_stats::staged_copies),
    core::register_counter("staged_bytes", &t4a_runtime_stats::staged_bytes)};

// Counts a copy of `bytes` on one path in both runtimes.
void count(Runtime &a, Runtime &b, const PathCounters &path, uint64_t bytes) {
  for (Runtime *rt : {&a, &b}) {
    rt->counters().of(path.copies).add();
    rt->counters().of(path.bytes).add(bytes);
  }
}

} // namespace

t4a_status copy_between(Runtime &drt, Buffer &dst, uint64_t dst_offset,
                        Buffer &src, uint64_t src_offset, uint64_t bytes) {
  Runtime &srt = src.runtime();
  const char *what = "copying between runtimes";
  PairAdmission adm(drt, srt);
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = check_role(drt, "destination", what); s != T4A_SUCCESS)
    return s;
  if (t4a_status s = check_role(srt, "source", what); s != T4A_SUCCESS)
    return s;
  if (bytes > 0) {
    if (drt.ordinal() == srt.ordinal()) {
      if (t4a_status s =
              bracket(drt, dst, dst_offset, src, src_offset, bytes, false);
          s != T4A_SUCCESS)
        return s;
      count(drt, srt, k_same_device, bytes);
    } else {
      bool peer = false;
      if (t4a_status s = choose_path(drt, srt, &peer); s != T4A_SUCCESS)
        return s;
      if (peer) {
        if (t4a_status s =
                bracket(drt, dst, dst_offset, src, src_offset, bytes, true);
            s != T4A_SUCCESS)
          return s;
        count(drt, srt, k_peer, bytes);
      } else {
        if (t4a_status s = staged(drt, dst, dst_offset, src, src_offset, bytes);
            s != T4A_SUCCESS)
          return s;
        count(drt, srt, k_staged, bytes);
      }
    }
  }
  drt.counters().device_copies.add();
  return T4A_SUCCESS;
}

t4a_status enable_peer(Runtime &a, Runtime &b) {
  const char *what = "enabling peer access";
  PairAdmission adm(a, b);
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = check_role(a, "first (runtime)", what); s != T4A_SUCCESS)
    return s;
  if (t4a_status s = check_role(b, "second (peer)", what); s != T4A_SUCCESS)
    return s;
  // One device: its own pools are always accessible to it, and its
  // runtimes share the primary context. Nothing to enable.
  if (a.ordinal() == b.ordinal()) return T4A_SUCCESS;
  return enable_locked(a, b);
}

} // namespace t4a::memory
