// The sharded disk cache's bookkeeping (layout: compile/disk_shards.hpp).
//
// Accounting: <dir>/shards.stats holds one 32-byte record per shard (bytes,
// entries, writes since its last recount, a check word over them and the
// shard's index). A write locks its shard's record (fcntl F_OFD_SETLKW on
// the record's bytes: released by the kernel when the holder dies, so a
// crash never leaves a stale lock; one open file description per
// operation, so threads exclude each other too), renames its file into
// place, adds its bytes less those of the file it replaced, and unlocks.
// A record whose check word does not match (a torn write, a missing or
// truncated file, another version's bytes) is recounted from the shard's
// directory under the lock, and so is every shard every 512 writes (files
// deleted or added behind the cache's back).
//
// Bound: shards are grouped into units, the largest power-of-two count
// (at most 256) whose share of c.max_bytes is at least 16 MiB (1 GiB: 64
// units of 4 shards; 4 GiB or more: one unit per shard; below 32 MiB: the
// whole cache is one unit, so small caches keep exact LRU order). A write
// that leaves its unit above its share cleans that unit (all of its
// records locked) down to 90% of the share, least recently modified first;
// should the whole cache still be above the bound (an entry larger than a
// share, or stale records), the fullest other units are cleaned until it is
// not. Each write thus reads at most 256 records (8 KiB) and scans at most
// one unit, and only when that unit is full.
#include "compile/disk_shards.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

#include "compile/compile_stats.hpp"
#include "core/log.hpp"

