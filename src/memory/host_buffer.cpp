#include "memory/host_buffer.hpp"

#include "core/context_scope.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "driver/result_class.hpp"

namespace t4a::memory {

using namespace t4a::driver;

HostBuffer::HostBuffer(core::Runtime &rt)
    : Object(core::Kind::HostBuffer), rt_(&rt) {}

t4a_status HostBuffer::alloc(core::Runtime &rt, uint64_t bytes,
                             core::Ref<HostBuffer> *out) {
  auto h = core::Ref<HostBuffer>::adopt(new HostBuffer(rt));
  h->bytes_ = bytes;
  if (bytes > 0) {
    core::ContextScope scope;
    if (t4a_status s = scope.enter(rt.context(), "allocating a host buffer");
        s != T4A_SUCCESS)
      return s;
    void *p = nullptr;
    DrvResult r = cu::mem_host_alloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE);
    if (r.code == CUDA_ERROR_OUT_OF_MEMORY)
      return core::fail_message(
          T4A_ERROR_OUT_OF_HOST_MEMORY,
          core::format("allocating %llu bytes of pinned host memory: %s "
                       "returned %s",
                       static_cast<unsigned long long>(bytes), r.entry,
                       core::describe(r.code).c_str()),
          static_cast<int32_t>(r.code));
    if (!r) return rt.fail_op(r, "allocating a host buffer");
    h->ptr_ = static_cast<unsigned char *>(p);
  }
  *out = std::move(h);
  return T4A_SUCCESS;
}

HostBuffer::~HostBuffer() {
  if (ptr_ == nullptr) return;
  if (rt_->completion_unprovable()) {
    core::ProcessCounters::instance().leaked_host_buffers.add();
    return;
  }
  core::ContextScope scope;
  if (scope.enter(rt_->context(), "freeing a host buffer", false) !=
      T4A_SUCCESS) {
    core::ProcessCounters::instance().leaked_host_buffers.add();
    return;
  }
  if (auto r = cu::mem_free_host(ptr_); !r && !is_driver_gone(r.code)) {
    core::ProcessCounters::instance().leaked_host_buffers.add();
    core::logf(T4A_LOG_WARN, "host buffer of %llu bytes leaked: %s returned %s",
               static_cast<unsigned long long>(bytes_), r.entry,
               core::describe(r.code).c_str());
  }
}

} // namespace t4a::memory
