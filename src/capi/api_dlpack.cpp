// DLPack entry points (include/t4acuda_dlpack.h, memory/dlpack.hpp).
#include "capi/entry.hpp"
#include "capi/handles.hpp"
#include "memory/buffer.hpp"
#include "memory/dlpack.hpp"
#include "t4acuda_dlpack.h"

#include <type_traits>

using namespace t4a;
using capi::in;
using core::Ref;

namespace {

template <class Out>
t4a_status to_dlpack(t4a_runtime runtime, t4a_buffer buffer,
                     const t4a_dlpack_desc *desc, int64_t consumer_stream,
                     Out **out) {
  return capi::call(
      in(runtime, "runtime"), in(buffer, "buffer"), capi::not_null(out, "out"),
      [&](Ref<core::Runtime> &rt, Ref<memory::Buffer> &b) -> t4a_status {
        if (t4a_status s = memory::check_owner("buffer", *b, *rt);
            s != T4A_SUCCESS)
          return s;
        if (t4a_status s = core::refuse_capturing(*rt, "t4a_buffer_to_dlpack");
            s != T4A_SUCCESS)
          return s;
        memory::reap_foreign(*rt); // no lock held here
        if constexpr (std::is_same_v<Out, DLManagedTensor>)
          return memory::export_dlpack(*rt, std::move(b), desc, consumer_stream,
                                       nullptr, out);
        else
          return memory::export_dlpack(*rt, std::move(b), desc, consumer_stream,
                                       out, nullptr);
      });
}

// The checks and the import; `owner` (the tensor's) is moved into the
// buffer on success, else left to the caller, who drops it after the
// entry guard has finished (the deleter runs with no lock held).
template <class Tensor>
t4a_status from_dlpack(t4a_runtime runtime, Tensor *tensor, t4a_buffer *out,
                       Ref<core::Object> &owner) {
  return capi::call(
      in(runtime, "runtime"), capi::not_null(tensor, "tensor"),
      capi::not_null(out, "out"), [&](Ref<core::Runtime> &rt) -> t4a_status {
        if (t4a_status s =
                core::refuse_capturing(*rt, "t4a_buffer_from_dlpack");
            s != T4A_SUCCESS)
          return s;
        memory::reap_foreign(*rt); // no lock held here
        Ref<memory::Buffer> b;
        t4a_status s = T4A_SUCCESS;
        if constexpr (std::is_same_v<Tensor, DLManagedTensor>)
          s = memory::import_dlpack(std::move(rt), tensor->dl_tensor, nullptr,
                                    0, true, std::move(owner), &b);
        else
          s = memory::import_dlpack(std::move(rt), tensor->dl_tensor,
                                    &tensor->version, tensor->flags, false,
                                    std::move(owner), &b);
        if (s != T4A_SUCCESS) return s;
        return capi::publish(std::move(b), out);
      });
}

} // namespace

extern "C" {

T4A_API t4a_status t4a_buffer_to_dlpack(t4a_runtime runtime, t4a_buffer buffer,
                                        const t4a_dlpack_desc *desc,
                                        int64_t consumer_stream,
                                        DLManagedTensorVersioned **out) {
  return T4A_ENTRY(
      { return to_dlpack(runtime, buffer, desc, consumer_stream, out); });
}

T4A_API t4a_status t4a_buffer_to_dlpack_legacy(t4a_runtime runtime,
                                               t4a_buffer buffer,
                                               const t4a_dlpack_desc *desc,
                                               int64_t consumer_stream,
                                               DLManagedTensor **out) {
  return T4A_ENTRY(
      { return to_dlpack(runtime, buffer, desc, consumer_stream, out); });
}

T4A_API t4a_status t4a_buffer_from_dlpack(t4a_runtime runtime,
                                          DLManagedTensorVersioned *tensor,
                                          t4a_buffer *out) {
  // Declared outside the guard: on any failure the tensor's deleter runs
  // when this function returns, after the last error was stamped.
  Ref<core::Object> owner;
  return T4A_ENTRY({
    owner = memory::adopt_versioned(tensor);
    return from_dlpack(runtime, tensor, out, owner);
  });
}

T4A_API t4a_status t4a_buffer_from_dlpack_legacy(t4a_runtime runtime,
                                                 DLManagedTensor *tensor,
                                                 t4a_buffer *out) {
  Ref<core::Object> owner;
  return T4A_ENTRY({
    owner = memory::adopt_legacy(tensor);
    return from_dlpack(runtime, tensor, out, owner);
  });
}

} // extern "C"
