// Device buffers: stream-ordered allocations from the owning
// runtime's pool. The last reference enqueues cuMemFreeAsync on the owning
// runtime's stream — no event, no host wait; work enqueued earlier on that
// stream finishes first by stream order. Operations hold a reference while
// they enqueue, so a buffer released by another thread is freed only after
// their work in stream order. When completion can no longer be proven (the
// runtime is broken or a drain failed) or the buffer is quarantined, the
// memory is leaked and counted instead.
//
// An imported buffer (DLPack, memory/dlpack.hpp) wraps memory it does not
// own: its last reference hands the foreign owner to the runtime's pending
// foreign releases (release_foreign) instead of freeing, and the foreign
// deleter runs once the runtime's work so far is proven complete, outside
// every library lock. A read-only import refuses writes (check_writable).
//
// A view (adopt_view) names memory of a loaded module, a `__device__` or
// `__constant__` variable (cuModuleGetGlobal): it holds the module, never
// frees the memory, and its last reference hands the module to the same
// pending releases (release_view, memory/dlpack.hpp), so the module is
// unloaded only once the runtime's work enqueued before that release is
// proven complete.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "core/borrow.hpp"
#include "core/object.hpp"
#include "core/runtime.hpp"
#include "driver/cuda_api.hpp"
#include "memory/block_cache.hpp"

namespace t4a::memory {

class Buffer final : public core::Object {
public:
  // Admits one allocation on `rt`, whose reference the buffer keeps.
  static t4a_status alloc(core::Ref<core::Runtime> rt, uint64_t bytes,
                          uint32_t flags, core::Ref<Buffer> *out);
  // t4a_buffer_alloc's warm case (flags 0, bytes > 0), in two steps.
  // alloc_warm runs inside the capture-gate window (core::GateSection) in
  // which the caller (capi) borrowed `rt`, from that lookup to the
  // enqueue: false, having done nothing, when the explained path must
  // decide (the runtime's completion is unprovable, the gate is closed by
  // a capture, or the amortized epoch poll is due); true when it ran, with
  // what it made in *w. finish_warm, after the window closed, reports a
  // failed enqueue or counts the allocation and gives the buffer (SUCCESS,
  // *out set).
  struct Warm {
    core::Ref<Buffer> buffer;
    driver::DrvResult result{};
    bool deferring = false; // log delivery deferred by a context retry
  };
  static bool alloc_warm(core::Runtime &rt, uint64_t bytes, Warm *w);
  [[gnu::always_inline]] static t4a_status finish_warm(Warm &w,
                                                       core::Ref<Buffer> *out) {
    if (w.deferring || !w.result) [[unlikely]]
      return finish_warm_cold(w, out);
    Buffer &b = *w.buffer;
    b.rt_->counters().count_allocation(core::borrow::tl_record, b.bytes_);
    *out = std::move(w.buffer);
    return T4A_SUCCESS;
  }
  // Wraps foreign memory [ptr, ptr + bytes) of `rt`'s device; `owner`'s
  // last reference releases it (memory/dlpack.hpp).
  static core::Ref<Buffer> adopt_foreign(core::Ref<core::Runtime> rt,
                                         CUdeviceptr ptr, uint64_t bytes,
                                         bool read_only,
                                         core::Ref<core::Object> owner);
  // Views [ptr, ptr + bytes) of a module of `rt` (a module global),
  // holding `module` until the view's last reference has gone and the
  // runtime's work enqueued before it is complete. `rt` must have the
  // pending releases part (prepare_view_releases, memory/dlpack.hpp).
  static core::Ref<Buffer> adopt_view(core::Ref<core::Runtime> rt,
                                      CUdeviceptr ptr, uint64_t bytes,
                                      core::Ref<core::Object> module);
  ~Buffer() override;

  core::Runtime &runtime() const { return *rt_; }
  CUdeviceptr ptr() const { return ptr_; }
  uint64_t bytes() const { return bytes_; }
  bool read_only() const { return read_only_; }
  bool imported() const { return foreign_ && !view_; }
  // A view of a module global (adopt_view): never freed by the library.
  bool view() const { return view_; }
  // Never free this memory (a failure after enqueue touched it).
  void quarantine();

  // Buffers are made and destroyed on the allocation path: their memory
  // comes from a per-thread block cache.
  static void *operator new(size_t size);
  static void operator delete(void *p) noexcept;

private:
  // finish_warm after a context retry (its log delivery deferred) or a
  // failed enqueue.
  static t4a_status finish_warm_cold(Warm &w, core::Ref<Buffer> *out);
  explicit Buffer(core::Ref<core::Runtime> rt);
  core::Ref<core::Runtime> rt_;
  CUdeviceptr ptr_ = 0;
  uint64_t bytes_ = 0;
  bool quarantined_ = false;
  bool read_only_ = false;
  bool view_ = false;               // foreign_ is the module of a view
  core::Ref<core::Object> foreign_; // the foreign owner of an import
};

// An imported buffer's last reference: keeps `owner` until the runtime's
// work enqueued so far is complete, then drops it outside every library
// lock (memory/dlpack.cpp). Runs no user code itself.
void release_foreign(core::Runtime &rt, core::Ref<core::Object> owner);
// A view's last reference: keeps `module` until the runtime's work
// enqueued so far is complete, then drops it (memory/dlpack.cpp). Runs no
// user code; takes no admission.
void release_view(core::Runtime &rt, core::Ref<core::Object> module);

// Device memory used internally (download snapshots), with the same
// free-or-leak rule as a buffer; allocated and freed on the runtime stream.
// T4A_ERROR_CAPTURING (naming `what`) while the runtime captures. With
// `zeroed`, the memory is also zeroed on the stream; *zeroed is that
// memset's result (set only when the allocation succeeded).
t4a_status device_alloc(core::Runtime &rt, uint64_t bytes, CUdeviceptr *out,
                        const char *what, driver::DrvResult *zeroed = nullptr);
void device_free(core::Runtime &rt, CUdeviceptr ptr, uint64_t bytes);

// INVALID_ARGUMENT naming `arg` when [offset, offset + bytes) overflows or
// goes past `size`.
t4a_status check_range(const char *arg, uint64_t offset, uint64_t bytes,
                       uint64_t size);
// INVALID_ARGUMENT naming `arg` when the buffer is a read-only import.
t4a_status check_writable(const char *arg, const Buffer &b);
// WRONG_RUNTIME naming `arg` when the buffer belongs to another runtime.
t4a_status check_owner(const char *arg, const Buffer &b,
                       const core::Runtime &rt);

} // namespace t4a::memory
