// Launch validation as a pure function: the descriptor, the
// facts the caller resolved about its handles, the kernel's signature and
// the device's limits in; a verdict out. No driver, no registry, no heap:
// it is table-tested on the host and fuzzed with arbitrary bytes. Every
// rejection names the field or argument index and the values involved.
#pragma once

#include <cstddef>
#include <cstdint>

#include "t4acuda.h"

namespace t4a::launch {

// The launch flags validate() accepts: T4A_LAUNCH_COOPERATIVE, of the
// header's experimental section (this file also builds without it, for its
// tests and fuzzer; launch/cooperative.cpp asserts the value).
inline constexpr uint32_t k_launch_cooperative = 0x1u;
inline constexpr uint32_t k_launch_flags = k_launch_cooperative;

// What the caller found out about a handle argument before validation.
struct ArgFacts {
  bool same_runtime = true;  // the buffer belongs to the launching runtime
  uint64_t buffer_bytes = 0; // the buffer's size
};

// What the driver reports about a kernel (read once per kernel).
struct KernelSignature {
  uint32_t max_threads_per_block = 0;
  uint32_t static_shared_bytes = 0;
  bool params_known = false; // cuFuncGetParamInfo reported the parameters
  uint32_t param_count = 0;
  const uint32_t *param_offsets = nullptr; // param_count entries
  const uint32_t *param_sizes = nullptr;   // param_count entries
};

// The device's launch limits.
struct DeviceLimits {
  uint32_t max_grid[3] = {0, 0, 0};
  uint32_t max_block[3] = {0, 0, 0};
  uint32_t max_threads_per_block = 0;
  uint32_t max_shared_default = 48 * 1024; // without opting in
  uint32_t max_shared_optin = 0;
};

struct Verdict {
  t4a_status status = T4A_SUCCESS;
  // The kernel's dynamic-shared limit must be raised to the launch's
  // dynamic_shared_bytes (above the default, within the opt-in maximum).
  bool raise_shared = false;
  uint64_t param_bytes = 0; // the parameter block's size
  // The extents to launch, on success: the descriptor's, with 0 in y or z
  // (its default) made 1. x is never 0 (rejected).
  uint32_t grid[3];
  uint32_t block[3];
  // Written only when a launch is rejected (left uninitialized otherwise:
  // the warm path does not clear 384 bytes per launch).
  char message[384];
};

// Validates `desc` (already read through its struct_size) whose
// `arg_count` arguments are `desc.args` (non-NULL when arg_count > 0 is
// checked here too) and whose buffer arguments' facts are `facts[i]`
// (indexed like the arguments; entries of other kinds are ignored).
// `kernel_same_runtime` says whether the kernel's module belongs to the
// launching runtime.
void validate(const t4a_launch_desc &desc, bool kernel_same_runtime,
              const ArgFacts *facts, const KernelSignature &kernel,
              const DeviceLimits &limits, Verdict *out);

} // namespace t4a::launch
