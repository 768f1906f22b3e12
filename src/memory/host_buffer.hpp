// Host buffers: library-owned portable pinned memory
// (cuMemHostAlloc with CU_MEMHOSTALLOC_PORTABLE), usable by every runtime.
// Transfers to or from one DMA directly and keep it alive through the
// transferring runtime's completion epoch, so releasing it with DMA in
// flight defers the free until that DMA is done. It keeps the runtime that
// allocated it alive (for the context its free needs); when that runtime's
// completion can no longer be proven, the memory is leaked and counted.
#pragma once

#include <cstdint>

#include "core/object.hpp"
#include "core/runtime.hpp"

namespace t4a::memory {

class HostBuffer final : public core::Object {
public:
  static t4a_status alloc(core::Runtime &rt, uint64_t bytes,
                          core::Ref<HostBuffer> *out);
  ~HostBuffer() override;
  unsigned char *data() const { return ptr_; }
  uint64_t bytes() const { return bytes_; }

private:
  explicit HostBuffer(core::Runtime &rt);
  core::Ref<core::Runtime> rt_;
  unsigned char *ptr_ = nullptr;
  uint64_t bytes_ = 0;
};

} // namespace t4a::memory
