// Device buffers: stream-ordered allocations from the owning
// runtime's pool. The last reference enqueues cuMemFreeAsync on the owning
// runtime's stream — no event, no host wait; work enqueued earlier on that
// stream finishes first by stream order. Operations hold a reference while
// they enqueue, so a buffer released by another thread is freed only after
// their work in stream order. When completion can no longer be proven (the
// runtime is broken or a drain failed) or the buffer is quarantined, the
// memory is leaked and counted instead.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "core/block_cache.hpp"
#include "core/object.hpp"
#include "core/runtime.hpp"

namespace t4a::memory {

class Buffer final : public core::Object {
public:
  // Admits one allocation on `rt`, whose reference the buffer keeps.
  static t4a_status alloc(core::Ref<core::Runtime> rt, uint64_t bytes,
                          uint32_t flags, core::Ref<Buffer> *out);
  ~Buffer() override;

  core::Runtime &runtime() const { return *rt_; }
  CUdeviceptr ptr() const { return ptr_; }
  uint64_t bytes() const { return bytes_; }
  // Never free this memory (a failure after enqueue touched it).
  void quarantine();

  // Buffers are made and destroyed on the allocation path: their memory
  // comes from a per-thread block cache.
  static void *operator new(size_t size);
  static void operator delete(void *p) noexcept;

private:
  explicit Buffer(core::Ref<core::Runtime> rt);
  core::Ref<core::Runtime> rt_;
  CUdeviceptr ptr_ = 0;
  uint64_t bytes_ = 0;
  bool quarantined_ = false;
};

// Device memory used internally (download snapshots), with the same
// free-or-leak rule as a buffer; allocated and freed on the runtime stream.
t4a_status device_alloc(core::Runtime &rt, uint64_t bytes, CUdeviceptr *out,
                        const char *what);
void device_free(core::Runtime &rt, CUdeviceptr ptr, uint64_t bytes);

// INVALID_ARGUMENT naming `arg` when [offset, offset + bytes) overflows or
// goes past `size`.
t4a_status check_range(const char *arg, uint64_t offset, uint64_t bytes,
                       uint64_t size);
// WRONG_RUNTIME naming `arg` when the buffer belongs to another runtime.
t4a_status check_owner(const char *arg, const Buffer &b,
                       const core::Runtime &rt);

} // namespace t4a::memory
