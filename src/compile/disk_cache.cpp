#include "compile/disk_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>
#include <set>

#include "compile/compile_stats.hpp"
#include "core/fork.hpp"
#include "core/log.hpp"

namespace t4a::compile {

namespace {

constexpr char k_suffix[] = ".t4ac";
// A temporary file older than this was left by a process that died while
// writing it; eviction removes it.
constexpr time_t k_stale_temp_seconds = 600;

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

// Whether what `st` describes may be trusted as the cache's own:
// owned by this process's effective user and writable by nobody else. A
// directory or entry another user could write to may hold content planted
// to be loaded as a kernel; its checksum proves nothing.
bool owned_and_private(const struct stat &st, std::string *why) {
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

// The cache directory is trusted when it does not exist yet (it will be
// made 0700 by this user) or is a directory owned_and_private.
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

// Guards report_untrusted's set; a leaf lock (nothing is taken or logged
// while it is held), taken by the fork handlers (disk_cache_at_fork).
std::mutex g_untrusted_mu;

// An untrusted directory is reported once per directory per process.
void report_untrusted(const std::string &dir, const std::string &why) {
  static std::set<std::string> *reported = new std::set<std::string>();
  {
    std::lock_guard<std::mutex> lock(g_untrusted_mu);
    if (!reported->insert(dir).second) return;
  }
  // Outside the lock; inside a compile the log is deferred anyway.
  core::logf(T4A_LOG_WARN,
             "compile cache: the directory '%s' is not trusted (%s); the "
             "disk cache is off for it (make it owned by you and not "
             "writable by group or others, e.g. chmod 700)",
             dir.c_str(), why.c_str());
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

// Writes dir/name atomically, creating dir first if need be: a temporary
// file ".<name>.<pid>.<serial>.tmp" in the same directory (removed by
// eviction if its writer died), then rename. Readers see the old file or
// the complete new one.
bool write_atomically(const std::string &dir, const std::string &name,
                      const Span *parts, size_t count, std::string *why) {
  if (!make_dirs(dir)) {
    *why = "cannot create the cache directory '" + dir +
           "': " + std::strerror(errno);
    return false;
  }
  // Again now that it exists (another user may have made it meanwhile).
  if (std::string untrusted; !dir_trusted(dir, &untrusted)) {
    *why = "the cache directory '" + dir + "' is not trusted: " + untrusted;
    return false;
  }
  static std::atomic<uint64_t> serial{0};
  std::string final_path = dir + "/" + name;
  std::string temp = dir + "/." + name + "." + std::to_string(::getpid()) +
                     "." + std::to_string(serial.fetch_add(1)) + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    *why = "cannot create '" + temp + "': " + std::strerror(errno);
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
  if (!ok) {
    (void)::unlink(temp.c_str());
    *why = "cannot write '" + temp + "': " + std::strerror(saved);
    return false;
  }
  if (::rename(temp.c_str(), final_path.c_str()) != 0) {
    saved = errno;
    (void)::unlink(temp.c_str());
    *why = "cannot rename '" + temp + "' to '" + final_path +
           "': " + std::strerror(saved);
    return false;
  }
  return true;
}

bool ends_with(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

void evict(const DiskConfig &c, const std::string &keep) {
  DIR *d = ::opendir(c.dir.c_str());
  if (d == nullptr) return;
  struct File {
    struct timespec mtime;
    uint64_t bytes;
    std::string path;
  };
  std::vector<File> files;
  uint64_t total = 0;
  time_t now = std::time(nullptr);
  while (struct dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    std::string path = c.dir + "/" + name;
    struct stat st; // lstat: a link is never followed, nor counted
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (name.size() > 1 && name[0] == '.' && ends_with(name, ".tmp")) {
      if (now - st.st_mtime > k_stale_temp_seconds)
        (void)::unlink(path.c_str());
      continue;
    }
    if (!ends_with(name, k_suffix)) continue;
    total += static_cast<uint64_t>(st.st_size);
    files.push_back({st.st_mtim, static_cast<uint64_t>(st.st_size), path});
  }
  ::closedir(d);
  if (total <= c.max_bytes) return;
  std::sort(files.begin(), files.end(), [](const File &a, const File &b) {
    if (a.mtime.tv_sec != b.mtime.tv_sec)
      return a.mtime.tv_sec < b.mtime.tv_sec;
    if (a.mtime.tv_nsec != b.mtime.tv_nsec)
      return a.mtime.tv_nsec < b.mtime.tv_nsec;
    return a.path < b.path;
  });
  uint64_t removed = 0, removed_bytes = 0;
  for (const File &f : files) {
    if (total <= c.max_bytes) break;
    if (f.path == keep) continue;
    if (::unlink(f.path.c_str()) == 0) {
      compile_stats().disk_evictions.add();
      ++removed;
      removed_bytes += f.bytes;
    }
    total -= f.bytes; // gone, by us or by another process
  }
  if (removed != 0)
    core::logf(T4A_LOG_INFO,
               "compile cache: %llu least recently used entries (%llu bytes) "
               "removed from '%s' to stay within %llu bytes",
               static_cast<unsigned long long>(removed),
               static_cast<unsigned long long>(removed_bytes), c.dir.c_str(),
               static_cast<unsigned long long>(c.max_bytes));
}

} // namespace

DiskConfig disk_config(const Request &r) {
  // secure_getenv: the directory chooses code to load (its entries), so a
  // set-user-ID or set-group-ID process ignores these variables.
  DiskConfig c;
  if ((r.flags & T4A_COMPILE_NO_DISK_CACHE) != 0) return c;
  // Headers read from the file system (include paths, or a quoted include
  // resolved next to the program name) are not in the identity key: a
  // changed header must not give a new process an old kernel.
  if (request_reads_files(r)) return c;
  if (const char *env = secure_getenv("T4A_CACHE_DIR")) {
    c.dir = env;
  } else if (r.has_cache_dir) {
    c.dir = r.cache_dir;
  } else {
    const char *xdg = secure_getenv("XDG_CACHE_HOME");
    const char *home = secure_getenv("HOME");
    if (xdg != nullptr && xdg[0] == '/')
      c.dir = std::string(xdg) + "/t4acuda";
    else if (home != nullptr && home[0] != '\0')
      c.dir = std::string(home) + "/.cache/t4acuda";
  }
  while (c.dir.size() > 1 && c.dir.back() == '/') c.dir.pop_back();
  if (c.dir.empty()) return c;
  if (std::string why; !dir_trusted(c.dir, &why)) {
    report_untrusted(c.dir, why);
    return c; // disabled for this directory
  }
  c.enabled = true;
  c.max_bytes = r.disk_cache_max_bytes != 0 ? r.disk_cache_max_bytes
                                            : T4A_DEFAULT_DISK_CACHE_BYTES;
  if (const char *env = std::getenv("T4A_CACHE_MAX_BYTES")) {
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(env, &end, 10);
    if (env[0] >= '0' && env[0] <= '9' && end != nullptr && *end == '\0' &&
        errno == 0)
      c.max_bytes = v;
    else
      core::logf(T4A_LOG_WARN,
                 "T4A_CACHE_MAX_BYTES='%s' is not a decimal byte count; "
                 "ignored",
                 env);
  }
  return c;
}

std::string disk_entry_path(const DiskConfig &c, const core::Digest &key) {
  return c.dir + "/" + core::to_hex(key) + k_suffix;
}

DiskRead disk_read(const DiskConfig &c, const core::Digest &key, DiskEntry *out,
                   std::string *why) {
  std::string path = disk_entry_path(c, key);
  auto corrupt = [&](const std::string &what) {
    *why = path + ": " + what;
    return DiskRead::Corrupt;
  };
  // O_NOFOLLOW: a link is not the cache's entry. O_NONBLOCK: a FIFO or
  // device at the path does not block the open; nothing but a regular file
  // is read.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return DiskRead::Miss;
    return corrupt(std::string("cannot be opened: ") + std::strerror(errno));
  }
  struct stat st;
  std::vector<uint8_t> data;
  std::string problem;
  if (::fstat(fd, &st) != 0)
    problem = std::string("fstat failed: ") + std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    problem = "not a regular file";
  else if (std::string untrusted; !owned_and_private(st, &untrusted))
    problem = "not trusted: " + untrusted;
  else if (static_cast<uint64_t>(st.st_size) > c.max_bytes)
    problem = "larger (" + std::to_string(st.st_size) +
              " bytes) than the cache's bound (" + std::to_string(c.max_bytes) +
              " bytes)";
  if (problem.empty()) {
    try {
      data.resize(static_cast<size_t>(st.st_size));
      if (!read_all(fd, data.data(), data.size()))
        problem = "cannot be read in full";
    } catch (const std::bad_alloc &) {
      problem = "too large to read into host memory";
    }
  }
  ::close(fd);
  if (!problem.empty()) return corrupt(problem);
  const char *what = nullptr;
  DiskRead r = disk_entry_parse(data.data(), data.size(), key, out, &what);
  if (r != DiskRead::Hit) return corrupt(what);
  // A hit makes the entry the most recently used one.
  (void)::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return DiskRead::Hit;
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
  std::string final_path = disk_entry_path(c, a.key());
  const Span parts[] = {
      {e.header.data(), e.header.size()},
      {reinterpret_cast<const uint8_t *>(a.image().data()), a.image().size()},
      {reinterpret_cast<const uint8_t *>(a.log().data()), a.log().size()},
      {e.names.data(), e.names.size()}};
  if (!write_atomically(c.dir, core::to_hex(a.key()) + k_suffix, parts, 4, why))
    return false;
  compile_stats().disk_writes.add();
  evict(c, final_path);
  return true;
}

bool disk_put_file(const DiskConfig &c, const std::string &name,
                   const std::string &bytes, std::string *why) {
  const Span part{reinterpret_cast<const uint8_t *>(bytes.data()),
                  bytes.size()};
  return write_atomically(c.dir, name, &part, 1, why);
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

void disk_cache_at_fork(core::ForkPhase phase) {
  if (phase == core::ForkPhase::Prepare)
    g_untrusted_mu.lock();
  else // the child's only thread is the one that locked it
    g_untrusted_mu.unlock();
}

} // namespace t4a::compile
