#include "compile/disk_cache.hpp"

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <set>

#include "compile/disk_shards.hpp"
#include "core/fork.hpp"
#include "core/log.hpp"

namespace t4a::compile {

namespace {

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

} // namespace

DiskConfig disk_config(const Request &r) {
  // secure_getenv: the directory chooses code to load (its entries), so a
  // set-user-ID or set-group-ID process ignores these variables.
  DiskConfig c;
  if ((r.flags & T4A_COMPILE_NO_DISK_CACHE) != 0) return c;
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
  if (std::string why; !disk::dir_trusted(c.dir, &why)) {
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

void disk_cache_at_fork(core::ForkPhase phase) {
  if (phase == core::ForkPhase::Prepare)
    g_untrusted_mu.lock();
  else // the child's only thread is the one that locked it
    g_untrusted_mu.unlock();
}

} // namespace t4a::compile
