// Modules: a CUmodule loaded in one runtime's context, and the
// runtime's module cache. A module holds a reference to its runtime; it is
// kept alive by handles, kernels, the cache and the runtime's open
// completion epoch (one keepalive per launch, deduplicated), and is
// unloaded (cuModuleUnload, with the runtime's context current) when the
// last of those goes — so only after every launch that used it has
// completed. When completion can no longer be proven it is leaked and
// counted instead.
//
// A module loaded from a compiled artifact keeps that artifact's name
// expressions with their lowered names (launch/names.hpp), so that a
// kernel or a global is found by the expression itself (issue 23 item 6). A
// module global is a non-owning buffer view (global(), issue 23 item 5) that
// holds the module: see memory/buffer.hpp for how its last release keeps
// the module until the work enqueued before it is complete.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/artifact_view.hpp"
#include "core/component.hpp"
#include "core/object.hpp"
#include "core/runtime.hpp"
#include "launch/names.hpp"
#include "memory/buffer.hpp"

namespace t4a::launch {

// The module cache's counters (part counters, core/counters.hpp), defined
// in module.cpp: loads, unloads, cache hits, evictions, modules leaked at
// teardown.
extern const core::CounterSlot k_module_loads, k_module_unloads,
    k_module_cache_hits, k_module_evictions, k_leaked_modules;

class Module final : public core::Object {
public:
  // Loads the artifact's image (under admission, with the runtime's
  // context current); the module keeps its digest as the cache key and
  // `names` (null: none, a raw image).
  static t4a_status load(core::Ref<core::Runtime> rt,
                         const core::ArtifactView &artifact,
                         std::shared_ptr<const NameTable> names,
                         core::Ref<Module> *out);
  // A view of the module's `__device__` or `__constant__` variable `name`
  // (a name expression of the artifact, else the variable's lowered or
  // extern "C" name): UNKNOWN_ENTRY_POINT naming it when the module has
  // none. Not admitted but for making the runtime's release queue; no
  // library lock may be held.
  static t4a_status global(core::Ref<Module> m, const char *name,
                           core::Ref<memory::Buffer> *out);
  // The name to give the driver for `name` (a kernel or a global): the
  // lowered name of the expression it matches, else `name` itself; *expr
  // is that expression or null. INVALID_ARGUMENT (recorded) when `name`
  // is ambiguous (launch/names.hpp).
  t4a_status symbol_of(const char *name, const char **symbol,
                       const NameExpression **expr) const;
  // The artifact's name expressions (empty for a raw image).
  size_t name_expression_count() const { return names_ ? names_->size() : 0; }
  ~Module() override;

  core::Runtime &runtime() const { return *rt_; }
  CUmodule handle() const { return mod_; }
  uint64_t bytes() const { return bytes_; }
  const core::Digest &key() const { return key_; }
  // The stamp of the launch path's keep: the open epoch number
  // (core::Epochs::open_epoch()) of this module's runtime under which a
  // launch last kept the module (0: never). Read and written under that
  // runtime's admission only; no other runtime's epochs keep a module
  // (validation rejects a kernel of another runtime before the keep).
  uint64_t kept_in() const { return kept_in_; }
  void set_kept_in(uint64_t epoch) { kept_in_ = epoch; }

private:
  explicit Module(core::Ref<core::Runtime> rt);
  core::Ref<core::Runtime> rt_;
  CUmodule mod_ = nullptr;
  uint64_t bytes_ = 0;
  uint64_t kept_in_ = 0;
  core::Digest key_{};
  std::shared_ptr<const NameTable> names_; // immutable; null: none
};

// The per-runtime module cache: identity key -> module, strong references,
// bounded by entries and image bytes, least recently used evicted first.
// Every method runs under the runtime's admission lock.
class ModuleCache final : public core::RuntimeComponent {
public:
  ModuleCache(uint64_t max_entries, uint64_t max_bytes)
      : max_entries_(max_entries), max_bytes_(max_bytes) {}
  // The cache of `rt`, created on first use (under admission).
  static ModuleCache &of(core::Runtime &rt);

  // The cached module for `key` (made most recently used), or null.
  core::Ref<Module> find(const core::Digest &key);
  // Adds `m`, then evicts least recently used modules beyond the bounds
  // (never `m` itself). Evicted modules are moved to `evicted` so that the
  // caller can seal the open epoch before dropping them.
  void insert(core::Ref<Module> m, std::vector<core::Ref<Module>> *evicted);

  void teardown(bool completion_proven) override;
  void on_destroy() override;

private:
  struct KeyHash {
    size_t operator()(const core::Digest &d) const;
  };
  using Lru = std::list<core::Ref<Module>>; // front: most recently used
  uint64_t max_entries_;
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  Lru lru_;
  std::unordered_map<core::Digest, Lru::iterator, KeyHash> index_;
};

} // namespace t4a::launch
