// The persistent disk cache: artifact entries and manifest records, one
// file per identity key in one of 256 shard directories,
// "<dir>/<first key byte, 2 hex>/<key hex>.t4ac" (".t4am" for a
// manifest); written atomically (a temporary file in the shard, then
// rename), verified on every read (magic, format version, header size,
// key, sizes, SHA-256 of the payload). Bounded in bytes: per-shard byte
// counts in <dir>/shards.stats, updated under a per-shard lock on each
// write (no directory scan), and least recently used files (modification
// time, refreshed on every hit) of a group of shards removed when that
// group holds more than its share of the bound, then of the fullest groups
// while the whole cache holds more than the bound (compile/disk_shards.cpp
// says how, and why that is within the bound but for writes in flight).
// Trusted only when owned by this user and not writable by group or others
// (the directory: else the disk cache is off for it; a shard directory or
// an entry: else it is corrupt and replaced). Safe across processes:
// readers only ever open complete files, concurrent writers of one key
// write identical content, and the bookkeeping is under kernel locks that
// a dying process releases. Entries of the flat layout of earlier versions
// ("<dir>/<key hex>.t4ac") are moved into their shards, a bounded batch per
// write, until none is left.
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
// T4A_COMPILE_NO_DISK_CACHE flag disables it, and so does a directory
// that exists but is not owned by this user or is writable by group or others
// (warned once per directory).
DiskConfig disk_config(const Request &r);

// disk_config(r), read the first time a compile needs it: a memory hit
// never does (reading it costs a stat of the directory and its trust
// check, a third of a memory hit's time), so a directory that became
// untrusted is noticed by the next compile that would use it.
class LazyDiskConfig {
public:
  explicit LazyDiskConfig(const Request &r) : r_(r) {}
  LazyDiskConfig(const LazyDiskConfig &) = delete;
  LazyDiskConfig &operator=(const LazyDiskConfig &) = delete;
  const DiskConfig &get() {
    if (!read_) {
      config_ = disk_config(r_);
      read_ = true;
    }
    return config_;
  }

private:
  const Request &r_;
  DiskConfig config_;
  bool read_ = false;
};

// Reads and verifies the entry of `key`. Its shard directory must be a
// directory (not a link) owned by this user and not writable by group or
// others; the entry is opened without following a link and without
// blocking; only a regular file owned by this user, not
// writable by group or others, and within c.max_bytes is read.
// Corrupt: the file exists but is none of that, is truncated or fails a
// check; *why says which (the caller compiles again and replaces it).
DiskRead disk_read(const DiskConfig &c, const core::Digest &key, DiskEntry *out,
                   std::string *why);

// Writes the artifact's entry atomically (disk_writes), then does its
// shard's bookkeeping: its bytes counted, and least recently used entries
// or manifests evicted (disk_evictions) when its group of shards or the
// whole cache holds more than the bound (never the entry just written).
// False with *why when it could not be written (larger than the bound, an
// untrusted shard directory, an I/O error).
bool disk_write(const DiskConfig &c, const Artifact &a, std::string *why);

// A manifest record: an opaque byte string (the caller serializes it)
// under `key`, in the key's shard as "<key hex>.t4am", in a checksummed
// container (compile/disk_entry.hpp: magic, format version, key, payload
// size, SHA-256 of the payload). Written atomically, counted in the bound
// and evicted least recently used like an artifact entry (not counted in
// disk_writes). False with *why when not written (larger than the bound
// with its 96-byte header, or as disk_write).
bool disk_put_manifest(const DiskConfig &c, const core::Digest &key,
                       const std::string &bytes, std::string *why);

// Reads and verifies the manifest of `key` with disk_read's trust checks;
// a hit refreshes it (LRU) and sets *out to the whole payload. Miss when
// absent; Corrupt with *why when any check fails (*out untouched: a reader
// never gets a partial or unverified payload). Counts nothing: the caller
// decides what a corrupt manifest counts as.
DiskRead disk_get_manifest(const DiskConfig &c, const core::Digest &key,
                           std::string *out, std::string *why);

// A small side file of the cache directory (not an entry: never counted
// nor evicted), written atomically; read whole when at most max_bytes.
bool disk_put_file(const DiskConfig &c, const std::string &name,
                   const std::string &bytes, std::string *why);
bool disk_get_file(const DiskConfig &c, const std::string &name,
                   size_t max_bytes, std::string *out);

// The entry file and the manifest file of a key (for diagnostics and
// tests).
std::string disk_entry_path(const DiskConfig &c, const core::Digest &key);
std::string disk_manifest_path(const DiskConfig &c, const core::Digest &key);

// The fork hook of the disk cache's lock (the set of directories reported
// untrusted), called by capi/fork.cpp in its fixed order (core/fork.hpp).
void disk_cache_at_fork(core::ForkPhase phase);

} // namespace t4a::compile
