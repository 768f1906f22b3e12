#include "compile/disk_entry.hpp"

#include <cstring>

#include "compile/checksum.hpp"
#include "t4acuda.h"

namespace t4a::compile {

namespace {

constexpr char k_magic[8] = {'T', '4', 'A', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t k_format = 3; // 1: SHA-256; 2: payload only
constexpr size_t k_header = k_disk_entry_header;
constexpr char k_manifest_magic[8] = {'T', '4', 'A', 'M', 'A', 'N', 'I', 'F'};
constexpr uint32_t k_manifest_format = 2; // 1: a SHA-256 checksum
constexpr size_t k_manifest_header = k_disk_manifest_header;

void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
// The checksum covers the header's description of the payload (bytes
// 48..88: output, arch, name count, sizes) as the seed of the payload's
// hash, so that a flipped header byte is corrupt, not a hit that reports
// the wrong target.
constexpr size_t k_described = 48, k_described_bytes = 40;
uint64_t entry_checksum(const uint8_t *h, const void *payload, size_t bytes) {
  return xxh64(payload, bytes, xxh64(h + k_described, k_described_bytes));
}
bool zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

} // namespace

EncodedEntry disk_entry_encode(const core::Digest &key, Target target,
                               const std::string &image, const std::string &log,
                               const std::vector<std::string> &lowered) {
  EncodedEntry e;
  for (const std::string &s : lowered) {
    size_t at = e.names.size();
    e.names.resize(at + 4 + s.size());
    put32(e.names.data() + at, static_cast<uint32_t>(s.size()));
    if (!s.empty()) std::memcpy(e.names.data() + at + 4, s.data(), s.size());
  }
  // One pass over the payload as the file holds it (image, log, names).
  std::string payload;
  payload.reserve(image.size() + log.size() + e.names.size());
  payload.append(image).append(log);
  payload.append(reinterpret_cast<const char *>(e.names.data()),
                 e.names.size());
  uint8_t *h = e.header.data();
  std::memcpy(h, k_magic, sizeof k_magic);
  put32(h + 8, k_format);
  put32(h + 12, k_header);
  std::memcpy(h + 16, key.data(), key.size());
  put32(h + 48, target.output);
  put32(h + 52, static_cast<uint32_t>(target.arch));
  put32(h + 56, static_cast<uint32_t>(lowered.size()));
  put64(h + 64, image.size());
  put64(h + 72, log.size());
  put64(h + 80, e.names.size());
  put64(h + 88, entry_checksum(h, payload.data(), payload.size()));
  e.total_bytes = k_header + image.size() + log.size() + e.names.size();
  return e;
}

DiskRead disk_entry_parse(const uint8_t *data, size_t size,
                          const core::Digest &key, DiskEntry *out,
                          const char **why) {
  auto corrupt = [&](const char *what) {
    *why = what;
    return DiskRead::Corrupt;
  };
  if (size < k_header) return corrupt("truncated header");
  const uint8_t *h = data;
  if (std::memcmp(h, k_magic, sizeof k_magic) != 0) return corrupt("bad magic");
  if (get32(h + 8) != k_format) return corrupt("unknown format version");
  if (get32(h + 12) != k_header) return corrupt("bad header size");
  if (get32(h + 60) != 0 || !zero(h + 96, 32))
    return corrupt("reserved header bytes are not zero");
  if (std::memcmp(h + 16, key.data(), key.size()) != 0)
    return corrupt("key differs from the file name's");
  uint64_t image = get64(h + 64), log = get64(h + 72), names = get64(h + 80);
  uint64_t payload = size - k_header;
  if (image > payload || log > payload - image ||
      names != payload - image - log)
    return corrupt("section sizes do not match the file size (truncated?)");
  const uint8_t *p = h + k_header;
  if (entry_checksum(h, p, payload) != get64(h + 88))
    return corrupt("payload checksum mismatch");
  uint32_t output = get32(h + 48);
  if (output != T4A_COMPILE_CUBIN && output != T4A_COMPILE_PTX)
    return corrupt("bad output kind");
  if (image == 0) return corrupt("empty image");
  DiskEntry e;
  e.target.output = output;
  e.target.arch = static_cast<int>(get32(h + 52));
  e.image.assign(reinterpret_cast<const char *>(p), image);
  e.log.assign(reinterpret_cast<const char *>(p + image), log);
  const uint8_t *q = p + image + log, *end = q + names;
  uint32_t count = get32(h + 56);
  // Each name takes at least its 4-byte length: a count that cannot fit is
  // refused before anything is reserved for it.
  if (count > names / 4) return corrupt("lowered names truncated");
  for (uint32_t i = 0; i < count; ++i) {
    if (end - q < 4) return corrupt("lowered names truncated");
    uint32_t n = get32(q);
    q += 4;
    if (static_cast<uint64_t>(end - q) < n)
      return corrupt("lowered names truncated");
    e.lowered.emplace_back(reinterpret_cast<const char *>(q), n);
    q += n;
  }
  if (q != end) return corrupt("trailing bytes after the lowered names");
  *out = std::move(e);
  return DiskRead::Hit;
}

std::array<uint8_t, k_disk_manifest_header>
disk_manifest_encode(const core::Digest &key, const std::string &payload) {
  std::array<uint8_t, k_disk_manifest_header> h{};
  uint64_t sum = xxh64(payload.data(), payload.size());
  std::memcpy(h.data(), k_manifest_magic, sizeof k_manifest_magic);
  put32(h.data() + 8, k_manifest_format);
  put32(h.data() + 12, k_manifest_header);
  std::memcpy(h.data() + 16, key.data(), key.size());
  put64(h.data() + 48, payload.size());
  put64(h.data() + 56, sum);
  return h;
}

DiskRead disk_manifest_parse(const uint8_t *data, size_t size,
                             const core::Digest &key, const uint8_t **payload,
                             size_t *payload_bytes, const char **why) {
  auto corrupt = [&](const char *what) {
    *why = what;
    return DiskRead::Corrupt;
  };
  if (size < k_manifest_header) return corrupt("truncated header");
  const uint8_t *h = data;
  if (std::memcmp(h, k_manifest_magic, sizeof k_manifest_magic) != 0)
    return corrupt("bad magic");
  if (get32(h + 8) != k_manifest_format)
    return corrupt("unknown format version");
  if (get32(h + 12) != k_manifest_header) return corrupt("bad header size");
  if (!zero(h + 64, 32)) return corrupt("reserved header bytes are not zero");
  if (std::memcmp(h + 16, key.data(), key.size()) != 0)
    return corrupt("key differs from the file name's");
  if (get64(h + 48) != size - k_manifest_header)
    return corrupt("payload size does not match the file size (truncated?)");
  const uint8_t *p = h + k_manifest_header;
  if (xxh64(p, size - k_manifest_header) != get64(h + 56))
    return corrupt("payload checksum mismatch");
  *payload = p;
  *payload_bytes = size - k_manifest_header;
  return DiskRead::Hit;
}

} // namespace t4a::compile
