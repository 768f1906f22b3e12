// Host lane, pure: which CUresults are sticky device faults (issue 8, item
// 6). Every code that cuda.h documents as leaving the process (or the
// context) unusable must break the runtime; 226, 721 and 911 were
// classified as ordinary driver errors before. The table also pins a few
// codes that must stay ordinary. Compiled with src/driver/result_class.hpp.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstdio>

#include "driver/result_class.hpp"

int main() {
  struct Row {
    int code;
    const char *name;
    bool sticky;
  };
  static const Row rows[] = {
      {214, "CUDA_ERROR_ECC_UNCORRECTABLE", true},
      {226, "CUDA_ERROR_CONTAINED", true},
      {700, "CUDA_ERROR_ILLEGAL_ADDRESS", true},
      {702, "CUDA_ERROR_LAUNCH_TIMEOUT", true},
      {710, "CUDA_ERROR_ASSERT", true},
      {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", true},
      {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", true},
      {716, "CUDA_ERROR_MISALIGNED_ADDRESS", true},
      {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", true},
      {718, "CUDA_ERROR_INVALID_PC", true},
      {719, "CUDA_ERROR_LAUNCH_FAILED", true},
      {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", true},
      {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED", true},
      {911, "CUDA_ERROR_EXTERNAL_DEVICE", true},
      {0, "CUDA_SUCCESS", false},
      {1, "CUDA_ERROR_INVALID_VALUE", false},
      {2, "CUDA_ERROR_OUT_OF_MEMORY", false},
      {200, "CUDA_ERROR_INVALID_IMAGE", false},
      {201, "CUDA_ERROR_INVALID_CONTEXT", false},
      {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", false},
      {600, "CUDA_ERROR_NOT_READY", false},
      {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", false},
      {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", false},
      {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", false},
      {909, "CUDA_ERROR_TIMEOUT", false},
      {999, "CUDA_ERROR_UNKNOWN", false},
  };
  int failed = 0;
  for (const Row &r : rows) {
    bool got = t4a::driver::is_sticky(static_cast<CUresult>(r.code));
    if (got != r.sticky) {
      std::fprintf(stderr, "%s (%d): is_sticky %d, expected %d\n", r.name,
                   r.code, got, r.sticky);
      ++failed;
    }
  }
  std::printf("%zu codes, %d wrong\n", sizeof rows / sizeof rows[0], failed);
  return failed == 0 ? 0 : 1;
}
