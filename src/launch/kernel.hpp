// Kernels: an entry point of a module, with what the driver
// reports about it (attributes, parameter layout where cuFuncGetParamInfo
// exists) and its device's launch limits, all read once at lookup so that
// the launch path makes no query. A kernel keeps its module alive.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "launch/attrs_validation.hpp"
#include "launch/launch_validation.hpp"
#include "launch/module.hpp"

namespace t4a::launch {

class CoopState; // launch/cooperative.hpp

// Aligned, with what a launch reads first: the object header, the function,
// the runtime and the signature fill cache line 0, the limits, the module
// and its keep stamp line 1, and the parameter layout is one array (one more
// line).
class alignas(64) Kernel final : public core::Object {
public:
  // UNKNOWN_ENTRY_POINT (naming `name`) when the module has no such entry.
  static t4a_status get(core::Ref<Module> module, const char *name,
                        core::Ref<Kernel> *out);
  ~Kernel() override;

  Module &module() const { return *module_; }
  // The module's runtime (kept alive by the module), without reading the
  // module.
  core::Runtime &runtime() const { return *rt_; }
  CUfunction function() const { return fn_; }
  const std::string &name() const { return name_; }
  const KernelSignature &signature() const { return sig_; }
  const DeviceLimits &limits() const { return limits_; }
  // What launch attributes are checked against (launch/attributes.hpp),
  // on a cold line; has_cluster(): the kernel has compiled cluster facts,
  // one byte of line 0 beside the barrier byte.
  const ClusterFacts &cluster_facts() const { return cluster_; }
  bool has_cluster() const { return has_cluster_ != 0; }
  // The open epoch number (core::Epochs::open_epoch()) of the kernel's
  // runtime under which its module was known kept (0: never): a launch
  // whose kernel carries the open epoch's number reads nothing else to
  // skip the keep. Written after the module's own stamp (Module::kept_in),
  // under the runtime's admission, the only place it is read.
  uint64_t module_kept_in() const { return kept_in_; }
  void set_module_kept_in(uint64_t epoch) { kept_in_ = epoch; }
  void info(t4a_kernel_info *out) const;
  bool param(uint32_t index, uint64_t *offset, uint64_t *size) const;

  // Raises the kernel's dynamic-shared limit to `bytes` if it is lower
  // (never lowers it: another kernel object of the same function may rely
  // on a higher one). Under admission, context current.
  t4a_status ensure_dynamic_shared(uint32_t bytes);

  // Sets CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED once (a
  // launch or query with T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE). Under
  // admission, context current.
  t4a_status allow_non_portable_clusters();
  bool non_portable_allowed() const { return non_portable_; }
  // The largest cluster of one launch shape
  // (cuOccupancyMaxPotentialClusterSize), cached for the last shape asked;
  // under admission (launch/attributes.cpp).
  struct ClusterLimit {
    bool valid = false;
    uint32_t shape[8] = {}; // grid, block, dynamic shared, non-portable
    int32_t max_size = 0;
  };
  ClusterLimit &cluster_limit() { return cluster_limit_; }

  // Whether launches of this kernel take launch/cooperative.cpp's path
  // (a grid barrier is declared): one relaxed byte load on line 0.
  bool has_barriers() const {
    return __atomic_load_n(&barriers_, __ATOMIC_RELAXED) != 0;
  }
  void set_has_barriers() { __atomic_store_n(&barriers_, 1, __ATOMIC_RELEASE); }
  // The cooperative-launch state, made on first use (never replaced).
  CoopState *coop() const { return coop_.load(std::memory_order_acquire); }
  CoopState &coop_state();

private:
  explicit Kernel(core::Ref<Module> m);
  // get's steps once fn_ is found: its attributes, its parameters (where
  // the driver reports them), the device's launch limits.
  t4a_status read_attributes(core::Runtime &rt);
  t4a_status read_params(core::Runtime &rt);
  t4a_status read_limits(core::Runtime &rt);
  void read_cluster_attributes();
  // Read by every launch (see the class comment). barriers_ first: it
  // takes the object header's tail padding.
  uint8_t barriers_ = 0;
  uint8_t has_cluster_ = 0; // has_cluster(), set before publication
  CUfunction fn_ = nullptr;
  core::Runtime *rt_;
  KernelSignature sig_;
  DeviceLimits limits_;
  core::Ref<Module> module_;
  uint64_t kept_in_ = 0; // module_kept_in()
  // Parameter offsets, then sizes (sig_.param_count each).
  std::vector<uint32_t> params_;
  std::string name_;
  int32_t registers_ = 0, local_ = 0, const_ = 0, ptx_ = 0, binary_ = 0;
  // A lower bound of the function's dynamic-shared limit.
  std::atomic<uint32_t> dynamic_shared_{0};
  std::atomic<CoopState *> coop_{nullptr};
  // Launch attributes (launch/attributes.cpp): the facts read at lookup,
  // then, under admission, the non-portable opt-in and the limit cache.
  ClusterFacts cluster_;
  bool non_portable_ = false;
  ClusterLimit cluster_limit_;
};

} // namespace t4a::launch
