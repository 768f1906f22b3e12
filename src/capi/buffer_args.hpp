// A runtime operation on a byte range of one of its device buffers: the
// capi::call shape with the buffer's own checks. In order: the runtime
// handle, the buffer handle, the buffer belongs to the runtime
// (WRONG_RUNTIME), the range lies inside it (INVALID_ARGUMENT), each
// naming its argument; then the body, given the runtime and the buffer
// (call_on_range: as references held; call_on_range_borrowed: borrowed,
// inside the borrow section, see capi::call_borrowed).
#pragma once

#include "capi/handles.hpp"
#include "memory/buffer.hpp"

namespace t4a::capi {

// Whether memory::check_range would pass, inline (it is called only to
// report a failure): [offset, offset + bytes) inside [0, size), without
// overflow.
inline bool range_inside(uint64_t offset, uint64_t bytes, uint64_t size) {
  return offset <= size && bytes <= size - offset;
}

inline t4a_status check_buffer_range(const char *arg, const memory::Buffer &b,
                                     const core::Runtime &rt, uint64_t offset,
                                     uint64_t bytes) {
  // The passing case inline; the out-of-line checks report the failure.
  if (&b.runtime() == &rt && range_inside(offset, bytes, b.bytes())) [[likely]]
    return T4A_SUCCESS;
  if (t4a_status s = memory::check_owner(arg, b, rt); s != T4A_SUCCESS)
    return s;
  return memory::check_range(arg, offset, bytes, b.bytes());
}

// memory::check_writable with the passing case inline.
inline t4a_status check_writable(const char *arg, const memory::Buffer &b) {
  if (!b.read_only()) [[likely]]
    return T4A_SUCCESS;
  return memory::check_writable(arg, b);
}

// `body(core::Runtime &, memory::Buffer &)` returns t4a_status.
template <class Body>
t4a_status call_on_range(t4a_runtime runtime, t4a_buffer buffer,
                         const char *arg, uint64_t offset, uint64_t bytes,
                         Body &&body) {
  return call(in(runtime, "runtime"), in(buffer, arg),
              [&](core::Ref<core::Runtime> &rt,
                  core::Ref<memory::Buffer> &b) -> t4a_status {
                if (t4a_status s =
                        check_buffer_range(arg, *b, *rt, offset, bytes);
                    s != T4A_SUCCESS)
                  return s;
                return body(*rt, *b);
              });
}

// The same with capi::call_borrowed: `body(core::BorrowSection &,
// core::Runtime &, memory::Buffer &)` runs inside the borrow section.
template <class Body>
t4a_status call_on_range_borrowed(t4a_runtime runtime, t4a_buffer buffer,
                                  const char *arg, uint64_t offset,
                                  uint64_t bytes, Body &&body) {
  return call_borrowed(in(runtime, "runtime"), in(buffer, arg),
                       [&](core::BorrowSection &section, core::Runtime &rt,
                           memory::Buffer &b) -> t4a_status {
                         if (t4a_status s =
                                 check_buffer_range(arg, b, rt, offset, bytes);
                             s != T4A_SUCCESS)
                           return s;
                         return body(section, rt, b);
                       });
}

} // namespace t4a::capi
