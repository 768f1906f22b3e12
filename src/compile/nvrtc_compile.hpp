// One NVRTC compile: program, name expressions, options, log, image,
// lowered names. The only file of src/compile/ that calls NVRTC.
#pragma once

#include <nvrtc.h>

#include <string>
#include <vector>

#include "compile/request.hpp"

namespace t4a::compile {

struct NvrtcRun {
  nvrtcResult result = NVRTC_SUCCESS; // of the call that failed, if any
  std::string failed_call;            // "nvrtcCompileProgram", ... or ""
  bool compiled = false;              // nvrtcCompileProgram was called
  std::string log;                    // the complete program log
  std::string image;                  // CUBIN bytes or PTX text (with NUL)
  std::vector<std::string> lowered;   // one per name expression
};

// Compiles `r` with `options` (the request's, plus the selected -arch) and
// fetches the `output` kind of image. NVRTC must be loaded.
NvrtcRun run_nvrtc(const Request &r, const std::vector<std::string> &options,
                   uint32_t output);

// NVRTC's supported SM numbers, read once; empty when NVRTC lacks
// nvrtcGetSupportedArchs (every arch is then taken as supported).
const std::vector<int> &nvrtc_supported_archs();

// NVRTC's error string for a result.
std::string nvrtc_error_text(nvrtcResult r);

} // namespace t4a::compile
