// Device buffer entry points (R-MEM).
#include "capi/barrier.hpp"
#include "core/struct_io.hpp"
#include "memory/buffer.hpp"
#include "memory/transfer.hpp"

using namespace t4a;
using core::Kind;
using core::Ref;

namespace {
t4a_status get_buffer(t4a_buffer h, const char *arg, Ref<memory::Buffer> *out) {
  return capi::resolve(h.id, Kind::Buffer, arg, out);
}
} // namespace

extern "C" {

T4A_API t4a_status t4a_buffer_alloc(t4a_runtime runtime, uint64_t bytes,
                                    uint32_t flags, t4a_buffer *buffer) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    if (t4a_status s = capi::resolve_runtime(runtime, &rt); s != T4A_SUCCESS)
      return s;
    if (buffer == nullptr) return capi::null_arg("buffer");
    if ((flags & ~T4A_BUFFER_ZERO) != 0)
      return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                        "flags is 0x%x; only T4A_BUFFER_ZERO (0x1) is known",
                        flags);
    Ref<memory::Buffer> b;
    if (t4a_status s = memory::Buffer::alloc(std::move(rt), bytes, flags, &b);
        s != T4A_SUCCESS)
      return s;
    buffer->id = capi::publish(std::move(b));
    return T4A_SUCCESS;
  });
}

T4A_API t4a_status t4a_buffer_retain(t4a_buffer buffer) {
  return T4A_ENTRY(
      { return capi::retain_handle(buffer.id, Kind::Buffer, "buffer"); });
}

T4A_API t4a_status t4a_buffer_release(t4a_buffer buffer) {
  return T4A_ENTRY(
      { return capi::release_handle(buffer.id, Kind::Buffer, "buffer"); });
}

T4A_API t4a_status t4a_buffer_info_get(t4a_buffer buffer,
                                       t4a_buffer_info *info) {
  return T4A_ENTRY({
    Ref<memory::Buffer> b;
    if (t4a_status s = get_buffer(buffer, "buffer", &b); s != T4A_SUCCESS)
      return s;
    if (t4a_status s = core::check_out_struct(info, "info"); s != T4A_SUCCESS)
      return s;
    t4a_buffer_info full = T4A_BUFFER_INFO_INIT;
    full.bytes = b->bytes();
    full.device_pointer = b->ptr();
    full.runtime.id = b->runtime().handle_id();
    full.device_ordinal = b->runtime().ordinal();
    core::write_struct(info, full);
    return T4A_SUCCESS;
  });
}

T4A_API t4a_status t4a_buffer_fill(t4a_runtime runtime, t4a_buffer buffer,
                                   uint64_t offset, uint64_t bytes,
                                   uint8_t value) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    if (t4a_status s = capi::resolve_runtime(runtime, &rt); s != T4A_SUCCESS)
      return s;
    Ref<memory::Buffer> b;
    if (t4a_status s = get_buffer(buffer, "buffer", &b); s != T4A_SUCCESS)
      return s;
    if (t4a_status s = memory::check_owner("buffer", *b, *rt); s != T4A_SUCCESS)
      return s;
    if (t4a_status s = memory::check_range("buffer", offset, bytes, b->bytes());
        s != T4A_SUCCESS)
      return s;
    return memory::fill(*rt, *b, offset, bytes, value);
  });
}

T4A_API t4a_status t4a_buffer_copy(t4a_runtime runtime, t4a_buffer dst,
                                   uint64_t dst_offset, t4a_buffer src,
                                   uint64_t src_offset, uint64_t bytes) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    if (t4a_status s = capi::resolve_runtime(runtime, &rt); s != T4A_SUCCESS)
      return s;
    Ref<memory::Buffer> d, sb;
    if (t4a_status s = get_buffer(dst, "dst", &d); s != T4A_SUCCESS) return s;
    if (t4a_status s = get_buffer(src, "src", &sb); s != T4A_SUCCESS) return s;
    if (t4a_status s = memory::check_owner("dst", *d, *rt); s != T4A_SUCCESS)
      return s;
    if (t4a_status s = memory::check_owner("src", *sb, *rt); s != T4A_SUCCESS)
      return s;
    if (t4a_status s =
            memory::check_range("dst", dst_offset, bytes, d->bytes());
        s != T4A_SUCCESS)
      return s;
    if (t4a_status s =
            memory::check_range("src", src_offset, bytes, sb->bytes());
        s != T4A_SUCCESS)
      return s;
    if (d.get() == sb.get() && bytes > 0 && dst_offset < src_offset + bytes &&
        src_offset < dst_offset + bytes)
      return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                        "dst range [%llu, %llu) overlaps src range [%llu, "
                        "%llu) of the same buffer",
                        static_cast<unsigned long long>(dst_offset),
                        static_cast<unsigned long long>(dst_offset + bytes),
                        static_cast<unsigned long long>(src_offset),
                        static_cast<unsigned long long>(src_offset + bytes));
    return memory::copy(*rt, *d, dst_offset, *sb, src_offset, bytes);
  });
}

} // extern "C"
