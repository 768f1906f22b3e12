// The disk cache's files (declared in compile/disk_cache.hpp; layout and
// bookkeeping: compile/disk_shards.hpp): trust checks, atomic writes into
// a shard, verified reads of artifact entries and manifest records, and
// the side files of the top directory.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "compile/compile_stats.hpp"
#include "compile/disk_cache.hpp"
#include "compile/disk_shards.hpp"

namespace t4a::compile {

namespace disk {

bool owned_and_private(const struct stat &st, std::string *why) {
  // A directory or entry another user could write to may hold content
  // planted to be loaded as a kernel; its checksum proves nothing.
  if (st.st_uid != ::geteuid()) {
    *why = "owned by uid " + std::to_string(st.st_uid) + ", not by uid " +
           std::to_string(::geteuid());
    return false;
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o",
                  static_cast<unsigned>(st.st_mode & 07777));
    *why = std::string("writable by ") +
           ((st.st_mode & S_IWOTH) != 0 ? "others" : "its group") + " (mode " +
           mode + ")";
    return false;
  }
  return true;
}

bool dir_trusted(const std::string &dir, std::string *why) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    *why = std::string("cannot stat it: ") + std::strerror(errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *why = "not a directory";
    return false;
  }
  return owned_and_private(st, why);
}

} // namespace disk

