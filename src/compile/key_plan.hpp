// The final identity key of a compile (dependencies.hpp): the base key
// alone for a request that reads no file; for one that can, the base key
// and the dependency set that holds now — a set recorded earlier (in this
// process, or in the disk cache's manifest of the base key) that still
// validates, else a fresh scan. After NVRTC ran, record_key() keeps the
// set for later lookups, unless a dependency changed during the compile.
#pragma once

#include <string>
#include <vector>

#include "compile/dependencies.hpp"
#include "compile/disk_cache.hpp"
#include "core/fork.hpp"

namespace t4a::compile {

struct KeyPlan {
  core::Digest key{};     // the final key (the base key when no files)
  bool cacheable = true;  // false: no cache may hold or serve this compile
  std::string why;        // when not cacheable
  bool has_files = false; // the key covers a dependency set
  bool scanned = false;   // the set was scanned by this call
  DependencySet deps;
};

KeyPlan plan_key(const core::Digest &base, const Request &r,
                 const std::vector<std::string> &options,
                 const std::vector<std::string> &toolkit_dirs,
                 LazyDiskConfig &disk);

// After a successful NVRTC run: true when the result may be cached under
// plan.key (its dependencies did not change meanwhile; the set is then
// recorded for `base`), false with *why.
bool record_key(const core::Digest &base, const KeyPlan &plan,
                const DiskConfig &disk, std::string *why);

// The fork hook of this file's leaf lock, called by capi/fork.cpp in its
// fixed order (core/fork.hpp).
void key_plan_at_fork(core::ForkPhase phase);

} // namespace t4a::compile
