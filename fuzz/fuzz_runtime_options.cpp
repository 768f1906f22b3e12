// libFuzzer target: the meaning of t4a_runtime_options
// (src/core/runtime_options.hpp) for options built field by field from
// arbitrary bytes (often the values at the rules' edges). The result is
// compared with a model written here from the header's documentation of
// each field:
//   refused, in order: reserved0, reserved2 not 0; peer_access not 0 or 1;
//     a staging chunk (after the defaults) below 4096 or above the budget;
//     staging_threads outside 0..64 -- INVALID_ARGUMENT, a message naming
//     the field ("options->...") and its value, the output untouched;
//   accepted: every zero field has its default (pool threshold: 0 and
//     T4A_POOL_KEEP_ALL keep all, the driver gets UINT64_MAX;
//     T4A_POOL_RELEASE_ALL: the driver gets 0), every other field as
//     given; then staging_bytes >= staging_chunk_bytes >= 4096, threads in
//     0..64, both module-cache bounds at least 1.
// Never a crash or a sanitizer report.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/runtime_options.hpp"

#include "fuzz_reader.hpp"

namespace {

using t4a::core::Check;
using t4a_fuzz::Reader;

[[noreturn]] void broken(const char *what, const Check &c) {
  std::fprintf(stderr, "runtime options rule broken: %s (message '%s')\n", what,
               c.message);
  std::abort();
}

template <class T> T pick(Reader &r, const T *common, size_t n) {
  uint8_t sel = r.get<uint8_t>();
  if (sel < 0xc0) return common[sel % n];
  return r.get<T>();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const uint64_t bytes[] = {0,
                                   1,
                                   4095,
                                   4096,
                                   4097,
                                   T4A_DEFAULT_STAGING_CHUNK_BYTES - 1,
                                   T4A_DEFAULT_STAGING_CHUNK_BYTES,
                                   T4A_DEFAULT_STAGING_CHUNK_BYTES + 1,
                                   T4A_DEFAULT_STAGING_BYTES,
                                   T4A_POOL_RELEASE_ALL,
                                   T4A_POOL_KEEP_ALL,
                                   uint64_t{1} << 40};
  static const int32_t threads[] = {0, 1, 16, 64, 65, -1, INT32_MIN, INT32_MAX};
  static const uint32_t small[] = {0, 1, 2, 64, 0xffffffffu, 0, 0, 0};
  Reader r{data, size};
  t4a_runtime_options g = T4A_RUNTIME_OPTIONS_INIT;
  g.device_ordinal = r.get<int32_t>();
  g.pool_release_threshold = pick(r, bytes, 12);
  g.staging_bytes = pick(r, bytes, 12);
  g.staging_chunk_bytes = pick(r, bytes, 12);
  g.staging_threads = pick(r, threads, 8);
  g.reserved0 = pick(r, small, 8);
  g.module_cache_entries = pick(r, small, 8);
  g.reserved1 = pick(r, small, 8);
  g.module_cache_bytes = pick(r, bytes, 12);
  g.peer_access = pick(r, small, 8);
  g.reserved2 = pick(r, small, 8);

  // The model.
  t4a_runtime_options m = g;
  const char *bad = nullptr;
  std::string value;
  m.pool_release_threshold = g.pool_release_threshold == 0 ? T4A_POOL_KEEP_ALL
                             : g.pool_release_threshold == T4A_POOL_RELEASE_ALL
                                 ? 0
                                 : g.pool_release_threshold;
  if (m.staging_bytes == 0) m.staging_bytes = T4A_DEFAULT_STAGING_BYTES;
  if (m.staging_chunk_bytes == 0)
    m.staging_chunk_bytes = m.staging_bytes < T4A_DEFAULT_STAGING_CHUNK_BYTES
                                ? m.staging_bytes
                                : T4A_DEFAULT_STAGING_CHUNK_BYTES;
  if (m.module_cache_entries == 0)
    m.module_cache_entries = T4A_DEFAULT_MODULE_CACHE_ENTRIES;
  if (m.module_cache_bytes == 0)
    m.module_cache_bytes = T4A_DEFAULT_MODULE_CACHE_BYTES;
  if (g.reserved0 != 0) {
    bad = "options->reserved0 is ";
    value = std::to_string(g.reserved0);
  } else if (g.reserved2 != 0) {
    bad = "options->reserved2 is ";
    value = std::to_string(g.reserved2);
  } else if (g.peer_access > 1) {
    bad = "options->peer_access is ";
    value = std::to_string(g.peer_access);
  } else if (m.staging_chunk_bytes < 4096 ||
             m.staging_chunk_bytes > m.staging_bytes) {
    bad = "options->staging_chunk_bytes is ";
    value = std::to_string(m.staging_chunk_bytes);
  } else if (g.staging_threads < 0 || g.staging_threads > 64) {
    bad = "options->staging_threads is ";
    value = std::to_string(g.staging_threads);
  }

  t4a_runtime_options out;
  std::memset(&out, 0xa5, sizeof out);
  t4a_runtime_options untouched = out;
  Check c;
  t4a::core::resolve_runtime_options(g, &out, &c);
  if (bad != nullptr) {
    if (c.status != T4A_ERROR_INVALID_ARGUMENT)
      broken("refusal is not INVALID_ARGUMENT", c);
    if (std::strstr(c.message, (bad + value + ";").c_str()) == nullptr)
      broken("refusal does not name the first bad field and its value", c);
    if (std::memcmp(&out, &untouched, sizeof out) != 0)
      broken("refusal wrote the output", c);
    return 0;
  }
  if (!c.ok()) broken("valid options refused", c);
  if (std::memcmp(&out, &m, sizeof out) != 0)
    broken("resolved options differ from the model", c);
  if (out.staging_chunk_bytes < 4096 ||
      out.staging_chunk_bytes > out.staging_bytes || out.staging_threads < 0 ||
      out.staging_threads > 64 || out.module_cache_entries == 0 ||
      out.module_cache_bytes == 0 || out.peer_access > 1 ||
      out.reserved0 != 0 || out.reserved2 != 0)
    broken("accepted options break a promise", c);
  return 0;
}
