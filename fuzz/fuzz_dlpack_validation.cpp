// libFuzzer target: the DLPack checks that need no driver
// (src/memory/dlpack_validation.hpp) on dtypes, shapes, strides, export
// descriptors, imported tensors and allocations built from arbitrary
// bytes. Each check is compared with a model written here in 128-bit
// arithmetic from the header's and docs/dlpack.md's rules:
//   element_bytes: accepted exactly for a known code and bits * lanes a
//     positive multiple of 8; then bits * lanes / 8;
//   compact_strides: accepted exactly when no suffix product of the
//     positive extents passes INT64_MAX; then C-contiguous strides;
//   span_of: refused for the first negative extent; empty when an extent
//     is 0; else the lowest and highest element offsets, refused exactly
//     when a product or a running sum passes 64 signed bits;
//   check_export_desc: accepted exactly when the model accepts; then every
//     byte the tensor reaches is inside the buffer, the dtype defaults and
//     read-only flag are the documented ones;
//   check_import_tensor: accepted exactly when the model accepts; then
//     [start, start + bytes) is the lowest element's first byte to the
//     highest's last, inside the 64-bit address space;
//   check_import_allocation: accepted exactly when the range is inside
//     [base, base + size); a refusal names both sizes.
// Every refusal is INVALID_ARGUMENT with a message, its output untouched.
// Never a crash or a sanitizer report.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "memory/dlpack_validation.hpp"

#include "fuzz_reader.hpp"

