// Device buffer entry points.
#include "capi/buffer_args.hpp"
#include "capi/entry.hpp"
#include "capi/handles.hpp"
#include "memory/buffer.hpp"
#include "memory/cross_copy.hpp"
#include "memory/transfer.hpp"

using namespace t4a;
using capi::in;
using core::Ref;

namespace {
// t4a_buffer_alloc's explained path: every check in argument order, the
// zero-size and zeroing cases, the amortized epoch poll (out of line: the
// warm case's frame stays small).
[[gnu::noinline]] t4a_status alloc_explained(t4a_runtime runtime,
                                             uint64_t bytes, uint32_t flags,
                                             t4a_buffer *buffer) {
  return capi::call(
      in(runtime, "runtime"), capi::not_null(buffer, "buffer"),
      [&](Ref<core::Runtime> &rt) -> t4a_status {
        if ((flags & ~T4A_BUFFER_ZERO) != 0)
          return core::fail(
              T4A_ERROR_INVALID_ARGUMENT,
              "flags is 0x%x; only T4A_BUFFER_ZERO (0x1) is known", flags);
        if (t4a_status s = core::refuse_capturing(*rt, "t4a_buffer_alloc");
            s != T4A_SUCCESS)
          return s;
        Ref<memory::Buffer> b;
        if (t4a_status s =
                memory::Buffer::alloc(std::move(rt), bytes, flags, &b);
            s != T4A_SUCCESS)
          return s;
        return capi::publish(std::move(b), buffer);
      });
}
} // namespace

