// The transfer plan: how one pageable host transfer runs, chosen by size
// (docs/memory.md, "Transfer paths"). Pure (no driver, no runtime), so
// the host-lane test checks every size class directly
// (tests/host/test_transfer_plan.cpp).
//
// A transfer of `bytes` runs in pieces of `piece` bytes: each piece is one
// DMA between a staging span and the device; pieces are pipelined (the
// host copy of one piece overlaps the DMA of the one before). A transfer
// of one piece is not pipelined. An upload queues the host copies of up
// to `ahead` pieces beyond the one whose DMA is enqueued next, so the copy
// workers never wait for the caller between pieces. Each piece's host copy
// (pageable <-> staging) is split into parts of at least `min_part` bytes on
// the copy workers (copy_workers.hpp); a piece of fewer than two parts is
// copied inline by the calling thread. A download with `direct` is one DMA
// straight into the caller's memory (the driver stages it itself). With
// `stream` the host copies use non-temporal stores (copy_workers.hpp).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

namespace t4a::memory {

// The most upload pieces copied ahead of the DMA (TransferPlan::ahead).
inline constexpr size_t k_upload_ahead_max = 8;

// Forced plan parameters, for measuring the candidate paths
// (bench/transfer_sweep.cpp --variants): read once per runtime, when its
// staging ring is made (its first pageable transfer or download), from the
// environment variable T4A_TRANSFER_FORCE, a comma-separated list of
// `piece=BYTES` (the pipeline unit), `part=BYTES` (the smallest parallel
// host-copy part), `direct=0|1` (downloads straight into the caller's memory)
// `pend=event|stream` (how a waited pending download orders its delivery
// after its snapshot: a host wait for the snapshot's event, or a stream wait on
// the delivery stream) and `stream=0|1` (host copies with non-temporal
// stores: never, always), `ahead=N` (upload pieces copied ahead of the
// DMA, 0..8; 0 copies each piece only once the one before is enqueued).
// BYTES may end in K or M. Unset or 0: chosen by size.
// A malformed value is logged (warning) and ignored as a whole.
struct TransferTuning {
  uint64_t piece = 0;
  uint64_t min_part = 0;
  int direct = -1;      // -1: by size
  int pend_stream = -1; // -1: the default (event)
  int stream = -1;      // -1: by size
  int ahead = -1;       // -1: k_upload_ahead

  static TransferTuning from_env(); // staging_ring.cpp (logs)

