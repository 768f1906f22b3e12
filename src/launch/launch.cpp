#include "launch/launch.hpp"

#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <vector>

#include "core/admission.hpp"
#include "core/borrow.hpp"
#include "core/context_scope.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
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

// Per-launch scratch space, carved from one block: on the stack up to
// k_stack_args arguments (no heap on the warm path), on the heap beyond;
// sized by the argument count, so a launch with few arguments touches few
// cache lines. The handles a launch resolves are the runtime, the kernel,
// then each buffer argument in order (`buffers` maps the j-th buffer to
// its argument index); `objects` holds the objects borrowed (valid until
// the launch's borrow section ends). Facts are written for buffer
// arguments only (validate() reads no others).
//
// Its size for n arguments: n + 2 handles (lookups, objects), n arguments
// (facts, device pointers, parameter pointers, buffer indices); every
// array starts 8-aligned.
constexpr size_t arg_space_bytes(size_t n) {
  return (n + 2) * (sizeof(core::Lookup) + sizeof(Object *)) +
         n * (sizeof(ArgFacts) + sizeof(CUdeviceptr) + sizeof(void *) +
              sizeof(uint32_t));
}

struct ArgSpace {
  alignas(16) unsigned char stack[arg_space_bytes(k_stack_args)];
  std::unique_ptr<unsigned char[]> heap;
  core::Lookup *lookups;
  Object **objects;
  ArgFacts *facts;
  CUdeviceptr *ptrs;
  void **params;
  uint32_t *buffers;

  explicit ArgSpace(uint32_t n) {
    unsigned char *p = stack;
    if (n > k_stack_args) {
      heap.reset(new unsigned char[arg_space_bytes(n)]);
      p = heap.get();
    }
    lookups = reinterpret_cast<core::Lookup *>(p);
    p += (n + 2) * sizeof(core::Lookup);
    objects = reinterpret_cast<Object **>(p);
    p += (n + 2) * sizeof(Object *);
    facts = reinterpret_cast<ArgFacts *>(p);
    p += n * sizeof(ArgFacts);
    ptrs = reinterpret_cast<CUdeviceptr *>(p);
    p += n * sizeof(CUdeviceptr);
    params = reinterpret_cast<void **>(p);
    p += n * sizeof(void *);
    buffers = reinterpret_cast<uint32_t *>(p);
  }
  ArgSpace(const ArgSpace &) = delete;
  ArgSpace &operator=(const ArgSpace &) = delete;
};

// Reports the handle lookups[bad] of a launch (runtime, kernel, buffers)
// that did not resolve.
T4A_COLD t4a_status fail_lookup(const ArgSpace &space, size_t bad,
                                core::HandleCheck c) {
  if (bad == 0) return core::fail_handle(c, space.lookups[0].id, "runtime");
  if (bad == 1)
    return core::fail_handle(c, space.lookups[1].id, "desc->kernel");
  char arg[48];
  std::snprintf(arg, sizeof arg, "desc->args[%u].buffer",
                space.buffers[bad - 2]);
  return core::fail_handle(c, space.lookups[bad].id, arg);
}

} // namespace

