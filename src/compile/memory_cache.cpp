#include "compile/memory_cache.hpp"

#include <vector>

#include "compile/compile_stats.hpp"
#include "core/registry.hpp"
#include "t4acuda.h"

namespace t4a::compile {

namespace {
std::string key_string(const Digest &key) {
  return std::string(reinterpret_cast<const char *>(key.data()), key.size());
}
} // namespace

MemoryCache &MemoryCache::instance() {
  static MemoryCache *cache = new MemoryCache(); // never destroyed
  return *cache;
}

uint64_t MemoryCache::lookup(const Digest &key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key_string(key));
  if (it == index_.end()) return 0;
  uint64_t id = it->second->id;
  if (core::Registry::instance().retain(id, core::Kind::Artifact) !=
      core::HandleCheck::Ok) {
    bytes_ -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
    return 0;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return id;
}

void MemoryCache::insert(const Digest &key, uint64_t id, uint64_t bytes) {
  std::vector<core::Ref<core::Object>> dropped; // destroyed after unlock
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string k = key_string(key);
    if (index_.count(k) != 0) return;
    if (core::Registry::instance().retain(id, core::Kind::Artifact) !=
        core::HandleCheck::Ok)
      return;
    lru_.push_front(Entry{k, id, bytes});
    index_[k] = lru_.begin();
    bytes_ += bytes;
    while (lru_.size() > 1 && (lru_.size() > T4A_MEMORY_CACHE_ENTRIES ||
                               bytes_ > T4A_MEMORY_CACHE_BYTES)) {
      Entry &victim = lru_.back();
      core::Ref<core::Object> removed;
      (void)core::Registry::instance().release(victim.id, core::Kind::Artifact,
                                               &removed);
      dropped.push_back(std::move(removed));
      bytes_ -= victim.bytes;
      index_.erase(victim.key);
      lru_.pop_back();
      compile_stats().memory_evictions.add();
    }
  }
}

void MemoryCache::at_fork(core::ForkPhase phase) {
  if (phase == core::ForkPhase::Prepare)
    mu_.lock();
  else
    mu_.unlock(); // in the child: the only thread, which locked it
}

} // namespace t4a::compile
