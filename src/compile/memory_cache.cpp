#include "compile/memory_cache.hpp"

#include <vector>

#include "compile/compile_stats.hpp"
#include "core/registry.hpp"
#include "t4acuda.h"

namespace t4a::compile {

namespace {
std::string key_string(const core::Digest &key) {
  return std::string(reinterpret_cast<const char *>(key.data()), key.size());
}
} // namespace

MemoryCache &MemoryCache::instance() {
  static MemoryCache *cache = new MemoryCache(); // never destroyed
  return *cache;
}

uint64_t MemoryCache::lookup(const core::Digest &key, uint64_t call_ns) {
  core::Registry &reg = core::Registry::instance();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key_string(key));
  if (it == index_.end()) return 0;
  Entry &e = *it->second;
  // The id still names this artifact while any handle reference is left
  // (a freed slot's generation changes, so a stale id never matches).
  // Otherwise the artifact gets a new handle. The registry's lock is a
  // leaf; no user code runs here.
  if (reg.retain(e.id, core::Kind::Artifact) != core::HandleCheck::Ok)
    e.id = reg.insert(core::Ref<core::Object>(e.artifact.get()));
  lru_.splice(lru_.begin(), lru_, it->second);
  e.artifact->returned(T4A_ARTIFACT_FROM_MEMORY, call_ns);
  return e.id;
}

void MemoryCache::insert(const core::Digest &key,
                         const core::Ref<Artifact> &artifact, uint64_t id,
                         uint64_t bytes) {
  std::vector<core::Ref<Artifact>> dropped; // destroyed after unlock
  std::lock_guard<std::mutex> lock(mu_);
  std::string k = key_string(key);
  if (index_.count(k) != 0) return;
  lru_.push_front(Entry{k, artifact, id, bytes});
  try {
    index_[k] = lru_.begin();
  } catch (...) {
    lru_.pop_front();
    throw;
  }
  bytes_ += bytes;
  while (lru_.size() > 1 && (lru_.size() > T4A_MEMORY_CACHE_ENTRIES ||
                             bytes_ > T4A_MEMORY_CACHE_BYTES)) {
    Entry &victim = lru_.back();
    dropped.push_back(std::move(victim.artifact));
    bytes_ -= victim.bytes;
    index_.erase(victim.key);
    lru_.pop_back();
    compile_stats().memory_evictions.add();
  }
}

void MemoryCache::at_fork(core::ForkPhase phase) {
  if (phase == core::ForkPhase::Prepare)
    mu_.lock();
  else
    mu_.unlock(); // in the child: the only thread, which locked it
}

} // namespace t4a::compile
