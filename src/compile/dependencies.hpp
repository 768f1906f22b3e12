// Dependency tracking for the compile caches (docs/compilation.md,
// "Dependencies"; issue 23 item 2), after ccache's direct mode: the identity
// key of a compile that can read files covers every file it could read.
//
// scan_dependencies() walks the request's source and headers and every
// file they can reach: each include (include_lexer.hpp, every lexing
// variant, every branch of every conditional) is looked up in every
// directory NVRTC could search for it — a given header of that name
// (NVRTC takes it before any file), else, for a quoted name, the
// includer's directory (for the source and the given headers: the
// program name's directory and the current directory), then each -I
// directory of the options, then the toolkit's directories
// (toolkit.hpp). Every candidate path becomes a dependency: absent, or a
// file (its content's SHA-256; a file under a toolkit directory by its
// stamp instead: device, inode, size, modification and change times; an
// absent toolkit path by the stamp of the nearest directory above it that
// exists), and every file found is scanned in turn. Pre-included files
// (-include) are roots too. What cannot be proven — an include named by a
// macro, a wrapper macro of an existence test whose uses cannot be followed, an
// unreadable file, more than k_max_files files — makes the compile
// uncacheable, with the reason.
//
// A dependency set is checked again on every later lookup (validate):
// content files are read and hashed each time; toolkit files are stamped
// once per process (the toolkit's identity is taken once per process).
// The final key is SHA-256 over the base key (every input of the request,
// include options and toolkit version included) and the set.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compile/request.hpp"
#include "core/fork.hpp"
#include "core/sha256.hpp"

namespace t4a::compile {

struct FileStamp {
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileStamp &) const = default;
};

struct Dependency {
  // Absent: no regular file at the path. Content: a file, by its bytes.
  // Toolkit: a file under a toolkit directory, by its stamp. ToolkitDir: a
  // directory under (or of) the toolkit, by its stamp: the nearest existing
  // directory above toolkit paths found absent (creating, removing or
  // renaming an entry in a directory changes its modification and change
  // times, so one directory stands for every absent path below it).
  // Toolkit states are checked once per process.
  enum State : uint8_t { Absent = 0, Content = 1, Toolkit = 2, ToolkitDir = 3 };
  std::string path;
  State state = Absent;
  core::Digest digest{}; // Content: SHA-256 of the file
  FileStamp stamp{};     // Content and Toolkit: as found by the scan
};

struct DependencySet {
  std::vector<Dependency> deps; // sorted by path, no duplicates
};

struct ScanOutcome {
  bool provable = true;
  std::string why; // when not provable
  DependencySet set;
  uint64_t files = 0, bytes = 0; // scanned
};

// The include directories of the options ("-I<d>", "-I" "<d>",
// "--include-path=<d>", "--include-path" "<d>", and the -isystem /
// --system-include spellings) in order, and the pre-included files
// ("-include <f>", "--pre-include=<f>", ...).
void include_options(const std::vector<std::string> &options,
                     std::vector<std::string> *dirs,
                     std::vector<std::string> *pre_includes);

// Scans `r` whose effective options are `options` (the caller's, then the
// toolkit's include options); files under `toolkit_dirs` are toolkit files.
ScanOutcome scan_dependencies(const Request &r,
                              const std::vector<std::string> &options,
                              const std::vector<std::string> &toolkit_dirs);

// Whether every dependency is as recorded now. *changed names the first
// that is not.
bool validate(const DependencySet &s, std::string *changed);

// Whether no content file changed since the scan (stamps equal) and every
// absent path is still absent: checked after NVRTC ran, so that a file
// edited during the compile is never cached under its old content.
bool unchanged_since_scan(const DependencySet &s, std::string *changed);

// SHA-256 over `base` and the set.
core::Digest final_key(const core::Digest &base, const DependencySet &s);

// A manifest: the dependency sets seen for one base key (newest last, at
// most k_max_sets). encode/parse are exact inverses; parse rejects
// anything malformed (it reads bytes from the disk cache).
constexpr size_t k_max_sets = 8;
std::string encode_manifest(const std::vector<DependencySet> &sets);
bool parse_manifest(const std::string &bytes, std::vector<DependencySet> *out);

// The fork hook of this file's leaf lock, called by capi/fork.cpp in its
// fixed order (core/fork.hpp).
void dependencies_at_fork(core::ForkPhase phase);

} // namespace t4a::compile
