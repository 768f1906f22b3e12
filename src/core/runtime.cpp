#include "core/runtime.hpp"

#include <cstring>

#include "core/context_scope.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/struct_io.hpp"
#include "driver/result_class.hpp"

namespace t4a::core {

using namespace t4a::driver;

namespace {
std::atomic<uint64_t> g_next_domain{1};
}

Runtime::Runtime() : Object(Kind::Runtime) {}

t4a_status Runtime::create(const t4a_runtime_options &o, Ref<Runtime> *out) {
  if (t4a_status s = require_driver(); s != T4A_SUCCESS) return s;
  Ref<Runtime> rt(new Runtime());
  rt->ordinal_ = o.device_ordinal;
  rt->release_threshold_ = o.pool_release_threshold;
  if (t4a_status s = device_get(o.device_ordinal, "options->device_ordinal",
                                &rt->device_);
      s != T4A_SUCCESS)
    return s;
  int pools = 0;
  if (auto r = cu::device_get_attribute(
          &pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, rt->device_);
      !r)
    return fail_driver(r, "querying memory-pool support of device %d",
                       o.device_ordinal);
  if (pools == 0)
    return fail(T4A_ERROR_UNSUPPORTED,
                "device %d does not support stream-ordered memory pools, "
                "which every runtime needs",
                o.device_ordinal);
  // From here on, the destructor undoes whatever was created.
  if (auto r = cu::primary_ctx_retain(&rt->ctx_, rt->device_); !r)
    return fail_driver(r, "retaining the primary context of device %d",
                       o.device_ordinal);
  rt->ctx_retained_ = true;
  ContextScope scope;
  if (t4a_status s = scope.enter(rt->ctx_, "creating a runtime");
      s != T4A_SUCCESS)
    return s;
  if (auto r = cu::stream_create(&rt->stream_, CU_STREAM_NON_BLOCKING); !r)
    return fail_driver(r, "creating the stream of a runtime on device %d",
                       o.device_ordinal);
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = o.device_ordinal;
  if (auto r = cu::mem_pool_create(&rt->pool_, &props); !r)
    return fail_driver(r, "creating the memory pool of a runtime on device %d",
                       o.device_ordinal);
  cuuint64_t threshold = o.pool_release_threshold;
  if (auto r = cu::mem_pool_set_attribute(
          rt->pool_, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
      !r)
    return fail_driver(r, "setting the pool release threshold to %llu bytes",
                       static_cast<unsigned long long>(threshold));
  rt->domain_ = g_next_domain.fetch_add(1, std::memory_order_relaxed);
  logf(T4A_LOG_DEBUG, "runtime created: device %d, domain %llu",
       o.device_ordinal, static_cast<unsigned long long>(rt->domain_));
  *out = std::move(rt);
  return T4A_SUCCESS;
}

void Runtime::mark_broken(DrvResult r, const char *what) {
  std::string message;
  {
    std::lock_guard<std::mutex> lock(fault_mu_);
    if (broken_.load(std::memory_order_relaxed)) return;
    fault_message_ = format("device %d, %s: %s returned %s", ordinal_, what,
                            r.entry, describe(r.code).c_str());
    fault_result_ = static_cast<int32_t>(r.code);
    broken_.store(true, std::memory_order_release);
    message = fault_message_;
  }
  // Logged outside the lock: the log callback may call back into t4acuda.
  logf(T4A_LOG_ERROR, "runtime (domain %llu) is broken by a device fault: %s",
       static_cast<unsigned long long>(domain_), message.c_str());
}

t4a_status Runtime::fail_op(DrvResult r, const char *what) {
  if (is_sticky(r.code)) mark_broken(r, what);
  return fail_driver(r, "%s", what);
}

t4a_status Runtime::check_usable() const {
  if (!broken_.load(std::memory_order_acquire)) return T4A_SUCCESS;
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
  host_waits_.fetch_add(1, std::memory_order_relaxed);
  if (auto r = cu::stream_synchronize(stream_); !r) return fail_op(r, what);
  return T4A_SUCCESS;
}

t4a_status Runtime::drain_for_destroy() {
  t4a_status s = synchronize("draining the stream before destroy");
  drained_.store(s == T4A_SUCCESS, std::memory_order_release);
  return s;
}

t4a_status Runtime::trim() {
  if (t4a_status s = check_usable(); s != T4A_SUCCESS) return s;
  if (auto r = cu::mem_pool_trim_to(pool_, 0); !r)
    return fail_op(r, "trimming the memory pool");
  trims_.fetch_add(1, std::memory_order_relaxed);
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
  i.pool_release_threshold = release_threshold_;
  write_struct(out, i);
}

void Runtime::stats(t4a_runtime_stats *out) const {
  t4a_runtime_stats s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.host_waits = host_waits_.load(std::memory_order_relaxed);
  s.trims = trims_.load(std::memory_order_relaxed);
  write_struct(out, s);
}

// Runs a driver call of the teardown path; a driver already shut down (at
// process exit) is not an error: the call is skipped silently.
static bool teardown_call(DrvResult r, const char *what, uint64_t domain) {
  if (r || is_driver_gone(r.code)) return true;
  logf(T4A_LOG_ERROR, "runtime (domain %llu) teardown, %s: %s returned %s",
       static_cast<unsigned long long>(domain), what, r.entry,
       describe(r.code).c_str());
  return false;
}

void Runtime::teardown() {
  if (!ctx_retained_) return;
  if (!drained_.load(std::memory_order_acquire) ||
      broken_.load(std::memory_order_acquire)) {
    // Completion is not proven: the device may still use the stream's
    // memory. Leak the stream, pool and context reference (R-RT-5).
    logf(T4A_LOG_WARN,
         "runtime (domain %llu, device %d) destroyed without proven "
         "completion: its stream, pool and context reference are leaked",
         static_cast<unsigned long long>(domain_), ordinal_);
    return;
  }
  {
    ContextScope scope;
    CUcontext current = nullptr;
    DrvResult g = cu::ctx_get_current(&current);
    if (!g) {
      teardown_call(g, "reading the current context", domain_);
      return; // the driver is gone or unusable: leak
    }
    if (scope.enter(ctx_, "runtime teardown") != T4A_SUCCESS) {
      logf(T4A_LOG_ERROR,
           "runtime (domain %llu) teardown could not make its context "
           "current; stream and pool are leaked",
           static_cast<unsigned long long>(domain_));
      return;
    }
    if (pool_ != nullptr)
      teardown_call(cu::mem_pool_destroy(pool_), "destroying the pool",
                    domain_);
    if (stream_ != nullptr)
      teardown_call(cu::stream_destroy(stream_), "destroying the stream",
                    domain_);
  } // the caller's context is restored here, before the release below
  // Releasing our primary-context reference does not change which context
  // is current on this thread, so a context still current for another
  // runtime (or the caller) stays current (R-RT-7).
  teardown_call(cu::primary_ctx_release(device_),
                "releasing the primary context", domain_);
}

Runtime::~Runtime() { teardown(); }

} // namespace t4a::core
