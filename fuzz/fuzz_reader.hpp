// Reads fixed-size values from a fuzz input, zero-filled once the input
// runs out (so that every input, however short, decodes to something).
// SPDX-License-Identifier: MIT OR Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace t4a_fuzz {

struct Reader {
  const uint8_t *p;
  size_t n;
  template <class T> T get() {
    T v{};
    size_t k = n < sizeof v ? n : sizeof v;
    if (k > 0) std::memcpy(&v, p, k);
    p += k;
    n -= k;
    return v;
  }
};

} // namespace t4a_fuzz
