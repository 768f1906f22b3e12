// DLPack checks that need no driver (memory/dlpack.cpp calls them, in the
// order the rules in docs/dlpack.md give): the element size of a dtype,
// C-contiguous strides, the element span of a shape and strides, a
// t4a_dlpack_desc against the buffer it exports, an imported DLTensor's
// fields and byte range, and that byte range against the allocation the
// driver reports (cuMemGetAddressRange). Pure: SUCCESS or the rejection
// naming the field and its values (core::Check); outputs are written only
// when accepted; nothing recorded. Fuzzed by fuzz/fuzz_dlpack_validation.cpp.
#pragma once

#include <cstdint>

#include "core/check.hpp"
#include "t4acuda.h"
#include "t4acuda_dlpack.h"

namespace t4a::memory {

// The element span of a shape and strides (in elements): whether it is
// empty (an extent is 0) and, if not, the lowest (<= 0) and highest (>= 0)
// element offsets.
struct Span {
  bool empty = false;
  int64_t lo = 0, hi = 0;
};

// Rejected for a negative extent or 64-bit overflow. `prefix` starts every
// field name ("desc->", "tensor->dl_tensor.").
void span_of(const char *prefix, int32_t ndim, const int64_t *shape,
             const int64_t *strides, Span *out, core::Check *c);

// C-contiguous strides (in elements) of `shape` into `strides` (written up
// to the dimension that overflows); rejected when the element count
// overflows 64 bits.
void compact_strides(const char *prefix, int32_t ndim, const int64_t *shape,
                     int64_t *strides, core::Check *c);

// Bytes per element of a dtype (bits * lanes, a positive multiple of 8);
// rejected for an unknown code or a sub-byte size.
void element_bytes(const char *prefix, uint8_t code, uint8_t bits,
                   uint16_t lanes, uint64_t *out, core::Check *c);

// An accepted export: what the tensor says.
struct ExportLayout {
  bool read_only = false;
  uint8_t code = 0, bits = 0;
  uint16_t lanes = 0;
  int32_t ndim = 0; // 1..T4A_DLPACK_MAX_NDIM
  int64_t shape[T4A_DLPACK_MAX_NDIM] = {};
  int64_t strides[T4A_DLPACK_MAX_NDIM] = {};
};

// `d` (already read through its struct_size) for a buffer of
// `buffer_bytes` (read-only when `buffer_read_only`), exported as a legacy
// tensor when `legacy`, with `consumer_stream` in the DLPack coding.
// Rejected, in this order: unknown flags; a read-only legacy export;
// consumer_stream 0 or below -1; the dtype; ndim; byte_offset past the
// end; ndim 0 over bytes that are not whole elements; a NULL shape; the
// element count (NULL strides) or the span overflowing; bytes reached
// below byte_offset or past the end of the buffer.
void check_export_desc(const t4a_dlpack_desc &d, uint64_t buffer_bytes,
                       bool buffer_read_only, bool legacy,
                       int64_t consumer_stream, ExportLayout *out,
                       core::Check *c);

// The bytes an accepted import reaches: [start, start + bytes), from the
// lowest element to the end of the highest; bytes 0 (start 0) for an
// empty tensor.
struct ImportRange {
  uint64_t start = 0;
  uint64_t bytes = 0;
};

// An imported tensor's fields for a runtime of device `ordinal`; `version`
// is NULL for a legacy tensor. Rejected, in this order: a major version
// other than 1; the device type and id; the dtype; ndim; a NULL shape;
// the element count (NULL strides) or the span overflowing; NULL data for
// a tensor with elements; a range outside the 64-bit address space.
void check_import_tensor(const DLTensor &t, const DLPackVersion *version,
                         int32_t ordinal, ImportRange *out, core::Check *c);

// An accepted import's range (not empty) against the allocation the
// driver reports holding its first byte: `alloc_bytes` from `alloc_base`.
// Rejected unless [start, start + bytes) lies inside it; the message names
// both sizes. `data` and `byte_offset` are the tensor's, for the message.
void check_import_allocation(const ImportRange &r, const void *data,
                             uint64_t byte_offset, uint64_t alloc_base,
                             uint64_t alloc_bytes, core::Check *c);

} // namespace t4a::memory
