// Module, kernel, launch and completion entry points.
#include <cstdio>

#include "capi/completion.hpp"
#include "capi/entry.hpp"
#include "capi/handles.hpp"
#include "capi/name_expressions.hpp"
#include "compile/artifact.hpp"
#include "driver/cuda_api.hpp"
#include "launch/attributes.hpp"
#include "launch/cooperative.hpp"
#include "launch/kernel.hpp"
#include "launch/launch.hpp"
#include "launch/module.hpp"
#include "launch/module_load.hpp"
#include "launch/occupancy.hpp"
#include "memory/dlpack.hpp"

using namespace t4a;
using capi::in;
using capi::not_null;
using core::Ref;

namespace {

// Reports the buffer handle of argument i that did not resolve.
T4A_COLD t4a_status fail_buffer_arg(core::HandleCheck c, uint64_t id,
                                    uint32_t i) {
  char arg[48];
  std::snprintf(arg, sizeof arg, "desc->args[%u].buffer", i);
  return core::fail_handle(c, id, arg);
}

} // namespace

extern "C" {

T4A_API t4a_status t4a_module_load(t4a_runtime runtime, t4a_artifact artifact,
                                   t4a_module *module) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), in(artifact, "artifact"),
        not_null(module, "module"),
        [&](Ref<core::Runtime> &rt, Ref<compile::Artifact> &a) -> t4a_status {
          if (t4a_status s = core::refuse_capturing(*rt, "t4a_module_load");
              s != T4A_SUCCESS)
            return s;
          // The artifact's name expressions go with the module, for
          // lookups by expression (a forgotten table: by raw name only).
          bool forgotten = false;
          auto names = capi::name_table_of(*a, &forgotten);
          Ref<launch::Module> m;
          if (t4a_status s = launch::load_cached(std::move(rt), a->view(),
                                                 std::move(names), &m);
              s != T4A_SUCCESS)
            return s;
          return capi::publish(std::move(m), module);
        });
  });
}

T4A_API t4a_status t4a_module_load_data(t4a_runtime runtime, const void *image,
                                        size_t bytes, t4a_module *module) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), not_null(image, "image"),
        [&](Ref<core::Runtime> &rt) -> t4a_status {
          if (bytes == 0)
            return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                              "bytes is 0; an image has at least one byte");
          if (module == nullptr) return capi::null_arg("module");
          if (t4a_status s =
                  core::refuse_capturing(*rt, "t4a_module_load_data");
              s != T4A_SUCCESS)
            return s;
          Ref<launch::Module> m;
          if (t4a_status s =
                  launch::load_cached_data(std::move(rt), image, bytes, &m);
              s != T4A_SUCCESS)
            return s;
          return capi::publish(std::move(m), module);
        });
  });
}

T4A_API t4a_status t4a_module_retain(t4a_module module) {
  return T4A_ENTRY({ return capi::retain(module, "module"); });
}

T4A_API t4a_status t4a_module_release(t4a_module module) {
  return T4A_ENTRY({ return capi::release(module, "module"); });
}

T4A_API t4a_status t4a_kernel_get(t4a_module module, const char *name,
                                  t4a_kernel *kernel) {
  return T4A_ENTRY({
    return capi::call(
        in(module, "module"), not_null(name, "name"),
        [&](Ref<launch::Module> &m) -> t4a_status {
          if (name[0] == '\0')
            return core::fail(T4A_ERROR_INVALID_ARGUMENT, "name is empty");
          if (kernel == nullptr) return capi::null_arg("kernel");
          Ref<launch::Kernel> k;
          if (t4a_status s = launch::Kernel::get(std::move(m), name, &k);
              s != T4A_SUCCESS)
            return s;
          return capi::publish(std::move(k), kernel);
        });
  });
}

