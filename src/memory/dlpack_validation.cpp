#include "memory/dlpack_validation.hpp"

#include <cstring>

namespace t4a::memory {

namespace {
using ll = long long;
using ull = unsigned long long;
} // namespace

void span_of(const char *prefix, int32_t ndim, const int64_t *shape,
             const int64_t *strides, Span *out, core::Check *c) {
  Span s;
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] < 0)
      return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                       "%sshape[%d] is %lld; extents must not be negative",
                       prefix, i, static_cast<ll>(shape[i]));
    if (shape[i] == 0) s.empty = true;
  }
  if (s.empty) {
    *out = s;
    return;
  }
  for (int32_t i = 0; i < ndim; ++i) {
    int64_t reach = 0;
    if (__builtin_mul_overflow(shape[i] - 1, strides[i], &reach))
      return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                       "%sshape[%d] (%lld) times %sstrides[%d] (%lld) "
                       "overflows 64 bits",
                       prefix, i, static_cast<ll>(shape[i]), prefix, i,
                       static_cast<ll>(strides[i]));
    int64_t *side = reach < 0 ? &s.lo : &s.hi;
    if (__builtin_add_overflow(*side, reach, side))
      return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                       "%sshape and %sstrides reach past 64 bits at "
                       "dimension %d",
                       prefix, prefix, i);
  }
  *out = s;
}

void compact_strides(const char *prefix, int32_t ndim, const int64_t *shape,
                     int64_t *strides, core::Check *c) {
  int64_t step = 1;
  for (int32_t i = ndim - 1; i >= 0; --i) {
    strides[i] = step;
    if (shape[i] > 0 && __builtin_mul_overflow(step, shape[i], &step))
      return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                       "%sshape: the element count overflows 64 bits at "
                       "dimension %d (%lld)",
                       prefix, i, static_cast<ll>(shape[i]));
  }
}

void element_bytes(const char *prefix, uint8_t code, uint8_t bits,
                   uint16_t lanes, uint64_t *out, core::Check *c) {
  if (code > kDLBool)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "%sdtype code is %u; known codes are kDLInt (0), kDLUInt "
                     "(1), kDLFloat (2), kDLOpaqueHandle (3), kDLBfloat (4), "
                     "kDLComplex (5) and kDLBool (6)",
                     prefix, code);
  uint64_t total = static_cast<uint64_t>(bits) * lanes;
  if (total == 0 || total % 8 != 0)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "%sdtype bits (%u) times lanes (%u) is %llu; it must be "
                     "a positive multiple of 8 (sub-byte element types are "
                     "not supported)",
                     prefix, bits, lanes, static_cast<ull>(total));
  *out = total / 8;
}

namespace {

// check_export_desc, step 1: flags, read-only and the consumer stream.
void check_export_access(const t4a_dlpack_desc &d, bool buffer_read_only,
                         bool legacy, int64_t consumer_stream, ExportLayout *x,
                         core::Check *c) {
  if ((d.flags & ~T4A_DLPACK_READ_ONLY) != 0)
    return c->reject(
        T4A_ERROR_INVALID_ARGUMENT,
        "desc->flags is 0x%x; only T4A_DLPACK_READ_ONLY (0x1) is known",
        d.flags);
  x->read_only = (d.flags & T4A_DLPACK_READ_ONLY) != 0 || buffer_read_only;
  if (legacy && x->read_only)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "%s: a legacy DLManagedTensor has no flags to say it is "
                     "read-only; use t4a_buffer_to_dlpack",
                     buffer_read_only ? "the buffer is a read-only import"
                                      : "desc->flags has T4A_DLPACK_READ_ONLY");
  if (consumer_stream == 0)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "consumer_stream is 0, which the DLPack stream coding "
                     "leaves ambiguous; pass 1 (the legacy default stream), 2 "
                     "(the per-thread default stream), -1 (no "
                     "synchronization) or a CUstream");
  if (consumer_stream < -1)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "consumer_stream is %lld; the DLPack stream coding knows "
                     "-1, 1, 2 and CUstream values",
                     static_cast<ll>(consumer_stream));
}

