#include "launch/launch.hpp"

#include <memory>
#include <new>

#include "core/admission.hpp"
#include "core/context_scope.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/stream_context.hpp"
#include "core/struct_io.hpp"
#include "launch/kernel.hpp"
#include "memory/buffer.hpp"

namespace t4a::launch {

using core::Kind;
using core::Object;
using core::Ref;
using namespace t4a::driver;

namespace {

// Fixed arrays for up to k_stack_args arguments; heap beyond.
// Per-launch scratch space: on the stack up to k_stack_args arguments
// (no heap on the warm path), on the heap beyond. Only what a launch uses
// is constructed: the buffer references it resolves and the facts of its
// buffer arguments (validate() reads facts of buffer arguments only).
struct ArgSpace {
  alignas(
      Ref<Object>) unsigned char stack_refs[k_stack_args * sizeof(Ref<Object>)];
  alignas(ArgFacts) unsigned char stack_facts[k_stack_args * sizeof(ArgFacts)];
  uint64_t stack_ids[k_stack_args];
  uint32_t stack_index[k_stack_args];
  CUdeviceptr stack_ptrs[k_stack_args];
  void *stack_params[k_stack_args];
  std::unique_ptr<unsigned char[]> heap_refs;
  std::unique_ptr<unsigned char[]> heap_facts;
  std::unique_ptr<uint64_t[]> heap_ids;
  std::unique_ptr<uint32_t[]> heap_index;
  std::unique_ptr<CUdeviceptr[]> heap_ptrs;
  std::unique_ptr<void *[]> heap_params;
  Ref<Object> *refs = reinterpret_cast<Ref<Object> *>(stack_refs);
  ArgFacts *facts = reinterpret_cast<ArgFacts *>(stack_facts);
  uint64_t *ids = stack_ids;
  uint32_t *index = stack_index;
  CUdeviceptr *ptrs = stack_ptrs;
  void **params = stack_params;
  size_t refs_made = 0;

  explicit ArgSpace(uint32_t n) {
    if (n <= k_stack_args) return;
    heap_refs.reset(new unsigned char[n * sizeof(Ref<Object>)]);
    heap_facts.reset(new unsigned char[n * sizeof(ArgFacts)]);
    heap_ids.reset(new uint64_t[n]);
    heap_index.reset(new uint32_t[n]);
    heap_ptrs.reset(new CUdeviceptr[n]);
    heap_params.reset(new void *[n]);
    refs = reinterpret_cast<Ref<Object> *>(heap_refs.get());
    facts = reinterpret_cast<ArgFacts *>(heap_facts.get());
    ids = heap_ids.get();
    index = heap_index.get();
    ptrs = heap_ptrs.get();
    params = heap_params.get();
  }
  // Constructs the first `n` (null) buffer references.
  void make_refs(size_t n) {
    for (; refs_made < n; ++refs_made) new (&refs[refs_made]) Ref<Object>();
  }
  ~ArgSpace() {
    for (size_t i = 0; i < refs_made; ++i) refs[i].~Ref<Object>();
  }
  ArgSpace(const ArgSpace &) = delete;
  ArgSpace &operator=(const ArgSpace &) = delete;
};

} // namespace

t4a_status launch(core::Runtime &rt, const t4a_launch_desc *given) {
  if (given == nullptr)
    return core::fail(T4A_ERROR_INVALID_ARGUMENT, "desc is NULL");
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  if (t4a_status s = core::read_struct(given, &d, "desc"); s != T4A_SUCCESS)
    return s;
  Ref<Object> kobj;
  if (auto c =
          core::Registry::instance().resolve(d.kernel.id, Kind::Kernel, &kobj);
      c != core::HandleCheck::Ok)
    return core::fail(T4A_ERROR_INVALID_HANDLE,
                      "desc->kernel (id 0x%016llx) is %s",
                      static_cast<unsigned long long>(d.kernel.id),
                      core::Registry::describe(c));
  Kernel &k = static_cast<Kernel &>(*kobj);
  Module &mod = k.module();
  // Arguments are read only when the count is plausible; validate()
  // rejects the rest before looking at them.
  bool read_args = d.args != nullptr && d.arg_count <= T4A_MAX_PARAM_BYTES;
  uint32_t n = read_args ? d.arg_count : 0;
  ArgSpace space(n);
  size_t nbuf = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (d.args[i].kind == T4A_ARG_BUFFER) {
      space.ids[nbuf] = d.args[i].buffer.id;
      space.index[nbuf] = i;
      ++nbuf;
    }
  }
  if (nbuf > 0) {
    size_t bad = 0;
    space.make_refs(nbuf);
    auto c = core::Registry::instance().resolve_many(space.ids, Kind::Buffer,
                                                     nbuf, space.refs, &bad);
    if (c != core::HandleCheck::Ok)
      return core::fail(T4A_ERROR_INVALID_HANDLE,
                        "desc->args[%u].buffer (id 0x%016llx) is %s",
                        space.index[bad],
                        static_cast<unsigned long long>(space.ids[bad]),
                        core::Registry::describe(c));
    for (size_t j = 0; j < nbuf; ++j) {
      auto &b = static_cast<memory::Buffer &>(*space.refs[j]);
      uint32_t i = space.index[j];
      new (&space.facts[i]) ArgFacts{&b.runtime() == &rt, b.bytes()};
      space.ptrs[i] = b.ptr() + d.args[i].offset;
    }
  }
  Verdict v;
  validate(d, &mod.runtime() == &rt, space.facts, k.signature(), k.limits(),
           &v);
  if (v.status != T4A_SUCCESS) return core::fail(v.status, "%s", v.message);
  for (uint32_t i = 0; i < n; ++i) {
    const t4a_arg &a = d.args[i];
    switch (a.kind) {
    case T4A_ARG_BUFFER: space.params[i] = &space.ptrs[i]; break;
    case T4A_ARG_SCALAR: space.params[i] = const_cast<void *>(a.value); break;
    default: space.params[i] = const_cast<uint64_t *>(&a.device_pointer);
    }
  }

  // Admitted, but without making the context current: the launch names
  // the runtime's stream (core/stream_context.hpp); only raising a
  // kernel's shared-memory limit needs the context.
  core::Admission adm(rt.admission());
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  if (v.raise_shared) {
    core::ContextScope scope;
    if (t4a_status s = scope.enter(rt.context(), "launching a kernel");
        s != T4A_SUCCESS)
      return s;
    if (t4a_status s = k.ensure_dynamic_shared(d.dynamic_shared_bytes);
        s != T4A_SUCCESS)
      return s;
  }
  core::Epochs &ep = rt.epochs();
  bool keep = !ep.keeps_last(&mod);
  if (keep) ep.reserve_keep();
  DrvResult r = core::in_stream_context(rt, [&] {
    return cu::launch_kernel(k.function(), d.grid, d.block,
                             d.dynamic_shared_bytes, rt.stream(),
                             n > 0 ? space.params : nullptr);
  });
  // Kept even when the launch failed: the driver may have queued it.
  if (keep) ep.keep(Ref<Object>(&mod));
  if (!r) return rt.fail_op(r, "launching a kernel (cuLaunchKernel)");
  rt.counters().launches.bump();
  if (ep.open_items() >= 256) (void)ep.seal(rt, false);
  return T4A_SUCCESS;
}

} // namespace t4a::launch
