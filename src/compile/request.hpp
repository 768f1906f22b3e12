// A compile request as the library keeps it: validated copies of the
// caller's strings, and the identity key over them.
#pragma once

#include <string>
#include <vector>

#include "compile/artifact.hpp"
#include "core/sha256.hpp"
#include "t4acuda.h"

namespace t4a::compile {

struct Request {
  std::string source;
  std::string program_name;
  std::vector<std::string> header_names, header_sources;
  std::vector<std::string> options;
  std::vector<std::string> name_expressions;
  uint32_t output = T4A_COMPILE_CUBIN;
  int32_t cc_major = 0, cc_minor = 0;
  uint32_t flags = 0;
  uint64_t runtime_id = 0;
  uint64_t disk_cache_max_bytes = 0;
  bool has_cache_dir = false;
  std::string cache_dir;
  std::string toolkit_include; // "" when not named
};

// Reads and validates the caller's request (struct_size rules included);
// every rejection names the field and index. The runtime is not resolved
// here.
t4a_status read_request(const t4a_compile_request *in, Request *out);

// When the options choose the architecture ("-arch=sm_90",
// "--gpu-architecture=compute_90", or "-arch" followed by the value),
// sets *target from it (output: the requested kind; arch: the number, 0
// when it cannot be parsed) and returns true.
bool arch_from_options(const std::vector<std::string> &options, uint32_t output,
                       Target *target);

// SHA-256 over a version tag, the NVRTC version, the requested output, the
// selected target, and every input (`options`: the effective options,
// the toolkit's include options included), each field length-prefixed so
// that no two different requests give the same byte stream. A compile
// that can read files is keyed further by its dependencies
// (dependencies.hpp: final_key).
core::Digest identity_key(const Request &r,
                          const std::vector<std::string> &options,
                          const Target &target, int nvrtc_major,
                          int nvrtc_minor);

} // namespace t4a::compile
