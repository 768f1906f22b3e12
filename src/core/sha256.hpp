// SHA-256 (FIPS 180-4), written for t4acuda's compile identity keys and the
// disk cache's payload checksums. Incremental: update() any number of
// times, then finish().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace t4a::core {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t bytes);
  // Pads, returns the digest; the object must not be updated afterwards.
  Digest finish();

  static Digest of(const void *data, size_t bytes);
  // The same digest computed by the portable code alone, whatever the CPU
  // (the tests check the fast code against it).
  static Digest of_portable(const void *data, size_t bytes);

private:
  // One block with the portable code; `count` blocks with the fastest
  // code this CPU runs (the x86 SHA extensions where present).
  void block(const uint8_t *p);
  void blocks(const uint8_t *p, size_t count);

  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;    // bytes in buf_
  uint64_t total_ = 0; // message bytes so far
  bool portable_ = false;
};

// Lower-case hex of a digest (64 characters).
std::string to_hex(const Digest &d);

} // namespace t4a::core
