// The disk cache's entry format: encoding and the verifying
// parser, pure functions over bytes (no file system; the parser is
// fuzzed, fuzz/fuzz_disk_entry.cpp). Layout, little-endian:
//   0  magic "T4ACACHE"          8  u32 format version   12 u32 header size
//  16  key (32 bytes)            48  u32 output  52 u32 arch
//  56  u32 lowered-name count    60  u32 zero
//  64  u64 image bytes           72  u64 log bytes   80 u64 names bytes
//  88  u64 XXH64 of the payload, seeded with the XXH64 of bytes 48..88
//      (compile/checksum.hpp)                 96  32 bytes zero
// 128  payload: image, log, names (each: u32 length, bytes)
// A manifest record (an opaque payload its caller serializes), same
// conventions, a 96-byte header:
//   0  magic "T4AMANIF"          8  u32 format version   12 u32 header size
//  16  key (32 bytes)            48  u64 payload bytes
//  56  u64 XXH64 of the payload                  64  32 bytes zero
//  96  payload
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compile/artifact.hpp"
#include "core/sha256.hpp"

namespace t4a::compile {

constexpr size_t k_disk_entry_header = 128;

struct DiskEntry {
  Target target;
  std::string image, log;
  std::vector<std::string> lowered;
};

enum class DiskRead { Miss, Hit, Corrupt };

// An entry's header and names section; the file is the header, the image,
// the log and the names, total_bytes in all.
struct EncodedEntry {
  std::array<uint8_t, k_disk_entry_header> header{};
  std::vector<uint8_t> names;
  uint64_t total_bytes = 0;
};

EncodedEntry disk_entry_encode(const core::Digest &key, Target target,
                               const std::string &image, const std::string &log,
                               const std::vector<std::string> &lowered);

// Verifies and decodes an entry's bytes (what disk_read does after reading
// the file): Hit fills *out; Corrupt sets *why (static text). Never Miss.
// Any bytes are safe: nothing is read outside [data, data + size), and
// nothing is allocated beyond what the bytes hold.
DiskRead disk_entry_parse(const uint8_t *data, size_t size,
                          const core::Digest &key, DiskEntry *out,
                          const char **why);

constexpr size_t k_disk_manifest_header = 96;

// A manifest's header for `payload` (the file is the header, then the
// payload).
std::array<uint8_t, k_disk_manifest_header>
disk_manifest_encode(const core::Digest &key, const std::string &payload);

// Verifies a manifest file's bytes: Hit sets *payload to the payload (a
// view into data); Corrupt sets *why (static text). Never Miss; any bytes
// are safe.
DiskRead disk_manifest_parse(const uint8_t *data, size_t size,
                             const core::Digest &key, const uint8_t **payload,
                             size_t *payload_bytes, const char **why);

} // namespace t4a::compile