T4A_API t4a_status t4a_module_global(t4a_module module, const char *name,
                                     t4a_buffer *view) {
  return T4A_ENTRY({
    return capi::call(
        in(module, "module"), not_null(name, "name"),
        [&](Ref<launch::Module> &m) -> t4a_status {
          if (name[0] == '\0')
            return core::fail(T4A_ERROR_INVALID_ARGUMENT, "name is empty");
          if (view == nullptr) return capi::null_arg("view");
          // Modules of views released earlier whose work is complete are
          // dropped here (no lock held), as at a DLPack entry point.
          memory::reap_foreign(m->runtime());
          Ref<memory::Buffer> b;
          if (t4a_status s = launch::Module::global(std::move(m), name, &b);
              s != T4A_SUCCESS)
            return s;
          return capi::publish(std::move(b), view);
        });
  });
}

T4A_API t4a_status t4a_kernel_retain(t4a_kernel kernel) {
  return T4A_ENTRY({ return capi::retain(kernel, "kernel"); });
}

T4A_API t4a_status t4a_kernel_release(t4a_kernel kernel) {
  return T4A_ENTRY({ return capi::release(kernel, "kernel"); });
}

T4A_API t4a_status t4a_kernel_info_get(t4a_kernel kernel,
                                       t4a_kernel_info *info) {
  return T4A_ENTRY({
    return capi::call(in(kernel, "kernel"), capi::out_struct(info, "info"),
                      [&](Ref<launch::Kernel> &k) -> t4a_status {
                        k->info(info);
                        return T4A_SUCCESS;
                      });
  });
}

T4A_API t4a_status t4a_kernel_param(t4a_kernel kernel, uint32_t index,
                                    uint64_t *offset, uint64_t *size) {
  return T4A_ENTRY({
    return capi::call(
        in(kernel, "kernel"), [&](Ref<launch::Kernel> &k) -> t4a_status {
          if (!k->signature().params_known)
            return core::fail(
                T4A_ERROR_UNSUPPORTED, "t4a_kernel_param: %s",
                driver::lacks_text(driver::Entry::cuFuncGetParamInfo).c_str());
          uint64_t o = 0, z = 0;
          if (!k->param(index, &o, &z))
            return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                              "index is %u; the kernel has %u parameters",
                              index, k->signature().param_count);
          if (offset != nullptr) *offset = o;
          if (size != nullptr) *size = z;
          return T4A_SUCCESS;
        });
  });
}

T4A_API t4a_status t4a_kernel_occupancy(t4a_kernel kernel, int32_t block_size,
                                        uint64_t dynamic_shared,
                                        int32_t *blocks_per_sm) {
  return T4A_ENTRY({
    return capi::call(
        in(kernel, "kernel"), not_null(blocks_per_sm, "blocks_per_sm"),
        [&](Ref<launch::Kernel> &k) -> t4a_status {
          if (block_size < 1)
            return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                              "block_size is %d; it must be at least 1",
                              block_size);
          return launch::occupancy(*k, block_size, dynamic_shared,
                                   blocks_per_sm);
        });
  });
}

T4A_API t4a_status t4a_kernel_suggest_block_size(t4a_kernel kernel,
                                                 uint64_t dynamic_shared,
                                                 int32_t *block_size,
                                                 int32_t *min_grid_size) {
  return T4A_ENTRY({
    return capi::call(in(kernel, "kernel"), not_null(block_size, "block_size"),
                      [&](Ref<launch::Kernel> &k) -> t4a_status {
                        return launch::suggest_block_size(
                            *k, dynamic_shared, block_size, min_grid_size);
                      });
  });
}

// Experimental: cooperative launches and grid barriers
// (launch/cooperative.hpp).
T4A_API t4a_status t4a_kernel_max_cooperative_blocks(t4a_kernel kernel,
                                                     int32_t block_size,
                                                     uint64_t dynamic_shared,
                                                     int32_t *max_blocks) {
  return T4A_ENTRY({
    return capi::call(
        in(kernel, "kernel"), not_null(max_blocks, "max_blocks"),
        [&](Ref<launch::Kernel> &k) -> t4a_status {
          if (block_size < 1)
            return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                              "block_size is %d; it must be at least 1",
                              block_size);
          return launch::max_cooperative_blocks(*k, block_size, dynamic_shared,
                                                max_blocks);
        });
  });
}

