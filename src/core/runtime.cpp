#include "core/runtime.hpp"

#include <cstring>

#include "core/context_scope.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/process_fault.hpp"
#include "core/runtime_options.hpp"
#include "core/stream_context.hpp"
#include "core/struct_io.hpp"
#include "driver/result_class.hpp"

namespace t4a::core {

using namespace t4a::driver;

#if defined(T4A_TESTING)
std::atomic<AdmissionHook> g_admission_hook{nullptr};
std::atomic<void *> g_admission_hook_arg{nullptr};
#endif

namespace {
std::atomic<uint64_t> g_next_domain{1};

// Runs a driver call of the teardown path; a driver already shut down (at
// process exit) is not an error: the call is skipped silently.
bool teardown_call(DrvResult r, const char *what, uint64_t domain) {
  if (r || is_driver_gone(r.code)) return true;
  logf(T4A_LOG_ERROR, "runtime (domain %llu) teardown, %s: %s returned %s",
       static_cast<unsigned long long>(domain), what, r.entry,
       describe(r.code).c_str());
  return false;
}

// Runtime::create: every runtime allocates from a stream-ordered pool.
t4a_status require_pools(CUdevice device, int32_t ordinal) {
  int pools = 0;
  if (auto r = cu::device_get_attribute(
          &pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device);
      !r)
    return fail_driver(r, "querying memory-pool support of device %d", ordinal);
  if (pools == 0)
    return fail(T4A_ERROR_UNSUPPORTED,
                "device %d does not support stream-ordered memory pools, "
                "which every runtime needs",
                ordinal);
  return T4A_SUCCESS;
}

// Runtime::create: the runtime's pinned device pool with its release
// threshold; on failure nothing is left.
t4a_status make_pool(int32_t ordinal, uint64_t release_threshold,
                     CUmemoryPool *out) {
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = ordinal;
  CUmemoryPool pool = nullptr;
  if (auto r = cu::mem_pool_create(&pool, &props); !r)
    return fail_driver(r, "creating the memory pool of a runtime on device %d",
                       ordinal);
  cuuint64_t threshold = release_threshold;
  if (auto r = cu::mem_pool_set_attribute(
          pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
      !r) {
    t4a_status s =
        fail_driver(r, "setting the pool release threshold to %llu bytes",
                    static_cast<unsigned long long>(threshold));
    // Ignored on purpose: the create fails with the error above, and the
    // pool was never used.
    (void)cu::mem_pool_destroy(pool);
    return s;
  }
  *out = pool;
  return T4A_SUCCESS;
}

// Runtime::create, context current: the runtime's non-blocking stream, at
// the options' priority (0: cuStreamCreate, as before priorities existed;
// else checked against the device's range first: the driver would clamp it
// silently).
t4a_status create_stream(const t4a_runtime_options &o, CUstream *out) {
  CUstream made = nullptr;
  if (o.stream_priority == 0) {
    if (auto r = cu::stream_create(&made, CU_STREAM_NON_BLOCKING); !r)
      return fail_driver(r, "creating the stream of a runtime on device %d",
                         o.device_ordinal);
    *out = made;
    return T4A_SUCCESS;
  }
  int least = 0, greatest = 0;
  if (auto r = cu::ctx_get_stream_priority_range(&least, &greatest); !r)
    return fail_driver(r, "reading the stream priority range of device %d",
                       o.device_ordinal);
  if (o.stream_priority > least || o.stream_priority < greatest)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "options->stream_priority is %d; device %d allows %d (the "
                "default, lowest) down to %d (highest): lower numbers run "
                "first",
                o.stream_priority, o.device_ordinal, least, greatest);
  if (auto r = cu::stream_create_with_priority(&made, CU_STREAM_NON_BLOCKING,
                                               o.stream_priority);
      !r)
    return fail_driver(r,
                       "creating the stream of a runtime on device %d at "
                       "priority %d",
                       o.device_ordinal, o.stream_priority);
  *out = made;
  return T4A_SUCCESS;
}
} // namespace

Runtime::Runtime() : Object(Kind::Runtime) { events_.set_owner(this); }

t4a_status Runtime::create(const t4a_runtime_options &given,
                           Ref<Runtime> *out) {
  // The options' meaning (core/runtime_options.hpp): the defaults of the
  // zero fields and the rejections, before the driver is needed. options_
  // keeps the driver's pool threshold (t4a_runtime_info reports it).
  t4a_runtime_options o;
  Check check;
  resolve_runtime_options(given, &o, &check);
  if (!check.ok()) return fail(check.status, "%s", check.message);
  if (t4a_status s = require_driver(); s != T4A_SUCCESS) return s;
  Ref<Runtime> rt = Ref<Runtime>::adopt(new Runtime());
  rt->ordinal_ = o.device_ordinal;
  rt->options_ = o;
  if (t4a_status s =
          device_get(o.device_ordinal, "options->device_ordinal", &rt->device_);
      s != T4A_SUCCESS)
    return s;
  if (t4a_status s = require_pools(rt->device_, o.device_ordinal);
      s != T4A_SUCCESS)
    return s;
  // Everything is created into locals and committed to the runtime only
  // when all of it succeeded: a failed create destroys exactly what it
  // made, here, and the runtime's teardown (which would drain and count a
  // leaked runtime) never sees a half-made runtime or a stream or pool
  // value the driver may have written on failure. runtimes_live counts
  // only committed runtimes.
  CUcontext ctx = nullptr;
  if (auto r = cu::primary_ctx_retain(&ctx, rt->device_); !r)
    return fail_driver(r, "retaining the primary context of device %d",
                       o.device_ordinal);
  CUstream stream = nullptr;
  CUmemoryPool pool = nullptr;
  ContextScope scope;
  // Undoes what was made, newest first. Their results are ignored on
  // purpose: the create already failed with the error it reports, and
  // these objects were never used (nothing is enqueued on them).
  auto undo = [&](t4a_status s) {
    if (pool != nullptr) (void)cu::mem_pool_destroy(pool);
    if (stream != nullptr) (void)cu::stream_destroy(stream);
    scope.restore();
    (void)cu::primary_ctx_release(rt->device_);
    return s;
  };
  if (t4a_status s = scope.enter(ctx, "creating a runtime"); s != T4A_SUCCESS)
    return undo(s);
  if (t4a_status s = create_stream(o, &stream); s != T4A_SUCCESS)
    return undo(s);
  if (t4a_status s =
          make_pool(o.device_ordinal, o.pool_release_threshold, &pool);
      s != T4A_SUCCESS)
    return undo(s);
  // Commit: from here on the destructor (teardown) owns all of it.
  rt->ctx_ = ctx;
  rt->stream_ = stream;
  rt->pool_ = pool;
  rt->ctx_retained_ = true;
  {
    // What the driver gave the stream (it is what was asked: checked
    // against the range above); a failed query reports the request.
    int prio = o.stream_priority;
    if (!cu::stream_get_priority(stream, &prio)) prio = o.stream_priority;
    rt->stream_priority_ = prio;
  }
  ProcessCounters::instance().runtimes_live.add();
  rt->domain_ = g_next_domain.fetch_add(1, std::memory_order_relaxed);
  logf(T4A_LOG_INFO, "runtime created: device %d, domain %llu",
       o.device_ordinal, static_cast<unsigned long long>(rt->domain_));
  *out = std::move(rt);
  return T4A_SUCCESS;
}

void Runtime::mark_broken(DrvResult r, const char *what) {
  std::string message;
  const std::string operation =
      format("%s: %s returned %s", what, r.entry, describe(r.code).c_str());
  {
    std::lock_guard<std::mutex> lock(fault_mu_);
    if (broken_.load(std::memory_order_relaxed)) return;
    fault_message_ = format("device %d, %s", ordinal_, operation.c_str());
    fault_result_ = static_cast<int32_t>(r.code);
    broken_.store(true, std::memory_order_release);
    message = fault_message_;
  }
  // The process's first fault (first one wins, across runtimes).
  record_process_fault(ordinal_, static_cast<int32_t>(r.code), domain_,
                       operation.c_str());
  // Logged outside the lock: the log callback may call back into t4acuda.
  logf(T4A_LOG_ERROR, "runtime (domain %llu) is broken by a device fault: %s",
       static_cast<unsigned long long>(domain_), message.c_str());
}

t4a_status Runtime::note_failure(DrvResult r, const char *what) {
  if (is_sticky(r.code)) mark_broken(r, what);
  logf(T4A_LOG_WARN, "runtime (domain %llu): %s: %s returned %s",
       static_cast<unsigned long long>(domain_), what, r.entry,
       describe(r.code).c_str());
  return status_for(r.code);
}

t4a_status Runtime::fail_op(DrvResult r, const char *what) {
  if (is_sticky(r.code)) {
    mark_broken(r, what);
    // A device fault names its device: on current drivers it poisons
    // every device of the process, so "which one" matters.
    return fail_driver(r,
                       "%s (device %d); the runtime is broken, recovery "
                       "needs a new process",
                       what, ordinal_);
  }
  return fail_driver(r, "%s", what);
}

t4a_status Runtime::report_broken() const {
  std::string original;
  int32_t result = 0;
  {
    std::lock_guard<std::mutex> lock(fault_mu_);
    original = fault_message_;
    result = fault_result_;
  }
  // Recorded outside the lock: recording may log through a user callback.
  return fail_message(T4A_ERROR_DEVICE_FAULT,
                      "the runtime is broken by an earlier device fault (" +
                          original + "); recovery needs a new process",
                      result);
}

t4a_status Runtime::synchronize(const char *what) {
  if (t4a_status s = check_usable(); s != T4A_SUCCESS) return s;
  // No current context needed: the seal takes no event (seal_for_drain),
  // the drain names the stream (repeated in the runtime's context should a
  // driver refuse it without one, core/stream_context.hpp), and what
  // retires enters its own context to free. Leaving the caller's current
  // context alone saves a driver call per synchronize.
  uint64_t through = 0;
  // Whether the drain has anything to retire: sealed epochs (this seal's
  // or older ones) or parked objects. An idle runtime has neither, and
  // then nothing runs after the drain but its bookkeeping (no second
  // admission): epochs sealed by other threads meanwhile are younger than
  // `through` and wait for their own proof, objects parked meanwhile for
  // the next synchronize, completion wait or staging poll.
  bool retire = false;
  {
    Admission adm(admission_);
    if (adm.status() != T4A_SUCCESS) return adm.status();
    // Under admission: a capture begun by another thread after an earlier
    // check would be invalidated by the drain below.
    if (capturing()) [[unlikely]]
      return fail_capturing(*this, "t4a_runtime_synchronize");
    // The open epoch is sealed so that the drain can retire it; the drain
    // is its proof, so it records no event (core/epochs.hpp). An empty one
    // is not sealed (no call).
    if (epochs_.open_items() != 0)
      if (t4a_status s = epochs_.seal_for_drain(*this); s != T4A_SUCCESS)
        return s;
    through = epochs_.sealed_through();
    retire = epochs_.has_sealed() || epochs_.parked() != 0;
    // Announced under admission: a capture begun after this admission
    // waits until the drain below has returned (capture.cpp).
    drains_.fetch_add(1, std::memory_order_acq_rel);
  }
  counters_.host_waits.add();
  // Named by the stream, without the context current; a driver that still
  // wants one gets the runtime's (core/stream_context.hpp).
  DrvResult drained =
      in_stream_context(*this, [&] { return cu::stream_synchronize(stream_); });
  drains_.fetch_sub(1, std::memory_order_acq_rel);
  if (!drained) {
    drained_.store(false, std::memory_order_release);
    return fail_op(drained, what);
  }
  // Stored only when it changes: the flag shares the admission lock's
  // cache line, which other threads' operations write.
  if (!drained_.load(std::memory_order_relaxed)) [[unlikely]]
    drained_.store(true, std::memory_order_release);
  if (!retire) return T4A_SUCCESS;
  // Internal: retiring only drops what was admitted before, so it runs
  // even if destroy closed the runtime during the wait.
  Admission adm(admission_, Admission::Internal);
  if (adm.status() != T4A_SUCCESS) return adm.status();
  // Retired keepalives are dropped under admission, in place (no list is
  // made): staging chunks must be back in the ring before another
  // operation looks for one (a chunk neither kept nor free would make the
  // ring report nothing to wait for). No destructor of a kept object takes
  // an admission lock or touches the epochs.
  epochs_.retire_through(*this, through, nullptr);
  return T4A_SUCCESS;
}

t4a_status Runtime::begin_destroy() {
  Admission adm(admission_);
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = refuse_capturing(*this, "t4a_runtime_destroy");
      s != T4A_SUCCESS)
    return s;
  destroying_.store(true, std::memory_order_release);
  return T4A_SUCCESS;
}

