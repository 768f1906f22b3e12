// NCCL loaded with dlopen for the raw-seam examples (allreduce_nccl.cpp,
// allreduce_nccl_ranks.cpp): the toolkit's nccl.h gives the types and
// prototypes; neither program nor t4acuda links libnccl.
#pragma once

#include <nccl.h> // types and prototypes only

#include "example_exit.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace nccl_dl {

using example::skip_or_fail;

struct Nccl {
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) init_rank = nullptr;
  decltype(&ncclCommInitAll) init_all = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;

  // Loads libnccl.so.2 and resolves every entry point above. On failure,
  // `why` says what is missing.
  bool load(std::string &why) {
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char *e = dlerror();
      why = e != nullptr ? e : "dlopen(libnccl.so.2) failed";
      return false;
    }
    return resolve(lib, "ncclGetErrorString", error_string, why) &&
           resolve(lib, "ncclGetUniqueId", get_unique_id, why) &&
           resolve(lib, "ncclCommInitRank", init_rank, why) &&
           resolve(lib, "ncclCommInitAll", init_all, why) &&
           resolve(lib, "ncclCommDestroy", destroy, why) &&
           resolve(lib, "ncclAllReduce", all_reduce, why) &&
           resolve(lib, "ncclGroupStart", group_start, why) &&
           resolve(lib, "ncclGroupEnd", group_end, why);
  }

  // True on ncclSuccess; else prints "FAILED: <what>: <NCCL's message>".
  bool ok(ncclResult_t r, const char *what) const {
    if (r == ncclSuccess) return true;
    std::fprintf(stderr, "FAILED: %s: %s\n", what, error_string(r));
    return false;
  }

private:
  template <class F>
  static bool resolve(void *lib, const char *name, F &out, std::string &why) {
    out = reinterpret_cast<F>(dlsym(lib, name));
    if (out == nullptr) why = std::string("libnccl.so.2 lacks ") + name;
    return out != nullptr;
  }
};

} // namespace nccl_dl