T4A_API t4a_status t4a_kernel_declare_barrier(t4a_kernel kernel,
                                              const t4a_barrier_desc *desc,
                                              uint32_t *index) {
  return T4A_ENTRY({
    return capi::call(in(kernel, "kernel"), not_null(desc, "desc"),
                      [&](Ref<launch::Kernel> &k) -> t4a_status {
                        return launch::declare_barrier(*k, desc, index);
                      });
  });
}

T4A_API t4a_status t4a_kernel_barrier_audit(t4a_kernel kernel, uint32_t index,
                                            t4a_barrier_audit *audit) {
  return T4A_ENTRY({
    return capi::call(in(kernel, "kernel"), capi::out_struct(audit, "audit"),
                      [&](Ref<launch::Kernel> &k) -> t4a_status {
                        return launch::barrier_audit(*k, index, audit);
                      });
  });
}

namespace {

// t4a_launch and t4a_launch_ex. The runtime, the descriptor, its kernel and
// every buffer argument are borrowed in the one borrow section of
// capi::call_borrowed (errors in argument order: the runtime, the
// descriptor itself, the kernel, the buffers; then validate()'s, in field
// order; then the attributes', their struct_size first); the launch
// takes the objects (launch/launch.hpp).
t4a_status launch_entry(t4a_runtime runtime, const t4a_launch_desc *desc,
                        const t4a_launch_attrs *attrs) {
  return capi::call_borrowed(
      in(runtime, "runtime"), not_null(desc, "desc"),
      [&](core::BorrowSection &section, core::Runtime &rt) -> t4a_status {
        t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
        if (core::StructFault fault = core::copy_struct(desc, &d);
            fault.status != T4A_SUCCESS) [[unlikely]]
          return core::fail_struct(fault, "desc", sizeof d);
        launch::Kernel *k = nullptr;
        if (t4a_status s = capi::borrow(
                capi::In<launch::Kernel>{d.kernel.id, core::Kind::Kernel,
                                         "desc->kernel"},
                &k);
            s != T4A_SUCCESS) [[unlikely]]
          return s;
        // Each buffer argument borrowed as the walk reaches it (a buffer
        // released meanwhile is freed after the launch, in stream order).
        launch::ArgSpace space(launch::readable_args(d));
        const core::Registry &reg = core::Registry::instance();
        if (t4a_status s = launch::prepare_args(
                rt, d, space,
                [&](uint32_t i, const t4a_arg &arg,
                    memory::Buffer **b) -> t4a_status {
                  core::Object *bo = nullptr;
                  if (core::HandleCheck c =
                          reg.borrow(arg.buffer.id, core::Kind::Buffer, &bo);
                      c != core::HandleCheck::Ok) [[unlikely]]
                    return fail_buffer_arg(c, arg.buffer.id, i);
                  *b = static_cast<memory::Buffer *>(bo);
                  return T4A_SUCCESS;
                });
            s != T4A_SUCCESS) [[unlikely]]
          return s;
        return launch::launch(section, rt, *k, d, space, attrs);
      });
}

} // namespace

T4A_API t4a_status t4a_launch(t4a_runtime runtime,
                              const t4a_launch_desc *desc) {
  return T4A_ENTRY({ return launch_entry(runtime, desc, nullptr); });
}

// Experimental: launch attributes (launch/attributes.hpp).
T4A_API t4a_status t4a_launch_ex(t4a_runtime runtime,
                                 const t4a_launch_desc *desc,
                                 const t4a_launch_attrs *attrs) {
  return T4A_ENTRY({ return launch_entry(runtime, desc, attrs); });
}