t4a_status Runtime::destroy() {
  // 1. Close admission (holding it): no operation is admitted from now on,
  // and a thread already waiting for the lock sees `closed` once it gets
  // it. 2. Drain the stream: with admission closed, nothing can be
  // enqueued after the drain began, so the drain alone proves every kept
  // object complete, sealed or still in the open epoch. The open epoch is
  // not sealed: sealing needs an event, and a transient failure to create
  // one (issue 8 review, destroy_transient) would leak a runtime whose
  // completion is not in doubt. 3. Retire everything and drop the parts'
  // references to objects that hold the runtime (cached modules): nothing
  // admitted later can recreate them, so no cycle keeps the runtime alive
  // after its last handle and internal reference go.
  t4a_status s = T4A_SUCCESS;
  ContextScope scope; // the drain and the retirement run in the context
  {
    Admission adm(admission_, Admission::Internal);
    if (adm.status() == T4A_SUCCESS ||
        admission_.owner.load(std::memory_order_relaxed) ==
            std::this_thread::get_id())
      admission_.closed = true; // held here, or by this thread further up
    s = adm.status();
    if (s == T4A_SUCCESS) s = check_usable();
    if (s == T4A_SUCCESS)
      s = scope.enter(ctx_, "draining the stream before destroy");
  }
  if (s == T4A_SUCCESS) {
    counters_.host_waits.add();
    if (auto r = cu::stream_synchronize(stream_); !r)
      s = fail_op(r, "draining the stream before destroy");
  }
  if (s == T4A_SUCCESS) {
    drained_.store(true, std::memory_order_release);
    Admission adm(admission_, Admission::Internal);
    if (adm.status() == T4A_SUCCESS) {
      // Dropped under admission, as in synchronize.
      Epochs::Items retired;
      epochs_.retire_all(*this, &retired);
      for (int i = 0; i < part_count(); ++i)
        if (auto &p = parts_[part_in_order(i).index]) p->on_destroy();
    }
    return s;
  }
  drained_.store(false, std::memory_order_release);
  // Completion is unproven (a failed drain, a broken runtime): what the
  // epochs keep is leaked, and so is this runtime (its teardown may never
  // run if a kept host buffer of its own holds it): count it now, once.
  {
    Admission adm(admission_, Admission::Internal);
    if (adm.status() == T4A_SUCCESS) epochs_.leak_all();
  }
  account_leak();
  return s;
}

