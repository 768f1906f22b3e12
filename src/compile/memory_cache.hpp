// The process-wide in-memory artifact cache (R-CMP-3): LRU, bounded by
// entries and bytes. It holds one handle reference per cached artifact
// (a registry retain), so a hit hands out the same handle id, retained.
// Created on first use, never destroyed.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "compile/sha256.hpp"
#include "core/fork.hpp"

namespace t4a::compile {

class MemoryCache {
public:
  static MemoryCache &instance();

  // On a hit: retains the cached handle for the caller, moves the entry to
  // the front and returns its id; 0 on a miss. An entry whose handle can
  // no longer be retained (the caller released the cache's reference by
  // one release too many) is dropped and counts as a miss.
  uint64_t lookup(const Digest &key);
  // Caches `id` (retaining it for the cache) unless the key is already
  // cached; then evicts from the back until within both bounds (the new
  // entry is never evicted by its own insertion).
  void insert(const Digest &key, uint64_t id, uint64_t bytes);
  // Fork safety (core/fork.hpp): prepare takes the lock; both sides
  // release it.
  void at_fork(core::ForkPhase phase);

private:
  struct Entry {
    std::string key;
    uint64_t id;
    uint64_t bytes;
  };
  std::mutex mu_;
  std::list<Entry> lru_; // front: most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  uint64_t bytes_ = 0;
};

} // namespace t4a::compile