// The shape of `desc` and its attributes checked as a launch checks them
// (its arguments not read), then the occupancy queries.
T4A_API t4a_status t4a_kernel_cluster_occupancy(const t4a_launch_desc *desc,
                                                const t4a_launch_attrs *attrs,
                                                t4a_cluster_occupancy *out) {
  return T4A_ENTRY({
    if (desc == nullptr)
      return core::fail(T4A_ERROR_INVALID_ARGUMENT, "desc is NULL");
    t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
    if (t4a_status s = core::read_struct(desc, &d, "desc"); s != T4A_SUCCESS)
      return s;
    t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
    if (t4a_status s = core::read_struct(attrs, &a, "attrs"); s != T4A_SUCCESS)
      return s;
    return capi::call(
        in(d.kernel, "desc->kernel"), capi::out_struct(out, "out"),
        [&](Ref<launch::Kernel> &k) -> t4a_status {
          // The arguments are not read: validated as none against a
          // signature that reports no parameters.
          t4a_launch_desc shape = d;
          shape.arg_count = 0;
          shape.args = nullptr;
          launch::KernelSignature sig = k->signature();
          sig.params_known = false;
          launch::Verdict v;
          launch::validate(shape, true, nullptr, sig, k->limits(), &v);
          if (v.status != T4A_SUCCESS)
            return core::fail(v.status, "%s", v.message);
          launch::LaunchEx ex;
          if (t4a_status s = launch::check_attrs(
                  shape, attrs != nullptr ? &a : nullptr, v, *k, &ex);
              s != T4A_SUCCESS)
            return s;
          return launch::cluster_occupancy(*k, shape, v, ex, out);
        });
  });
}

T4A_API t4a_status t4a_runtime_record(t4a_runtime runtime,
                                      t4a_completion *completion) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), not_null(completion, "completion"),
        [&](Ref<core::Runtime> &rt) -> t4a_status {
          if (t4a_status s = core::refuse_capturing(*rt, "t4a_runtime_record");
              s != T4A_SUCCESS)
            return s;
          Ref<capi::Completion> c;
          if (t4a_status s = capi::Completion::record(std::move(rt), &c);
              s != T4A_SUCCESS)
            return s;
          return capi::publish(std::move(c), completion);
        });
  });
}

T4A_API t4a_status t4a_completion_poll(t4a_completion completion) {
  return T4A_ENTRY({
    return capi::call(in(completion, "completion"),
                      [](Ref<capi::Completion> &c) -> t4a_status {
                        if (t4a_status s = core::refuse_capturing(
                                c->runtime(), "t4a_completion_poll");
                            s != T4A_SUCCESS)
                          return s;
                        return c->poll();
                      });
  });
}

T4A_API t4a_status t4a_completion_wait(t4a_completion completion) {
  return T4A_ENTRY({
    return capi::call(in(completion, "completion"),
                      [](Ref<capi::Completion> &c) -> t4a_status {
                        if (t4a_status s = core::refuse_capturing(
                                c->runtime(), "t4a_completion_wait");
                            s != T4A_SUCCESS)
                          return s;
                        return c->wait();
                      });
  });
}

T4A_API t4a_status t4a_runtime_wait(t4a_runtime runtime,
                                    t4a_completion completion) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), in(completion, "completion"),
        [](Ref<core::Runtime> &rt, Ref<capi::Completion> &c) -> t4a_status {
          if (t4a_status s = core::refuse_capturing(*rt, "t4a_runtime_wait");
              s != T4A_SUCCESS)
            return s;
          return c->wait_on(*rt);
        });
  });
}

T4A_API t4a_status t4a_completion_retain(t4a_completion completion) {
  return T4A_ENTRY({ return capi::retain(completion, "completion"); });
}

T4A_API t4a_status t4a_completion_release(t4a_completion completion) {
  return T4A_ENTRY({ return capi::release(completion, "completion"); });
}

} // extern "C"
