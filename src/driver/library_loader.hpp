// Loading a shared library from an ordered list of candidates with dlopen,
// remembering every name tried and the loader's reason for each failure.
#pragma once

#include <string>
#include <vector>

namespace t4a::driver {

struct LibraryCandidate {
  std::string path; // what is passed to dlopen
  std::string why;  // why it is on the list (for messages and docs)
};

struct LoadedLibrary {
  // The dlopen handle; never closed
  // (docs/threading.md#process-exit-and-unloading).
  void *handle = nullptr;
  std::string path;    // the candidate that loaded
  std::string failure; // when handle is null: every name and reason
};

// Tries the candidates in order; the first that dlopens wins.
LoadedLibrary load_first(const std::vector<LibraryCandidate> &candidates);

// Resolves a symbol with dlsym; nullptr when absent.
void *find_symbol(void *handle, const char *name);

// Reads an environment variable of driver/env.hpp's list by its name
// (secure_getenv: unset in a set-user-ID or set-group-ID process); empty
// when unset or when the name is not in that list.
std::string env_or_empty(const char *name);

// The file a dlopen handle was loaded from, with symbolic links resolved;
// empty when unknown.
std::string loaded_file(void *handle);

// A file's identity as text ("dev ino size mtime ctime", nanoseconds), or
// "absent": equal texts mean the same, unchanged file (ctime cannot be set
// by a user, so a replaced or rewritten file never matches).
std::string file_identity(const std::string &path);

// True when an object whose file name starts with `prefix` (and not with
// `except`, unless that is null) is mapped into the process. Reads the loader's
// list only: unlike dlopen with RTLD_NOLOAD it touches no file.
bool mapped_library(const char *prefix, const char *except);

} // namespace t4a::driver
