#include "compile/disk_cache.hpp"

#include <mutex>
#include <set>
#include <string>

#include "compile/disk_shards.hpp"
#include "core/fork.hpp"
#include "core/log.hpp"
#include "driver/env.hpp"

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
  // driver/env.hpp (secure_getenv: the directory chooses code to load, its
  // entries, so a set-user-ID or set-group-ID process ignores these
  // variables).
  DiskConfig c;
  if ((r.flags & T4A_COMPILE_NO_DISK_CACHE) != 0) return c;
  if (const char *dir = env::raw(env::Var::cache_dir)) {
    c.dir = dir;
  } else if (r.has_cache_dir) {
    c.dir = r.cache_dir;
  } else {
    const char *xdg = env::raw(env::Var::xdg_cache_home);
    const char *home = env::raw(env::Var::home);
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
  // Read on every compile that uses the disk (so is the directory); a
  // refused value is logged each time.
  env::Setting<uint64_t> bound = env::byte_count(
      env::Var::cache_max_bytes, c.max_bytes,
      "the disk cache's bound stays " + std::to_string(c.max_bytes) +
          " bytes (t4a_compile_request::disk_cache_max_bytes, else "
          "T4A_DEFAULT_DISK_CACHE_BYTES)");
  if (!bound.error.empty()) core::log(T4A_LOG_WARN, bound.error.c_str());
  c.max_bytes = bound.value;
  return c;
}

void disk_cache_at_fork(core::ForkPhase phase) {
  if (phase == core::ForkPhase::Prepare)
    g_untrusted_mu.lock();
  else // the child's only thread is the one that locked it
    g_untrusted_mu.unlock();
}

} // namespace t4a::compile
