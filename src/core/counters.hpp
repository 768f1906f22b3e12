// Counters of a runtime and of the process (deliberate leaks).
// Each is incremented where the thing happens, so tests can assert it.
//
// The runtime's own counters and those of the memory layer's allocation
// and transfer paths are fields of RuntimeCounters. A counter that only
// one part of a higher layer counts (the module cache, cooperative
// launches, copies between runtimes, completions) is that part's: it is
// declared there, once, at static initialization, with the
// t4a_runtime_stats field it fills, and counted in the runtime's table of
// part counters, so core names none of them:
//
//   const core::CounterSlot k_peer_copies = core::register_counter(
//       "peer_copies", &t4a_runtime_stats::peer_copies);
//   ...
//   rt.counters().of(k_peer_copies).add();
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

// A part counter's slot: an index into every runtime's table of part
// counters.
struct CounterSlot {
  uint8_t index = 0;
};

// Slots a runtime has room for.
inline constexpr int k_max_part_counters = 24;

// Declares a part counter named `name` (a string literal, for messages)
// that fills `field` of t4a_runtime_stats. Call only during static
// initialization of the library (a namespace-scope constant of the owning
// layer), before any runtime exists; a field declared twice, or more than
// k_max_part_counters slots, is a programming error that aborts at load
// time with a message.
CounterSlot register_counter(const char *name,
                             uint64_t t4a_runtime_stats::*field);

struct RuntimeCounters {
  // launches first: it shares the runtime's admission cache line.
  Counter launches, host_waits, trims, allocations, frees, zero_fills, fills,
      device_copies, uploads, downloads, bytes_uploaded, bytes_downloaded,
      staging_waits, events_recorded, quarantined, leaked_allocations;
  // The part counters (register_counter), by slot.
  Counter parts[k_max_part_counters];
  Counter &of(CounterSlot s) { return parts[s.index]; }
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
