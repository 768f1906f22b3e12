#include "compile/key_plan.hpp"

#include <map>
#include <mutex>

#include "core/log.hpp"

namespace t4a::compile {

namespace {

// The sets known in this process per base key; `no_files`: the request
// can read no file (a property of the base key's inputs alone).
struct Known {
  bool no_files = false;
  std::vector<DependencySet> sets; // newest last
};

constexpr size_t k_memo_entries = 4096;

std::mutex g_mu; // a leaf lock: nothing is called while it is held
std::map<core::Digest, Known> *g_known = new std::map<core::Digest, Known>();

bool lookup(const core::Digest &base, Known *out) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_known->find(base);
  if (it == g_known->end()) return false;
  *out = it->second;
  return true;
}

void remember(const core::Digest &base, const Known &k) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_known->size() >= k_memo_entries && !g_known->count(base))
    g_known->clear(); // a bound, not a policy: sets are found again
  (*g_known)[base] = k;
}

void add_set(std::vector<DependencySet> *sets, const DependencySet &s) {
  for (const DependencySet &x : *sets)
    if (final_key(core::Digest{}, x) == final_key(core::Digest{}, s)) return;
  sets->push_back(s);
  if (sets->size() > k_max_sets)
    sets->erase(sets->begin(), sets->end() - k_max_sets);
}

} // namespace

KeyPlan plan_key(const core::Digest &base, const Request &r,
                 const std::vector<std::string> &options,
                 const std::vector<std::string> &toolkit_dirs,
                 LazyDiskConfig &lazy) {
  KeyPlan p;
  p.key = base;
  Known k;
  bool known = lookup(base, &k);
  if (known && k.no_files) return p;
  if (!known && lazy.get().enabled) {
    const DiskConfig &disk = lazy.get();
    std::string bytes, why;
    switch (disk_get_manifest(disk, base, &bytes, &why)) {
    case DiskRead::Hit:
      if (!parse_manifest(bytes, &k.sets))
        core::logf(T4A_LOG_WARN,
                   "compile cache: a manifest of '%s' does not "
                   "parse; scanning the dependencies again",
                   r.program_name.c_str());
      break;
    case DiskRead::Corrupt:
      core::logf(T4A_LOG_WARN, "compile cache: corrupt manifest (%s)",
                 why.c_str());
      break;
    case DiskRead::Miss: break;
    }
    if (!k.sets.empty()) remember(base, k);
  }
  for (size_t i = k.sets.size(); i-- > 0;) {
    std::string changed;
    if (validate(k.sets[i], &changed)) {
      p.has_files = true;
      p.deps = k.sets[i];
      p.key = final_key(base, p.deps);
      return p;
    }
  }
  ScanOutcome s = scan_dependencies(r, options, toolkit_dirs);
  if (!s.provable) {
    p.cacheable = false;
    p.why = s.why;
    core::logf(T4A_LOG_INFO,
               "compile cache: '%s' is not cached (in memory or on disk): %s",
               r.program_name.c_str(), s.why.c_str());
    return p;
  }
  if (s.set.deps.empty()) {
    k.no_files = true;
    k.sets.clear();
    remember(base, k);
    return p;
  }
  p.has_files = true;
  p.scanned = true;
  p.deps = std::move(s.set);
  p.key = final_key(base, p.deps);
  return p;
}

bool record_key(const core::Digest &base, const KeyPlan &plan,
                const DiskConfig &disk, std::string *why) {
  if (!plan.has_files) return true;
  std::string changed;
  bool same = plan.scanned ? unchanged_since_scan(plan.deps, &changed)
                           : validate(plan.deps, &changed);
  if (!same) {
    *why = "'" + changed + "' changed while NVRTC ran";
    return false;
  }
  Known k;
  lookup(base, &k);
  add_set(&k.sets, plan.deps);
  remember(base, k);
  if (disk.enabled) {
    std::vector<DependencySet> on_disk;
    std::string bytes, ignored;
    if (disk_get_manifest(disk, base, &bytes, &ignored) == DiskRead::Hit)
      (void)parse_manifest(bytes, &on_disk); // unparsable: replaced
    add_set(&on_disk, plan.deps);
    std::string w;
    if (!disk_put_manifest(disk, base, encode_manifest(on_disk), &w))
      core::logf(T4A_LOG_WARN, "compile cache: manifest not written: %s",
                 w.c_str());
  }
  return true;
}

void key_plan_at_fork(core::ForkPhase phase) {
  if (phase == core::ForkPhase::Prepare)
    g_mu.lock();
  else // the child's only thread is the one that locked it
    g_mu.unlock();
}

} // namespace t4a::compile