namespace {

using disk::owned_and_private;

constexpr char k_entry_suffix[] = ".t4ac";
constexpr char k_manifest_suffix[] = ".t4am";

bool make_dirs(const std::string &dir) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool read_all(int fd, uint8_t *p, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::read(fd, p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

bool write_all(int fd, const uint8_t *p, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::write(fd, p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

struct Span {
  const uint8_t *p;
  size_t n;
};

// Closes a descriptor at the end of a scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Creates c.dir (0700) when missing and opens it; -1 with *why when it
// cannot be made or is not trusted (again now that it exists: another
// user may have made it meanwhile).
int open_top(const std::string &dir, std::string *why) {
  if (!make_dirs(dir)) {
    *why = "cannot create the cache directory '" + dir +
           "': " + std::strerror(errno);
    return -1;
  }
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  std::string untrusted = "cannot open it";
  if (fd >= 0 && ::fstat(fd, &st) == 0 && owned_and_private(st, &untrusted))
    return fd;
  if (fd >= 0) ::close(fd);
  *why = "the cache directory '" + dir + "' is not trusted: " + untrusted;
  return -1;
}

// Writes the parts to a new temporary file ".<name>.<pid>.<serial>.tmp" in
// directory dfd (removed by a later scan if its writer dies); *temp is its
// name.
bool write_temp(int dfd, const std::string &name, const Span *parts,
                size_t count, std::string *temp, std::string *why) {
  static std::atomic<uint64_t> serial{0};
  *temp = "." + name + "." + std::to_string(::getpid()) + "." +
          std::to_string(serial.fetch_add(1)) + ".tmp";
  int fd = ::openat(dfd, temp->c_str(),
                    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    *why = "cannot create '" + *temp + "': " + std::strerror(errno);
    return false;
  }
  bool ok = true;
  for (size_t i = 0; ok && i < count; ++i)
    ok = write_all(fd, parts[i].p, parts[i].n);
  int saved = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok) return true;
  (void)::unlinkat(dfd, temp->c_str(), 0); // a scan would remove it anyway
  *why = "cannot write '" + *temp + "': " + std::strerror(saved);
  return false;
}

std::string record_name(const core::Digest &key, const char *suffix) {
  return core::to_hex(key) + suffix;
}

// Writes one entry or manifest of `key` atomically into its shard, then
// does the shard's bookkeeping (disk::tend).
bool write_record(const DiskConfig &c, const core::Digest &key,
                  const char *suffix, const Span *parts, size_t count,
                  std::string *why) {
  Fd top, shard;
  if ((top.fd = open_top(c.dir, why)) < 0) return false;
  const int s = key[0];
  if ((shard.fd = disk::open_shard(top.fd, s, true, why)) < 0) return false;
  std::string name = record_name(key, suffix), temp;
  if (!write_temp(shard.fd, name, parts, count, &temp, why)) return false;
  uint64_t bytes = 0;
  for (size_t i = 0; i < count; ++i) bytes += parts[i].n;
  disk::StatsFile st(top.fd);
  bool recounted = false;
  if (!disk::commit(st, top.fd, shard.fd, s, shard.fd, temp, name, bytes,
                    &recounted, why))
    return false;
  disk::tend(c, st, top.fd, s, name, recounted);
  return true;
}

// Reads the whole file `name` of shard s after the trust checks (regular,
// private, within c.max_bytes); Miss when it or its shard is absent.
DiskRead read_checked(const DiskConfig &c, int sfd, const std::string &name,
                      std::vector<uint8_t> *data, std::string *problem) {
  // O_NOFOLLOW: a link is not the cache's entry. O_NONBLOCK: a FIFO or
  // device at the path does not block the open; nothing but a regular file
  // is read.
  int fd = ::openat(sfd, name.c_str(),
                    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return DiskRead::Miss;
    *problem = std::string("cannot be opened: ") + std::strerror(errno);
    return DiskRead::Corrupt;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0)
    *problem = std::string("fstat failed: ") + std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    *problem = "not a regular file";
  else if (std::string untrusted; !owned_and_private(st, &untrusted))
    *problem = "not trusted: " + untrusted;
  else if (static_cast<uint64_t>(st.st_size) > c.max_bytes)
    *problem = "larger (" + std::to_string(st.st_size) +
               " bytes) than the cache's bound (" +
               std::to_string(c.max_bytes) + " bytes)";
  if (problem->empty()) {
    try {
      data->resize(static_cast<size_t>(st.st_size));
      if (!read_all(fd, data->data(), data->size()))
        *problem = "cannot be read in full";
    } catch (const std::bad_alloc &) {
      *problem = "too large to read into host memory";
    }
  }
  ::close(fd);
  return problem->empty() ? DiskRead::Hit : DiskRead::Corrupt;
}

// Reads and verifies the entry or manifest of `key`: parse(data, size,
// &what) decides; a hit refreshes its modification time (LRU).
template <typename Parse>
DiskRead read_record(const DiskConfig &c, const core::Digest &key,
                     const char *suffix, std::string *why, Parse parse) {
  std::string shard = disk::shard_name(key[0]);
  std::string name = record_name(key, suffix);
  std::string path = c.dir + "/" + shard + "/" + name, problem;
  Fd sfd;
  sfd.fd = ::open((c.dir + "/" + shard).c_str(),
                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  std::string untrusted = std::strerror(errno);
  if (sfd.fd < 0 && errno == ENOENT) return DiskRead::Miss;
  if (sfd.fd < 0 || ::fstat(sfd.fd, &st) != 0 ||
      !owned_and_private(st, &untrusted)) {
    *why = path + ": its shard directory is not usable: " + untrusted;
    return DiskRead::Corrupt;
  }
  std::vector<uint8_t> data;
  DiskRead r = read_checked(c, sfd.fd, name, &data, &problem);
  if (r == DiskRead::Hit) {
    const char *what = nullptr;
    if (parse(data.data(), data.size(), &what) != DiskRead::Hit) {
      problem = what;
      r = DiskRead::Corrupt;
    }
  }
  if (r == DiskRead::Corrupt) *why = path + ": " + problem;
  if (r != DiskRead::Hit) return r;
  // A hit makes the entry the most recently used one; should the touch
  // fail, it is only evicted sooner.
  (void)::utimensat(sfd.fd, name.c_str(), nullptr, 0);
  return DiskRead::Hit;
}

} // namespace

std::string disk_entry_path(const DiskConfig &c, const core::Digest &key) {
  return c.dir + "/" + disk::shard_name(key[0]) + "/" +
         record_name(key, k_entry_suffix);
}

std::string disk_manifest_path(const DiskConfig &c, const core::Digest &key) {
  return c.dir + "/" + disk::shard_name(key[0]) + "/" +
         record_name(key, k_manifest_suffix);
}

DiskRead disk_read(const DiskConfig &c, const core::Digest &key, DiskEntry *out,
                   std::string *why) {
  return read_record(c, key, k_entry_suffix, why,
                     [&](const uint8_t *p, size_t n, const char **what) {
                       return disk_entry_parse(p, n, key, out, what);
                     });
}

bool disk_write(const DiskConfig &c, const Artifact &a, std::string *why) {
  EncodedEntry e = disk_entry_encode(a.key(), a.target(), a.image(), a.log(),
                                     a.lowered_names());
  if (e.total_bytes > c.max_bytes) {
    // Never written: a reader takes an entry above the bound as corrupt.
    *why = "the entry (" + std::to_string(e.total_bytes) +
           " bytes) is larger than the cache's bound (" +
           std::to_string(c.max_bytes) + " bytes)";
    return false;
  }
  const Span parts[] = {
      {e.header.data(), e.header.size()},
      {reinterpret_cast<const uint8_t *>(a.image().data()), a.image().size()},
      {reinterpret_cast<const uint8_t *>(a.log().data()), a.log().size()},
      {e.names.data(), e.names.size()}};
  if (!write_record(c, a.key(), k_entry_suffix, parts, 4, why)) return false;
  compile_stats().disk_writes.add();
  return true;
}

bool disk_put_manifest(const DiskConfig &c, const core::Digest &key,
                       const std::string &bytes, std::string *why) {
  if (k_disk_manifest_header + bytes.size() > c.max_bytes) {
    *why = "the manifest (" +
           std::to_string(k_disk_manifest_header + bytes.size()) +
           " bytes) is larger than the cache's bound (" +
           std::to_string(c.max_bytes) + " bytes)";
    return false;
  }
  const auto header = disk_manifest_encode(key, bytes);
  const Span parts[] = {
      {header.data(), header.size()},
      {reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()}};
  return write_record(c, key, k_manifest_suffix, parts, 2, why);
}

DiskRead disk_get_manifest(const DiskConfig &c, const core::Digest &key,
                           std::string *out, std::string *why) {
  return read_record(
      c, key, k_manifest_suffix, why,
      [&](const uint8_t *p, size_t n, const char **what) {
        const uint8_t *payload = nullptr;
        size_t bytes = 0;
        DiskRead r = disk_manifest_parse(p, n, key, &payload, &bytes, what);
        if (r == DiskRead::Hit)
          out->assign(reinterpret_cast<const char *>(payload), bytes);
        return r;
      });
}

bool disk_put_file(const DiskConfig &c, const std::string &name,
                   const std::string &bytes, std::string *why) {
  const Span part{reinterpret_cast<const uint8_t *>(bytes.data()),
                  bytes.size()};
  Fd top;
  std::string temp;
  if ((top.fd = open_top(c.dir, why)) < 0) return false;
  if (!write_temp(top.fd, name, &part, 1, &temp, why)) return false;
  if (::renameat(top.fd, temp.c_str(), top.fd, name.c_str()) == 0) return true;
  int saved = errno;
  (void)::unlinkat(top.fd, temp.c_str(), 0); // a scan would remove it anyway
  *why =
      "cannot rename '" + temp + "' to '" + name + "': " + std::strerror(saved);
  return false;
}

bool disk_get_file(const DiskConfig &c, const std::string &name,
                   size_t max_bytes, std::string *out) {
  int fd = ::open((c.dir + "/" + name).c_str(),
                  O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  std::string untrusted;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            owned_and_private(st, &untrusted) &&
            static_cast<uint64_t>(st.st_size) <= max_bytes;
  if (ok) {
    out->resize(static_cast<size_t>(st.st_size));
    ok = read_all(fd, reinterpret_cast<uint8_t *>(out->data()), out->size());
  }
  ::close(fd);
  return ok;
}

} // namespace t4a::compile
