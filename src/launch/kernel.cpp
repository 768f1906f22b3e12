#include "launch/kernel.hpp"

#include <cstring>

#include "core/context_scope.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/struct_io.hpp"
#include "launch/cooperative.hpp"

namespace t4a::launch {

using core::Ref;
using namespace t4a::driver;

Kernel::Kernel(Ref<Module> m)
    : Object(core::Kind::Kernel), rt_(&m->runtime()), module_(std::move(m)) {}

Kernel::~Kernel() {
  if (CoopState *st = coop_.load(std::memory_order_acquire)) {
    audit_at_release(*this, *st);
    delete st;
  }
}

CoopState &Kernel::coop_state() {
  if (CoopState *s = coop()) return *s;
  auto *made = new CoopState(); // may throw: nothing changed yet
  CoopState *expected = nullptr;
  if (coop_.compare_exchange_strong(expected, made, std::memory_order_acq_rel))
    return *made;
  delete made; // another thread made it first
  return *expected;
}

t4a_status Kernel::get(Ref<Module> module, const char *name, Ref<Kernel> *out) {
  core::Runtime &rt = module->runtime();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  core::ContextScope scope;
  if (t4a_status s = scope.enter(rt.context(), "looking up a kernel");
      s != T4A_SUCCESS)
    return s;
  // A name expression of the module's artifact first, then the raw name
  // (launch/names.hpp).
  const char *symbol = nullptr;
  const NameExpression *expr = nullptr;
  if (t4a_status st = module->symbol_of(name, &symbol, &expr);
      st != T4A_SUCCESS)
    return st;
  Ref<Kernel> k = Ref<Kernel>::adopt(new Kernel(module));
  k->name_ = name;
  if (auto r = cu::module_get_function(&k->fn_, module->handle(), symbol); !r) {
    if (r.code == CUDA_ERROR_NOT_FOUND && expr != nullptr)
      return core::fail(T4A_ERROR_UNKNOWN_ENTRY_POINT,
                        "name '%s' is the name expression '%s', whose lowered "
                        "name '%s' is no kernel of the module (a variable? "
                        "use t4a_module_global)",
                        name, expr->expression.c_str(), expr->lowered.c_str());
    if (r.code == CUDA_ERROR_NOT_FOUND)
      return core::fail(T4A_ERROR_UNKNOWN_ENTRY_POINT,
                        "the module has no kernel named '%s' (%zu name "
                        "expressions of its artifact checked; a C++ kernel "
                        "needs a name expression, its lowered name or "
                        "extern \"C\")",
                        name, module->name_expression_count());
    return rt.fail_op(r, "looking up a kernel (cuModuleGetFunction)");
  }
  if (t4a_status s = k->read_attributes(rt); s != T4A_SUCCESS) return s;
  if (t4a_status s = k->read_params(rt); s != T4A_SUCCESS) return s;
  if (t4a_status s = k->read_limits(rt); s != T4A_SUCCESS) return s;
  // Before the kernel is published: read without synchronization.
  k->has_cluster_ = k->cluster_.kernel_has_cluster() ? 1 : 0;
  *out = std::move(k);
  return T4A_SUCCESS;
}

t4a_status Kernel::read_attributes(core::Runtime &rt) {
  struct {
    CUfunction_attribute a;
    int32_t *v;
  } attrs[] = {
      {CU_FUNC_ATTRIBUTE_NUM_REGS, &registers_},
      {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &local_},
      {CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, &const_},
      {CU_FUNC_ATTRIBUTE_PTX_VERSION, &ptx_},
      {CU_FUNC_ATTRIBUTE_BINARY_VERSION, &binary_},
  };
  for (auto &at : attrs)
    if (auto r = cu::func_get_attribute(at.v, at.a, fn_); !r)
      return rt.fail_op(r, "reading a kernel attribute");
  int v = 0;
  if (auto r = cu::func_get_attribute(
          &v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn_);
      !r)
    return rt.fail_op(r, "reading a kernel attribute");
  sig_.max_threads_per_block = static_cast<uint32_t>(v);
  if (auto r =
          cu::func_get_attribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn_);
      !r)
    return rt.fail_op(r, "reading a kernel attribute");
  sig_.static_shared_bytes = static_cast<uint32_t>(v);
  if (auto r = cu::func_get_attribute(
          &v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn_);
      !r)
    return rt.fail_op(r, "reading a kernel attribute");
  dynamic_shared_.store(static_cast<uint32_t>(v));
  read_cluster_attributes();
  return T4A_SUCCESS;
}

void Kernel::read_cluster_attributes() {
  // Compiled cluster dimensions (__cluster_dims__) and whether a cluster
  // must be given. A driver or device without clusters may refuse these
  // attributes (INVALID_VALUE before CUDA 11.8): the results are ignored
  // on purpose, and a refused attribute reads as 0, "no cluster", which is
  // what such a kernel has.
  struct {
    CUfunction_attribute a;
    uint32_t *v;
  } dims[] = {
      {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, &cluster_.required_cluster[0]},
      {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
       &cluster_.required_cluster[1]},
      {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, &cluster_.required_cluster[2]},
  };
  for (auto &d : dims) {
    int v = 0;
    if (cu::func_get_attribute(&v, d.a, fn_) && v > 0)
      *d.v = static_cast<uint32_t>(v);
  }
  int must = 0;
  if (cu::func_get_attribute(&must, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
                             fn_))
    cluster_.cluster_must_be_set = must != 0;
}

