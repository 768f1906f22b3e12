// The CUDA toolkit headers a compile gets without any option
// (docs/compilation.md, "Toolkit headers"; issue 23 item 1): cuda_fp16.h,
// cuda_bf16.h, cooperative_groups.h and CCCL (cuda/std/..., in <include>/cccl)
// are not built into NVRTC, so the library adds the toolkit's include
// directories after the caller's own options (the caller's -I directories are
// searched first).
//
// Search order, first match wins:
//   1. t4a_compile_request::toolkit_include (an include directory);
//   2. T4A_CUDA_INCLUDE (an include directory);
//   3. CUDA_HOME, then CUDA_PATH (toolkit roots: <root>/include);
//   4. the toolkit of the NVRTC in use (<lib>/../include and
//      <lib>/../../include, for lib64/ and targets/<arch>/lib/ layouts);
//   5. /usr/local/cuda/include.
// A directory is a toolkit include directory when it holds cuda.h, whose
// CUDA_VERSION must equal NVRTC's major.minor. For 1 and 2 (named by the
// caller) a missing cuda.h or another version is an error naming both
// versions; for 3 to 5 such a directory is passed over (said in the log
// and in a failed compile's message). The T4A_COMPILE_NO_TOOLKIT_HEADERS
// flag opts a request out.
#pragma once

#include <string>
#include <vector>

#include "core/fork.hpp"
#include "t4acuda.h"

namespace t4a::compile {

struct Toolkit {
  bool found = false;
  std::vector<std::string> dirs; // <include>, then <include>/cccl if present
  int major = 0, minor = 0;      // CUDA_VERSION of <include>/cuda.h
  std::string from;              // which step of the search found it
  std::string passed_over;       // candidates not taken, and why ("; ")
};

// The toolkit for a request naming `requested` (NULL or "": none) under
// NVRTC `nvrtc_major`.`nvrtc_minor`, loaded from `nvrtc_file` ("" when
// unknown). Memoized per process for the same inputs and environment.
// Fails (VERSION_MISMATCH or INVALID_ARGUMENT, the message naming the
// directory and both versions) only for a directory the caller named.
t4a_status find_toolkit(const char *requested, int nvrtc_major, int nvrtc_minor,
                        const std::string &nvrtc_file, Toolkit *out);

// The CUDA_VERSION defined in the first 256 KiB of `cuda_h` (13000 for
// 13.0), or 0 (exposed for tests).
int cuda_version_of(const std::string &cuda_h);

// The fork hook of this file's leaf lock, called by capi/fork.cpp in its
// fixed order (core/fork.hpp).
void toolkit_at_fork(core::ForkPhase phase);

} // namespace t4a::compile
