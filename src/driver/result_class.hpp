// Classification of CUresult values: which are sticky device faults (the
// context, and on current drivers the whole process, is poisoned), which
// mean out of memory, which mean the driver is gone.
#pragma once

#include <cuda.h>

namespace t4a::driver {

// Errors after which the CUDA context is unusable: every CUresult whose
// description in cuda.h says that it "leaves the process in an
// inconsistent state" and that "the process must be terminated and
// relaunched" (700, 702, 714-719, 721, 226, 911, 810), or that the context
// "cannot be used anymore, and must be destroyed" (710), plus an
// uncorrectable ECC error (214), after which the context's memory cannot
// be trusted. Not sticky: 220 (uncorrectable NVLink error), documented
// without that consequence, and every other code. Reviewed against the
// cuda.h of CUDA 12.x/13.x (issue 8, item 6).
inline bool is_sticky(CUresult r) {
  // Numbers, not names: older cuda.h headers lack some of these names, and
  // a newer driver may still return them.
  switch (static_cast<int>(r)) {
  case 214: // CUDA_ERROR_ECC_UNCORRECTABLE
  case 226: // CUDA_ERROR_CONTAINED
  case 700: // CUDA_ERROR_ILLEGAL_ADDRESS
  case 702: // CUDA_ERROR_LAUNCH_TIMEOUT
  case 710: // CUDA_ERROR_ASSERT
  case 714: // CUDA_ERROR_HARDWARE_STACK_ERROR
  case 715: // CUDA_ERROR_ILLEGAL_INSTRUCTION
  case 716: // CUDA_ERROR_MISALIGNED_ADDRESS
  case 717: // CUDA_ERROR_INVALID_ADDRESS_SPACE
  case 718: // CUDA_ERROR_INVALID_PC
  case 719: // CUDA_ERROR_LAUNCH_FAILED
  case 721: // CUDA_ERROR_TENSOR_MEMORY_LEAK
  case 810: // CUDA_ERROR_MPS_CLIENT_TERMINATED
  case 911: // CUDA_ERROR_EXTERNAL_DEVICE
    return true;
  default: return false;
  }
}

// The driver has been shut down (process exit) or is not usable at all.
inline bool is_driver_gone(CUresult r) {
  return r == CUDA_ERROR_DEINITIALIZED || r == CUDA_ERROR_NOT_INITIALIZED ||
         r == CUDA_ERROR_STUB_LIBRARY;
}

} // namespace t4a::driver