  // False when `text` is malformed (then *out is left default).
  static bool parse(const char *text, TransferTuning *out) {
    TransferTuning t;
    std::string all(text);
    size_t at = 0;
    while (at <= all.size()) {
      size_t end = all.find(',', at);
      if (end == std::string::npos) end = all.size();
      std::string item = all.substr(at, end - at);
      at = end + 1;
      if (item.empty()) continue;
      size_t eq = item.find('=');
      if (eq == std::string::npos) return false;
      std::string key = item.substr(0, eq), val = item.substr(eq + 1);
      if (key == "pend") {
        if (val == "event")
          t.pend_stream = 0;
        else if (val == "stream")
          t.pend_stream = 1;
        else
          return false;
        continue;
      }
      if (val.empty() || val[0] < '0' || val[0] > '9') return false;
      char *stop = nullptr;
      errno = 0;
      unsigned long long n = std::strtoull(val.c_str(), &stop, 10);
      if (errno != 0) return false;
      if (*stop == 'K' || *stop == 'M') {
        unsigned shift = *stop == 'K' ? 10 : 20;
        if (n > (~0ull >> shift)) return false;
        n <<= shift;
        ++stop;
      }
      if (*stop != '\0') return false;
      if (key == "piece")
        t.piece = n;
      else if (key == "part")
        t.min_part = n;
      else if (key == "direct" && n <= 1)
        t.direct = static_cast<int>(n);
      else if (key == "stream" && n <= 1)
        t.stream = static_cast<int>(n);
      else if (key == "ahead" && n <= k_upload_ahead_max)
        t.ahead = static_cast<int>(n);
      else
        return false;
    }
    *out = t;
    return true;
  }
};

struct TransferPlan {
  size_t piece = 0;         // bytes per DMA, 1 .. the staging chunk
  size_t min_part = 0;      // smallest parallel host-copy part
  size_t parallel_from = 0; // smallest piece copied in parallel
  bool direct = false;      // download only: no staging
  // The host copies (into staging, out of it) use non-temporal stores.
  bool stream = false;
  // Upload only: pieces whose host copies are queued beyond the one whose
  // DMA is enqueued next (at most 8).
  size_t ahead = 0;
  // The min_part argument of CopyWorkers::copy for a piece of `len`
  // bytes: std::numeric_limits<size_t>::max() (inline) below parallel_from.
  size_t part_for(size_t len) const {
    return len >= parallel_from ? min_part : std::numeric_limits<size_t>::max();
  }
};

// The measured thresholds (docs/memory.md, "Transfer paths"; measured with
// bench/transfer_probe.cpp --variants on a 16-core H200 host):
// - a piece of at least 1 MiB is copied in parallel, in parts of at least
//   64 KiB (1 MiB: 16 parts on 16 threads); a smaller one inline (256 KiB
//   split in two took 37.7 us against 28.4 inline);
// - uploads run in pieces of one staging chunk (8 MiB by default);
// - downloads above 2 MiB run in pieces of a quarter of the transfer,
//   rounded up to a power of two, at least 2 MiB and at most a chunk, so
//   that mid-size downloads pipeline (4 MiB in two pieces took 156 us
//   against 213 in one; 16 MiB in four 502 us against 858 in two).
// - host copies of transfers from 1 MiB use non-temporal stores
//   (`stream`), uploads only below 128 MiB: streaming stores skip reading
//   each destination line into the cache first. Per call, streamed against
//   plain: uploads of 4 / 16 / 64 MiB took 119 / 480 / 1841 us against
//   214 / 822 / 2571; downloads of 1 / 64 / 256 MiB 73 / 1658 / 5593 us
//   against 76 / 1860 / 6898 (0.89x the pinned DMA rate at 256 MiB against
//   0.73x). A 256 MiB upload was no faster streamed (7649 against 7421 us;
//   0.69x the pinned rate against 0.81x), and a 256 KiB download slower
//   (36 against 29 us).
inline constexpr size_t k_copy_part_bytes = size_t(64) << 10;
inline constexpr size_t k_parallel_from_bytes = size_t(1) << 20;
inline constexpr size_t k_download_piece_min = size_t(2) << 20;
inline constexpr uint64_t k_stream_from = uint64_t(1) << 20;
inline constexpr uint64_t k_stream_upload_below = uint64_t(128) << 20;
inline constexpr size_t k_upload_ahead = 2;

inline TransferPlan plan_transfer(const TransferTuning &forced,
                                  size_t chunk_bytes, bool upload,
                                  uint64_t bytes) {
  TransferPlan p;
  p.piece = chunk_bytes;
  p.min_part = k_copy_part_bytes;
  p.parallel_from = k_parallel_from_bytes;
  p.direct = false;
  if (!upload && bytes > k_download_piece_min) {
    uint64_t quarter = (bytes + 3) / 4, piece = k_download_piece_min;
    while (piece < quarter) piece <<= 1;
    p.piece = static_cast<size_t>(std::min<uint64_t>(piece, chunk_bytes));
  }
  if (forced.piece != 0)
    p.piece =
        static_cast<size_t>(std::min<uint64_t>(forced.piece, chunk_bytes));
  if (forced.min_part != 0) {
    p.min_part = static_cast<size_t>(forced.min_part);
    p.parallel_from = 2 * p.min_part;
  }
  if (forced.direct >= 0 && !upload) p.direct = forced.direct == 1;
  p.stream =
      bytes >= k_stream_from && (!upload || bytes < k_stream_upload_below);
  if (forced.stream >= 0) p.stream = forced.stream == 1;
  p.ahead =
      forced.ahead >= 0 ? static_cast<size_t>(forced.ahead) : k_upload_ahead;
  if (bytes < p.piece) p.piece = static_cast<size_t>(bytes);
  if (p.piece == 0) p.piece = 1;
  return p;
}

} // namespace t4a::memory
