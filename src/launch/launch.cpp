#include "launch/launch.hpp"

#include <cassert>
#include <cstdio>
#include <memory>
#include <new>

#include "core/admission.hpp"
#include "core/borrow.hpp"
#include "core/context_scope.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/registry.hpp"
#include "core/section_admission.hpp"
#include "core/stream_context.hpp"
#include "core/struct_io.hpp"
#include "launch/cooperative.hpp"
#include "launch/kernel.hpp"
#include "memory/buffer.hpp"

namespace t4a::launch {

using core::Kind;
using core::Object;
using core::Ref;
using namespace t4a::driver;

namespace {

// Per-launch scratch space: on the stack up to k_stack_args arguments (no
// heap on the warm path), on the heap beyond. Per argument: its facts
// (written for buffer arguments only: validate() reads no others), its
// device pointer (buffers), its kernelParams entry; and the buffer objects
// borrowed, in argument order (valid until the launch's borrow section
// ends).
struct ArgSpace {
  static constexpr size_t k_per_arg = sizeof(ArgFacts) + sizeof(CUdeviceptr) +
                                      sizeof(void *) + sizeof(Object *);
  alignas(16) unsigned char stack[k_stack_args * k_per_arg];
  std::unique_ptr<unsigned char[]> heap;
  ArgFacts *facts;
  CUdeviceptr *ptrs;
  void **params;
  Object **buffers;

