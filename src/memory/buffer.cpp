#include "memory/buffer.hpp"

#include <shared_mutex>

#include "core/admission.hpp"
#include "core/context_scope.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/stream_context.hpp"
#include "driver/result_class.hpp"

namespace t4a::memory {

using namespace t4a::driver;
using core::fail;

using BufferBlocks = core::BlockCache<sizeof(Buffer)>;

void *Buffer::operator new(size_t size) {
  return size == sizeof(Buffer) ? BufferBlocks::take() : ::operator new(size);
}

void Buffer::operator delete(void *p) noexcept { BufferBlocks::give(p); }

Buffer::Buffer(core::Ref<core::Runtime> rt)
    : Object(core::Kind::Buffer), rt_(std::move(rt)) {}

using core::in_stream_context;

t4a_status device_alloc(core::Runtime &rt, uint64_t bytes, CUdeviceptr *out,
                        const char *what, DrvResult *zeroed) {
  CUdeviceptr p = 0;
  DrvResult r{};
  bool capturing = false;
  {
    // Not admitted: checked and enqueued under the capture gate, so no
    // allocation (or zeroing) lands in a capture begun meanwhile by another
    // thread (core/capture.hpp).
    std::shared_lock<core::CaptureGate> gate(rt.capture().gate());
    capturing = rt.capturing();
    if (!capturing) {
      r = in_stream_context(rt, [&] {
        return cu::mem_alloc_from_pool_async(&p, bytes, rt.pool(), rt.stream());
      });
      if (r && zeroed != nullptr)
        *zeroed = in_stream_context(
            rt, [&] { return cu::memset_d8_async(p, 0, bytes, rt.stream()); });
    }
  }
  if (capturing) [[unlikely]]
    return core::fail_capturing(rt, what);
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
  if (!r) return rt.fail_op(r, what);
  rt.counters().allocations.add();
  rt.counters().device_bytes.allocate(bytes);
  *out = p;
  return T4A_SUCCESS;
}

void device_free(core::Runtime &rt, CUdeviceptr ptr, uint64_t bytes) {
  if (ptr == 0) return;
  // Released while the runtime captures a graph: a cuMemFreeAsync now
  // would become a free node of the graph; it runs when the capture ends
  // (core/capture.hpp).
  // Checked and enqueued under the capture gate: a capture begun by
  // another thread meanwhile gets neither (core/capture.hpp).
  std::shared_lock<core::CaptureGate> gate(rt.capture().gate());
  if (rt.capture().defer_free(rt, &device_free, ptr, bytes)) [[unlikely]]
    return;
  core::RuntimeCounters &c = rt.counters();
  c.device_bytes.free(bytes);
  core::ProcessCounters &pc = core::ProcessCounters::instance();
  if (rt.completion_unprovable()) {
    c.leaked_allocations.add();
    pc.leaked_device_allocations.add();
    pc.leaked_device_bytes.add(bytes);
    return;
  }
  DrvResult r = in_stream_context(
      rt, [&] { return cu::mem_free_async(ptr, rt.stream()); });
  gate.unlock(); // before anything below logs
  if (r) {
    c.frees.add();
    return;
  }
  // A release succeeds (the handle is gone) whatever the free answers, so
  // a sticky result marks the runtime broken without recording the
  // thread's last error: a successful call leaves none (issue 8
  // review, release_sticky). The status is in the broken runtime's report.
  if (is_sticky(r.code)) (void)rt.note_failure(r, "freeing device memory");
  c.leaked_allocations.add();
  pc.leaked_device_allocations.add();
  pc.leaked_device_bytes.add(bytes);
  if (!is_driver_gone(r.code))
    core::logf(T4A_LOG_WARN,
               "device memory %#llx (%llu bytes) of device %d is leaked: %s "
               "returned %s",
               static_cast<unsigned long long>(ptr),
               static_cast<unsigned long long>(bytes), rt.ordinal(), r.entry,
               core::describe(r.code).c_str());
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
  if ((rt.counters().allocations.get() & 63) == 0) {
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
