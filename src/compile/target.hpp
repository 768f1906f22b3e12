// Target selection: a pure function from what NVRTC supports,
// the NVRTC and driver versions, the device's compute capability and the
// requested output to the target compiled for. It never picks an artifact
// the driver cannot load:
//   1. CUBIN for the device's exact sm_XY when CUBIN was requested, NVRTC
//      supports sm_XY, and the driver's CUDA major is at least NVRTC's
//      (a CUBIN of a newer major toolkit is not loadable);
//   2. otherwise PTX for compute_AB, the highest NVRTC-supported arch not
//      above the device's, but only when the driver's CUDA version is at
//      least NVRTC's (NVRTC X.Y emits PTX ISA that a driver older than
//      X.Y cannot JIT);
//   3. otherwise UNSUPPORTED, naming NVRTC, driver and device versions.
// A driver version of 0 means "unknown" (an explicit compute capability
// without a runtime): no driver check is made.
#pragma once

#include <string>
#include <vector>

#include "t4acuda.h"

namespace t4a::compile {

struct TargetQuery {
  std::vector<int> archs; // NVRTC's supported SM numbers (75, 80, ...);
                          // empty = unknown: every arch is taken as supported
  int nvrtc_version = 0;  // major * 1000 + minor * 10 (13000)
  int driver_version = 0; // cuDriverGetVersion (12040); 0 = unknown
  int cc_major = 0;
  int cc_minor = 0;
  uint32_t output = T4A_COMPILE_CUBIN; // requested
};

struct TargetChoice {
  t4a_status status = T4A_SUCCESS; // SUCCESS or UNSUPPORTED
  uint32_t output = T4A_COMPILE_CUBIN;
  int arch = 0;        // 90 for sm_90 / compute_90
  std::string message; // why, when UNSUPPORTED
};

TargetChoice select_target(const TargetQuery &q);

// "sm_90" or "compute_90".
std::string arch_name(uint32_t output, int arch);

} // namespace t4a::compile
