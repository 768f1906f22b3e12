// Module, kernel, launch and completion entry points (R-MOD, R-LAUNCH).
#include <string>

#include "capi/barrier.hpp"
#include "compile/artifact.hpp"
#include "core/completion.hpp"
#include "core/context_scope.hpp"
#include "core/op_scope.hpp"
#include "core/sha256.hpp"
#include "core/struct_io.hpp"
#include "launch/kernel.hpp"
#include "launch/launch.hpp"
#include "launch/module.hpp"

using namespace t4a;
using core::Kind;
using core::Ref;

namespace {

// Loads (or finds in the runtime's module cache) the module for `key`;
// `artifact` (giving a core::ArtifactView) is called only on a miss.
template <class ArtifactFn>
t4a_status load_module(Ref<core::Runtime> rt, const core::Digest &key,
                       ArtifactFn artifact, t4a_module *out) {
  std::vector<Ref<launch::Module>> evicted;
  Ref<launch::Module> m;
  {
    core::OpScope op(*rt, "loading a module");
    if (op.status() != T4A_SUCCESS) return op.status();
    launch::ModuleCache &cache = launch::ModuleCache::of(*rt);
    m = cache.find(key);
    if (m) {
      rt->counters().module_cache_hits.add();
    } else {
      if (t4a_status s = launch::Module::load(rt, artifact(), &m);
          s != T4A_SUCCESS)
        return s;
      cache.insert(m, &evicted);
    }
    if (!evicted.empty()) {
      // Evicted modules may be kept by the open epoch (launches still in
      // flight): seal it so they can retire, retire what is already
      // complete, and drop the cache's references under admission.
      core::Epochs &ep = rt->epochs();
      (void)ep.seal(*rt, false);
      core::Epochs::Items retired;
      (void)ep.poll(*rt, &retired, false);
      retired.clear();
      evicted.clear();
    }
  }
  out->id = capi::publish(std::move(m));
  return T4A_SUCCESS;
}

t4a_status get_kernel(t4a_kernel h, Ref<launch::Kernel> *out) {
  return capi::resolve(h.id, Kind::Kernel, "kernel", out);
}

// The kernel's runtime usable and its context current, for occupancy.
t4a_status enter_kernel(launch::Kernel &k, core::ContextScope *scope,
                        const char *what) {
  core::Runtime &rt = k.module().runtime();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  return scope->enter(rt.context(), what);
}

} // namespace

extern "C" {

T4A_API t4a_status t4a_module_load(t4a_runtime runtime, t4a_artifact artifact,
                                   t4a_module *module) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    if (t4a_status s = capi::resolve_runtime(runtime, &rt); s != T4A_SUCCESS)
      return s;
    Ref<compile::Artifact> a;
    if (t4a_status s =
            capi::resolve(artifact.id, Kind::Artifact, "artifact", &a);
        s != T4A_SUCCESS)
      return s;
    if (module == nullptr) return capi::null_arg("module");
    return load_module(
        rt, a->key(), [&] { return a->view(); }, module);
  });
}

T4A_API t4a_status t4a_module_load_data(t4a_runtime runtime, const void *image,
                                        size_t bytes, t4a_module *module) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    if (t4a_status s = capi::resolve_runtime(runtime, &rt); s != T4A_SUCCESS)
      return s;
    if (image == nullptr) return capi::null_arg("image");
    if (bytes == 0)
      return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                        "bytes is 0; an image has at least one byte");
    if (module == nullptr) return capi::null_arg("module");
    core::Digest key = core::Sha256::of(image, bytes);
    std::string copy;
    return load_module(
        rt, key,
        [&] {
          copy.assign(static_cast<const char *>(image), bytes);
          return core::ArtifactView{copy, core::ImageKind::Data, key};
        },
        module);
  });
}

T4A_API t4a_status t4a_module_retain(t4a_module module) {
  return T4A_ENTRY(
      { return capi::retain_handle(module.id, Kind::Module, "module"); });
}

T4A_API t4a_status t4a_module_release(t4a_module module) {
  return T4A_ENTRY(
      { return capi::release_handle(module.id, Kind::Module, "module"); });
}

T4A_API t4a_status t4a_kernel_get(t4a_module module, const char *name,
                                  t4a_kernel *kernel) {
  return T4A_ENTRY({
    Ref<launch::Module> m;
    if (t4a_status s = capi::resolve(module.id, Kind::Module, "module", &m);
        s != T4A_SUCCESS)
      return s;
    if (name == nullptr) return capi::null_arg("name");
    if (name[0] == '\0')
      return core::fail(T4A_ERROR_INVALID_ARGUMENT, "name is empty");
    if (kernel == nullptr) return capi::null_arg("kernel");
    Ref<launch::Kernel> k;
    if (t4a_status s = launch::Kernel::get(std::move(m), name, &k);
        s != T4A_SUCCESS)
      return s;
    kernel->id = capi::publish(std::move(k));
    return T4A_SUCCESS;
  });
}

T4A_API t4a_status t4a_kernel_retain(t4a_kernel kernel) {
  return T4A_ENTRY(
      { return capi::retain_handle(kernel.id, Kind::Kernel, "kernel"); });
}

T4A_API t4a_status t4a_kernel_release(t4a_kernel kernel) {
  return T4A_ENTRY(
      { return capi::release_handle(kernel.id, Kind::Kernel, "kernel"); });
}

