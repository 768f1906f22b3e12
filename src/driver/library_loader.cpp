#include "driver/library_loader.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <cstring>

#include "driver/env.hpp"

namespace t4a::driver {

LoadedLibrary load_first(const std::vector<LibraryCandidate> &candidates) {
  LoadedLibrary out;
  std::string tried;
  for (const auto &c : candidates) {
    // RTLD_LOCAL keeps the library's symbols out of the global namespace so
    // a process may hold another CUDA-using library without clashes.
    void *h = dlopen(c.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      out.handle = h;
      out.path = c.path;
      return out;
    }
    const char *reason = dlerror();
    if (!tried.empty()) tried += "; ";
    tried += "'" + c.path + "' (" + c.why +
             "): " + (reason != nullptr ? reason : "dlopen failed");
  }
  out.failure = "tried " + tried;
  return out;
}

void *find_symbol(void *handle, const char *name) {
  return handle != nullptr ? dlsym(handle, name) : nullptr;
}

std::string env_or_empty(const char *name) {
  // Through driver/env.hpp (secure_getenv: these variables choose which
  // code is loaded, so a set-user-ID or set-group-ID process ignores them).
  // A name outside its list reads as unset.
  env::Var v;
  return env::find(name, &v) ? env::text(v) : std::string();
}

std::string loaded_file(void *handle) {
  struct link_map *map = nullptr;
  if (handle == nullptr || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 ||
      map == nullptr || map->l_name == nullptr || map->l_name[0] == '\0')
    return std::string();
  char resolved[PATH_MAX];
  if (realpath(map->l_name, resolved) == nullptr) return std::string();
  return resolved;
}

std::string file_identity(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "absent";
  auto ns = [](const struct timespec &t) {
    return std::to_string(static_cast<long long>(t.tv_sec)) + "." +
           std::to_string(static_cast<long>(t.tv_nsec));
  };
  return std::to_string(static_cast<unsigned long long>(st.st_dev)) + " " +
         std::to_string(static_cast<unsigned long long>(st.st_ino)) + " " +
         std::to_string(static_cast<long long>(st.st_size)) + " " +
         ns(st.st_mtim) + " " + ns(st.st_ctim);
}

bool mapped_library(const char *prefix, const char *except) {
  struct Query {
    const char *prefix, *except;
    bool found;
  } q{prefix, except, false};
  dl_iterate_phdr(
      [](struct dl_phdr_info *info, size_t, void *data) -> int {
        auto *q = static_cast<Query *>(data);
        const char *name = info->dlpi_name;
        if (name == nullptr) return 0;
        const char *slash = std::strrchr(name, '/');
        const char *base = slash != nullptr ? slash + 1 : name;
        if (std::strncmp(base, q->prefix, std::strlen(q->prefix)) == 0 &&
            (q->except == nullptr ||
             std::strncmp(base, q->except, std::strlen(q->except)) != 0))
          q->found = true;
        return q->found ? 1 : 0;
      },
      &q);
  return q.found;
}

} // namespace t4a::driver
