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

// True when the options make NVRTC read files from the file system: an
// include path ("-I", "--include-path", "-isystem", "--system-include",
// with the value attached or as the next option) or a pre-included file
// ("-include", "--pre-include"). Such a compile's result depends on files
// the identity key does not cover, so it is never cached on disk (issue 8
// item 8).
bool options_read_files(const std::vector<std::string> &options);

// True when NVRTC may read files from the file system for this request: the
// options say so (options_read_files), or the source or a given header has
// an include directive that no given header satisfies. NVRTC resolves a
// quoted `#include "x.h"` that is not among the given headers in the
// directory of the program name (the current directory for a relative
// one), or at an absolute or relative path; an include named by a macro,
// and `__has_include`, are counted the same (their file is unknown here).
// Angle-bracket includes not given as headers are NVRTC's own built-in
// headers (covered by the NVRTC version in the key). The scan is lexical
// and errs towards "reads files": such a compile is not cached on disk.
bool request_reads_files(const Request &r);

// SHA-256 over a version tag, the NVRTC version, the requested output, the
// selected target, and every input, each field length-prefixed so that no
// two different requests give the same byte stream.
core::Digest identity_key(const Request &r, const Target &target,
                          int nvrtc_major, int nvrtc_minor);

} // namespace t4a::compile
