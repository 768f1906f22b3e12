// The process-wide in-memory artifact cache: LRU, bounded by
// entries and bytes. It holds its own object reference to each cached
// artifact (a Ref<Artifact>), separate from the handle references of the
// callers: a caller's release, one too many included, never
// drops what the cache holds, so one release too many is INVALID_HANDLE.
// A hit hands out the cached handle id, retained, while it is live; once
// its callers released it, a new handle for the same artifact. Created on
// first use, never destroyed.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "compile/artifact.hpp"
#include "core/fork.hpp"
#include "core/object.hpp"
#include "core/sha256.hpp"

namespace t4a::compile {

class MemoryCache {
public:
  static MemoryCache &instance();

  // On a hit: a handle reference for the caller (the cached id retained,
  // or a new handle registered for the cached artifact when every handle
  // reference to it was released), the entry moved to the front; returns
  // the id, 0 on a miss.
  // The artifact's origin becomes T4A_ARTIFACT_FROM_MEMORY, its call time
  // `call_ns`.
  uint64_t lookup(const core::Digest &key, uint64_t call_ns);
  // Caches `artifact` (a reference of the cache's own) with `id`, the
  // handle its compile returned, unless the key is already cached; then
  // evicts from the back until within both bounds (the new entry is never
  // evicted by its own insertion).
  void insert(const core::Digest &key, const core::Ref<Artifact> &artifact,
              uint64_t id, uint64_t bytes);
  // Fork safety (core/fork.hpp): prepare takes the lock; both sides
  // release it.
  void at_fork(core::ForkPhase phase);

private:
  struct Entry {
    std::string key;
    core::Ref<Artifact> artifact; // the cache's own reference
    uint64_t id;                  // the last handle handed out for it
    uint64_t bytes;
  };
  std::mutex mu_;
  std::list<Entry> lru_; // front: most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  uint64_t bytes_ = 0;
};

} // namespace t4a::compile
