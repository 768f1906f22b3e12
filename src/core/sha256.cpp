#include "core/sha256.hpp"

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define T4A_SHA256_NI 1
#endif

namespace t4a::core {

namespace {

// FIPS 180-4 §4.2.2: the first 32 bits of the fractional parts of the cube
// roots of the first 64 primes.
constexpr uint32_t k_round[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

// §5.3.3: the first 32 bits of the fractional parts of the square roots of
// the first 8 primes.
constexpr uint32_t k_initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                   0xa54ff53a, 0x510e527f, 0x9b05688c,
                                   0x1f83d9ab, 0x5be0cd19};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

#ifdef T4A_SHA256_NI
// The x86 SHA extensions (SHA-NI: sha256rnds2, sha256msg1, sha256msg2),
// chosen at run time where the CPU has them: `count` blocks into `h`. The
// instructions keep the state as two registers, ABEF and CDGH (lane 3
// first), and do two rounds per sha256rnds2 with W+K in the low 64 bits.
__attribute__((target("sha,sse4.1,ssse3"))) void
blocks_sha_ni(uint32_t h[8], const uint8_t *p, size_t count) {
  // Bytes of each 32-bit word reversed: the message is big-endian.
  const __m128i swap =
      _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i *>(h));
  __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i *>(h + 4));
  __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
  __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
  __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
  for (; count > 0; --count, p += 64) {
    const __m128i abef_in = abef, cdgh_in = cdgh;
    __m128i w[4];
    for (int i = 0; i < 16; ++i) {
      __m128i m;
      if (i < 4) {
        m = _mm_shuffle_epi8(
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 16 * i)),
            swap);
      } else {
        // W[i] = msg2(msg1(W[i-4], W[i-3]) + (W[i-2]:W[i-1] >> 32), W[i-1])
        __m128i t = _mm_sha256msg1_epu32(w[i % 4], w[(i + 1) % 4]);
        t = _mm_add_epi32(t,
                          _mm_alignr_epi8(w[(i + 3) % 4], w[(i + 2) % 4], 4));
        m = _mm_sha256msg2_epu32(t, w[(i + 3) % 4]);
      }
      w[i % 4] = m;
      __m128i wk = _mm_add_epi32(
          m,
          _mm_loadu_si128(reinterpret_cast<const __m128i *>(k_round + 4 * i)));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
    }
    abef = _mm_add_epi32(abef, abef_in);
    cdgh = _mm_add_epi32(cdgh, cdgh_in);
  }
  __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  dcba = _mm_blend_epi16(feba, dchg, 0xF0);
  hgfe = _mm_alignr_epi8(dchg, feba, 8);
  _mm_storeu_si128(reinterpret_cast<__m128i *>(h), dcba);
  _mm_storeu_si128(reinterpret_cast<__m128i *>(h + 4), hgfe);
}

// CPUID, not __builtin_cpu_supports: clang 14 does not know "sha". Leaf
// 1 ECX: SSSE3 (bit 9), SSE4.1 (bit 19); leaf 7 subleaf 0 EBX: SHA (29).
bool cpu_has_sha_ni() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  if ((c & (1u << 9)) == 0 || (c & (1u << 19)) == 0) return false;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  return (b & (1u << 29)) != 0;
}

bool have_sha_ni() {
  static const bool yes = cpu_has_sha_ni();
  return yes;
}
#endif

} // namespace

void Sha256::blocks(const uint8_t *p, size_t count) {
#ifdef T4A_SHA256_NI
  if (!portable_ && have_sha_ni()) return blocks_sha_ni(h_, p, count);
#endif
  for (; count > 0; --count, p += 64) block(p);
}

Sha256::Sha256() { std::memcpy(h_, k_initial, sizeof h_); }

// §6.2.2: one 512-bit block.
void Sha256::block(const uint8_t *p) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t)
    w[t] = uint32_t(p[4 * t]) << 24 | uint32_t(p[4 * t + 1]) << 16 |
           uint32_t(p[4 * t + 2]) << 8 | uint32_t(p[4 * t + 3]);
  for (int t = 16; t < 64; ++t) {
    uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5],
           g = h_[6], h = h_[7];
  for (int t = 0; t < 64; ++t) {
    uint32_t big1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = h + big1 + ch + k_round[t] + w[t];
    uint32_t big0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = big0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h_[0] += a;
  h_[1] += b;
  h_[2] += c;
  h_[3] += d;
  h_[4] += e;
  h_[5] += f;
  h_[6] += g;
  h_[7] += h;
}

void Sha256::update(const void *data, size_t bytes) {
  // Nothing to add; `data` may then be NULL (an empty vector's data()),
  // which memcpy must never be given, even for 0 bytes (issue 8, item 9).
  if (bytes == 0) return;
  const uint8_t *p = static_cast<const uint8_t *>(data);
  total_ += bytes;
  if (used_ > 0) {
    size_t take = 64 - used_ < bytes ? 64 - used_ : bytes;
    std::memcpy(buf_ + used_, p, take);
    used_ += take;
    p += take;
    bytes -= take;
    if (used_ < 64) return;
    blocks(buf_, 1);
    used_ = 0;
  }
  if (bytes >= 64) {
    blocks(p, bytes / 64);
    p += bytes / 64 * 64;
    bytes %= 64;
  }
  if (bytes > 0) {
    std::memcpy(buf_, p, bytes);
    used_ = bytes;
  }
}

// §5.1.1: a 1 bit, zeros to 448 mod 512 bits, the bit length (64 bits,
// big-endian).
Digest Sha256::finish() {
  uint64_t bits = total_ * 8;
  uint8_t pad[72] = {0x80};
  size_t pad_len = (used_ < 56 ? 56 : 120) - used_;
  for (int i = 0; i < 8; ++i)
    pad[pad_len + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  update(pad, pad_len + 8);
  Digest d;
  for (int i = 0; i < 8; ++i) {
    d[4 * i] = static_cast<uint8_t>(h_[i] >> 24);
    d[4 * i + 1] = static_cast<uint8_t>(h_[i] >> 16);
    d[4 * i + 2] = static_cast<uint8_t>(h_[i] >> 8);
    d[4 * i + 3] = static_cast<uint8_t>(h_[i]);
  }
  return d;
}

Digest Sha256::of(const void *data, size_t bytes) {
  Sha256 s;
  s.update(data, bytes);
  return s.finish();
}

Digest Sha256::of_portable(const void *data, size_t bytes) {
  Sha256 s;
  s.portable_ = true;
  s.update(data, bytes);
  return s.finish();
}

std::string to_hex(const Digest &d) {
  static const char k_digits[] = "0123456789abcdef";
  std::string s(64, '0');
  for (size_t i = 0; i < d.size(); ++i) {
    s[2 * i] = k_digits[d[i] >> 4];
    s[2 * i + 1] = k_digits[d[i] & 15];
  }
  return s;
}

} // namespace t4a::core
