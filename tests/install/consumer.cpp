// Installed-tree check (scripts/test release): a C++17 program built
// against the installed t4acuda.h and t4acuda.hpp with -Wold-style-cast
// -Werror (issue 8: T4A_NULL_ID and the size macros were C casts), using
// the facade.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include "t4acuda.hpp"

#include <cstdio>

int main() {
  t4a_runtime_options options = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime none{T4A_NULL_ID};
  // Every _INIT is struct_size and zero bytes (zero means the default).
  if (options.struct_size != sizeof options || options.staging_bytes != 0 ||
      options.pool_release_threshold != 0 || none.id != T4A_NULL_ID)
    return 1;
  int32_t count = -1;
  t4a_status s = t4a::device_count(count, std::nothrow);
  if (s != T4A_SUCCESS && s != T4A_ERROR_NO_DRIVER) return 1;
  t4a::Runtime runtime; // the null runtime: nothing to destroy
  if (runtime) return 1;
  std::printf("consumer_cxx: t4acuda %s, device_count: %s\n",
              t4a_version_string(), t4a_status_name(s));
  return 0;
}