T4A_API t4a_status t4a_kernel_info_get(t4a_kernel kernel,
                                       t4a_kernel_info *info) {
  return T4A_ENTRY({
    Ref<launch::Kernel> k;
    if (t4a_status s = get_kernel(kernel, &k); s != T4A_SUCCESS) return s;
    if (t4a_status s = core::check_out_struct(info, "info"); s != T4A_SUCCESS)
      return s;
    k->info(info);
    return T4A_SUCCESS;
  });
}

T4A_API t4a_status t4a_kernel_param(t4a_kernel kernel, uint32_t index,
                                    uint64_t *offset, uint64_t *size) {
  return T4A_ENTRY({
    Ref<launch::Kernel> k;
    if (t4a_status s = get_kernel(kernel, &k); s != T4A_SUCCESS) return s;
    if (!k->signature().params_known)
      return core::fail(T4A_ERROR_UNSUPPORTED,
                        "the driver does not report kernel parameters (no "
                        "cuFuncGetParamInfo)");
    uint64_t o = 0, z = 0;
    if (!k->param(index, &o, &z))
      return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                        "index is %u; the kernel has %u parameters", index,
                        k->signature().param_count);
    if (offset != nullptr) *offset = o;
    if (size != nullptr) *size = z;
    return T4A_SUCCESS;
  });
}

T4A_API t4a_status t4a_kernel_occupancy(t4a_kernel kernel, int32_t block_size,
                                        uint64_t dynamic_shared,
                                        int32_t *blocks_per_sm) {
  return T4A_ENTRY({
    Ref<launch::Kernel> k;
    if (t4a_status s = get_kernel(kernel, &k); s != T4A_SUCCESS) return s;
    if (blocks_per_sm == nullptr) return capi::null_arg("blocks_per_sm");
    if (block_size < 1)
      return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                        "block_size is %d; it must be at least 1", block_size);
    core::ContextScope scope;
    if (t4a_status s = enter_kernel(*k, &scope, "computing occupancy");
        s != T4A_SUCCESS)
      return s;
    int n = 0;
    if (auto r = driver::cu::occupancy_max_active_blocks(
            &n, k->function(), block_size, static_cast<size_t>(dynamic_shared));
        !r)
      return k->module().runtime().fail_op(r, "computing occupancy");
    *blocks_per_sm = n;
    return T4A_SUCCESS;
  });
}

T4A_API t4a_status t4a_kernel_suggest_block_size(t4a_kernel kernel,
                                                 uint64_t dynamic_shared,
                                                 int32_t *block_size,
                                                 int32_t *min_grid_size) {
  return T4A_ENTRY({
    Ref<launch::Kernel> k;
    if (t4a_status s = get_kernel(kernel, &k); s != T4A_SUCCESS) return s;
    if (block_size == nullptr) return capi::null_arg("block_size");
    core::ContextScope scope;
    if (t4a_status s = enter_kernel(*k, &scope, "suggesting a block size");
        s != T4A_SUCCESS)
      return s;
    int grid = 0, block = 0;
    if (auto r = driver::cu::occupancy_max_potential_block_size(
            &grid, &block, k->function(), static_cast<size_t>(dynamic_shared));
        !r)
      return k->module().runtime().fail_op(r, "suggesting a block size");
    *block_size = block;
    if (min_grid_size != nullptr) *min_grid_size = grid;
    return T4A_SUCCESS;
  });
}

T4A_API t4a_status t4a_launch(t4a_runtime runtime,
                              const t4a_launch_desc *desc) {
  return T4A_ENTRY({ return launch::launch(runtime, desc); });
}

T4A_API t4a_status t4a_runtime_record(t4a_runtime runtime,
                                      t4a_completion *completion) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    if (t4a_status s = capi::resolve_runtime(runtime, &rt); s != T4A_SUCCESS)
      return s;
    if (completion == nullptr) return capi::null_arg("completion");
    Ref<core::Completion> c;
    if (t4a_status s = core::Completion::record(std::move(rt), &c);
        s != T4A_SUCCESS)
      return s;
    completion->id = capi::publish(std::move(c));
    return T4A_SUCCESS;
  });
}

T4A_API t4a_status t4a_completion_poll(t4a_completion completion) {
  return T4A_ENTRY({
    Ref<core::Completion> c;
    if (t4a_status s =
            capi::resolve(completion.id, Kind::Completion, "completion", &c);
        s != T4A_SUCCESS)
      return s;
    return c->poll();
  });
}

T4A_API t4a_status t4a_completion_wait(t4a_completion completion) {
  return T4A_ENTRY({
    Ref<core::Completion> c;
    if (t4a_status s =
            capi::resolve(completion.id, Kind::Completion, "completion", &c);
        s != T4A_SUCCESS)
      return s;
    return c->wait();
  });
}

T4A_API t4a_status t4a_runtime_wait(t4a_runtime runtime,
                                    t4a_completion completion) {
  return T4A_ENTRY({
    Ref<core::Runtime> rt;
    if (t4a_status s = capi::resolve_runtime(runtime, &rt); s != T4A_SUCCESS)
      return s;
    Ref<core::Completion> c;
    if (t4a_status s =
            capi::resolve(completion.id, Kind::Completion, "completion", &c);
        s != T4A_SUCCESS)
      return s;
    return c->wait_on(*rt);
  });
}

T4A_API t4a_status t4a_completion_retain(t4a_completion completion) {
  return T4A_ENTRY({
    return capi::retain_handle(completion.id, Kind::Completion, "completion");
  });
}

T4A_API t4a_status t4a_completion_release(t4a_completion completion) {
  return T4A_ENTRY({
    return capi::release_handle(completion.id, Kind::Completion, "completion");
  });
}

} // extern "C"