extern "C" {

T4A_API t4a_status t4a_buffer_alloc(t4a_runtime runtime, uint64_t bytes,
                                    uint32_t flags, t4a_buffer *buffer) {
  return T4A_ENTRY({
    // The warm case first: the runtime borrowed in one capture-gate
    // window, no reference taken on it but the buffer's
    // (memory/buffer.hpp); anything it does not take on (a handle that
    // does not resolve included) runs the explained path, which reports
    // it.
    if (buffer != nullptr && flags == 0 && bytes != 0) [[likely]] {
      memory::Buffer::Warm w;
      bool ran = false;
      {
        core::GateSection window;
        if (core::Runtime *rt = capi::borrow_quietly(in(runtime, "runtime")))
            [[likely]]
          ran = memory::Buffer::alloc_warm(*rt, bytes, &w);
      }
      if (ran) [[likely]] {
        Ref<memory::Buffer> b;
        if (t4a_status s = memory::Buffer::finish_warm(w, &b); s != T4A_SUCCESS)
            [[unlikely]]
          return s;
        return capi::publish(std::move(b), buffer);
      }
    }
    return alloc_explained(runtime, bytes, flags, buffer);
  });
}

T4A_API t4a_status t4a_buffer_retain(t4a_buffer buffer) {
  return T4A_ENTRY({ return capi::retain(buffer, "buffer"); });
}

T4A_API t4a_status t4a_buffer_release(t4a_buffer buffer) {
  return T4A_ENTRY({ return capi::release(buffer, "buffer"); });
}

T4A_API t4a_status t4a_buffer_info_get(t4a_buffer buffer,
                                       t4a_buffer_info *info) {
  return T4A_ENTRY({
    return capi::call(in(buffer, "buffer"), capi::out_struct(info, "info"),
                      [&](Ref<memory::Buffer> &b) -> t4a_status {
                        t4a_buffer_info full = T4A_BUFFER_INFO_INIT;
                        full.bytes = b->bytes();
                        full.device_pointer = b->ptr();
                        full.runtime.id = b->runtime().handle_id();
                        full.device_ordinal = b->runtime().ordinal();
                        full.flags =
                            (b->read_only() ? T4A_BUFFER_INFO_READ_ONLY : 0u) |
                            (b->imported() ? T4A_BUFFER_INFO_IMPORTED : 0u) |
                            (b->view() ? T4A_BUFFER_INFO_VIEW : 0u);
                        core::write_struct(info, full);
                        return T4A_SUCCESS;
                      });
  });
}

T4A_API t4a_status t4a_buffer_fill(t4a_runtime runtime, t4a_buffer buffer,
                                   uint64_t offset, uint64_t bytes,
                                   uint8_t value) {
  return T4A_ENTRY({
    return capi::call_on_range(
        runtime, buffer, "buffer", offset, bytes,
        [&](core::Runtime &rt, memory::Buffer &b) -> t4a_status {
          if (t4a_status s = memory::check_writable("buffer", b);
              s != T4A_SUCCESS)
            return s;
          return memory::fill(rt, b, offset, bytes, value);
        });
  });
}

T4A_API t4a_status t4a_buffer_copy(t4a_runtime runtime, t4a_buffer dst,
                                   uint64_t dst_offset, t4a_buffer src,
                                   uint64_t src_offset, uint64_t bytes) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), in(dst, "dst"), in(src, "src"),
        [&](Ref<core::Runtime> &rt, Ref<memory::Buffer> &d,
            Ref<memory::Buffer> &sb) -> t4a_status {
          // The owner of dst before either range. src may belong to any
          // runtime (a copy between runtimes).
          if (&d->runtime() != rt.get())
            return core::fail(
                T4A_ERROR_WRONG_RUNTIME,
                "dst belongs to runtime domain %llu (device %d), not to the "
                "runtime given (domain %llu, device %d); a copy runs on the "
                "runtime of dst (src belongs to runtime domain %llu, device "
                "%d)",
                static_cast<unsigned long long>(d->runtime().domain()),
                d->runtime().ordinal(),
                static_cast<unsigned long long>(rt->domain()), rt->ordinal(),
                static_cast<unsigned long long>(sb->runtime().domain()),
                sb->runtime().ordinal());
          if (t4a_status s =
                  memory::check_range("dst", dst_offset, bytes, d->bytes());
              s != T4A_SUCCESS)
            return s;
          if (t4a_status s = memory::check_writable("dst", *d);
              s != T4A_SUCCESS)
            return s;
          if (t4a_status s =
                  memory::check_range("src", src_offset, bytes, sb->bytes());
              s != T4A_SUCCESS)
            return s;
          // Device address ranges, not handles: a second handle to the
          // same memory (a DLPack import of an export, in this runtime or
          // another of the device) overlaps like the buffer itself. Every
          // path (same runtime, between runtimes, peer, staged) is
          // checked: device addresses are unique in the process (unified
          // addressing), so only memory of one device can overlap.
          if (bytes > 0) {
            uint64_t dlo = d->ptr() + dst_offset, slo = sb->ptr() + src_offset;
            if (dlo < slo + bytes && slo < dlo + bytes)
              return core::fail(
                  T4A_ERROR_INVALID_ARGUMENT,
                  "dst range [%llu, %llu) (device addresses [0x%llx, "
                  "0x%llx)) overlaps src range [%llu, %llu) (device "
                  "addresses [0x%llx, 0x%llx)) %s; CUDA leaves overlapping "
                  "copies undefined",
                  static_cast<unsigned long long>(dst_offset),
                  static_cast<unsigned long long>(dst_offset + bytes),
                  static_cast<unsigned long long>(dlo),
                  static_cast<unsigned long long>(dlo + bytes),
                  static_cast<unsigned long long>(src_offset),
                  static_cast<unsigned long long>(src_offset + bytes),
                  static_cast<unsigned long long>(slo),
                  static_cast<unsigned long long>(slo + bytes),
                  d.get() == sb.get()
                      ? "of the same buffer"
                      : "of another handle to the same memory (dst and src "
                        "share device memory, e.g. a DLPack import of the "
                        "other)");
          }
          if (&sb->runtime() != rt.get()) {
            // Captured copies stay within one runtime's stream.
            if (t4a_status s = core::refuse_capturing(
                    *rt, "t4a_buffer_copy between two runtimes");
                s != T4A_SUCCESS)
              return s;
            if (t4a_status s = core::refuse_capturing(
                    sb->runtime(), "t4a_buffer_copy between two runtimes");
                s != T4A_SUCCESS)
              return s;
            return memory::copy_between(*rt, *d, dst_offset, *sb, src_offset,
                                        bytes);
          }
          return memory::copy(*rt, *d, dst_offset, *sb, src_offset, bytes);
        });
  });
}

T4A_API t4a_status t4a_runtime_enable_peer(t4a_runtime runtime,
                                           t4a_runtime peer) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), in(peer, "peer"),
        [&](Ref<core::Runtime> &a, Ref<core::Runtime> &b) -> t4a_status {
          if (t4a_status s =
                  core::refuse_capturing(*a, "t4a_runtime_enable_peer");
              s != T4A_SUCCESS)
            return s;
          if (t4a_status s =
                  core::refuse_capturing(*b, "t4a_runtime_enable_peer");
              s != T4A_SUCCESS)
            return s;
          return memory::enable_peer(*a, *b);
        });
  });
}

} // extern "C"
