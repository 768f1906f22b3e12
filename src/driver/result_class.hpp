// Classification of CUresult values: which are sticky device faults (the
// context, and on current drivers the whole process, is poisoned), which
// mean out of memory, which mean the driver is gone.
#pragma once

#include <cuda.h>

namespace t4a::driver {

// Errors after which the CUDA context is unusable (the driver documents
// these as leaving the process in an inconsistent state).
inline bool is_sticky(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_LAUNCH_TIMEOUT: return true;
  default: return false;
  }
}

// The driver has been shut down (process exit) or is not usable at all.
inline bool is_driver_gone(CUresult r) {
  return r == CUDA_ERROR_DEINITIALIZED || r == CUDA_ERROR_NOT_INITIALIZED ||
         r == CUDA_ERROR_STUB_LIBRARY;
}

} // namespace t4a::driver
