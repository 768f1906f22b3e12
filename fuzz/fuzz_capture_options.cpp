// libFuzzer target: the meaning of t4a_capture_options
// (src/core/capture_options.hpp) for arbitrary modes. Accepted exactly for
// T4A_CAPTURE_GLOBAL, T4A_CAPTURE_THREAD_LOCAL and T4A_CAPTURE_RELAXED;
// every other mode is refused with INVALID_ARGUMENT and a message that
// names the field, its value and the three accepted modes. The struct_size
// rule before it is fuzz_copy_struct's. Never a crash or a sanitizer
// report.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/capture_options.hpp"

#include "fuzz_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  t4a_fuzz::Reader r{data, size};
  t4a_capture_options o = T4A_CAPTURE_OPTIONS_INIT;
  uint8_t sel = r.get<uint8_t>();
  o.mode = sel < 0x80 ? static_cast<int32_t>(sel % 8) - 2 : r.get<int32_t>();
  o.struct_size = r.get<uint32_t>(); // not read by the meaning check
  t4a::core::Check c;
  t4a::core::check_capture_options(o, &c);
  bool valid = o.mode == T4A_CAPTURE_GLOBAL ||
               o.mode == T4A_CAPTURE_THREAD_LOCAL ||
               o.mode == T4A_CAPTURE_RELAXED;
  if (valid != c.ok()) {
    std::fprintf(stderr, "capture mode %d: accepted %d\n", o.mode, c.ok());
    std::abort();
  }
  if (!valid) {
    std::string want = "options->mode is " + std::to_string(o.mode) + ";";
    if (c.status != T4A_ERROR_INVALID_ARGUMENT ||
        std::strstr(c.message, want.c_str()) == nullptr ||
        std::strstr(c.message, "T4A_CAPTURE_GLOBAL (0)") == nullptr ||
        std::strstr(c.message, "T4A_CAPTURE_THREAD_LOCAL (1)") == nullptr ||
        std::strstr(c.message, "T4A_CAPTURE_RELAXED (2)") == nullptr) {
      std::fprintf(stderr, "capture mode %d: message '%s'\n", o.mode,
                   c.message);
      std::abort();
    }
  }
  return 0;
}
