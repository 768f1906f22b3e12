// The persistent disk cache of artifacts: one file per identity
// key, "<dir>/<key hex>.t4ac", written atomically (a temporary file in the
// same directory, then rename), verified on every read (magic, format
// version, header size, key, section sizes, SHA-256 of the payload),
// bounded in bytes by evicting the least recently used entries (file
// modification time, refreshed on every hit). Trusted only when owned by
// this user and not writable by group or others (the directory: else the
// disk cache is off for it; an entry: else it is corrupt and replaced). Safe
// across processes: readers only ever open complete files, and concurrent
// writers of one key write identical content.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compile/artifact.hpp"
#include "compile/disk_entry.hpp"
#include "compile/request.hpp"
#include "core/fork.hpp"

namespace t4a::compile {

struct DiskConfig {
  bool enabled = false;
  std::string dir;
  uint64_t max_bytes = 0;
};

// The directory and bound for a request: T4A_CACHE_DIR (set but empty:
// disabled), else request->cache_dir ("" disabled), else
// $XDG_CACHE_HOME/t4acuda (absolute paths only), else
// $HOME/.cache/t4acuda, else disabled; T4A_CACHE_MAX_BYTES, else the
// request's bound, else T4A_DEFAULT_DISK_CACHE_BYTES. The
// T4A_COMPILE_NO_DISK_CACHE flag disables it, so do options that make
// NVRTC read files (request_reads_files: -I, -include, ..., or an include
// directive no given header satisfies), and so does a
// directory that
// exists but is not owned by this user or is writable by group or others
// (warned once per directory).
DiskConfig disk_config(const Request &r);

// Reads and verifies the entry of `key`. Opened without following a link
// and without blocking; only a regular file owned by this user, not
// writable by group or others, and within c.max_bytes is read.
// Corrupt: the file exists but is none of that, is truncated or fails a
// check; *why says which (the caller compiles again and replaces it).
DiskRead disk_read(const DiskConfig &c, const core::Digest &key, DiskEntry *out,
                   std::string *why);

// Writes the artifact's entry atomically, then evicts least recently used
// entries while the directory holds more than the bound (never the entry
// just written). False with *why when it could not be written.
bool disk_write(const DiskConfig &c, const Artifact &a, std::string *why);

// A small side file of the cache directory (not an entry: never counted
// nor evicted), written atomically; read whole when at most max_bytes.
bool disk_put_file(const DiskConfig &c, const std::string &name,
                   const std::string &bytes, std::string *why);
bool disk_get_file(const DiskConfig &c, const std::string &name,
                   size_t max_bytes, std::string *out);

// The entry file of a key (for diagnostics and tests).
std::string disk_entry_path(const DiskConfig &c, const core::Digest &key);

// The fork hook of the disk cache's lock (the set of directories reported
// untrusted), called by capi/fork.cpp in its fixed order (core/fork.hpp).
void disk_cache_at_fork(core::ForkPhase phase);

} // namespace t4a::compile