// check_export_desc, last step: the elements the shape and strides reach,
// [byte_offset + lo * elem, byte_offset + (hi + 1) * elem), lie inside the
// buffer.
void check_export_extent(const t4a_dlpack_desc &d, uint64_t buffer_bytes,
                         uint64_t elem, const ExportLayout &x, core::Check *c) {
  Span sp;
  span_of("desc->", x.ndim, x.shape, x.strides, &sp, c);
  if (!c->ok() || sp.empty) return;
  // -lo in unsigned arithmetic: lo may be INT64_MIN.
  int64_t below = 0, above = 0;
  if (__builtin_mul_overflow(0 - static_cast<uint64_t>(sp.lo), elem, &below) ||
      __builtin_add_overflow(sp.hi, 1, &above) ||
      __builtin_mul_overflow(above, static_cast<int64_t>(elem), &above))
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "desc->shape and desc->strides reach past 64 bits of "
                     "bytes");
  if (static_cast<uint64_t>(below) > d.byte_offset)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "desc->strides: negative strides reach %lld bytes "
                     "below the first element, but desc->byte_offset is "
                     "only %llu",
                     static_cast<ll>(below), static_cast<ull>(d.byte_offset));
  if (static_cast<uint64_t>(above) > buffer_bytes - d.byte_offset)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "desc->shape and desc->strides reach byte %llu (%lld "
                     "elements of %llu bytes from desc->byte_offset %llu), "
                     "past the end of the buffer (%llu bytes)",
                     static_cast<ull>(d.byte_offset) + static_cast<ull>(above),
                     static_cast<ll>(sp.hi + 1), static_cast<ull>(elem),
                     static_cast<ull>(d.byte_offset),
                     static_cast<ull>(buffer_bytes));
}

} // namespace

void check_export_desc(const t4a_dlpack_desc &d, uint64_t buffer_bytes,
                       bool buffer_read_only, bool legacy,
                       int64_t consumer_stream, ExportLayout *out,
                       core::Check *c) {
  ExportLayout x;
  check_export_access(d, buffer_read_only, legacy, consumer_stream, &x, c);
  if (!c->ok()) return;
  x.code = d.dtype_code;
  x.bits = d.dtype_bits != 0 ? d.dtype_bits : 8;
  x.lanes = d.dtype_lanes != 0 ? d.dtype_lanes : 1;
  if (d.dtype_bits == 0 && d.dtype_code == 0) x.code = kDLUInt;
  uint64_t elem = 0;
  element_bytes("desc->", x.code, x.bits, x.lanes, &elem, c);
  if (!c->ok()) return;
  if (d.ndim < 0 || d.ndim > T4A_DLPACK_MAX_NDIM)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "desc->ndim is %d; it must be 0..%d", d.ndim,
                     T4A_DLPACK_MAX_NDIM);
  if (d.byte_offset > buffer_bytes)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "desc->byte_offset (%llu) is past the end of the buffer "
                     "(%llu bytes)",
                     static_cast<ull>(d.byte_offset),
                     static_cast<ull>(buffer_bytes));
  x.ndim = d.ndim;
  if (x.ndim == 0) {
    uint64_t rest = buffer_bytes - d.byte_offset;
    if (rest % elem != 0)
      return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                       "desc->ndim is 0 (1-D over the buffer from "
                       "desc->byte_offset): the %llu bytes from byte_offset "
                       "%llu are not a whole number of %llu-byte elements",
                       static_cast<ull>(rest), static_cast<ull>(d.byte_offset),
                       static_cast<ull>(elem));
    x.ndim = 1;
    x.shape[0] = static_cast<int64_t>(rest / elem);
    x.strides[0] = 1;
    *out = x;
    return;
  }
  if (d.shape == nullptr)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "desc->shape is NULL with desc->ndim %d", d.ndim);
  for (int32_t i = 0; i < x.ndim; ++i) x.shape[i] = d.shape[i];
  if (d.strides != nullptr) {
    for (int32_t i = 0; i < x.ndim; ++i) x.strides[i] = d.strides[i];
  } else {
    compact_strides("desc->", x.ndim, x.shape, x.strides, c);
    if (!c->ok()) return;
  }
  check_export_extent(d, buffer_bytes, elem, x, c);
  if (c->ok()) *out = x;
}

