// Counters of a runtime and of the process (deliberate leaks).
// Each is incremented where the thing happens, so tests can assert it.
#pragma once

#include <atomic>
#include <cstdint>

#include "t4acuda.h"

namespace t4a::core {

struct Counter {
  std::atomic<uint64_t> v{0};
  void add(uint64_t n = 1) { v.fetch_add(n, std::memory_order_relaxed); }
  // For counters only ever written under the runtime's admission lock: a
  // plain load and store (no locked read-modify-write); readers still get
  // a whole value.
  void bump(uint64_t n = 1) {
    v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
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

// Device bytes: allocated and freed from any thread; live = allocated -
// freed; the peak is taken at allocation.
struct DeviceBytes {
  Counter allocated_total, freed_total, peak;
  void allocate(uint64_t n) { // from any thread
    allocated_total.add(n);
    uint64_t live = now();
    uint64_t p = peak.get();
    while (live > p &&
           !peak.v.compare_exchange_weak(p, live, std::memory_order_relaxed)) {
    }
  }
  void free(uint64_t n) { freed_total.add(n); }
  // Freed is read first: a free that happens between the two loads can
  // then only make `now` larger, never wrap below zero.
  uint64_t now() const {
    uint64_t f = freed_total.v.load(std::memory_order_acquire);
    uint64_t a = allocated_total.v.load(std::memory_order_acquire);
    return a >= f ? a - f : 0;
  }
};

struct RuntimeCounters {
  // launches first: it shares the runtime's admission cache line.
  Counter launches, host_waits, trims, allocations, frees, zero_fills, fills,
      device_copies, uploads, downloads, bytes_uploaded, bytes_downloaded,
      staging_waits, events_recorded, quarantined, leaked_allocations,
      module_loads, module_unloads, module_cache_hits, module_evictions,
      leaked_modules, completions_recorded;
  // Copies between runtimes (memory/cross_copy.cpp), counted by both
  // runtimes of each copy, per path.
  Counter same_device_copies, same_device_bytes, peer_copies, peer_bytes,
      staged_copies, staged_bytes;
  // Cooperative launches and grid-barrier audits (launch/cooperative.cpp).
  Counter cooperative_launches, barrier_audit_failures;
  DeviceBytes device_bytes;
  Level staging_bytes;
  void fill(t4a_runtime_stats *s) const;
};

struct ProcessCounters {
  Counter runtimes_live, runtimes_leaked, leaked_device_allocations,
      leaked_device_bytes, leaked_staging_bytes, leaked_host_buffers;
  static ProcessCounters &instance();
  void fill(t4a_process_stats *s) const;
};

} // namespace t4a::core
