// libFuzzer target: the disk cache's entry parser (issue 8), over
// arbitrary bytes as a file's content. It must never crash, read out of
// bounds or allocate beyond what the bytes hold; every rejection names a
// reason; whatever it accepts encodes back to the same bytes. The first
// byte chooses the key: the one in the bytes (so that the later checks
// are reached) or a fixed one. The same bytes go through the manifest
// record's parser, under the same rules.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "compile/disk_entry.hpp"

using namespace t4a::compile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  t4a::core::Digest key{};
  const uint8_t *bytes = data;
  size_t n = size;
  if (n > 0) {
    bool key_from_bytes = (bytes[0] & 1) != 0;
    ++bytes;
    --n;
    if (key_from_bytes && n >= 48) std::memcpy(key.data(), bytes + 16, 32);
  }
  {
    const uint8_t *payload = nullptr;
    size_t payload_bytes = 0;
    const char *why = nullptr;
    DiskRead m =
        disk_manifest_parse(bytes, n, key, &payload, &payload_bytes, &why);
    if (m == DiskRead::Miss) std::abort();
    if (m == DiskRead::Corrupt && (why == nullptr || why[0] == '\0'))
      std::abort();
    if (m == DiskRead::Hit) {
      if (payload_bytes + k_disk_manifest_header != n) std::abort();
      auto back = disk_manifest_encode(
          key,
          std::string(reinterpret_cast<const char *>(payload), payload_bytes));
      if (std::memcmp(back.data(), bytes, back.size()) != 0) std::abort();
    }
  }
  DiskEntry e;
  const char *why = nullptr;
  DiskRead r = disk_entry_parse(bytes, n, key, &e, &why);
  if (r == DiskRead::Miss) std::abort(); // the parser never says Miss
  if (r == DiskRead::Corrupt) {
    if (why == nullptr || why[0] == '\0') std::abort();
    return 0;
  }
  // Accepted: it encodes back to exactly these bytes.
  EncodedEntry back =
      disk_entry_encode(key, e.target, e.image, e.log, e.lowered);
  if (back.total_bytes != n) std::abort();
  if (std::memcmp(back.header.data(), bytes, back.header.size()) != 0)
    std::abort();
  return 0;
}
