#include "compile/checksum.hpp"

#include <cstring>

namespace t4a::compile {

namespace {

constexpr uint64_t k_p1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t k_p2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t k_p3 = 0x165667B19E3779F9ull;
constexpr uint64_t k_p4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t k_p5 = 0x27D4EB2F165667C5ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Little-endian loads, whatever the host's order.
uint64_t load64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
uint64_t load32(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

uint64_t lane_round(uint64_t acc, uint64_t input) {
  acc += input * k_p2;
  acc = rotl(acc, 31);
  return acc * k_p1;
}

uint64_t merge(uint64_t acc, uint64_t lane) {
  acc ^= lane_round(0, lane);
  return acc * k_p1 + k_p4;
}

} // namespace

uint64_t xxh64(const void *data, size_t bytes, uint64_t seed) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  const uint8_t *end = p + bytes;
  uint64_t h;
  if (bytes >= 32) {
    uint64_t v1 = seed + k_p1 + k_p2, v2 = seed + k_p2, v3 = seed,
             v4 = seed - k_p1;
    for (; end - p >= 32; p += 32) {
      v1 = lane_round(v1, load64(p));
      v2 = lane_round(v2, load64(p + 8));
      v3 = lane_round(v3, load64(p + 16));
      v4 = lane_round(v4, load64(p + 24));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(h, v1);
    h = merge(h, v2);
    h = merge(h, v3);
    h = merge(h, v4);
  } else {
    h = seed + k_p5;
  }
  h += static_cast<uint64_t>(bytes);
  for (; end - p >= 8; p += 8) {
    h ^= lane_round(0, load64(p));
    h = rotl(h, 27) * k_p1 + k_p4;
  }
  if (end - p >= 4) {
    h ^= load32(p) * k_p1;
    h = rotl(h, 23) * k_p2 + k_p3;
    p += 4;
  }
  for (; p < end; ++p) {
    h ^= *p * k_p5;
    h = rotl(h, 11) * k_p1;
  }
  h ^= h >> 33;
  h *= k_p2;
  h ^= h >> 29;
  h *= k_p3;
  h ^= h >> 32;
  return h;
}

} // namespace t4a::compile
