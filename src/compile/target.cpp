#include "compile/target.hpp"

#include <algorithm>
#include <cstdio>

namespace t4a::compile {

namespace {

std::string version_text(int v) {
  char b[32];
  std::snprintf(b, sizeof b, "%d.%d", v / 1000, (v % 1000) / 10);
  return b;
}

bool supported(const std::vector<int> &archs, int arch) {
  return archs.empty() ||
         std::find(archs.begin(), archs.end(), arch) != archs.end();
}

} // namespace

std::string arch_name(uint32_t output, int arch) {
  return (output == T4A_COMPILE_PTX ? "compute_" : "sm_") +
         std::to_string(arch);
}

TargetChoice select_target(const TargetQuery &q) {
  TargetChoice c;
  const int arch = q.cc_major * 10 + q.cc_minor;
  const bool driver_known = q.driver_version > 0;
  // The messages' parts, made only when a message is (a compile's memory
  // hit selects a target too).
  auto nvrtc = [&] { return "NVRTC " + version_text(q.nvrtc_version); };
  auto driver = [&] {
    return driver_known ? "driver CUDA " + version_text(q.driver_version)
                        : std::string("driver unknown");
  };
  auto device = [&] {
    return "device compute capability " + std::to_string(q.cc_major) + "." +
           std::to_string(q.cc_minor);
  };

  if (q.output == T4A_COMPILE_CUBIN && supported(q.archs, arch) &&
      (!driver_known || q.driver_version / 1000 >= q.nvrtc_version / 1000)) {
    c.output = T4A_COMPILE_CUBIN;
    c.arch = arch;
    return c;
  }
  int best = 0;
  if (q.archs.empty()) {
    best = arch;
  } else {
    for (int a : q.archs)
      if (a <= arch && a > best) best = a;
  }
  if (best == 0) {
    std::string range;
    if (!q.archs.empty()) {
      auto mm = std::minmax_element(q.archs.begin(), q.archs.end());
      range = " (it supports sm_" + std::to_string(*mm.first) + " .. sm_" +
              std::to_string(*mm.second) + ")";
    }
    c.status = T4A_ERROR_UNSUPPORTED;
    c.message = nvrtc() + " supports no target at or below sm_" +
                std::to_string(arch) + range + "; " + driver() + "; " +
                device();
    return c;
  }
  if (driver_known && q.driver_version < q.nvrtc_version) {
    c.status = T4A_ERROR_UNSUPPORTED;
    c.message =
        "no loadable target: " +
        std::string(q.output == T4A_COMPILE_CUBIN && supported(q.archs, arch)
                        ? "a CUBIN of " + nvrtc() + " needs a driver of CUDA " +
                              std::to_string(q.nvrtc_version / 1000) +
                              " or newer, and "
                        : "") +
        "PTX for compute_" + std::to_string(best) + " from " + nvrtc() +
        " needs a driver of CUDA " + version_text(q.nvrtc_version) +
        " or newer to JIT it; " + driver() + " (" +
        std::to_string(q.driver_version) + "); " + device();
    return c;
  }
  c.output = T4A_COMPILE_PTX;
  c.arch = best;
  return c;
}

} // namespace t4a::compile
