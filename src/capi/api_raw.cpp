// The raw seam's entry points (core/raw_scope.hpp, docs/raw-seam.md).
#include "capi/entry.hpp"
#include "capi/handles.hpp"
#include "core/raw_scope.hpp"
#include "memory/buffer.hpp"

using namespace t4a;
using capi::in;
using core::Ref;

extern "C" {

T4A_API t4a_status t4a_raw_begin(t4a_runtime runtime, t4a_raw_scope *scope,
                                 t4a_raw_info *info) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), capi::not_null(scope, "scope"),
        capi::out_struct(info, "info"),
        [&](Ref<core::Runtime> &rt) -> t4a_status {
          core::Runtime &r = *rt;
          if (t4a_status st = core::refuse_capturing(r, "t4a_raw_begin");
              st != T4A_SUCCESS)
            return st;
          Ref<core::RawScope> s;
          if (t4a_status st = core::RawScope::begin(std::move(rt), &s);
              st != T4A_SUCCESS)
            return st;
          uint64_t id = 0;
          try {
            // A reference of its own for the registry: `s` stays valid if
            // the insert throws (its argument, the only other reference,
            // is gone by then).
            id = core::Registry::instance().insert(
                Ref<core::Object>(static_cast<core::Object *>(s.get())));
          } catch (...) {
            // Not published: end it here (context back, admission freed).
            bool ended = false;
            (void)s->end(&ended); // the exception is what is reported
            throw;
          }
          s->set_handle_id(id);
          t4a_raw_info full = T4A_RAW_INFO_INIT;
          full.device_ordinal = r.ordinal();
          full.context = r.context();
          full.stream = r.stream();
          core::write_struct(info, full);
          scope->id = id;
          return T4A_SUCCESS;
        });
  });
}

T4A_API t4a_status t4a_raw_buffer(t4a_raw_scope scope, t4a_buffer buffer,
                                  uint64_t *device_pointer) {
  return T4A_ENTRY({
    return capi::call(
        in(scope, "scope"), in(buffer, "buffer"),
        capi::not_null(device_pointer, "device_pointer"),
        [&](Ref<core::RawScope> &s, Ref<memory::Buffer> &b) -> t4a_status {
          if (t4a_status st = s->check_owner_thread("registering a buffer");
              st != T4A_SUCCESS)
            return st;
          if (t4a_status st = memory::check_owner("buffer", *b, s->runtime());
              st != T4A_SUCCESS)
            return st;
          if (b->bytes() == 0)
            return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                              "buffer is empty (0 bytes): it has no device "
                              "memory to hand to raw work");
          uint64_t ptr = b->ptr();
          if (t4a_status st = s->hold(Ref<core::Object>(std::move(b)));
              st != T4A_SUCCESS)
            return st;
          *device_pointer = ptr;
          return T4A_SUCCESS;
        });
  });
}

T4A_API t4a_status t4a_raw_end(t4a_raw_scope scope) {
  return T4A_ENTRY({
    return capi::call(in(scope, "scope"),
                      [&](Ref<core::RawScope> &s) -> t4a_status {
                        // Refusals (another thread, out of order) change
                        // nothing; once the end ran, the handle goes whatever
                        // it returned.
                        bool ended = false;
                        t4a_status st = s->end(&ended);
                        if (!ended) return st;
                        Ref<core::Object> removed;
                        // Cannot fail: the handle resolved above, and only this
                        // thread (the scope's owner) removes it.
                        (void)core::Registry::instance().remove(
                            scope.id, core::Kind::RawScope, &removed);
                        return st;
                      });
  });
}

T4A_API t4a_status t4a_runtime_wait_stream(t4a_runtime runtime, void *stream) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), [&](Ref<core::Runtime> &rt) -> t4a_status {
          if (t4a_status s =
                  core::refuse_capturing(*rt, "t4a_runtime_wait_stream");
              s != T4A_SUCCESS)
            return s;
          return core::wait_external_stream(*rt, static_cast<CUstream>(stream));
        });
  });
}

T4A_API t4a_status t4a_runtime_signal_stream(t4a_runtime runtime,
                                             void *stream) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), [&](Ref<core::Runtime> &rt) -> t4a_status {
          if (t4a_status s =
                  core::refuse_capturing(*rt, "t4a_runtime_signal_stream");
              s != T4A_SUCCESS)
            return s;
          return core::signal_external_stream(*rt,
                                              static_cast<CUstream>(stream));
        });
  });
}

} // extern "C"
