#include "driver/library_loader.hpp"

#include <cstdlib>
#include <dlfcn.h>

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
  const char *v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

} // namespace t4a::driver