void Runtime::account_leak() {
  if (leak_accounted_.exchange(true)) return;
  ProcessCounters &pc = ProcessCounters::instance();
  pc.runtimes_live.sub(1);
  pc.runtimes_leaked.add();
  logf(T4A_LOG_WARN,
       "runtime (domain %llu, device %d) destroyed without proven "
       "completion: its stream, pool, staging and context reference are "
       "leaked",
       static_cast<unsigned long long>(domain_), ordinal_);
}

t4a_status Runtime::delivery_stream(CUstream *out) {
  if (delivery_ == nullptr) {
    if (auto r = cu::stream_create(&delivery_, CU_STREAM_NON_BLOCKING); !r)
      return fail_op(r, "creating the download delivery stream");
  }
  *out = delivery_;
  return T4A_SUCCESS;
}

t4a_status Runtime::trim() {
  if (t4a_status s = check_usable(); s != T4A_SUCCESS) return s;
  ContextScope scope;
  if (t4a_status s = scope.enter(ctx_, "trimming the memory pool");
      s != T4A_SUCCESS)
    return s;
  if (auto r = cu::mem_pool_trim_to(pool_, 0); !r)
    return fail_op(r, "trimming the memory pool");
  counters_.trims.add();
  return T4A_SUCCESS;
}