namespace {

using t4a::core::Check;
using t4a_fuzz::Reader;
using i128 = __int128;

constexpr i128 kI64Max = INT64_MAX;
constexpr i128 kI64Min = INT64_MIN;
constexpr i128 kU64Max = static_cast<i128>(UINT64_MAX);

[[noreturn]] void broken(const char *what, const Check &c) {
  std::fprintf(stderr, "dlpack rule broken: %s (status %d, message '%s')\n",
               what, static_cast<int>(c.status), c.message);
  std::abort();
}

void refused_properly(const char *what, const Check &c) {
  if (c.status != T4A_ERROR_INVALID_ARGUMENT || c.message[0] == '\0')
    broken(what, c);
}

bool has(const Check &c, const std::string &part) {
  return std::strstr(c.message, part.c_str()) != nullptr;
}

template <class T> T pick(Reader &r, const T *common, size_t n) {
  uint8_t sel = r.get<uint8_t>();
  if (sel < 0xc0) return common[sel % n];
  return r.get<T>();
}

const int64_t k_extents[] = {0,           1,         2,         3,
                             4,           7,         64,        -1,
                             INT64_MAX,   INT64_MIN, 1LL << 32, (1LL << 62) + 1,
                             3037000500LL};
const int64_t k_strides[] = {
    1, 0, -1, 2, -2, 8, -9, 64, INT64_MAX, INT64_MIN, 1LL << 31, -(1LL << 40)};
const uint64_t k_u64[] = {0,
                          1,
                          8,
                          16,
                          64,
                          100,
                          256,
                          4096,
                          UINT64_MAX,
                          UINT64_MAX - 63,
                          uint64_t{1} << 63,
                          0x7f0000001000ull};
const int32_t k_ndims[] = {0, 1, 2, 3, 4, -1, 32, 33};
const uint8_t k_codes[] = {0, 1, 2, 3, 4, 5, 6, 7, 255};
const uint8_t k_bits[] = {0, 8, 16, 32, 64, 1, 4, 12, 255};
const uint16_t k_lanes[] = {0, 1, 2, 4, 3, 65535};
const int64_t k_streams[] = {-1, 0, 1, 2, -2, 0x1000, INT64_MIN};

// ---- models -----------------------------------------------------------------

bool model_elem(uint8_t code, uint8_t bits, uint16_t lanes, uint64_t *elem) {
  if (code > kDLBool) return false;
  uint64_t total = uint64_t{bits} * lanes;
  if (total == 0 || total % 8 != 0) return false;
  *elem = total / 8;
  return true;
}

bool model_compact(int32_t ndim, const int64_t *shape, int64_t *strides) {
  i128 step = 1;
  for (int32_t i = ndim - 1; i >= 0; --i) {
    strides[i] = static_cast<int64_t>(step);
    if (shape[i] > 0) {
      step *= shape[i];
      if (step > kI64Max) return false;
    }
  }
  return true;
}

struct ModelSpan {
  bool ok = false, empty = false;
  int neg = -1; // the first negative extent
  i128 lo = 0, hi = 0;
};

ModelSpan model_span(int32_t ndim, const int64_t *shape,
                     const int64_t *strides) {
  ModelSpan m;
  for (int32_t i = 0; i < ndim; ++i)
    if (shape[i] < 0) {
      m.neg = i;
      return m;
    }
  for (int32_t i = 0; i < ndim; ++i)
    if (shape[i] == 0) m.empty = true;
  if (m.empty) {
    m.ok = true;
    return m;
  }
  for (int32_t i = 0; i < ndim; ++i) {
    i128 reach = static_cast<i128>(shape[i] - 1) * strides[i];
    if (reach > kI64Max || reach < kI64Min) return m;
    i128 &side = reach < 0 ? m.lo : m.hi;
    side += reach;
    if (side > kI64Max || side < kI64Min) return m;
  }
  m.ok = true;
  return m;
}

// ---- the checks -------------------------------------------------------------

void fuzz_primitives(Reader &r) {
  uint8_t code = pick(r, k_codes, sizeof k_codes);
  uint8_t bits = pick(r, k_bits, sizeof k_bits);
  uint16_t lanes = pick(r, k_lanes, sizeof k_lanes / sizeof k_lanes[0]);
  {
    Check c;
    uint64_t out = 12345, want = 0;
    t4a::memory::element_bytes("p.", code, bits, lanes, &out, &c);
    bool ok = model_elem(code, bits, lanes, &want);
    if (ok != c.ok()) broken("element_bytes acceptance", c);
    if (ok && out != want) broken("element_bytes size", c);
    if (!ok) {
      refused_properly("element_bytes refusal", c);
      if (out != 12345 || !has(c, "p.dtype")) broken("element_bytes out", c);
    }
  }
  int32_t ndim = static_cast<int32_t>(r.get<uint8_t>() % 6);
  int64_t shape[8], strides[8], mstrides[8];
  for (int32_t i = 0; i < ndim; ++i)
    shape[i] = pick(r, k_extents, sizeof k_extents / sizeof k_extents[0]);
  {
    Check c;
    bool ok = model_compact(ndim, shape, mstrides);
    t4a::memory::compact_strides("p.", ndim, shape, strides, &c);
    if (ok != c.ok()) broken("compact_strides acceptance", c);
    if (ok)
      for (int32_t i = 0; i < ndim; ++i)
        if (strides[i] != mstrides[i]) broken("compact_strides values", c);
    if (!ok) {
      refused_properly("compact_strides refusal", c);
      if (!has(c, "p.shape: the element count overflows"))
        broken("compact_strides message", c);
    }
  }
  for (int32_t i = 0; i < ndim; ++i)
    strides[i] = pick(r, k_strides, sizeof k_strides / sizeof k_strides[0]);
  {
    Check c;
    t4a::memory::Span sp;
    sp.lo = 77;
    t4a::memory::span_of("p.", ndim, shape, strides, &sp, &c);
    ModelSpan m = model_span(ndim, shape, strides);
    if (m.ok != c.ok()) broken("span_of acceptance", c);
    if (m.ok &&
        (sp.empty != m.empty || (!m.empty && (sp.lo != m.lo || sp.hi != m.hi))))
      broken("span_of values", c);
    if (!m.ok) {
      refused_properly("span_of refusal", c);
      if (sp.lo != 77) broken("span_of out", c);
      if (m.neg >= 0 && !has(c, "p.shape[" + std::to_string(m.neg) + "] is "))
        broken("span_of names the negative extent", c);
    }
  }
}

void fuzz_export(Reader &r) {
  int64_t shape[40] = {}, strides[40] = {};
  t4a_dlpack_desc d = T4A_DLPACK_DESC_INIT;
  uint8_t sel = r.get<uint8_t>();
  d.flags = (sel & 1) ? T4A_DLPACK_READ_ONLY : 0;
  if ((sel & 0x70) == 0x70) d.flags = r.get<uint32_t>();
  bool buffer_ro = (sel & 2) != 0;
  bool legacy = (sel & 4) != 0;
  d.dtype_code = pick(r, k_codes, sizeof k_codes);
  d.dtype_bits = pick(r, k_bits, sizeof k_bits);
  d.dtype_lanes = pick(r, k_lanes, sizeof k_lanes / sizeof k_lanes[0]);
  d.ndim = pick(r, k_ndims, sizeof k_ndims / sizeof k_ndims[0]);
  uint64_t buffer_bytes = pick(r, k_u64, sizeof k_u64 / sizeof k_u64[0]);
  d.byte_offset = pick(r, k_u64, sizeof k_u64 / sizeof k_u64[0]);
  int64_t stream = pick(r, k_streams, sizeof k_streams / sizeof k_streams[0]);
  int32_t n = d.ndim > 0 && d.ndim <= 32 ? d.ndim : 0;
  for (int32_t i = 0; i < n; ++i) {
    shape[i] = pick(r, k_extents, sizeof k_extents / sizeof k_extents[0]);
    strides[i] = pick(r, k_strides, sizeof k_strides / sizeof k_strides[0]);
  }
  uint8_t ptrs = r.get<uint8_t>();
  d.shape = (ptrs & 1) ? nullptr : shape;
  d.strides = (ptrs & 2) ? nullptr : strides;

  // The model.
  bool ro = (d.flags & T4A_DLPACK_READ_ONLY) != 0 || buffer_ro;
  uint8_t code = d.dtype_code;
  uint8_t bits = d.dtype_bits != 0 ? d.dtype_bits : 8;
  uint16_t lanes = d.dtype_lanes != 0 ? d.dtype_lanes : 1;
  if (d.dtype_bits == 0 && d.dtype_code == 0) code = kDLUInt;
  uint64_t elem = 0;
  int64_t mstrides[40] = {};
  bool ok = (d.flags & ~T4A_DLPACK_READ_ONLY) == 0 && !(legacy && ro) &&
            stream != 0 && stream >= -1 &&
            model_elem(code, bits, lanes, &elem) && d.ndim >= 0 &&
            d.ndim <= T4A_DLPACK_MAX_NDIM && d.byte_offset <= buffer_bytes;
  ModelSpan m;
  if (ok && d.ndim == 0) {
    ok = (buffer_bytes - d.byte_offset) % elem == 0;
  } else if (ok) {
    ok = d.shape != nullptr;
    if (ok && d.strides == nullptr) ok = model_compact(n, shape, mstrides);
    if (ok && d.strides != nullptr)
      std::memcpy(mstrides, strides, sizeof strides);
    if (ok) {
      m = model_span(n, shape, mstrides);
      ok = m.ok;
    }
    if (ok && !m.empty) {
      i128 below = -m.lo * static_cast<i128>(elem);
      i128 above = (m.hi + 1) * static_cast<i128>(elem);
      ok = below <= kI64Max && above <= kI64Max &&
           below <= static_cast<i128>(d.byte_offset) &&
           static_cast<i128>(d.byte_offset) + above <=
               static_cast<i128>(buffer_bytes);
    }
  }

  Check c;
  t4a::memory::ExportLayout out;
  out.ndim = -5;
  t4a::memory::check_export_desc(d, buffer_bytes, buffer_ro, legacy, stream,
                                 &out, &c);
  if (ok != c.ok()) broken("check_export_desc acceptance", c);
  if (!ok) {
    refused_properly("check_export_desc refusal", c);
    if (out.ndim != -5) broken("check_export_desc out", c);
    return;
  }
  if (out.read_only != ro || out.code != code || out.bits != bits ||
      out.lanes != lanes)
    broken("check_export_desc dtype or flags", c);
  if (d.ndim == 0) {
    if (out.ndim != 1 || out.strides[0] != 1 ||
        static_cast<uint64_t>(out.shape[0]) * elem !=
            buffer_bytes - d.byte_offset)
      broken("check_export_desc 1-D default", c);
    return;
  }
  if (out.ndim != d.ndim) broken("check_export_desc ndim", c);
  for (int32_t i = 0; i < n; ++i)
    if (out.shape[i] != shape[i] || out.strides[i] != mstrides[i])
      broken("check_export_desc shape or strides", c);
  if (!m.empty) {
    // The lowest and highest bytes reached, from the layout given.
    i128 lo = 0, hi = 0;
    for (int32_t i = 0; i < n; ++i) {
      i128 reach = static_cast<i128>(out.shape[i] - 1) * out.strides[i];
      (reach < 0 ? lo : hi) += reach;
    }
    i128 first = static_cast<i128>(d.byte_offset) + lo * elem;
    i128 end = static_cast<i128>(d.byte_offset) + (hi + 1) * elem;
    if (first < 0 || end > static_cast<i128>(buffer_bytes))
      broken("check_export_desc reaches outside the buffer", c);
  }
}

void fuzz_import(Reader &r) {
  int64_t shape[40] = {}, strides[40] = {};
  DLTensor t{};
  DLPackVersion v{};
  uint8_t sel = r.get<uint8_t>();
  v.major = (sel & 0x30) == 0x30 ? r.get<uint32_t>() : 1;
  v.minor = r.get<uint8_t>();
  const DLPackVersion *version = (sel & 1) ? nullptr : &v;
  const int32_t types[] = {kDLCUDA, kDLCUDAManaged, kDLCPU, kDLCUDAHost, 0};
  // Any int32, as a producer may store (written and read as bytes: a
  // value outside the enumerators is not a DLDeviceType in C++).
  int32_t type = pick(r, types, sizeof types / sizeof types[0]);
  std::memcpy(&t.device.device_type, &type, sizeof type);
  int32_t ordinal = r.get<uint8_t>() % 2;
  t.device.device_id = (sel & 2) ? 1 - ordinal : ordinal;
  t.dtype.code = pick(r, k_codes, sizeof k_codes);
  t.dtype.bits = pick(r, k_bits, sizeof k_bits);
  t.dtype.lanes = pick(r, k_lanes, sizeof k_lanes / sizeof k_lanes[0]);
  t.ndim = pick(r, k_ndims, sizeof k_ndims / sizeof k_ndims[0]);
  t.data = reinterpret_cast<void *>(static_cast<uintptr_t>(
      (sel & 4) ? 0 : pick(r, k_u64, sizeof k_u64 / sizeof k_u64[0])));
  t.byte_offset = pick(r, k_u64, sizeof k_u64 / sizeof k_u64[0]);
  int32_t n = t.ndim > 0 && t.ndim <= 32 ? t.ndim : 0;
  for (int32_t i = 0; i < n; ++i) {
    shape[i] = pick(r, k_extents, sizeof k_extents / sizeof k_extents[0]);
    strides[i] = pick(r, k_strides, sizeof k_strides / sizeof k_strides[0]);
  }
  uint8_t ptrs = r.get<uint8_t>();
  t.shape = (ptrs & 1) ? nullptr : shape;
  t.strides = (ptrs & 2) ? nullptr : strides;

  uint64_t elem = 0;
  int64_t mstrides[40] = {};
  bool ok = (version == nullptr || version->major == 1) &&
            (type == kDLCUDA || type == kDLCUDAManaged) &&
            t.device.device_id == ordinal &&
            model_elem(t.dtype.code, t.dtype.bits, t.dtype.lanes, &elem) &&
            t.ndim >= 0 && t.ndim <= T4A_DLPACK_MAX_NDIM &&
            !(t.ndim > 0 && t.shape == nullptr);
  if (ok && t.strides == nullptr) ok = model_compact(n, t.shape, mstrides);
  if (ok && t.strides != nullptr)
    std::memcpy(mstrides, strides, sizeof strides);
  ModelSpan m;
  if (ok) {
    m = model_span(n, t.shape, mstrides);
    ok = m.ok;
  }
  i128 start = 0, bytes = 0;
  if (ok && !m.empty) {
    ok = t.data != nullptr;
    i128 first = static_cast<i128>(reinterpret_cast<uintptr_t>(t.data)) +
                 static_cast<i128>(t.byte_offset);
    start = first + m.lo * static_cast<i128>(elem);
    bytes = (m.hi - m.lo + 1) * static_cast<i128>(elem);
    ok = ok && first <= kU64Max && start >= 0 && bytes <= kU64Max &&
         start + bytes <= kU64Max;
  }

  Check c;
  t4a::memory::ImportRange out;
  out.start = 99;
  t4a::memory::check_import_tensor(t, version, ordinal, &out, &c);
  if (ok != c.ok()) broken("check_import_tensor acceptance", c);
  if (!ok) {
    refused_properly("check_import_tensor refusal", c);
    if (out.start != 99) broken("check_import_tensor out", c);
    return;
  }
  if (static_cast<i128>(out.start) != start ||
      static_cast<i128>(out.bytes) != bytes)
    broken("check_import_tensor range", c);

  // The range against an allocation near it.
  if (bytes == 0) return;
  uint64_t base = out.start - pick(r, k_u64, sizeof k_u64 / sizeof k_u64[0]);
  if (r.get<uint8_t>() & 1)
    base = pick(r, k_u64, sizeof k_u64 / sizeof k_u64[0]);
  uint64_t size = pick(r, k_u64, sizeof k_u64 / sizeof k_u64[0]);
  if (r.get<uint8_t>() & 1) size = out.bytes + (out.start - base);
  bool inside = static_cast<i128>(out.start) >= base &&
                static_cast<i128>(out.start) + out.bytes <=
                    static_cast<i128>(base) + size;
  Check a;
  t4a::memory::check_import_allocation(out, t.data, t.byte_offset, base, size,
                                       &a);
  if (inside != a.ok()) broken("check_import_allocation acceptance", a);
  if (!inside) {
    refused_properly("check_import_allocation refusal", a);
    if (!has(a, "describes " + std::to_string(out.bytes) + " bytes") ||
        !has(a, "is " + std::to_string(size) + " bytes"))
      broken("check_import_allocation names both sizes", a);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader r{data, size};
  switch (r.get<uint8_t>() % 3) {
  case 0: fuzz_primitives(r); break;
  case 1: fuzz_export(r); break;
  default: fuzz_import(r); break;
  }
  return 0;
}
