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
  // For counters only ever written by one thread at a time (under the
  // runtime's admission lock, or by the owner of RuntimeCounters::owned):
  // a plain load and store (no locked read-modify-write); readers still
  // get a whole value.
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

// Device bytes counted with atomics: by threads other than the counters'
// owner (RuntimeCounters::owned keeps the owner's totals) and by the cold
// paths (quarantine, a free that failed); live = allocated - freed over
// both parts (RuntimeCounters::bytes_now), the peak is taken at
// allocation. A free is counted with release order.
struct DeviceBytes {
  Counter allocated_total, freed_total, peak;
  void free(uint64_t n) {
    freed_total.v.fetch_add(n, std::memory_order_release);
  }
  // The compare-and-swap runs only when the peak rises.
  void raise_peak(uint64_t live) {
    uint64_t p = peak.get();
    while (live > p &&
           !peak.v.compare_exchange_weak(p, live, std::memory_order_relaxed)) {
    }
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
  // Cooperative launches and grid-barrier audits (launch/cooperative.cpp;
  // audit failures are also counted by a kernel's destructor, outside
  // admission: add() only).
  Counter cooperative_launches, barrier_audit_failures;
  DeviceBytes device_bytes;
  Level staging_bytes;

  // Device allocations and frees of the pool (memory/buffer.cpp) are
  // counted by one thread, the runtime's owner, without a locked
  // read-modify-write: the owner is a borrow record (core/borrow.hpp), the
  // one a thread holds while it lives and hands on, through the directory's
  // lock, to a later thread when it exits; the first thread that counts
  // an allocation or free with a record claims it (one compare-and-swap),
  // and only the thread holding that record writes `owned`, with plain
  // loads and stores (release). Every other thread counts in
  // allocations/frees/device_bytes as before. The stats are the sums
  // (fill), exact when nothing runs concurrently; `owner` is never
  // released (a record outlives its threads). docs/threading.md, "Counters
  // of device allocations"; tests/host/test_borrow_counters.c.
  struct Owned {
    std::atomic<const void *> owner{&k_unowned}; // never null
    static constexpr char k_unowned = 0;
    Counter allocations, frees, allocated, freed;
  } owned;

  // One allocation of `bytes` (> 0) from the pool, or one free of it,
  // counted by the thread whose borrow record is `me` (null: none).
  void count_allocation(const void *me, uint64_t bytes) {
    if (owns(me)) [[likely]] {
      owned.allocations.bump();
      owned.allocated.bump(bytes);
    } else {
      allocations.add();
      device_bytes.allocated_total.add(bytes);
    }
    device_bytes.raise_peak(bytes_now());
  }
  void count_free(const void *me, uint64_t bytes) {
    // release: see bytes_now() and fill().
    if (owns(me)) [[likely]] {
      owned.frees.v.store(owned.frees.get() + 1, std::memory_order_release);
      owned.freed.v.store(owned.freed.get() + bytes, std::memory_order_release);
    } else {
      frees.v.fetch_add(1, std::memory_order_release);
      device_bytes.free(bytes);
    }
  }
  // Allocations counted so far (both parts).
  uint64_t allocation_count() const {
    return allocations.get() + owned.allocations.get();
  }
  // Device bytes allocated now: freed (both parts, acquire) read before
  // allocated: every free seen was counted after its allocation, which is
  // then seen too, so this never wraps below zero.
  uint64_t bytes_now() const {
    uint64_t f = device_bytes.freed_total.v.load(std::memory_order_acquire) +
                 owned.freed.v.load(std::memory_order_acquire);
    uint64_t a =
        device_bytes.allocated_total.v.load(std::memory_order_acquire) +
        owned.allocated.v.load(std::memory_order_acquire);
    return a >= f ? a - f : 0;
  }
  void fill(t4a_runtime_stats *s) const;

private:
  bool owns(const void *me) {
    const void *o = owned.owner.load(std::memory_order_relaxed);
    if (o == me) [[likely]] // the owner is never null
      return true;
    return o == &Owned::k_unowned && me != nullptr && claim(me);
  }
  bool claim(const void *me);
};

struct ProcessCounters {
  Counter runtimes_live, runtimes_leaked, leaked_device_allocations,
      leaked_device_bytes, leaked_staging_bytes, leaked_host_buffers;
  static ProcessCounters &instance();
  void fill(t4a_process_stats *s) const;
};

} // namespace t4a::core