  explicit ArgSpace(uint32_t n) {
    unsigned char *p = stack;
    size_t cap = k_stack_args;
    if (n > k_stack_args) [[unlikely]] {
      heap.reset(new unsigned char[n * k_per_arg]);
      p = heap.get();
      cap = n;
    }
    // Every array starts 8-aligned (each element is 8 or 16 bytes).
    facts = reinterpret_cast<ArgFacts *>(p);
    ptrs = reinterpret_cast<CUdeviceptr *>(p + cap * sizeof(ArgFacts));
    params = reinterpret_cast<void **>(
        p + cap * (sizeof(ArgFacts) + sizeof(CUdeviceptr)));
    buffers = reinterpret_cast<Object **>(
        p + cap * (sizeof(ArgFacts) + sizeof(CUdeviceptr) + sizeof(void *)));
  }
  ArgSpace(const ArgSpace &) = delete;
  ArgSpace &operator=(const ArgSpace &) = delete;
};

// Reports the buffer handle of argument i that did not resolve.
T4A_COLD t4a_status fail_buffer(core::HandleCheck c, uint64_t id, uint32_t i) {
  char arg[48];
  std::snprintf(arg, sizeof arg, "desc->args[%u].buffer", i);
  return core::fail_handle(c, id, arg);
}

// launch: argument by argument, each buffer borrowed as it comes (a
// buffer released meanwhile is freed after the launch, in stream order),
// its facts written for validate() and the kernelParams entries made on
// the way: they point at the arguments and at ptrs[]. Unknown kinds are
// rejected by validate(). `nbuf` counts the buffers borrowed.
[[gnu::always_inline]] inline t4a_status
resolve_args(const core::Registry &reg, const core::Runtime &rt,
             const t4a_arg *const args, uint32_t n, ArgSpace &space,
             uint32_t *nbuf_out) {
  // Copies in locals, which stay in registers: the descriptor and the
  // space escape (copy_struct, validate), so their fields would be
  // reloaded after every store of the loop.
  ArgFacts *const facts = space.facts;
  CUdeviceptr *const ptrs = space.ptrs;
  void **const params = space.params;
  Object **const buffers = space.buffers;
  uint32_t nbuf = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const t4a_arg &a = args[i];
    switch (a.kind) {
    case T4A_ARG_BUFFER: {
      Object *bo = nullptr;
      if (core::HandleCheck c = reg.borrow(a.buffer.id, Kind::Buffer, &bo);
          c != core::HandleCheck::Ok) [[unlikely]]
        return fail_buffer(c, a.buffer.id, i);
      auto &b = static_cast<memory::Buffer &>(*bo);
      buffers[nbuf++] = bo;
      new (&facts[i]) ArgFacts{&b.runtime() == &rt, b.bytes()};
      ptrs[i] = b.ptr() + a.offset; // used only once validated
      params[i] = &ptrs[i];
      break;
    }
    case T4A_ARG_SCALAR: params[i] = const_cast<void *>(a.value); break;
    default: params[i] = const_cast<uint64_t *>(&a.device_pointer);
    }
  }
  *nbuf_out = nbuf;
  return T4A_SUCCESS;
}

// launch: a kernel whose dynamic shared memory passes the default limit
// needs its attribute raised, in the runtime's context.
t4a_status raise_shared(core::Runtime &rt, Kernel &k, uint32_t bytes) {
  core::ContextScope scope;
  if (t4a_status s = scope.enter(rt.context(), "launching a kernel");
      s != T4A_SUCCESS)
    return s;
  return k.ensure_dynamic_shared(bytes);
}

// launch: the special path (launch_special) outside the borrow section,
// holding references to the runtime, the kernel and the buffers borrowed.
t4a_status launch_special_held(core::BorrowSection &section, core::Runtime &rt,
                               Kernel &k, const t4a_launch_desc &d,
                               const Verdict &v, void **params,
                               Object **buffers, uint32_t nbuf) {
  core::Borrowed held({&rt, &k}, buffers, nbuf);
  held.hold();
  bool paused = section.pause();
  t4a_status s = launch_special(rt, k, d, v, params, buffers, nbuf);
  held.drop(paused);
  if (paused) section.resume();
  return s;
}

// launch: reserve -> enqueue -> commit: the module is kept alive by the open
// completion epoch. Reserving seals a full epoch first (one event per
// k_open_limit distinct keeps); if that fails, the launch fails here,
// before anything is enqueued. The warm case skips all of it: a module
// kept in the open epoch is kept until a seal recorded after this
// launch, so the launch adds nothing. Whether it is: the open epoch's
// number stamped on the kernel, else on the module (another kernel of it
// kept it), written when the module is kept (core::Epochs::open_epoch();
// the kernel and module are this runtime's, checked by validate(), and
// only this runtime's launches stamp them, under its admission). So the
// open epoch holds each module once, however many alternate. The
// driver's result is in *out.
[[gnu::always_inline]] inline t4a_status
enqueue_keeping(core::Runtime &rt, Kernel &k, core::SectionAdmission &adm,
                const t4a_launch_desc &d, const Verdict &v, void **params,
                DrvResult *out) {
  core::Epochs &ep = rt.epochs();
  auto enqueue = [&] {
    return core::in_stream_context(rt, [&] {
      return cu::launch_kernel(k.function(), v.grid, v.block,
                               d.dynamic_shared_bytes, rt.stream(), params);
    });
  };
  Module &mod = k.module();
  assert(&mod.runtime() == &rt);
  DrvResult &r = *out;
  if (uint64_t open = ep.open_epoch(); k.module_kept_in() == open) [[likely]] {
    r = enqueue();
  } else if (mod.kept_in() == open) {
    k.set_module_kept_in(open);
    r = enqueue();
  } else {
    // Making room may wait on the host: outside the borrow section.
    core::Epochs::Reservation keep = adm.reserve_keep(ep, rt);
    if (keep.status() != T4A_SUCCESS) [[unlikely]]
      return keep.status();
    r = enqueue();
    // Kept even when the launch failed: the driver may have queued it.
    ep.keep(std::move(keep), mod);
    // Under the number of the epoch that keeps it (reserving may have
    // sealed the one read above).
    mod.set_kept_in(ep.open_epoch());
    k.set_module_kept_in(ep.open_epoch());
  }
  return T4A_SUCCESS;
}

} // namespace