t4a_status Kernel::read_params(core::Runtime &rt) {
  if (!has(Entry::cuFuncGetParamInfo)) return T4A_SUCCESS;
  // Parameters are reported one index at a time until INVALID_VALUE.
  std::vector<uint32_t> offsets, sizes;
  for (size_t i = 0; i < T4A_MAX_PARAM_BYTES; ++i) {
    size_t off = 0, size = 0;
    DrvResult r = cu::func_get_param_info(fn_, i, &off, &size);
    if (r.code == CUDA_ERROR_INVALID_VALUE) break;
    if (!r) return rt.fail_op(r, "reading a kernel's parameters");
    offsets.push_back(static_cast<uint32_t>(off));
    sizes.push_back(static_cast<uint32_t>(size));
  }
  // One array, so that a launch reads one or two cache lines of it.
  params_ = std::move(offsets);
  params_.insert(params_.end(), sizes.begin(), sizes.end());
  sig_.params_known = true;
  sig_.param_count = static_cast<uint32_t>(sizes.size());
  sig_.param_offsets = params_.data();
  sig_.param_sizes = params_.data() + sizes.size();
  return T4A_SUCCESS;
}

t4a_status Kernel::read_limits(core::Runtime &rt) {
  CUdevice dev = 0;
  if (t4a_status s = core::device_get(rt.ordinal(), "device", &dev);
      s != T4A_SUCCESS)
    return s;
  struct {
    CUdevice_attribute a;
    uint32_t *v;
  } lims[] = {
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &limits_.max_grid[0]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &limits_.max_grid[1]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &limits_.max_grid[2]},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &limits_.max_block[0]},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &limits_.max_block[1]},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &limits_.max_block[2]},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
       &limits_.max_threads_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
       &limits_.max_shared_default},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       &limits_.max_shared_optin},
  };
  for (auto &l : lims) {
    int x = 0;
    if (auto r = cu::device_get_attribute(&x, l.a, dev); !r)
      return rt.fail_op(r, "reading the device's launch limits");
    *l.v = x < 0 ? 0u : static_cast<uint32_t>(x);
  }
  // Launch attributes: the compute capability (required) and cluster
  // launch support (a driver before CUDA 11.8 does not know the attribute:
  // its refusal is ignored on purpose and reads as "no clusters").
  int major = 0, minor = 0, clusters = 0;
  if (auto r = cu::device_get_attribute(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
      !r)
    return rt.fail_op(r, "reading the device's compute capability");
  if (auto r = cu::device_get_attribute(
          &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
      !r)
    return rt.fail_op(r, "reading the device's compute capability");
  cluster_.cc_major = major < 0 ? 0u : static_cast<uint32_t>(major);
  cluster_.cc_minor = minor < 0 ? 0u : static_cast<uint32_t>(minor);
  cluster_.cluster_launch =
      cu::device_get_attribute(&clusters, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH,
                               dev) &&
      clusters != 0;
  // A device that reports no opt-in maximum allows the default.
  if (limits_.max_shared_optin < limits_.max_shared_default)
    limits_.max_shared_optin = limits_.max_shared_default;
  return T4A_SUCCESS;
}

void Kernel::info(t4a_kernel_info *out) const {
  t4a_kernel_info i;
  std::memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  if (sig_.params_known) {
    i.param_count = static_cast<int32_t>(sig_.param_count);
    for (size_t p = 0; p < sig_.param_count; ++p)
      if (uint64_t end = uint64_t(sig_.param_offsets[p]) + sig_.param_sizes[p];
          end > i.param_bytes)
        i.param_bytes = end;
  } else {
    i.param_count = T4A_PARAMS_UNKNOWN;
  }
  i.registers = registers_;
  i.max_threads_per_block = static_cast<int32_t>(sig_.max_threads_per_block);
  i.static_shared_bytes = static_cast<int32_t>(sig_.static_shared_bytes);
  i.local_bytes = local_;
  i.const_bytes = const_;
  i.ptx_version = ptx_;
  i.binary_version = binary_;
  i.max_dynamic_shared_bytes =
      static_cast<int32_t>(dynamic_shared_.load(std::memory_order_relaxed));
  core::write_struct(out, i);
}

bool Kernel::param(uint32_t index, uint64_t *offset, uint64_t *size) const {
  if (index >= sig_.param_count) return false;
  if (offset != nullptr) *offset = sig_.param_offsets[index];
  if (size != nullptr) *size = sig_.param_sizes[index];
  return true;
}

t4a_status Kernel::ensure_dynamic_shared(uint32_t bytes) {
  if (dynamic_shared_.load(std::memory_order_relaxed) >= bytes)
    return T4A_SUCCESS;
  core::Runtime &rt = module_->runtime();
  int now = 0;
  if (auto r = cu::func_get_attribute(
          &now, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn_);
      !r)
    return rt.fail_op(r, "reading the kernel's dynamic shared memory limit");
  if (static_cast<uint32_t>(now) < bytes) {
    if (auto r = cu::func_set_attribute(
            fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            static_cast<int>(bytes));
        !r)
      return rt.fail_op(r, "raising the kernel's dynamic shared memory limit "
                           "(cuFuncSetAttribute)");
    now = static_cast<int>(bytes);
  }
  uint32_t seen = dynamic_shared_.load(std::memory_order_relaxed);
  while (seen < static_cast<uint32_t>(now) &&
         !dynamic_shared_.compare_exchange_weak(seen,
                                                static_cast<uint32_t>(now))) {
  }
  return T4A_SUCCESS;
}

t4a_status Kernel::allow_non_portable_clusters() {
  if (non_portable_) return T4A_SUCCESS;
  if (auto r = cu::func_set_attribute(
          fn_, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
      !r)
    return module_->runtime().fail_op(
        r, "allowing non-portable cluster sizes for the kernel "
           "(cuFuncSetAttribute)");
  non_portable_ = true;
  return T4A_SUCCESS;
}

} // namespace t4a::launch
