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
#include "core/section_admission.hpp"
#include "core/stream_context.hpp"
#include "launch/attributes.hpp"
#include "launch/cooperative.hpp"
#include "launch/kernel.hpp"
#include "memory/buffer.hpp"

namespace t4a::launch {

using core::Object;
using core::Ref;
using namespace t4a::driver;

namespace {

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
                               const Verdict &v, const LaunchEx *ex,
                               void **params, Object **buffers, uint32_t nbuf) {
  core::Borrowed held({&rt, &k}, buffers, nbuf);
  return core::run_outside(section, held, [&] {
    return launch_special(rt, k, d, v, ex, params, buffers, nbuf);
  });
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
                const t4a_launch_desc &d, const Verdict &v, const LaunchEx *ex,
                void **params, DrvResult *out) {
  core::Epochs &ep = rt.epochs();
  auto enqueue = [&] {
    return core::in_stream_context(rt, [&] {
      if (ex != nullptr && ex->use_ex) [[unlikely]]
        return launch_ex(k, v, d.dynamic_shared_bytes, rt.stream(), *ex,
                         params);
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

t4a_status launch(core::BorrowSection &section, core::Runtime &rt, Kernel &k,
                  const t4a_launch_desc &d, ArgSpace &space,
                  const t4a_launch_attrs *attrs) {
  // Everything was borrowed in `section` (no lock, no reference counting)
  // and stays valid until it ends, after admission was given back
  // (core/borrow.hpp); what the launch logs is delivered after it ended.
  uint32_t n = readable_args(d);
  const uint32_t nbuf = space.nbuf;
  Verdict v;
  validate(d, &k.runtime() == &rt, space.facts, k.signature(), k.limits(), &v);
  if (v.status != T4A_SUCCESS) return core::fail(v.status, "%s", v.message);
  // Launch attributes, or a kernel compiled with cluster dimensions
  // (launch/attributes.hpp): checked here; `ex` is set only when the
  // launch needs cuLaunchKernelEx or the non-portable opt-in.
  LaunchEx ex_space; // no initialization: written on the rare path only
  const LaunchEx *ex = nullptr;
  if (has_attr_facts(k, attrs)) [[unlikely]] {
    if (t4a_status s = read_and_check_attrs(d, attrs, v, k, &ex_space);
        s != T4A_SUCCESS)
      return s;
    if (ex_space.needed()) ex = &ex_space;
  }
  // A cooperative launch, or a kernel with grid barriers: its own path
  // (launch/cooperative.hpp). One flag word and one byte of the kernel.
  // It waits for admission (and may wait on the host for audit room), so
  // it runs outside the borrow section, holding references to what was
  // borrowed (see the busy case below).
  if ((d.flags | static_cast<uint32_t>(k.has_barriers())) != 0) [[unlikely]]
    return launch_special_held(section, rt, k, d, v, ex,
                               n > 0 ? space.params : nullptr, space.buffers,
                               nbuf);

  // Admitted, but without making the context current: the launch names
  // the runtime's stream (core/stream_context.hpp); only raising a
  // kernel's shared-memory limit needs the context.
  // When another thread holds the runtime (a raw scope may hold it for
  // long), the wait is made outside the borrow section, holding references
  // to what was borrowed (core/section_admission.hpp).
  core::SectionAdmission adm(section, rt.admission(), {&rt, &k}, space.buffers,
                             nbuf);
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  if (v.raise_shared) [[unlikely]]
    if (t4a_status s = raise_shared(rt, k, d.dynamic_shared_bytes);
        s != T4A_SUCCESS)
      return s;
  if (ex != nullptr && ex->non_portable) [[unlikely]]
    if (t4a_status s = prepare_attrs(rt, k, d, v, *ex); s != T4A_SUCCESS)
      return s;
  // Graph capture (core/capture.hpp): the buffers go to the capture's keeps.
  core::CaptureKeeps cap(rt.capture(), rt.capturing(), nbuf);
  DrvResult r{};
  if (t4a_status s = enqueue_keeping(rt, k, adm, d, v, ex,
                                     n > 0 ? space.params : nullptr, &r);
      s != T4A_SUCCESS) [[unlikely]]
    return s;
  if (cap.active()) [[unlikely]]
    for (uint32_t j = 0; j < nbuf; ++j) cap.keep(*space.buffers[j]);
  if (!r)
    return rt.fail_op(r, ex != nullptr && ex->use_ex
                             ? "launching a kernel (cuLaunchKernelEx)"
                             : "launching a kernel (cuLaunchKernel)");
  rt.counters().launches.bump();
  return T4A_SUCCESS;
}

} // namespace t4a::launch