t4a_status launch(t4a_runtime runtime, const t4a_launch_desc *given) {
  // Every object this launch resolves is borrowed (no lock, no reference
  // counting) and stays valid until this section ends, at return, after
  // admission was given back (core/borrow.hpp). What the launch logs (a
  // driver failure under admission, a context retry) is delivered after
  // the section has ended (`defer` is destroyed last): no user callback
  // runs inside it.
  core::LogDefer defer;
  core::BorrowSection section;
  const core::Registry &reg = core::Registry::instance();
  // Errors are reported in argument order: the runtime, the descriptor
  // itself, the kernel, the buffers (then validate()'s, in field order).
  Object *rto = nullptr, *ko = nullptr;
  if (core::HandleCheck c = reg.borrow(runtime.id, Kind::Runtime, &rto);
      c != core::HandleCheck::Ok) [[unlikely]]
    return core::fail_handle(c, runtime.id, "runtime");
  if (given == nullptr) [[unlikely]]
    return core::fail(T4A_ERROR_INVALID_ARGUMENT, "desc is NULL");
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  if (core::StructFault fault = core::copy_struct(given, &d);
      fault.status != T4A_SUCCESS) [[unlikely]]
    return core::fail_struct(fault, "desc", sizeof d);
  if (core::HandleCheck c = reg.borrow(d.kernel.id, Kind::Kernel, &ko);
      c != core::HandleCheck::Ok) [[unlikely]]
    return core::fail_handle(c, d.kernel.id, "desc->kernel");
  core::Runtime &rt = static_cast<core::Runtime &>(*rto);
  Kernel &k = static_cast<Kernel &>(*ko);
  // Arguments are read only when the count is plausible; validate()
  // rejects the rest before looking at them.
  uint32_t n =
      d.args != nullptr && d.arg_count <= T4A_MAX_PARAM_BYTES ? d.arg_count : 0;
  ArgSpace space(n);
  uint32_t nbuf = 0;
  if (t4a_status s = resolve_args(reg, rt, d.args, n, space, &nbuf);
      s != T4A_SUCCESS) [[unlikely]]
    return s;
  Verdict v;
  validate(d, &k.runtime() == &rt, space.facts, k.signature(), k.limits(), &v);
  if (v.status != T4A_SUCCESS) return core::fail(v.status, "%s", v.message);
  // A cooperative launch, or a kernel with grid barriers: its own path
  // (launch/cooperative.hpp). One flag word and one byte of the kernel.
  // It waits for admission (and may wait on the host for audit room), so
  // it runs outside the borrow section, holding references to what was
  // borrowed (see the busy case below).
  if ((d.flags | static_cast<uint32_t>(k.has_barriers())) != 0) [[unlikely]]
    return launch_special_held(section, rt, k, d, v,
                               n > 0 ? space.params : nullptr, space.buffers,
                               nbuf);

  // Admitted, but without making the context current: the launch names
  // the runtime's stream (core/stream_context.hpp); only raising a
  // kernel's shared-memory limit needs the context.
  // When another thread holds the runtime (a raw scope may hold it for
  // long), the wait is made outside the borrow section, holding references
  // to what was borrowed (core/section_admission.hpp).
  core::SectionAdmission adm(section, rt.admission(), {rto, ko}, space.buffers,
                             nbuf);
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  if (v.raise_shared) [[unlikely]]
    if (t4a_status s = raise_shared(rt, k, d.dynamic_shared_bytes);
        s != T4A_SUCCESS)
      return s;
  // Graph capture (core/capture.hpp): the buffers go to the capture's keeps.
  core::CaptureKeeps cap(rt.capture(), rt.capturing(), nbuf);
  DrvResult r{};
  if (t4a_status s =
          enqueue_keeping(rt, k, adm, d, v, n > 0 ? space.params : nullptr, &r);
      s != T4A_SUCCESS) [[unlikely]]
    return s;
  if (cap.active()) [[unlikely]]
    for (uint32_t j = 0; j < nbuf; ++j) cap.keep(*space.buffers[j]);
  if (!r) return rt.fail_op(r, "launching a kernel (cuLaunchKernel)");
  rt.counters().launches.bump();
  return T4A_SUCCESS;
}

} // namespace t4a::launch