namespace t4a::compile::disk {

namespace {

constexpr char k_stats_name[] = "shards.stats";
constexpr char k_drained_name[] = "flat-layout-drained";
constexpr off_t k_record_bytes = 32;
constexpr uint64_t k_min_unit_share = uint64_t{16} << 20;
constexpr uint64_t k_recount_writes = 512;
constexpr size_t k_flat_batch = 128;
// A temporary file older than this was left by a process that died while
// writing it; a scan removes it.
constexpr time_t k_stale_temp_seconds = 600;

using Record = StatsFile::Record;

uint64_t mix(uint64_t x) { // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Not a checksum against tampering (only this user can write the file):
// it tells a record this version wrote from zeros, garbage or a torn one.
uint64_t check_word(int s, const Record &r) {
  uint64_t h = mix(0x7434616373686172ULL ^ static_cast<uint64_t>(s));
  h = mix(h ^ r.bytes);
  h = mix(h ^ r.entries);
  return mix(h ^ r.writes);
}

void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool hex_name(const char *name, const char *suffix) {
  for (int i = 0; i < 64; ++i)
    if (!is_hex(name[i])) return false;
  return std::strcmp(name + 64, suffix) == 0;
}

int hex_value(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

struct File {
  struct timespec mtime;
  uint64_t bytes;
  int shard;
  std::string name;
};

// Recounts shard s from its directory into *r (valid, writes 0), removing
// stale temporary files; with `files`, lists its entries. An absent
// directory is an empty shard. False (nothing changed) when the directory
// is not trusted or cannot be read.
bool scan_shard(int top, int s, time_t now, Record *r,
                std::vector<File> *files) {
  std::string ignored;
  int fd = open_shard(top, s, false, &ignored);
  if (fd < 0 && errno != ENOENT) return false;
  *r = Record{};
  r->valid = true;
  if (fd < 0) return true;
  DIR *d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return false;
  }
  while (struct dirent *e = ::readdir(d)) {
    struct stat st; // no link is followed, nor counted
    if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      continue;
    if (is_temp_name(e->d_name)) {
      if (now - st.st_mtime > k_stale_temp_seconds)
        (void)::unlinkat(fd, e->d_name, 0); // gone already is as good
      continue;
    }
    if (!is_entry_name(e->d_name)) continue;
    r->bytes += static_cast<uint64_t>(st.st_size);
    ++r->entries;
    if (files != nullptr)
      files->push_back(
          {st.st_mtim, static_cast<uint64_t>(st.st_size), s, e->d_name});
  }
  ::closedir(d);
  return true;
}

void sort_lru(std::vector<File> *files) {
  std::sort(files->begin(), files->end(), [](const File &a, const File &b) {
    if (a.mtime.tv_sec != b.mtime.tv_sec)
      return a.mtime.tv_sec < b.mtime.tv_sec;
    if (a.mtime.tv_nsec != b.mtime.tv_nsec)
      return a.mtime.tv_nsec < b.mtime.tv_nsec;
    return a.name < b.name;
  });
}

struct Keep {
  int shard;
  const std::string &name;
};

// Under the lock of the unit's records: recounts its shards and removes
// their least recently modified entries (never `keep`) while the unit holds
// more than `target` bytes; records the recount.
void clean_unit(const DiskConfig &c, StatsFile &st, int top, int first,
                int count, const Keep &keep, uint64_t target) {
  if (!st.lock(first, count)) return;
  std::vector<File> files;
  std::vector<Record> recs(static_cast<size_t>(count));
  std::vector<bool> scanned(static_cast<size_t>(count));
  uint64_t total = 0;
  time_t now = std::time(nullptr);
  st.get(first, count, recs.data());
  for (int i = 0; i < count; ++i) {
    scanned[i] = scan_shard(top, first + i, now, &recs[i], &files);
    if (recs[i].valid) total += recs[i].bytes;
  }
  sort_lru(&files);
  uint64_t removed = 0, removed_bytes = 0;
  for (const File &f : files) {
    if (total <= target) break;
    if (f.shard == keep.shard && f.name == keep.name) continue;
    // Through the shard's name: the top directory is private, so only this
    // user could have replaced the shard directory since the scan.
    std::string path = shard_name(f.shard) + "/" + f.name;
    if (::unlinkat(top, path.c_str(), 0) != 0 && errno != ENOENT) continue;
    compile_stats().disk_evictions.add();
    ++removed;
    removed_bytes += f.bytes;
    Record &r = recs[static_cast<size_t>(f.shard - first)];
    r.bytes -= f.bytes;
    --r.entries;
    total -= f.bytes;
  }
  for (int i = 0; i < count; ++i)
    if (scanned[i]) st.put(first + i, recs[i]);
  st.unlock(first, count);
  if (removed != 0)
    core::logf(T4A_LOG_INFO,
               "compile cache: %llu least recently used entries (%llu bytes) "
               "removed from '%s' (shards %s..%s) to stay within %llu bytes",
               static_cast<unsigned long long>(removed),
               static_cast<unsigned long long>(removed_bytes), c.dir.c_str(),
               shard_name(first).c_str(), shard_name(first + count - 1).c_str(),
               static_cast<unsigned long long>(c.max_bytes));
}

// Shards per unit for a bound (see the top of this file).
int shards_per_unit(uint64_t max_bytes) {
  int units = k_shards;
  while (units > 1 &&
         max_bytes / static_cast<uint64_t>(units) < k_min_unit_share)
    units /= 2;
  return k_shards / units;
}

// Sums of the valid records of each unit; *total of them all.
std::vector<uint64_t> unit_sums(const StatsFile &st, int per, uint64_t *total) {
  Record all[k_shards];
  st.get(0, k_shards, all);
  std::vector<uint64_t> sums(static_cast<size_t>(k_shards / per), 0);
  *total = 0;
  for (int s = 0; s < k_shards; ++s) {
    if (!all[s].valid) continue;
    sums[static_cast<size_t>(s / per)] += all[s].bytes;
    *total += all[s].bytes;
  }
  return sums;
}

// Whole-cache bound: while the records add up to more than c.max_bytes,
// cleans the fullest unit other than `own` of just the excess. At most one
// round per unit.
void keep_total(const DiskConfig &c, StatsFile &st, int top, int per, int own,
                const Keep &keep) {
  for (int round = 0; round < k_shards / per; ++round) {
    uint64_t total = 0;
    std::vector<uint64_t> sums = unit_sums(st, per, &total);
    if (total <= c.max_bytes) return;
    int fullest = -1;
    for (int u = 0; u < static_cast<int>(sums.size()); ++u)
      if (u != own && (fullest < 0 || sums[u] > sums[fullest])) fullest = u;
    if (fullest < 0 || sums[fullest] == 0) return;
    uint64_t excess = total - c.max_bytes;
    uint64_t target = sums[fullest] > excess ? sums[fullest] - excess : 0;
    clean_unit(c, st, top, fullest * per, per, keep, target);
  }
}

// Moves one flat-layout entry (<dir>/<name>) into its shard, accounted; an
// entry that is not a private regular file is removed instead.
void migrate_flat(StatsFile &st, int top, const char *name) {
  struct stat fs;
  std::string why;
  if (::fstatat(top, name, &fs, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (!S_ISREG(fs.st_mode) || !owned_and_private(fs, &why)) {
    (void)::unlinkat(top, name, 0); // could never be read; gone is as good
    return;
  }
  int s = hex_value(name[0]) * 16 + hex_value(name[1]);
  int sfd = open_shard(top, s, true, &why);
  if (sfd < 0) return; // left where it is; tried again by the next pass
  bool recounted = false;
  (void)commit(st, top, sfd, s, top, name, name,
               static_cast<uint64_t>(fs.st_size), &recounted, &why);
  ::close(sfd); // a failed rename removed the flat entry: nothing to retry
}

// Entries of the flat layout (before sharding): at most k_flat_batch are
// moved into their shards per call, stale temporary files of the top
// directory removed; a pass that reaches the end leaves a marker, which
// stops the passes until `force` (every periodic recount).
void drain_flat(StatsFile &st, int top, bool force) {
  if (!force &&
      ::faccessat(top, k_drained_name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
    return;
  int fd = ::openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (d == nullptr) {
    if (fd >= 0) ::close(fd);
    return;
  }
  size_t moved = 0;
  bool more = false;
  time_t now = std::time(nullptr);
  std::vector<std::string> flat;
  while (struct dirent *e = ::readdir(d)) {
    struct stat ts;
    if (is_temp_name(e->d_name)) {
      if (::fstatat(top, e->d_name, &ts, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISREG(ts.st_mode) && now - ts.st_mtime > k_stale_temp_seconds)
        (void)::unlinkat(top, e->d_name, 0); // gone already is as good
      continue;
    }
    if (!is_flat_entry_name(e->d_name)) continue;
    if (moved++ == k_flat_batch) {
      more = true;
      break;
    }
    flat.emplace_back(e->d_name);
  }
  ::closedir(d);
  // Moved after the walk: renaming out of a directory being read is allowed
  // but may make readdir skip or repeat names.
  for (const std::string &name : flat) migrate_flat(st, top, name.c_str());
  if (more) return;
  int m =
      ::openat(top, k_drained_name,
               O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  if (m >= 0) ::close(m); // without it the next write only looks again
}

} // namespace

std::string shard_name(int s) {
  char b[3];
  std::snprintf(b, sizeof b, "%02x", static_cast<unsigned>(s & 0xff));
  return b;
}

bool is_entry_name(const char *name) {
  return std::strlen(name) == 69 &&
         (hex_name(name, ".t4ac") || hex_name(name, ".t4am"));
}

bool is_flat_entry_name(const char *name) {
  return std::strlen(name) == 69 && hex_name(name, ".t4ac");
}

bool is_temp_name(const char *name) {
  size_t n = std::strlen(name);
  return n > 5 && name[0] == '.' && std::strcmp(name + n - 4, ".tmp") == 0;
}

int open_shard(int top, int s, bool create, std::string *why) {
  std::string name = shard_name(s);
  if (create && ::mkdirat(top, name.c_str(), 0700) != 0 && errno != EEXIST) {
    *why = "cannot create the shard directory '" + name +
           "': " + std::strerror(errno);
    return -1;
  }
  int fd = ::openat(top, name.c_str(),
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int saved = errno;
    *why = "cannot open the shard directory '" + name +
           "': " + std::strerror(saved);
    errno = saved;
    return -1;
  }
  struct stat st;
  std::string untrusted;
  if (::fstat(fd, &st) != 0 || !owned_and_private(st, &untrusted)) {
    *why = "the shard directory '" + name + "' is not trusted: " + untrusted;
    ::close(fd);
    errno = EPERM;
    return -1;
  }
  return fd;
}

StatsFile::StatsFile(int top) {
  for (int attempt = 0; attempt < 2 && fd_ < 0; ++attempt) {
    int fd =
        ::openat(top, k_stats_name,
                 O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    struct stat st;
    std::string why;
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        owned_and_private(st, &why)) {
      fd_ = fd;
      break;
    }
    if (fd >= 0) ::close(fd);
    // A link, FIFO or foreign file in its place: replaced (bookkeeping
    // only; entries are verified on read). Unremovable: no bookkeeping.
    if (::unlinkat(top, k_stats_name, 0) != 0) break;
  }
}

StatsFile::~StatsFile() {
  if (fd_ >= 0) ::close(fd_); // also releases any lock still held
}

bool StatsFile::lock(int first, int count) {
  if (fd_ < 0) return false;
  if (!whole_file_) {
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = first * k_record_bytes;
    fl.l_len = count * k_record_bytes;
    int r;
    while ((r = ::fcntl(fd_, F_OFD_SETLKW, &fl)) != 0 && errno == EINTR) {
    }
    if (r == 0) return true;
    if (errno != EINVAL) return false;
    whole_file_ = true; // a kernel without OFD locks (before Linux 3.15)
  }
  int r;
  while ((r = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
  }
  return r == 0;
}

void StatsFile::unlock(int first, int count) {
  if (whole_file_) {
    (void)::flock(fd_, LOCK_UN); // fails only on a bad fd; close releases
    return;
  }
  struct flock fl {};
  fl.l_type = F_UNLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = first * k_record_bytes;
  fl.l_len = count * k_record_bytes;
  (void)::fcntl(fd_, F_OFD_SETLK, &fl); // as above: close releases it anyway
}

void StatsFile::get(int first, int count, Record *out) const {
  uint8_t buf[k_shards * k_record_bytes];
  size_t want = static_cast<size_t>(count) * k_record_bytes;
  ssize_t n = fd_ >= 0 ? ::pread(fd_, buf, want, first * k_record_bytes) : -1;
  for (int i = 0; i < count; ++i) {
    Record r;
    const uint8_t *p = buf + static_cast<size_t>(i) * k_record_bytes;
    if (n >= static_cast<ssize_t>((i + 1) * k_record_bytes)) {
      r.bytes = get64(p);
      r.entries = get64(p + 8);
      r.writes = get64(p + 16);
      r.valid = get64(p + 24) == check_word(first + i, r);
    }
    out[i] = r;
  }
}

void StatsFile::put(int s, const Record &r) const {
  uint8_t buf[k_record_bytes];
  put64(buf, r.bytes);
  put64(buf + 8, r.entries);
  put64(buf + 16, r.writes);
  put64(buf + 24, check_word(s, r));
  // A short or failed write leaves a record whose check word does not
  // match (or an older valid one): recounted by a later write.
  (void)!::pwrite(fd_, buf, sizeof buf, s * k_record_bytes);
}

bool commit(StatsFile &st, int top, int sfd, int s, int from_dir,
            const std::string &from_name, const std::string &name,
            uint64_t bytes, bool *recounted, std::string *why) {
  bool locked = st.lock(s, 1);
  Record r;
  if (locked) st.get(s, 1, &r);
  time_t now = std::time(nullptr);
  // A failed scan leaves the record invalid: not written back, recounted
  // by a later write.
  if (locked && !r.valid) (void)scan_shard(top, s, now, &r, nullptr);
  struct stat old;
  bool replaced =
      ::fstatat(sfd, name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISREG(old.st_mode);
  if (::renameat(from_dir, from_name.c_str(), sfd, name.c_str()) != 0) {
    int saved = errno;
    (void)::unlinkat(from_dir, from_name.c_str(), 0); // nothing else to do
    if (locked) st.unlock(s, 1);
    *why = "cannot rename '" + from_name + "' to '" + shard_name(s) + "/" +
           name + "': " + std::strerror(saved);
    return false;
  }
  if (locked && r.valid) {
    uint64_t gone = replaced ? static_cast<uint64_t>(old.st_size) : 0;
    // More gone than counted (a file grown behind the cache's back, e.g.
    // truncated up to 1 TiB): the record was wrong; recounted now.
    bool wrong = r.bytes + bytes < gone;
    r.bytes = wrong ? 0 : r.bytes + bytes - gone;
    if (!replaced) ++r.entries;
    if ((++r.writes >= k_recount_writes || wrong) &&
        scan_shard(top, s, now, &r, nullptr))
      *recounted = true;
    st.put(s, r);
  }
  if (locked) st.unlock(s, 1);
  return true;
}

void tend(const DiskConfig &c, StatsFile &st, int top, int s,
          const std::string &keep, bool recounted) {
  if (!st.ok()) return;
  int per = shards_per_unit(c.max_bytes), first = s / per * per;
  uint64_t share = c.max_bytes / static_cast<uint64_t>(k_shards / per);
  Record recs[k_shards];
  st.get(first, per, recs);
  uint64_t bytes = 0;
  bool unknown = false;
  for (int i = 0; i < per; ++i) {
    if (!recs[i].valid) unknown = true;
    bytes += recs[i].valid ? recs[i].bytes : 0;
  }
  const Keep k{s, keep};
  if (bytes > share || unknown) {
    clean_unit(c, st, top, first, per, k,
               bytes > share ? share - share / 10 : share);
    if (per < k_shards) keep_total(c, st, top, per, s / per, k);
  }
  drain_flat(st, top, recounted);
}

} // namespace t4a::compile::disk