void check_import_tensor(const DLTensor &t, const DLPackVersion *version,
                         int32_t ordinal, ImportRange *out, core::Check *c) {
  if (version != nullptr && version->major != DLPACK_MAJOR_VERSION)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "tensor->version is %u.%u; only DLPack major version 1 "
                     "is supported (the tensor's deleter was called)",
                     version->major, version->minor);
  const char *pre = "tensor->dl_tensor.";
  // Read as the int32 the ABI stores: a producer may write any value, and
  // loading one outside the enumerators as the enum is undefined in C++.
  int32_t type = 0;
  static_assert(sizeof t.device.device_type == sizeof type);
  std::memcpy(&type, &t.device.device_type, sizeof type);
  if (type != kDLCUDA && type != kDLCUDAManaged)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "%sdevice.device_type is %d; only kDLCUDA (2) and "
                     "kDLCUDAManaged (13) tensors can be imported",
                     pre, static_cast<int>(type));
  if (t.device.device_id != ordinal)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "%sdevice.device_id is %d, but the runtime is of device "
                     "%d",
                     pre, t.device.device_id, ordinal);
  uint64_t elem = 0;
  element_bytes(pre, t.dtype.code, t.dtype.bits, t.dtype.lanes, &elem, c);
  if (!c->ok()) return;
  if (t.ndim < 0 || t.ndim > T4A_DLPACK_MAX_NDIM)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "%sndim is %d; it must be 0..%d", pre, t.ndim,
                     T4A_DLPACK_MAX_NDIM);
  if (t.ndim > 0 && t.shape == nullptr)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT, "%sshape is NULL with ndim %d",
                     pre, t.ndim);
  int64_t strides[T4A_DLPACK_MAX_NDIM] = {};
  if (t.strides != nullptr) {
    for (int32_t i = 0; i < t.ndim; ++i) strides[i] = t.strides[i];
  } else {
    compact_strides(pre, t.ndim, t.shape, strides, c);
    if (!c->ok()) return;
  }
  Span sp;
  span_of(pre, t.ndim, t.shape, strides, &sp, c);
  if (!c->ok()) return;
  ImportRange r;
  if (!sp.empty) {
    if (t.data == nullptr)
      return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                       "%sdata is NULL for a tensor with elements", pre);
    // [data + byte_offset + lo * elem, data + byte_offset + (hi+1) * elem)
    uint64_t base = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(t.data));
    // hi >= 0 >= lo: -lo and hi - lo fit 64 unsigned bits (lo may be
    // INT64_MIN, hi - lo may pass INT64_MAX).
    uint64_t first = 0, below = 0, count = 0;
    uint64_t down = 0 - static_cast<uint64_t>(sp.lo);
    if (__builtin_add_overflow(base, t.byte_offset, &first) ||
        __builtin_mul_overflow(down, elem, &below) || below > first ||
        __builtin_add_overflow(static_cast<uint64_t>(sp.hi) + down, 1,
                               &count) ||
        __builtin_mul_overflow(count, elem, &r.bytes) ||
        first - below > UINT64_MAX - r.bytes)
      return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                       "%sdata (%p) + byte_offset (%llu) with the shape and "
                       "strides reaches outside the 64-bit address space",
                       pre, t.data, static_cast<ull>(t.byte_offset));
    r.start = first - below;
  }
  *out = r;
}

void check_import_allocation(const ImportRange &r, const void *data,
                             uint64_t byte_offset, uint64_t alloc_base,
                             uint64_t alloc_bytes, core::Check *c) {
  // Inside exactly when start >= base and start + bytes <= base + size
  // (neither end wraps: check_import_tensor keeps start + bytes in 64
  // bits; the driver's allocation is in the address space).
  bool inside = r.start >= alloc_base && r.start - alloc_base <= alloc_bytes &&
                r.bytes <= alloc_bytes - (r.start - alloc_base);
  if (inside) return;
  c->reject(T4A_ERROR_INVALID_ARGUMENT,
            "tensor->dl_tensor: the tensor describes %llu bytes at 0x%llx "
            "(data %p + byte_offset %llu, with its shape and strides), but "
            "the allocation holding 0x%llx is %llu bytes at 0x%llx "
            "(cuMemGetAddressRange): the tensor reaches %s it",
            static_cast<ull>(r.bytes), static_cast<ull>(r.start), data,
            static_cast<ull>(byte_offset), static_cast<ull>(r.start),
            static_cast<ull>(alloc_bytes), static_cast<ull>(alloc_base),
            r.start < alloc_base ? "below" : "past the end of");
}

} // namespace t4a::memory
