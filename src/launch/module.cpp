#include "launch/module.hpp"

#include <cstring>

#include "core/context_scope.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "driver/result_class.hpp"
#include "memory/dlpack.hpp"

namespace t4a::launch {

using core::Ref;
using namespace t4a::driver;

namespace {
// The launch layer's part (ranks 200..299, core/component.hpp): torn down
// after the memory layer's.
const core::PartSlot k_module_cache_slot =
    core::register_part("module cache", 200);
} // namespace

const core::CounterSlot
    k_module_loads = core::register_counter("module_loads",
                                            &t4a_runtime_stats::module_loads),
    k_module_unloads = core::register_counter(
        "module_unloads", &t4a_runtime_stats::module_unloads),
    k_module_cache_hits = core::register_counter(
        "module_cache_hits", &t4a_runtime_stats::module_cache_hits),
    k_module_evictions = core::register_counter(
        "module_evictions", &t4a_runtime_stats::module_evictions),
    k_leaked_modules = core::register_counter(
        "leaked_modules", &t4a_runtime_stats::leaked_modules);

Module::Module(Ref<core::Runtime> rt)
    : Object(core::Kind::Module), rt_(std::move(rt)) {}

t4a_status Module::load(Ref<core::Runtime> rt,
                        const core::ArtifactView &artifact,
                        std::shared_ptr<const NameTable> names,
                        Ref<Module> *out) {
  Ref<Module> m = Ref<Module>::adopt(new Module(rt));
  if (names && !names->empty()) m->names_ = std::move(names);
  // std::string keeps a NUL after its bytes: PTX text is terminated.
  if (auto r = cu::module_load_data(&m->mod_, artifact.image.c_str()); !r) {
    m->mod_ = nullptr;
    return rt->fail_op(r,
                       core::format("loading a module from a %s of %zu bytes "
                                    "(cuModuleLoadData)",
                                    core::image_kind_name(artifact.kind),
                                    artifact.image.size())
                           .c_str());
  }
  m->bytes_ = artifact.image.size();
  m->key_ = artifact.key;
  rt->counters().of(k_module_loads).add();
  *out = std::move(m);
  return T4A_SUCCESS;
}

t4a_status Module::symbol_of(const char *name, const char **symbol,
                             const NameExpression **expr) const {
  const NameExpression *e = nullptr;
  if (names_)
    if (t4a_status s = find_expression(*names_, name, "name", &e);
        s != T4A_SUCCESS)
      return s;
  *expr = e;
  *symbol = e != nullptr ? e->lowered.c_str() : name;
  return T4A_SUCCESS;
}

t4a_status Module::global(Ref<Module> m, const char *name,
                          Ref<memory::Buffer> *out) {
  core::Runtime &rt = m->runtime();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  const char *symbol = nullptr;
  const NameExpression *expr = nullptr;
  if (t4a_status s = m->symbol_of(name, &symbol, &expr); s != T4A_SUCCESS)
    return s;
  // The queue that the view's last release hands the module to, made
  // before the view exists (memory/dlpack.hpp).
  if (t4a_status s = memory::prepare_view_releases(rt); s != T4A_SUCCESS)
    return s;
  core::ContextScope scope;
  if (t4a_status s = scope.enter(rt.context(), "looking up a module global");
      s != T4A_SUCCESS)
    return s;
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  if (auto r = cu::module_get_global(&ptr, &bytes, m->handle(), symbol); !r) {
    if (r.code != CUDA_ERROR_NOT_FOUND)
      return rt.fail_op(r, "looking up a module global (cuModuleGetGlobal)");
    if (expr != nullptr)
      return core::fail(T4A_ERROR_UNKNOWN_ENTRY_POINT,
                        "name '%s' is the name expression '%s', whose lowered "
                        "name '%s' is no __device__ or __constant__ variable "
                        "of the module (a kernel? use t4a_kernel_get)",
                        name, expr->expression.c_str(), expr->lowered.c_str());
    return core::fail(T4A_ERROR_UNKNOWN_ENTRY_POINT,
                      "the module has no __device__ or __constant__ variable "
                      "named '%s' (%zu name expressions of its artifact "
                      "checked; a variable in a namespace or a class needs "
                      "its lowered name or a name expression such as "
                      "\"&ns::counter\")",
                      name, m->name_expression_count());
  }
  Ref<core::Runtime> keep(&rt);
  *out = memory::Buffer::adopt_view(std::move(keep), ptr, bytes,
                                    Ref<core::Object>(m.get()));
  return T4A_SUCCESS;
}

Module::~Module() {
  if (mod_ == nullptr) return;
  core::Runtime &rt = *rt_;
  if (rt.completion_unprovable()) {
    // The device may still run a kernel of this module.
    rt.counters().of(k_leaked_modules).add();
    core::logf(T4A_LOG_WARN,
               "a module of device %d is leaked: completion of the work "
               "that used it is not proven",
               rt.ordinal());
    return;
  }
  core::ContextScope scope;
  if (scope.enter(rt.context(), "unloading a module", false) != T4A_SUCCESS) {
    rt.counters().of(k_leaked_modules).add();
    return;
  }
  if (DrvResult r = cu::module_unload(mod_); !r) {
    rt.counters().of(k_leaked_modules).add();
    if (!is_driver_gone(r.code)) (void)rt.note_failure(r, "unloading a module");
    return;
  }
  rt.counters().of(k_module_unloads).add();
}

size_t ModuleCache::KeyHash::operator()(const core::Digest &d) const {
  size_t h;
  std::memcpy(&h, d.data(), sizeof h); // a SHA-256 prefix is a good hash
  return h;
}

ModuleCache &ModuleCache::of(core::Runtime &rt) {
  auto *c = static_cast<ModuleCache *>(rt.part(k_module_cache_slot));
  if (c == nullptr) {
    auto made = std::make_unique<ModuleCache>(rt.options().module_cache_entries,
                                              rt.options().module_cache_bytes);
    c = made.get();
    rt.set_part(k_module_cache_slot, std::move(made));
  }
  return *c;
}

Ref<Module> ModuleCache::find(const core::Digest &key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return *it->second;
}

void ModuleCache::insert(Ref<Module> m, std::vector<Ref<Module>> *evicted) {
  // Reserve first: nothing below may fail once the module is listed.
  evicted->reserve(lru_.size() + 1);
  index_.reserve(index_.size() + 1);
  const core::Digest key = m->key();
  bytes_ += m->bytes();
  lru_.push_front(std::move(m));
  index_[key] = lru_.begin();
  while (lru_.size() > 1 &&
         (lru_.size() > max_entries_ || bytes_ > max_bytes_)) {
    Ref<Module> victim = std::move(lru_.back());
    lru_.pop_back();
    index_.erase(victim->key());
    bytes_ -= victim->bytes();
    victim->runtime().counters().of(k_module_evictions).add();
    evicted->push_back(std::move(victim));
  }
}

void ModuleCache::on_destroy() {
  index_.clear();
  lru_.clear(); // modules not kept elsewhere are unloaded here
  bytes_ = 0;
}

void ModuleCache::teardown(bool completion_proven) {
  // Reached only when no cached module is left (each holds the runtime),
  // or at unproven teardown, where the modules are leaked with it.
  if (!completion_proven)
    for (auto &m : lru_) (void)m.detach();
  lru_.clear();
  index_.clear();
}

} // namespace t4a::launch
