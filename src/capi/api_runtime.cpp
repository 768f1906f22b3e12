// Runtime entry points.
#include <cstddef>

#include "capi/entry.hpp"
#include "capi/handles.hpp"
#include "core/process_fault.hpp"
#include "core/raw_scope.hpp"
#include "core/runtime.hpp"
#include "core/struct_io.hpp"
#include "memory/dlpack.hpp"

using namespace t4a;
using capi::in;
using core::Ref;

extern "C" {

T4A_API t4a_status t4a_runtime_create(const t4a_runtime_options *options,
                                      t4a_runtime *runtime) {
  return T4A_ENTRY({
    return capi::call(capi::not_null(runtime, "runtime"), [&]() -> t4a_status {
      t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
      if (t4a_status s = core::read_struct(options, &o, "options");
          s != T4A_SUCCESS)
        return s;
      // Reserved fields, peer_access, staging and the defaults: checked by
      // Runtime::create (core/runtime_options.hpp).
      core::Ref<core::Runtime> rt;
      if (t4a_status s = core::Runtime::create(o, &rt); s != T4A_SUCCESS) {
        // A sticky driver result (the process's CUDA state is poisoned):
        // the process's first fault, if none was recorded yet.
        if (s == T4A_ERROR_DEVICE_FAULT) {
          const core::LastError &e = core::last_error();
          core::record_process_fault(
              o.device_ordinal, e.driver_result, 0,
              ("creating a runtime: " + e.message).c_str());
        }
        return s;
      }
      core::Runtime *raw = rt.get();
      uint64_t id = core::Registry::instance().insert(std::move(rt));
      raw->set_handle_id(id);
      runtime->id = id;
      return T4A_SUCCESS;
    });
  });
}

// Not through capi::call: destroy removes the handle itself (the registry's
// remove), where every other entry point resolves a reference.
T4A_API t4a_status t4a_runtime_destroy(t4a_runtime runtime) {
  return T4A_ENTRY({
    if (runtime.id == T4A_NULL_ID) return T4A_SUCCESS;
    return capi::call(
        in(runtime, "runtime"), [&](Ref<core::Runtime> &rt) -> t4a_status {
          // A raw scope of this thread holds the runtime's admission: the
          // drain would wait for the scope's own end. Refused before the
          // handle goes.
          if (core::raw_scope_open_here(*rt))
            return core::fail(T4A_ERROR_REENTRANT,
                              "this thread holds a raw scope of the runtime "
                              "(t4a_raw_begin); end it with t4a_raw_end "
                              "before destroying the runtime; nothing was "
                              "changed");
          // A capturing runtime is not destroyed (the drain would
          // invalidate the capture): checked under admission, where
          // captures begin, which from then on refuse to begin; the handle
          // stays when refused.
          if (t4a_status s = rt->begin_destroy(); s != T4A_SUCCESS) return s;
          rt.reset();
          // The handle goes (another thread may have destroyed it since).
          Ref<core::Object> obj;
          if (core::HandleCheck c = core::Registry::instance().remove(
                  runtime.id, core::Kind::Runtime, &obj);
              c != core::HandleCheck::Ok)
            return core::fail_handle(c, runtime.id, "runtime");
          t4a_status s = static_cast<core::Runtime *>(obj.get())->destroy();
          obj.reset(); // teardown runs when the last internal reference goes
          return s;
        });
  });
}

T4A_API t4a_status t4a_runtime_synchronize(t4a_runtime runtime) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), [](Ref<core::Runtime> &rt) -> t4a_status {
          // refuse_capturing, inline: one relaxed load on the warm path.
          if (rt->capturing()) [[unlikely]]
            return core::fail_capturing(*rt, "t4a_runtime_synchronize");
          // Imported DLPack buffers (and module-global views) released
          // before the drain began are proven done by it: their deleters
          // run (and the views' modules go) here, no lock held.
          uint64_t mark = memory::mark_foreign(*rt);
          t4a_status s = rt->synchronize("synchronizing the runtime's stream");
          if (s == T4A_SUCCESS) memory::release_foreign_through(*rt, mark);
          return s;
        });
  });
}

T4A_API t4a_status t4a_runtime_trim(t4a_runtime runtime) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), [](Ref<core::Runtime> &rt) -> t4a_status {
          if (t4a_status s = core::refuse_capturing(*rt, "t4a_runtime_trim");
              s != T4A_SUCCESS)
            return s;
          return rt->trim();
        });
  });
}

T4A_API t4a_status t4a_runtime_info_get(t4a_runtime runtime,
                                        t4a_runtime_info *info) {
  return T4A_ENTRY({
    return capi::call(in(runtime, "runtime"), capi::out_struct(info, "info"),
                      [&](Ref<core::Runtime> &rt) -> t4a_status {
                        rt->info(info);
                        return T4A_SUCCESS;
                      });
  });
}

T4A_API t4a_status t4a_runtime_stats_get(t4a_runtime runtime,
                                         t4a_runtime_stats *stats) {
  return T4A_ENTRY({
    return capi::call(in(runtime, "runtime"), capi::out_struct(stats, "stats"),
                      [&](Ref<core::Runtime> &rt) -> t4a_status {
                        rt->stats(stats);
                        return T4A_SUCCESS;
                      });
  });
}

T4A_API t4a_status t4a_process_fault_get(t4a_process_fault *fault) {
  return T4A_ENTRY({
    return capi::call(capi::out_struct(fault, "fault"), [&]() -> t4a_status {
      t4a_process_fault full = T4A_PROCESS_FAULT_INIT;
      core::read_process_fault(&full);
      full.struct_size = sizeof full;
      core::write_struct(fault, full);
      return T4A_SUCCESS;
    });
  });
}

} // extern "C"
