// Internals of the disk cache (compile/disk_cache.hpp), shared by its
// files: disk_store.cpp (the files: trust, atomic writes, verified reads)
// and disk_shards.cpp (the sharded layout's bookkeeping). Layout:
//   <dir>/<xy>/<64 hex>.t4ac   an artifact entry, xy = the key's first byte
//   <dir>/<xy>/<64 hex>.t4am   a manifest record
//   <dir>/<xy>/.<name>.<pid>.<serial>.tmp   a write in progress
//   <dir>/shards.stats         per-shard bytes and entries (32-byte records)
//   <dir>/flat-layout-drained  marker: no entry of the flat layout is left
//   <dir>/<name>               side files (disk_put_file)
// Bookkeeping of a write touches one shard's record under that record's
// lock (an OFD byte-range lock of shards.stats, released by the kernel when
// its holder dies); cleanup scans one "unit" (a run of shards with a share
// of the bound), never the whole cache.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "compile/disk_cache.hpp"

namespace t4a::compile::disk {

// 256: at 10^6 entries a shard holds ~4,000 (a recount or cleanup scan of a
// few ms); 16 would hold 62,500 (tens of ms per scan), 4,096 would make a
// shard's share of a 1 GiB bound (256 KiB) smaller than many CUBINs.
constexpr int k_shards = 256;

// Whether what `st` describes may be trusted as the cache's own: owned by
// the effective user and not writable by group or others (else *why).
bool owned_and_private(const struct stat &st, std::string *why);

// A cache directory path is trusted when it does not exist yet (it will be
// made 0700) or is a directory owned_and_private (the path may go through
// links: the user chose it).
bool dir_trusted(const std::string &dir, std::string *why);

// "00".."ff", the directory of shard s.
std::string shard_name(int s);

// <64 lowercase hex><suffix>, suffix ".t4ac" or ".t4am" (flat: ".t4ac").
bool is_entry_name(const char *name);
bool is_flat_entry_name(const char *name);
// ".<anything>.tmp"
bool is_temp_name(const char *name);

// Opens shard s's directory under the open top directory, without
// following a link; with create, makes it (0700) first. -1 with errno
// ENOENT when absent; -1 with *why when unusable or not trusted.
int open_shard(int top, int s, bool create, std::string *why);

// The per-shard records of <dir>/shards.stats, opened (created) on the open
// top directory. Not ok() when the file cannot be opened or trusted: the
// write goes on without bookkeeping.
class StatsFile {
public:
  explicit StatsFile(int top);
  ~StatsFile();
  StatsFile(const StatsFile &) = delete;
  StatsFile &operator=(const StatsFile &) = delete;
  bool ok() const { return fd_ >= 0; }
  // Exclusive lock of the records [first, first + count), blocking.
  bool lock(int first, int count);
  void unlock(int first, int count);

  struct Record {
    uint64_t bytes = 0, entries = 0, writes = 0;
    bool valid = false; // read back with a matching check word
  };
  void get(int first, int count, Record *out) const;
  void put(int s, const Record &r) const;

private:
  int fd_ = -1;
  bool whole_file_ = false; // flock fallback (no OFD locks)
};

// Renames from_dir/from_name over shard s's entry `name` (sfd: the shard
// directory) and accounts for it under the shard's lock: + bytes, - the
// entry it replaced; a record that is missing or invalid is recounted
// first, and every 512th write of a shard recounts it (*recounted). False
// with *why when the rename failed (from_name is then removed).
bool commit(StatsFile &st, int top, int sfd, int s, int from_dir,
            const std::string &from_name, const std::string &name,
            uint64_t bytes, bool *recounted, std::string *why);

// After a write to shard s: cleans the shard's unit when it holds more
// than its share of c.max_bytes or has an unknown record (never the entry
// `keep`), then keeps the whole cache within the bound; moves a batch of
// flat-layout entries into shards until none is left (or, with
// `recounted`, looks again).
void tend(const DiskConfig &c, StatsFile &st, int top, int s,
          const std::string &keep, bool recounted);

} // namespace t4a::compile::disk
