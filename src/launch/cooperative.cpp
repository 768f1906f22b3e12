#include "launch/cooperative.hpp"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>

#include "core/admission.hpp"
#include "core/capture.hpp"
#include "core/context_scope.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/stream_context.hpp"
#include "core/struct_io.hpp"
#include "launch/attributes.hpp"
#include "launch/barrier_validation.hpp"

namespace t4a::launch {

static_assert(k_launch_flags == T4A_LAUNCH_COOPERATIVE,
              "launch_validation.hpp's flags are the header's");

using core::Ref;
using namespace t4a::driver;

namespace {

// Cooperative launches and grid-barrier audit failures (part counters,
// core/counters.hpp; audit failures are also counted by a kernel's
// destructor, outside admission: add() only).
const core::CounterSlot k_cooperative_launches = core::register_counter(
    "cooperative_launches", &t4a_runtime_stats::cooperative_launches);
const core::CounterSlot k_barrier_audit_failures = core::register_counter(
    "barrier_audit_failures", &t4a_runtime_stats::barrier_audit_failures);

using ull = unsigned long long;

// Kept in the open completion epoch by each barrier launch; its last drop
// (the epoch retired: its seal event completed) proves the launch's audit
// copies complete. Internal kind: retirement drops it in place, which
// frees nothing but the ticket and at most the shared progress record.
class AuditTicket final : public core::Object {
public:
  explicit AuditTicket(std::shared_ptr<AuditProgress> p)
      : Object(core::Kind::Internal), progress_(std::move(p)) {}
  // Its launch's sequence number, set once the launch is enqueued: a
  // ticket dropped unarmed (the launch failed) proves nothing.
  void arm(uint64_t seq) { seq_ = seq; }

protected:
  void last_ref_dropped() override {
    std::atomic<uint64_t> &c = progress_->completed;
    uint64_t now = c.load(std::memory_order_relaxed);
    while (now < seq_ &&
           !c.compare_exchange_weak(now, seq_, std::memory_order_release,
                                    std::memory_order_relaxed)) {
    }
    delete this;
  }

private:
  std::shared_ptr<AuditProgress> progress_;
  uint64_t seq_ = 0;
};

// Compares the audits of `b` up to launch sequence `done`. A wrong value
// is counted, remembered and logged (under admission: deferred past it).
// `released`: the kernel is being destroyed (not under admission).
void compare(core::Runtime &rt, const Kernel &k, Barrier &b, uint64_t done,
             bool released) {
  const unsigned char *slots = b.slots->data();
  while (b.count > 0 && b.ring[b.head].seq <= done) {
    const Barrier::Pending &p = b.ring[b.head];
    uint64_t got = 0;
    if (b.width == 8) {
      std::memcpy(&got, slots + 8 * size_t{b.head}, 8);
    } else {
      uint32_t v = 0;
      std::memcpy(&v, slots + 8 * size_t{b.head}, 4);
      got = v;
    }
    bool at_most = (b.flags & T4A_BARRIER_EXPECT_AT_MOST) != 0;
    bool ok = at_most ? got <= p.expected : got == p.expected;
    ++b.audited;
    if (!ok) {
      ++b.failures;
      b.last_bad_value = got;
      b.last_bad_expected = p.expected;
      b.last_bad_launch = p.launch;
      // A locked add, also under admission: a kernel destroyed outside
      // admission adds to it too, and a plain bump() under admission
      // could lose that increment.
      rt.counters().of(k_barrier_audit_failures).add();
      char then[128];
      if (released)
        std::snprintf(then, sizeof then,
                      "Found as the kernel was released (this launch was "
                      "not audited before)");
      else
        std::snprintf(then, sizeof then,
                      "The counter is reset before every launch, so later "
                      "launches start from %llu",
                      ull(b.reset));
      core::logf(T4A_LOG_ERROR,
                 "grid barrier '%s' of kernel '%s': after launch %llu the "
                 "counter was %llu, expected %s%llu; this launch's barriers "
                 "did not complete as declared (a block missed a barrier, or "
                 "the counter was written outside the kernel). %s",
                 b.name.c_str(), k.name().c_str(), ull(p.launch), ull(got),
                 at_most ? "at most " : "", ull(p.expected), then);
    }
    b.head = (b.head + 1) % k_audit_slots;
    --b.count;
  }
}

// Compares the audits of `b` proven complete (under admission).
void collect(core::Runtime &rt, const Kernel &k, const CoopState &st,
             Barrier &b) {
  compare(rt, k, b, st.progress->completed.load(std::memory_order_acquire),
          false);
}

// Enters the runtime's context once (for queries that need it).
t4a_status enter_once(core::Runtime &rt, core::ContextScope &scope,
                      bool &entered, const char *what) {
  if (entered) return T4A_SUCCESS;
  if (t4a_status s = scope.enter(rt.context(), what); s != T4A_SUCCESS)
    return s;
  entered = true;
  return T4A_SUCCESS;
}

// The co-residency limit of `threads` x `shared` for kernel `k`: the device
// facts are read once, the occupancy once per new (threads, shared) pair.
// No lock is held during a driver call.
t4a_status cooperative_limit(core::Runtime &rt, Kernel &k, CoopState &st,
                             uint32_t threads, uint64_t shared,
                             core::ContextScope &scope, bool &entered,
                             CoopLimit *out) {
  int32_t sms = -1, support = -1, per_sm = -1;
  {
    std::lock_guard<std::mutex> g(st.mu);
    sms = st.sms;
    support = st.coop_support;
    if (st.occ_valid && st.occ_threads == threads && st.occ_shared == shared)
      per_sm = st.occ_per_sm;
  }
  if (sms < 0 || support < 0) {
    CUdevice dev = 0;
    if (t4a_status s = core::device_get(rt.ordinal(), "device", &dev);
        s != T4A_SUCCESS)
      return s;
    int a = 0, b = 0;
    if (auto r = cu::device_get_attribute(
            &a, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev);
        !r)
      return rt.fail_op(r, "reading whether the device supports cooperative "
                           "launches");
    if (auto r = cu::device_get_attribute(
            &b, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
        !r)
      return rt.fail_op(r, "reading the device's multiprocessor count");
    support = a != 0 ? 1 : 0;
    sms = b < 0 ? 0 : b;
    std::lock_guard<std::mutex> g(st.mu);
    st.coop_support = support;
    st.sms = sms;
  }
  if (support == 0)
    return core::fail(T4A_ERROR_UNSUPPORTED,
                      "device %d does not support cooperative launches "
                      "(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0)",
                      rt.ordinal());
  if (per_sm < 0) {
    const char *what = "computing the cooperative grid limit";
    if (t4a_status s = enter_once(rt, scope, entered, what); s != T4A_SUCCESS)
      return s;
    int n = 0;
    if (auto r = cu::occupancy_max_active_blocks(&n, k.function(),
                                                 static_cast<int>(threads),
                                                 static_cast<size_t>(shared));
        !r)
      return rt.fail_op(r, what);
    per_sm = n < 0 ? 0 : n;
    std::lock_guard<std::mutex> g(st.mu);
    st.occ_valid = true;
    st.occ_threads = threads;
    st.occ_shared = shared;
    st.occ_per_sm = per_sm;
  }
  out->per_sm = per_sm;
  out->sms = sms;
  out->max_blocks = uint64_t(per_sm) * uint64_t(sms);
  return T4A_SUCCESS;
}

// Writes the barrier's reset value on the stream (one or two 32-bit fills).
DrvResult reset_counter(const Barrier &b, CUstream s) {
  uint32_t lo = static_cast<uint32_t>(b.reset);
  if (b.width == 4) return cu::memset_d32_async(b.ptr, lo, 1, s);
  uint32_t hi = static_cast<uint32_t>(b.reset >> 32);
  if (lo == hi) return cu::memset_d32_async(b.ptr, lo, 2, s);
  if (DrvResult r = cu::memset_d32_async(b.ptr, lo, 1, s); !r) return r;
  return cu::memset_d32_async(b.ptr + 4, hi, 1, s);
}

// Makes room for one more pending audit of `b`: completed epochs are
// retired first (no wait); when every slot still awaits proof, the open
// epoch is sealed and the oldest sealed one waited for (a counted host
// wait), until the oldest audit is proven. Under admission.
t4a_status make_audit_room(core::Runtime &rt, const Kernel &k,
                           const CoopState &st, Barrier &b) {
  collect(rt, k, st, b);
  core::Epochs &ep = rt.epochs();
  while (b.count == k_audit_slots) {
    {
      core::Epochs::Items retired; // dropped here: tickets raise `completed`
      if (t4a_status s = ep.poll(rt, &retired); s != T4A_SUCCESS) return s;
    }
    collect(rt, k, st, b);
    if (b.count < k_audit_slots) break;
    {
      core::Epochs::Items retired;
      if (ep.open_items() > 0)
        if (t4a_status s = ep.seal(rt); s != T4A_SUCCESS) return s;
      if (!ep.has_sealed())
        return core::fail(T4A_ERROR_INTERNAL,
                          "grid barrier '%s': %u audits pending and no "
                          "completion epoch left to wait for",
                          b.name.c_str(), b.count);
      if (t4a_status s = ep.wait_oldest(rt, &retired); s != T4A_SUCCESS)
        return s;
    }
    collect(rt, k, st, b);
  }
  return T4A_SUCCESS;
}

} // namespace

t4a_status max_cooperative_blocks(Kernel &k, int32_t block_size,
                                  uint64_t dynamic_shared,
                                  int32_t *max_blocks) {
  core::Runtime &rt = k.runtime();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  CoopState &st = k.coop_state();
  core::ContextScope scope;
  bool entered = false;
  // Above the default shared-memory limit no block fits until the kernel's
  // dynamic-shared limit is raised, which a launch of this shape does
  // before its co-residency check: so does the query, for the same answer
  // (and so that the cached answer is the launch's). Above the opt-in
  // maximum no launch is possible, and the occupancy, 0, says so.
  const uint64_t total = dynamic_shared + k.signature().static_shared_bytes;
  if (total > k.limits().max_shared_default &&
      total <= k.limits().max_shared_optin) {
    core::Admission adm(rt.admission());
    if (adm.status() != T4A_SUCCESS) return adm.status();
    if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
    if (t4a_status s = enter_once(rt, scope, entered,
                                  "computing the cooperative grid limit");
        s != T4A_SUCCESS)
      return s;
    if (t4a_status s =
            k.ensure_dynamic_shared(static_cast<uint32_t>(dynamic_shared));
        s != T4A_SUCCESS)
      return s;
  }
  CoopLimit lim;
  if (t4a_status s =
          cooperative_limit(rt, k, st, static_cast<uint32_t>(block_size),
                            dynamic_shared, scope, entered, &lim);
      s != T4A_SUCCESS)
    return s;
  *max_blocks = lim.max_blocks > uint64_t(INT32_MAX)
                    ? INT32_MAX
                    : static_cast<int32_t>(lim.max_blocks);
  return T4A_SUCCESS;
}

t4a_status declare_barrier(Kernel &k, const t4a_barrier_desc *given,
                           uint32_t *index) {
  t4a_barrier_desc d = T4A_BARRIER_DESC_INIT;
  if (t4a_status s = core::read_struct(given, &d, "desc"); s != T4A_SUCCESS)
    return s;
  // The checks themselves: launch/barrier_validation.hpp (pure, fuzzed).
  core::Check check;
  BarrierDecl decl;
  check_barrier_desc(d, &decl, &check);
  if (!check.ok()) return core::fail(check.status, "%s", check.message);
  std::string name = d.global_name; // may throw: nothing changed yet
  core::Runtime &rt = k.runtime();
  CoopState &st = k.coop_state();
  core::Admission adm(rt.admission());
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  uint32_t n = st.barrier_count.load(std::memory_order_relaxed);
  const char *declared[k_max_barriers];
  for (uint32_t i = 0; i < n; ++i) declared[i] = st.barriers[i]->name.c_str();
  check_barrier_room(name.c_str(), declared, n, k_max_barriers,
                     k.name().c_str(), &check);
  if (!check.ok()) return core::fail(check.status, "%s", check.message);
  const char *what = "declaring a grid barrier";
  core::ContextScope scope;
  if (t4a_status s = scope.enter(rt.context(), what); s != T4A_SUCCESS)
    return s;
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  DrvResult r =
      cu::module_get_global(&ptr, &bytes, k.module().handle(), name.c_str());
  if (r.code == CUDA_ERROR_NOT_FOUND)
    return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                      "desc->global_name is '%s'; the module of kernel '%s' "
                      "has no global of that name (a __device__ variable, "
                      "extern \"C\" or by its lowered name)",
                      name.c_str(), k.name().c_str());
  if (!r)
    return rt.fail_op(r, "looking up a barrier counter (cuModuleGetGlobal)");
  check_barrier_global(name.c_str(), bytes, ptr, decl.width, &check);
  if (!check.ok()) return core::fail(check.status, "%s", check.message);
  auto b = std::make_unique<Barrier>();
  b->name = std::move(name);
  b->ptr = ptr;
  b->width = decl.width;
  b->flags = decl.flags;
  b->reset = decl.reset;
  b->expected = decl.expected;
  if (t4a_status s =
          memory::HostBuffer::alloc(rt, uint64_t{k_audit_slots} * 8, &b->slots);
      s != T4A_SUCCESS)
    return s;
  std::memset(b->slots->data(), 0, size_t{k_audit_slots} * 8);
  st.barriers[n] = std::move(b);
  st.barrier_count.store(n + 1, std::memory_order_release);
  k.set_has_barriers();
  if (index != nullptr) *index = n;
  return T4A_SUCCESS;
}

t4a_status barrier_audit(Kernel &k, uint32_t index, t4a_barrier_audit *out) {
  CoopState *st = k.coop();
  uint32_t n =
      st != nullptr ? st->barrier_count.load(std::memory_order_acquire) : 0;
  if (index >= n)
    return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                      "index is %u; kernel '%s' has %u declared barriers",
                      index, k.name().c_str(), n);
  core::Runtime &rt = k.runtime();
  core::Admission adm(rt.admission());
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  Barrier &b = *st->barriers[index];
  collect(rt, k, *st, b);
  t4a_barrier_audit a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.launches = b.launches;
  a.audited = b.audited;
  a.pending = b.count;
  a.failures = b.failures;
  a.last_bad_value = b.last_bad_value;
  a.last_bad_expected = b.last_bad_expected;
  a.last_bad_launch = b.last_bad_launch;
  core::write_struct(out, a);
  return T4A_SUCCESS;
}

