// Counters of a runtime (R-STATS) and of the process (deliberate leaks).
// Each is incremented where the thing happens, so tests can assert it.
#pragma once

#include <atomic>
#include <cstdint>

#include "t4acuda.h"

namespace t4a::core {

struct Counter {
  std::atomic<uint64_t> v{0};
  void add(uint64_t n = 1) { v.fetch_add(n, std::memory_order_relaxed); }
  void sub(uint64_t n) { v.fetch_sub(n, std::memory_order_relaxed); }
  uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

// A level with a high-water mark.
struct Level {
  std::atomic<uint64_t> now{0};
  std::atomic<uint64_t> peak{0};
  void add(uint64_t n) {
    uint64_t cur = now.fetch_add(n, std::memory_order_relaxed) + n;
    uint64_t p = peak.load(std::memory_order_relaxed);
    while (cur > p &&
           !peak.compare_exchange_weak(p, cur, std::memory_order_relaxed)) {
    }
  }
  void sub(uint64_t n) { now.fetch_sub(n, std::memory_order_relaxed); }
};

struct RuntimeCounters {
  Counter host_waits, trims, allocations, frees, zero_fills, fills,
      device_copies, uploads, downloads, bytes_uploaded, bytes_downloaded,
      staging_waits, events_recorded, quarantined, leaked_allocations;
  Level bytes_allocated, staging_bytes;
  void fill(t4a_runtime_stats *s) const;
};

struct ProcessCounters {
  Counter runtimes_live, runtimes_leaked, leaked_device_allocations,
      leaked_device_bytes, leaked_staging_bytes, leaked_host_buffers;
  static ProcessCounters &instance();
  void fill(t4a_process_stats *s) const;
};

} // namespace t4a::core
