// libFuzzer target: compile-request validation (issue 8) through the C
// API, t4a_compile on requests built from arbitrary bytes: struct_size
// (smaller, equal, larger with a tail of fuzzed bytes), output, flags,
// cc_major/cc_minor, runtime id, header, option and name-expression
// arrays (NULL arrays with counts, NULL, empty and multi-line entries),
// cache_dir. NVRTC is pointed nowhere and the disk cache is off, so a
// request that passes validation ends in NO_COMPILER quickly. Each call
// must return a documented status, leave the out-parameter untouched on
// failure, and record a message naming t4a_compile.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "t4acuda.h"

namespace {

struct Reader {
  const uint8_t *p;
  size_t n;
  template <class T> T get() {
    T v{};
    size_t k = n < sizeof v ? n : sizeof v;
    if (k != 0) std::memcpy(&v, p, k);
    p += k;
    n -= k;
    return v;
  }
  // A short string (up to 15 bytes) from the input; may hold newlines.
  std::string text() {
    size_t len = get<uint8_t>() & 15u;
    if (len > n) len = n;
    std::string s(reinterpret_cast<const char *>(p), len);
    p += len;
    n -= len;
    for (char &c : s)
      if (c == '\0') c = 'x';
    return s;
  }
};

// A string array of up to 3 entries: NULL (count kept), entries NULL,
// empty or text.
struct Strings {
  std::vector<std::string> storage;
  std::vector<const char *> ptrs;
  const char *const *array = nullptr;
  uint32_t count = 0;
  void fill(Reader &r) {
    uint8_t shape = r.get<uint8_t>();
    count = shape & 3u;
    storage.resize(count);
    ptrs.resize(count);
    for (uint32_t i = 0; i < count; ++i) {
      storage[i] = r.text();
      ptrs[i] = (shape >> (2 + i)) & 1u ? nullptr : storage[i].c_str();
    }
    array = (shape & 0x80u) != 0 ? nullptr : ptrs.data();
  }
};

bool documented(t4a_status s) {
  return s == T4A_ERROR_INVALID_ARGUMENT || s == T4A_ERROR_VERSION_MISMATCH ||
         s == T4A_ERROR_INVALID_HANDLE || s == T4A_ERROR_NO_COMPILER ||
         s == T4A_ERROR_UNSUPPORTED || s == T4A_ERROR_NO_DRIVER;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  setenv("T4A_NVRTC_PATH", "/nonexistent/libnvrtc.so", 1);
  setenv("T4A_CUDA_DRIVER_PATH", "/nonexistent/libcuda.so.1", 1);
  setenv("T4A_CACHE_DIR", "", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader r{data, size};
  // The request inside a larger buffer: a struct_size above sizeof reads
  // a tail (zero or fuzzed: VERSION_MISMATCH when non-zero).
  alignas(t4a_compile_request) unsigned char
      buf[sizeof(t4a_compile_request) + 32] = {};
  t4a_compile_request q = T4A_COMPILE_REQUEST_INIT;
  std::string source = r.text(), name = r.text(), dir = r.text();
  Strings header_names, header_sources, options, names;
  uint8_t choice = r.get<uint8_t>();
  // A struct_size some caller could have: 0..3 (too small), the end of
  // any field (an older version), sizeof, or larger (a newer version with
  // a tail); and any size below ours (one ending inside a field, half a
  // pointer, must be refused before anything reads the field).
  static const uint32_t k_sizes[] = {
      0,
      1,
      3,
      4,
      offsetof(t4a_compile_request, output) + 4,
      offsetof(t4a_compile_request, source) + 8,
      offsetof(t4a_compile_request, program_name) + 8,
      offsetof(t4a_compile_request, header_sources) + 8,
      offsetof(t4a_compile_request, option_count) + 4,
      offsetof(t4a_compile_request, options) + 8,
      offsetof(t4a_compile_request, name_expression_count) + 4,
      offsetof(t4a_compile_request, cc_minor) + 4,
      offsetof(t4a_compile_request, flags) + 4,
      offsetof(t4a_compile_request, runtime) + 8,
      offsetof(t4a_compile_request, disk_cache_max_bytes) + 8,
      sizeof(t4a_compile_request),
      sizeof(t4a_compile_request) + 8,
      sizeof(t4a_compile_request) + 32};
  q.struct_size =
      (choice & 1u) != 0
          ? k_sizes[r.get<uint8_t>() % (sizeof k_sizes / sizeof k_sizes[0])]
          : static_cast<uint32_t>(sizeof q);
  if ((choice & 0xC0u) == 0xC0u)
    q.struct_size = r.get<uint8_t>() % static_cast<uint32_t>(sizeof q);
  q.source = (choice & 2u) != 0 ? nullptr : source.c_str();
  q.program_name = (choice & 4u) != 0 ? nullptr : name.c_str();
  q.cache_dir = (choice & 8u) != 0 ? nullptr : dir.c_str();
  q.output = r.get<uint8_t>() % 3u;
  q.flags = r.get<uint8_t>() < 200 ? r.get<uint8_t>() & 3u : r.get<uint32_t>();
  q.cc_major = r.get<int8_t>();
  q.cc_minor = r.get<int8_t>();
  q.runtime.id = (choice & 16u) != 0 ? r.get<uint64_t>() : 0;
  header_names.fill(r);
  header_sources.fill(r);
  // Both header arrays share one count, as the ABI has.
  q.header_count = header_names.count < header_sources.count
                       ? header_names.count
                       : header_sources.count;
  q.header_names = header_names.array;
  q.header_sources = header_sources.array;
  options.fill(r);
  q.options = options.array;
  q.option_count = options.count;
  names.fill(r);
  q.name_expressions = names.array;
  q.name_expression_count = names.count;
  std::memcpy(buf, &q, sizeof q);
  if ((choice & 32u) != 0)
    for (size_t i = sizeof q; i < sizeof buf; ++i) buf[i] = r.get<uint8_t>();

  t4a_artifact a = {UINT64_C(0xA5A5A5A5A5A5A5A5)};
  t4a_status s =
      t4a_compile(reinterpret_cast<const t4a_compile_request *>(buf), &a);
  if (s == T4A_SUCCESS || !documented(s)) std::abort();
  if (a.id != UINT64_C(0xA5A5A5A5A5A5A5A5)) std::abort();
  t4a_error_info info = T4A_ERROR_INFO_INIT;
  if (t4a_last_error(&info) != T4A_SUCCESS || info.status != s ||
      std::strcmp(info.entry_point, "t4a_compile") != 0)
    std::abort();
  char message[64];
  size_t needed = 0;
  if (t4a_last_error_message(message, sizeof message, &needed) != T4A_SUCCESS ||
      needed <= 1)
    std::abort();
  return 0;
}