t4a_status launch(t4a_runtime runtime, const t4a_launch_desc *given) {
  // Every object this launch resolves is borrowed (no lock, no reference
  // counting) and stays valid until this section ends, at return, after
  // admission was given back (core/borrow.hpp).
  core::BorrowSection section;
  // The descriptor is read first, without reporting anything, so that the
  // runtime, the kernel and the buffers resolve in one pass; errors are
  // still reported in argument order: the runtime, the descriptor itself,
  // the kernel, the buffers.
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  core::StructFault fault;
  if (given != nullptr) fault = core::copy_struct(given, &d);
  bool have_desc = given != nullptr && fault.status == T4A_SUCCESS;
  // Arguments are read only when the count is plausible; validate()
  // rejects the rest before looking at them.
  uint32_t n =
      have_desc && d.args != nullptr && d.arg_count <= T4A_MAX_PARAM_BYTES
          ? d.arg_count
          : 0;
  ArgSpace space(n);
  space.lookups[0] = {runtime.id, Kind::Runtime};
  space.lookups[1] = {d.kernel.id, Kind::Kernel};
  size_t handles = have_desc ? 2 : 1;
  // Parameter pointers are made here too (they point at the arguments and
  // at ptrs[], filled below); unknown kinds are rejected by validate().
  for (uint32_t i = 0; i < n; ++i) {
    const t4a_arg &a = d.args[i];
    switch (a.kind) {
    case T4A_ARG_BUFFER:
      space.buffers[handles - 2] = i;
      space.lookups[handles++] = {a.buffer.id, Kind::Buffer};
      space.params[i] = &space.ptrs[i];
      break;
    case T4A_ARG_SCALAR: space.params[i] = const_cast<void *>(a.value); break;
    default: space.params[i] = const_cast<uint64_t *>(&a.device_pointer);
    }
  }
  size_t bad = 0;
  core::HandleCheck c = core::Registry::instance().borrow_many(
      space.lookups, handles, space.objects, &bad);
  // Without a readable descriptor only the runtime was looked up, so a
  // failed lookup is always the first error to report.
  if (c != core::HandleCheck::Ok) [[unlikely]]
    return fail_lookup(space, bad, c);
  if (!have_desc) [[unlikely]] {
    if (given == nullptr)
      return core::fail(T4A_ERROR_INVALID_ARGUMENT, "desc is NULL");
    return core::fail_struct(fault, "desc", sizeof d);
  }
  // Each object stays alive until return through the borrow section: a
  // buffer released meanwhile is freed after the launch, in stream order.
  core::Runtime &rt = static_cast<core::Runtime &>(*space.objects[0]);
  Kernel &k = static_cast<Kernel &>(*space.objects[1]);
  Module &mod = k.module();
  for (size_t j = 0; j + 2 < handles; ++j) {
    auto &b = static_cast<memory::Buffer &>(*space.objects[j + 2]);
    uint32_t i = space.buffers[j];
    new (&space.facts[i]) ArgFacts{&b.runtime() == &rt, b.bytes()};
    space.ptrs[i] = b.ptr() + d.args[i].offset;
  }
  Verdict v;
  validate(d, &k.runtime() == &rt, space.facts, k.signature(), k.limits(), &v);
  if (v.status != T4A_SUCCESS) return core::fail(v.status, "%s", v.message);
  // A cooperative launch, or a kernel with grid barriers: its own path
  // (launch/cooperative.hpp). One flag word and one byte of the kernel.
  // It waits for admission (and may wait on the host for audit room), so
  // it runs outside the borrow section, holding references to what was
  // borrowed (see the busy case below).
  if ((d.flags | static_cast<uint32_t>(k.has_barriers())) != 0) [[unlikely]] {
    std::vector<core::Ref<Object>> held;
    held.reserve(handles); // may throw std::bad_alloc: nothing held yet
    for (size_t j = 0; j < handles; ++j) held.emplace_back(space.objects[j]);
    bool paused = section.pause();
    t4a_status s = launch_special(rt, k, d, v, n > 0 ? space.params : nullptr,
                                  space.objects + 2, handles - 2);
    if (paused) section.resume();
    return s;
  }

  // Admitted, but without making the context current: the launch names
  // the runtime's stream (core/stream_context.hpp); only raising a
  // kernel's shared-memory limit needs the context.
  // When another thread holds the runtime (a raw scope may hold it for
  // long), the wait is made outside the borrow section, holding references
  // to what was borrowed: a thread waiting inside a section would hold up
  // every release in the process (core/borrow.hpp). Dropped after
  // admission is given back.
  std::vector<core::Ref<Object>> held;
  std::optional<core::Admission> adm;
  adm.emplace(rt.admission(), core::Admission::Try);
  if (adm->busy()) [[unlikely]] {
    held.reserve(handles); // may throw std::bad_alloc: nothing held yet
    for (size_t j = 0; j < handles; ++j) held.emplace_back(space.objects[j]);
    adm.reset(); // busy: it holds nothing
    bool paused = section.pause();
    adm.emplace(rt.admission());
    if (paused) section.resume();
  }
  if (adm->status() != T4A_SUCCESS) return adm->status();
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
  // Reserve -> enqueue -> commit: the module is kept alive by the open
  // completion epoch. Reserving seals a full epoch first (one event per
  // k_open_limit distinct keeps); if that fails, the launch fails here,
  // before anything is enqueued. The warm case skips all of it: a module
  // among the open epoch's last keeps is already kept until a seal
  // recorded after this launch, so the launch adds nothing.
  // Graph capture (core/capture.hpp): the buffers go to the capture's keeps.
  core::CaptureKeeps cap(rt.capture(), rt.capturing(), handles - 2);
  core::Epochs &ep = rt.epochs();
  auto enqueue = [&] {
    return core::in_stream_context(rt, [&] {
      return cu::launch_kernel(k.function(), v.grid, v.block,
                               d.dynamic_shared_bytes, rt.stream(),
                               n > 0 ? space.params : nullptr);
    });
  };
  DrvResult r{};
  if (ep.recently_kept(&mod)) [[likely]] {
    r = enqueue();
  } else {
    core::Epochs::Reservation keep = ep.reserve_keep(rt);
    if (keep.status() != T4A_SUCCESS) [[unlikely]]
      return keep.status();
    r = enqueue();
    // Kept even when the launch failed: the driver may have queued it.
    ep.keep(std::move(keep), mod);
  }
  if (cap.active()) [[unlikely]]
    for (size_t j = 2; j < handles; ++j) cap.keep(*space.objects[j]);
  if (!r) return rt.fail_op(r, "launching a kernel (cuLaunchKernel)");
  rt.counters().launches.bump();
  return T4A_SUCCESS;
}

} // namespace t4a::launch
