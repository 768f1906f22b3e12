// t4a_compile's work after argument checks: target selection, identity
// key, the memory and disk caches, NVRTC, and the per-thread log of the
// last failed compile.
#pragma once

#include <cstdint>
#include <string>

#include "compile/request.hpp"

namespace t4a::compile {

// The device a request compiles for: the request's compute capability
// (driver_version 0: unknown), or a runtime's device and the driver's
// version.
struct DeviceTarget {
  int cc_major = 0;
  int cc_minor = 0;
  int driver_version = 0;
};

// Compiles (or finds) the artifact of `r` for `d`; *id is a new handle
// reference. Failures are recorded with fail*(); a COMPILE failure also
// sets last_compile_log().
t4a_status compile(const Request &r, const DeviceTarget &d, uint64_t *id);

// What t4a_toolkit_headers reports: the toolkit headers a request without
// toolkit_include would get, as "key value" lines (include, version,
// from, passed-over, nvrtc). Loads NVRTC (its version decides).
t4a_status describe_toolkit(std::string *out);

// The complete NVRTC log of the calling thread's last compile that failed
// with T4A_ERROR_COMPILE.
const std::string &last_compile_log();

} // namespace t4a::compile