namespace {

// launch_special: a cooperative launch needs the driver's entry point and
// a grid whose blocks can all be resident at once.
t4a_status check_co_resident(core::Runtime &rt, Kernel &k, CoopState &st,
                             const t4a_launch_desc &d, const Verdict &v,
                             core::ContextScope &scope, bool &entered) {
  if (!has(Entry::cuLaunchCooperativeKernel))
    return core::fail(
        T4A_ERROR_UNSUPPORTED, "cooperative launch: %s",
        driver::lacks_text(Entry::cuLaunchCooperativeKernel).c_str());
  const uint32_t threads = v.block[0] * v.block[1] * v.block[2];
  const uint64_t blocks = uint64_t(v.grid[0]) * v.grid[1] * v.grid[2];
  CoopLimit lim;
  if (t4a_status s = cooperative_limit(
          rt, k, st, threads, d.dynamic_shared_bytes, scope, entered, &lim);
      s != T4A_SUCCESS)
    return s;
  if (blocks > lim.max_blocks)
    return core::fail(
        T4A_ERROR_INVALID_ARGUMENT,
        "desc->grid is %u x %u x %u = %llu blocks; a cooperative launch of "
        "kernel '%s' with %u threads per block and %u dynamic shared bytes "
        "has at most %llu co-resident blocks (%d per multiprocessor x %d "
        "multiprocessors); nothing was enqueued",
        v.grid[0], v.grid[1], v.grid[2], ull(blocks), k.name().c_str(), threads,
        d.dynamic_shared_bytes, ull(lim.max_blocks), lim.per_sm, lim.sms);
  return T4A_SUCCESS;
}

// launch_special: the barrier counters' resets, in stream order before the
// kernel.
t4a_status reset_counters(core::Runtime &rt, const CoopState &st, uint32_t nb) {
  for (uint32_t i = 0; i < nb; ++i) {
    const Barrier &b = *st.barriers[i];
    DrvResult r = core::in_stream_context(
        rt, [&] { return reset_counter(b, rt.stream()); });
    if (!r)
      return rt.fail_op(r, "resetting a grid barrier counter before a "
                           "launch (cuMemsetD32Async)");
  }
  return T4A_SUCCESS;
}

// launch_special: after the kernel, the audit copies, each counter into its
// barrier's next slot, with what it is expected to hold.
t4a_status copy_audits(core::Runtime &rt, CoopState &st, uint32_t audited,
                       uint64_t blocks) {
  for (uint32_t i = 0; i < audited; ++i) {
    Barrier &b = *st.barriers[i];
    uint32_t slot = (b.head + b.count) % k_audit_slots;
    DrvResult r = core::in_stream_context(rt, [&] {
      return cu::memcpy_dtoh_async(b.slots->data() + 8 * size_t{slot}, b.ptr,
                                   b.width, rt.stream());
    });
    if (!r)
      return rt.fail_op(r, "copying a grid barrier counter for its audit "
                           "after a launch (cuMemcpyDtoHAsync)");
    uint64_t expected = b.expected;
    if ((b.flags & T4A_BARRIER_EXPECT_PER_BLOCK) != 0) expected *= blocks;
    b.ring[slot] = {st.seq, ++b.launches, expected & width_mask(b.width)};
    ++b.count;
  }
  return T4A_SUCCESS;
}

// launch_special: reserve -> enqueue -> keep, for the kernel (it owns the
// audit slots and holds its module) and, with audited barriers, one audit
// ticket. The ticket is reserved first: its reservation may seal a full
// open epoch, after which an earlier keep of the kernel no longer covers
// this launch, so whether the kernel is recently kept is asked only after.
class SpecialKeeps {
public:
  SpecialKeeps(core::Epochs &ep, Kernel &k) : ep_(ep), k_(k) {}
  // Every member is out of line: inlined into launch_special, GCC 12 takes
  // the optionals' reservations for uninitialized (-Wmaybe-uninitialized).
  // One call each, on the cooperative and barrier path only.
  [[gnu::noinline]] ~SpecialKeeps() {}
  SpecialKeeps(const SpecialKeeps &) = delete;
  SpecialKeeps &operator=(const SpecialKeeps &) = delete;
  // `audit`: the state whose progress the ticket reports, or NULL.
  [[gnu::noinline]] t4a_status reserve(core::Runtime &rt, CoopState *audit) {
    if (audit != nullptr) {
      ticket_keep_.emplace(ep_.reserve_keep(rt));
      if (ticket_keep_->status() != T4A_SUCCESS) return ticket_keep_->status();
      ticket_ = Ref<AuditTicket>::adopt(new AuditTicket(audit->progress));
      st_ = audit;
    }
    if (!ep_.recently_kept(&k_)) {
      kernel_keep_.emplace(ep_.reserve_keep(rt));
      if (kernel_keep_->status() != T4A_SUCCESS) return kernel_keep_->status();
    }
    return T4A_SUCCESS;
  }
  // The kernel only (its launch or a reset may have been enqueued).
  [[gnu::noinline]] void keep_kernel() {
    if (kernel_keep_) ep_.keep(std::move(*kernel_keep_), k_);
  }
  // After the launch was enqueued: the ticket armed with its sequence.
  [[gnu::noinline]] void keep_all() {
    keep_kernel();
    if (ticket_) {
      ticket_->arm(st_->seq);
      ep_.keep(std::move(*ticket_keep_), Ref<core::Object>(ticket_.get()));
    }
  }

private:
  core::Epochs &ep_;
  Kernel &k_;
  CoopState *st_ = nullptr;
  std::optional<core::Epochs::Reservation> kernel_keep_, ticket_keep_;
  Ref<AuditTicket> ticket_;
};

// launch_special: the kernel itself, through the entry point its flags and
// attributes need.
DrvResult enqueue_special(core::Runtime &rt, Kernel &k,
                          const t4a_launch_desc &d, const Verdict &v,
                          const LaunchEx *ex, bool coop, void **params) {
  return core::in_stream_context(rt, [&] {
    if (coop)
      return cu::launch_cooperative_kernel(k.function(), v.grid, v.block,
                                           d.dynamic_shared_bytes, rt.stream(),
                                           params);
    if (ex != nullptr && ex->use_ex)
      return launch_ex(k, v, d.dynamic_shared_bytes, rt.stream(), *ex, params);
    return cu::launch_kernel(k.function(), v.grid, v.block,
                             d.dynamic_shared_bytes, rt.stream(), params);
  });
}

// What enqueue_special's failure names.
const char *special_what(bool coop, const LaunchEx *ex) {
  if (coop)
    return "launching a cooperative kernel (cuLaunchCooperativeKernel)";
  if (ex != nullptr && ex->use_ex)
    return "launching a kernel (cuLaunchKernelEx)";
  return "launching a kernel (cuLaunchKernel)";
}

} // namespace