void Runtime::info(t4a_runtime_info *out) const {
  t4a_runtime_info i;
  std::memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  i.device_ordinal = ordinal_;
  i.domain_id = domain_;
  i.context = ctx_;
  i.stream = stream_;
  i.memory_pool = pool_;
  i.pool_release_threshold = options_.pool_release_threshold;
  i.stream_priority = stream_priority_;
  write_struct(out, i);
}

void Runtime::stats(t4a_runtime_stats *out) const {
  t4a_runtime_stats s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  counters_.fill(&s);
  // Gauges of the completion epochs (atomics, read without admission).
  s.open_epoch_items = epochs_.open_items();
  s.sealed_epochs = epochs_.sealed_epochs();
  write_struct(out, s);
}

void Runtime::teardown() {
  if (!ctx_retained_) return;
  bool proven = !completion_unprovable();
  ContextScope scope;
  if (proven && stream_ != nullptr) {
    // Work may have been enqueued after destroy's drain (frees of buffers
    // released later): drain again; on an idle stream this is cheap.
    if (scope.enter(ctx_, "runtime teardown", false) != T4A_SUCCESS) {
      // The driver is gone (process exit) or unusable: leak.
      proven = false;
    } else if (DrvResult r = cu::stream_synchronize(stream_); !r) {
      teardown_call(r, "draining the stream", domain_);
      proven = false;
    } else if (delivery_ != nullptr) {
      if (DrvResult d = cu::stream_synchronize(delivery_); !d) {
        teardown_call(d, "draining the delivery stream", domain_);
        proven = false;
      }
    }
  }
  if (!proven) {
    // Completion is not proven: the device may still use this runtime's
    // memory. Leak the stream, pool, staging and context reference;
    // keepalives are leaked with them.
    epochs_.leak_all();
    for (int i = 0; i < part_count(); ++i)
      if (auto &p = parts_[part_in_order(i).index]) p->teardown(false);
    account_leak();
    return;
  }
  if (!leak_accounted_.exchange(true))
    ProcessCounters::instance().runtimes_live.sub(1);
  {
    Epochs::Items retired;
    epochs_.retire_all(*this, &retired);
  }
  // Parts in teardown-rank order (core/component.hpp): all torn down,
  // then all destroyed.
  for (int i = 0; i < part_count(); ++i)
    if (auto &p = parts_[part_in_order(i).index]) p->teardown(true);
  for (int i = 0; i < part_count(); ++i) parts_[part_in_order(i).index].reset();
  events_.destroy_all();
  if (delivery_ != nullptr)
    teardown_call(cu::stream_destroy(delivery_),
                  "destroying the delivery stream", domain_);
  if (pool_ != nullptr)
    teardown_call(cu::mem_pool_destroy(pool_), "destroying the pool", domain_);
  if (stream_ != nullptr)
    teardown_call(cu::stream_destroy(stream_), "destroying the stream",
                  domain_);
  scope.restore();
  // Releasing our primary-context reference does not change which context
  // is current on this thread, so a context still current for another
  // runtime (or the caller) stays current.
  teardown_call(cu::primary_ctx_release(device_),
                "releasing the primary context", domain_);
  logf(T4A_LOG_INFO, "runtime destroyed: device %d, domain %llu", ordinal_,
       static_cast<unsigned long long>(domain_));
}

Runtime::~Runtime() { teardown(); }

} // namespace t4a::core
