#include "memory/buffer.hpp"

#include "core/admission.hpp"
#include "core/borrow.hpp"
#include "core/context_scope.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "driver/result_class.hpp"

namespace t4a::memory {

using namespace t4a::driver;
using core::fail;

using BufferBlocks = BlockCache<sizeof(Buffer)>;

void *Buffer::operator new(size_t size) {
  return size == sizeof(Buffer) ? BufferBlocks::take() : ::operator new(size);
}

void Buffer::operator delete(void *p) noexcept { BufferBlocks::give(p); }

Buffer::Buffer(core::Ref<core::Runtime> rt)
    : Object(core::Kind::Buffer), rt_(std::move(rt)) {}

namespace {

// A driver call on the runtime's stream made inside a gate window, with
// core/stream_context.hpp's retry (CUDA_ERROR_INVALID_CONTEXT: once more
// with the runtime's context current). Switching the context may log, and
// nothing may log inside a window: a retry starts a log deferral
// (*deferring), which the caller ends once the window has closed
// (end_deferral), so that what was logged is delivered then.
[[gnu::noinline]] T4A_COLD void begin_deferral(bool *deferring) {
  if (*deferring) return;
  core::log_defer_begin();
  *deferring = true;
}
template <class F>
inline DrvResult call_in_window(core::Runtime &rt, bool *deferring, F f) {
  DrvResult r = f();
  if (r.code != CUDA_ERROR_INVALID_CONTEXT) [[likely]]
    return r;
  begin_deferral(deferring);
  core::ContextScope scope;
  if (scope.enter(rt.context(), "retrying with the runtime's context", false) !=
      T4A_SUCCESS)
    return r;
  return f();
}
inline void end_deferral(bool deferring) {
  if (deferring) [[unlikely]]
    core::log_defer_end();
}

} // namespace

namespace {

// A failed allocation's report (outside the gate window).
[[gnu::noinline]] T4A_COLD t4a_status alloc_failed(core::Runtime &rt,
                                                   DrvResult r, uint64_t bytes,
                                                   const char *what) {
  if (r.code == CUDA_ERROR_OUT_OF_MEMORY)
    return core::fail_message(
        T4A_ERROR_OUT_OF_MEMORY,
        core::format("%s: %llu bytes (%.2f GiB) requested from the pool of "
                     "device %d, which cannot provide them (%s returned %s); "
                     "the runtime stays usable",
                     what, static_cast<unsigned long long>(bytes),
                     static_cast<double>(bytes) / (1024.0 * 1024 * 1024),
                     rt.ordinal(), r.entry, core::describe(r.code).c_str()),
        static_cast<int32_t>(r.code));
  return rt.fail_op(r, what);
}

// An allocation's result, reported outside the gate window: the counters
// and *out on success.
inline t4a_status finish_alloc(core::Runtime &rt, DrvResult r, uint64_t bytes,
                               CUdeviceptr p, CUdeviceptr *out,
                               const char *what) {
  if (!r) [[unlikely]]
    return alloc_failed(rt, r, bytes, what);
  rt.counters().count_allocation(core::borrow::tl_record, bytes);
  *out = p;
  return T4A_SUCCESS;
}

// A free that did not happen: counted as leaked; a driver failure is
// logged (and a sticky one marks the runtime broken).
[[gnu::noinline]] T4A_COLD void free_failed(core::Runtime &rt, DrvResult r,
                                            CUdeviceptr ptr, uint64_t bytes,
                                            bool unprovable) {
  core::ProcessCounters &pc = core::ProcessCounters::instance();
  rt.counters().leaked_allocations.add();
  pc.leaked_device_allocations.add();
  pc.leaked_device_bytes.add(bytes);
  if (unprovable) return; // never freed: counted, not logged
  // A release succeeds (the handle is gone) whatever the free answers, so
  // a sticky result marks the runtime broken without recording the
  // thread's last error: a successful call leaves none (issue 8
  // review, release_sticky). The status is in the broken runtime's report.
  if (is_sticky(r.code)) (void)rt.note_failure(r, "freeing device memory");
  if (!is_driver_gone(r.code))
    core::logf(T4A_LOG_WARN,
               "device memory %#llx (%llu bytes) of device %d is leaked: %s "
               "returned %s",
               static_cast<unsigned long long>(ptr),
               static_cast<unsigned long long>(bytes), rt.ordinal(), r.entry,
               core::describe(r.code).c_str());
}

} // namespace

t4a_status device_alloc(core::Runtime &rt, uint64_t bytes, CUdeviceptr *out,
                        const char *what, DrvResult *zeroed) {
  CUdeviceptr p = 0;
  DrvResult r{};
  bool closed = false;
  bool deferring = false; // call_in_window
  {
    // Not admitted: checked and enqueued in a capture-gate window, so no
    // allocation (or zeroing) lands in a capture begun meanwhile by another
    // thread (core/capture_gate.hpp). Nothing here logs or waits.
    core::GateSection window;
    closed = rt.capture().gate().closed();
    if (!closed) [[likely]] {
      r = call_in_window(rt, &deferring, [&] {
        return cu::mem_alloc_from_pool_async(&p, bytes, rt.pool(), rt.stream());
      });
      if (r && zeroed != nullptr)
        *zeroed = call_in_window(rt, &deferring, [&] {
          return cu::memset_d8_async(p, 0, bytes, rt.stream());
        });
    }
  }
  end_deferral(deferring);
  if (closed) [[unlikely]]
    return core::fail_capturing(rt, what);
  return finish_alloc(rt, r, bytes, p, out, what);
}

void device_free(core::Runtime &rt, CUdeviceptr ptr, uint64_t bytes) {
  if (ptr == 0) return;
  core::RuntimeCounters &c = rt.counters();
  DrvResult r{};
  bool unprovable = false;
  bool deferring = false; // call_in_window
  {
    // Checked and enqueued in a capture-gate window: a capture begun by
    // another thread meanwhile gets neither (core/capture_gate.hpp).
    core::GateSection window;
    // Released while the runtime captures a graph: a cuMemFreeAsync now
    // would become a free node of the graph; it runs when the capture ends
    // (core/capture.hpp). One that cannot be remembered is leaked
    // (counted below, outside the window).
    if (rt.capture().gate().closed()) [[unlikely]] {
      if (rt.capture().defer_free(rt, &device_free, ptr, bytes)) return;
      unprovable = true;
    } else {
      unprovable = rt.completion_unprovable();
      if (!unprovable) [[likely]]
        r = call_in_window(rt, &deferring, [&] {
          return cu::mem_free_async(ptr, rt.stream());
        });
    }
  } // closed before anything below logs
  end_deferral(deferring);
  if (!unprovable && r) [[likely]] {
    c.count_free(core::borrow::tl_record, bytes);
    return;
  }
  c.device_bytes.free(bytes);
  free_failed(rt, r, ptr, bytes, unprovable);
}

bool Buffer::alloc_warm(core::Runtime &rt, uint64_t bytes, Warm *w) {
  // The checks are the explained path's (capi::call, alloc) that can fail
  // here, each branch-lean: any that fails sends the call there, which
  // reports it. The buffer takes the one reference to the runtime that it
  // keeps.
  if (rt.capture().gate().closed() || rt.completion_unprovable() ||
      (rt.counters().allocation_count() & 63) == 0) [[unlikely]]
    return false;
  Buffer *b = new Buffer(core::Ref<core::Runtime>(&rt));
  w->buffer = core::Ref<Buffer>::adopt(b);
  b->bytes_ = bytes;
  w->result = call_in_window(rt, &w->deferring, [&] {
    return cu::mem_alloc_from_pool_async(&b->ptr_, bytes, rt.pool(),
                                         rt.stream());
  });
  return true;
}

t4a_status Buffer::finish_warm_cold(Warm &w, core::Ref<Buffer> *out) {
  end_deferral(w.deferring);
  Buffer &b = *w.buffer;
  if (!w.result) [[unlikely]] {
    b.ptr_ = 0; // nothing was allocated: nothing to free
    return alloc_failed(*b.rt_, w.result, b.bytes_, "allocating a buffer");
  }
  b.rt_->counters().count_allocation(core::borrow::tl_record, b.bytes_);
  *out = std::move(w.buffer);
  return T4A_SUCCESS;
}

t4a_status Buffer::alloc(core::Ref<core::Runtime> runtime, uint64_t bytes,
                         uint32_t flags, core::Ref<Buffer> *out) {
  auto b = core::Ref<Buffer>::adopt(new Buffer(std::move(runtime)));
  core::Runtime &rt = *b->rt_;
  b->bytes_ = bytes;
  if (bytes == 0) { // a valid empty buffer: no memory, pointer 0
    *out = std::move(b);
    return T4A_SUCCESS;
  }
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  // An allocation is not admitted: it touches nothing another operation
  // can see (the new memory is reachable only through the handle made
  // below, so every use of it is ordered after this call), and its
  // counters are atomic. Retirement is polled here, amortized: once per
  // 64 allocations, only if admission is free at that moment and sealed
  // epochs are outstanding.
  if ((rt.counters().allocation_count() & 63) == 0) {
    core::TryAdmission adm(rt.admission());
    core::Epochs::Items retired; // dropped under admission (see synchronize)
    if (adm.held() && rt.epochs().has_sealed()) {
      core::ContextScope scope;
      if (t4a_status s = scope.enter(rt.context(), "allocating a buffer");
          s != T4A_SUCCESS)
        return s;
      if (t4a_status s = rt.epochs().poll(rt, &retired); s != T4A_SUCCESS)
        return s;
    }
  }
  DrvResult zeroed{};
  if (t4a_status s =
          device_alloc(rt, bytes, &b->ptr_, "allocating a buffer",
                       (flags & T4A_BUFFER_ZERO) ? &zeroed : nullptr);
      s != T4A_SUCCESS)
    return s;
  if (flags & T4A_BUFFER_ZERO) {
    if (DrvResult r = zeroed; !r) {
      // The allocation was enqueued; whether the memset was is unknown.
      b->quarantine();
      t4a_status s = rt.fail_op(r, "zeroing a new buffer");
      if (s == T4A_ERROR_DEVICE_FAULT) return s;
      return core::fail_message(
          T4A_ERROR_ABANDONED,
          core::format("zeroing a new buffer of %llu bytes failed after its "
                       "allocation was enqueued (%s returned %s); the "
                       "allocation is quarantined",
                       static_cast<unsigned long long>(bytes), r.entry,
                       core::describe(r.code).c_str()),
          static_cast<int32_t>(r.code));
    }
    rt.counters().zero_fills.add();
  }
  *out = std::move(b);
  return T4A_SUCCESS;
}

core::Ref<Buffer> Buffer::adopt_foreign(core::Ref<core::Runtime> rt,
                                        CUdeviceptr ptr, uint64_t bytes,
                                        bool read_only,
                                        core::Ref<core::Object> owner) {
  auto b = core::Ref<Buffer>::adopt(new Buffer(std::move(rt)));
  b->ptr_ = ptr;
  b->bytes_ = bytes;
  b->read_only_ = read_only;
  b->foreign_ = std::move(owner);
  return b;
}

core::Ref<Buffer> Buffer::adopt_view(core::Ref<core::Runtime> rt,
                                     CUdeviceptr ptr, uint64_t bytes,
                                     core::Ref<core::Object> module) {
  auto b = core::Ref<Buffer>::adopt(new Buffer(std::move(rt)));
  b->ptr_ = ptr;
  b->bytes_ = bytes;
  b->view_ = true;
  b->foreign_ = std::move(module);
  return b;
}

void Buffer::quarantine() {
  if (quarantined_ || ptr_ == 0) return;
  if (foreign_) { // never released: the foreign deleter is not called
    quarantined_ = true;
    rt_->counters().quarantined.add();
    return;
  }
  quarantined_ = true;
  rt_->counters().quarantined.add();
  rt_->counters().device_bytes.free(bytes_);
  core::ProcessCounters::instance().leaked_device_allocations.add();
  core::ProcessCounters::instance().leaked_device_bytes.add(bytes_);
}

Buffer::~Buffer() {
  if (view_) {
    if (quarantined_) {
      // Work that may still use the global could not be ordered: the
      // module (and with it its runtime) is never unloaded.
      core::logf(T4A_LOG_WARN,
                 "a view of a module global (%#llx, %llu bytes) is "
                 "quarantined: its module is never unloaded",
                 static_cast<unsigned long long>(ptr_),
                 static_cast<unsigned long long>(bytes_));
      (void)foreign_.detach();
      return;
    }
    release_view(*rt_, std::move(foreign_));
    return;
  }
  if (foreign_) {
    if (quarantined_) {
      // A failure after enqueue touched it: never handed back.
      core::logf(T4A_LOG_WARN,
                 "an imported buffer (%#llx, %llu bytes) is quarantined: its "
                 "DLPack deleter is never called",
                 static_cast<unsigned long long>(ptr_),
                 static_cast<unsigned long long>(bytes_));
      (void)foreign_.detach();
      return;
    }
    release_foreign(*rt_, std::move(foreign_));
    return;
  }
  if (!quarantined_) device_free(*rt_, ptr_, bytes_);
}

t4a_status check_writable(const char *arg, const Buffer &b) {
  if (!b.read_only()) return T4A_SUCCESS;
  return fail(T4A_ERROR_INVALID_ARGUMENT,
              "%s is a read-only import (a DLPack tensor flagged "
              "DLPACK_FLAG_BITMASK_READ_ONLY, or a legacy DLManagedTensor, "
              "which always imports read-only): it cannot be written",
              arg);
}

t4a_status check_range(const char *arg, uint64_t offset, uint64_t bytes,
                       uint64_t size) {
  if (offset > UINT64_MAX - bytes)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "%s: offset %llu + bytes %llu overflows 64 bits", arg,
                static_cast<unsigned long long>(offset),
                static_cast<unsigned long long>(bytes));
  if (offset + bytes > size)
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "%s: the range [%llu, %llu) goes past the end of the buffer "
                "(%llu bytes)",
                arg, static_cast<unsigned long long>(offset),
                static_cast<unsigned long long>(offset + bytes),
                static_cast<unsigned long long>(size));
  return T4A_SUCCESS;
}

t4a_status check_owner(const char *arg, const Buffer &b,
                       const core::Runtime &rt) {
  if (&b.runtime() == &rt) return T4A_SUCCESS;
  return fail(T4A_ERROR_WRONG_RUNTIME,
              "%s belongs to runtime domain %llu (device %d), not to the "
              "runtime given (domain %llu, device %d)",
              arg, static_cast<unsigned long long>(b.runtime().domain()),
              b.runtime().ordinal(),
              static_cast<unsigned long long>(rt.domain()), rt.ordinal());
}

} // namespace t4a::memory
