#include "launch/module_load.hpp"

#include <string>
#include <vector>

#include "core/op_scope.hpp"

namespace t4a::launch {

using core::Ref;

namespace {

// `view` (giving the core::ArtifactView to load) is called only on a miss.
template <class ViewFn>
t4a_status load_through_cache(Ref<core::Runtime> rt, const core::Digest &key,
                              ViewFn view,
                              const std::shared_ptr<const NameTable> &names,
                              Ref<Module> *out) {
  std::vector<Ref<Module>> evicted;
  Ref<Module> m;
  {
    core::OpScope op(*rt, "loading a module", "t4a_module_load");
    if (op.status() != T4A_SUCCESS) return op.status();
    ModuleCache &cache = ModuleCache::of(*rt);
    m = cache.find(key);
    if (m) {
      rt->counters().of(k_module_cache_hits).add();
    } else {
      if (t4a_status s = Module::load(rt, view(), names, &m); s != T4A_SUCCESS)
        return s;
      cache.insert(m, &evicted);
    }
    if (!evicted.empty()) {
      // Evicted modules may be kept by the open epoch (launches still in
      // flight): seal it so they can retire, retire what is already
      // complete, and drop the cache's references under admission.
      // Both results are ignored: the load itself succeeded, a failure
      // is noted on the runtime (record false), and what cannot retire
      // yet retires at a later poll or synchronize.
      core::Epochs &ep = rt->epochs();
      (void)ep.seal(*rt, false);
      core::Epochs::Items retired;
      (void)ep.poll(*rt, &retired, false);
      retired.clear();
      evicted.clear();
    }
  }
  *out = std::move(m);
  return T4A_SUCCESS;
}

} // namespace

t4a_status load_cached(Ref<core::Runtime> rt,
                       const core::ArtifactView &artifact,
                       std::shared_ptr<const NameTable> names,
                       Ref<Module> *out) {
  return load_through_cache(
      std::move(rt), artifact.key, [&] { return artifact; }, names, out);
}

t4a_status load_cached_data(Ref<core::Runtime> rt, const void *image,
                            size_t bytes, Ref<Module> *out) {
  core::Digest key = core::Sha256::of(image, bytes);
  std::string copy;
  return load_through_cache(
      std::move(rt), key,
      [&] {
        copy.assign(static_cast<const char *>(image), bytes);
        return core::ArtifactView{copy, core::ImageKind::Data, key};
      },
      nullptr, out);
}

} // namespace t4a::launch
