// Byte patterns for the C++ host tests that check copies byte for byte:
// pattern(n, seed) is n pseudo-random bytes, a different sequence per seed
// (a linear congruential generator's high bytes), so a piece copied to the
// wrong place or from the wrong copy does not match.
// SPDX-License-Identifier: MIT OR Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

inline std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto &c : v) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<unsigned char>(x >> 24);
  }
  return v;
}