t4a_status launch_special(core::Runtime &rt, Kernel &k,
                          const t4a_launch_desc &d, const Verdict &v,
                          const LaunchEx *ex, void **params,
                          core::Object *const *buffers, size_t nbuffers) {
  const bool coop = (d.flags & T4A_LAUNCH_COOPERATIVE) != 0;
  CoopState *st = coop ? &k.coop_state() : k.coop();
  const uint64_t blocks = uint64_t(v.grid[0]) * v.grid[1] * v.grid[2];

  core::Admission adm(rt.admission());
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  core::ContextScope scope;
  bool entered = false;
  if (v.raise_shared)
    if (t4a_status s = enter_once(rt, scope, entered, "launching a kernel");
        s != T4A_SUCCESS ||
        (s = k.ensure_dynamic_shared(d.dynamic_shared_bytes)) != T4A_SUCCESS)
      return s;
  if (coop)
    if (t4a_status s = check_co_resident(rt, k, *st, d, v, scope, entered);
        s != T4A_SUCCESS)
      return s;
  if (ex != nullptr)
    if (t4a_status s = prepare_attrs(rt, k, d, v, *ex); s != T4A_SUCCESS)
      return s;
  const uint32_t nb =
      st != nullptr ? st->barrier_count.load(std::memory_order_acquire) : 0;
  // While the runtime captures a graph (core/capture.hpp) the launch and its
  // resets are captured and its buffers kept by the capture; the audit is
  // left out: an audit slot is compared once one launch is proven complete,
  // which a graph replayed many times never gives (and waiting for room in
  // the audit ring would be a host wait inside the capture).
  const bool capturing = rt.capturing();
  core::CaptureKeeps cap(rt.capture(), capturing, nbuffers);
  const uint32_t audited = capturing ? 0 : nb;
  for (uint32_t i = 0; i < audited; ++i)
    if (t4a_status s = make_audit_room(rt, k, *st, *st->barriers[i]);
        s != T4A_SUCCESS)
      return s;

  SpecialKeeps keeps(rt.epochs(), k);
  if (t4a_status s = keeps.reserve(rt, audited > 0 ? st : nullptr);
      s != T4A_SUCCESS)
    return s;

  // The resets, in stream order before the kernel. A failed reset leaves
  // the kernel unlaunched (earlier resets are harmless), and the kernel
  // kept: the resets enqueued, or the failed one, write module memory.
  if (t4a_status s = reset_counters(rt, *st, nb); s != T4A_SUCCESS) {
    keeps.keep_kernel();
    return s;
  }
  DrvResult r = enqueue_special(rt, k, d, v, ex, coop, params);
  // Kept even when the launch failed, as launch.cpp does.
  if (cap.active()) [[unlikely]]
    for (size_t j = 0; j < nbuffers; ++j) cap.keep(*buffers[j]);
  if (!r) {
    // Kept even when the launch failed: the driver may have queued it.
    keeps.keep_kernel();
    return rt.fail_op(r, special_what(coop, ex));
  }
  rt.counters().launches.bump();
  if (coop) rt.counters().of(k_cooperative_launches).bump();
  if (audited > 0) ++st->seq;
  t4a_status s = copy_audits(rt, *st, audited, blocks);
  keeps.keep_all();
  return s;
}

void audit_at_release(Kernel &k, CoopState &st) {
  // Every launch of `k` is complete: each kept the kernel in a completion
  // epoch (or a graph) that drops it only once the launch and its audit
  // copies are proven complete, and this runs at the last drop. The
  // tickets of the same epochs may be dropped after the kernel, so
  // `completed` may lag: every pending audit is compared.
  uint32_t n = st.barrier_count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i)
    compare(k.runtime(), k, *st.barriers[i], ~uint64_t{0}, true);
}

} // namespace t4a::launch
