// The examples' exit convention (0 success, 1 failure, 77 skipped), shared
// by the raw-seam examples.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace example {

// 77 (SKIPPED) for a missing GPU or library, unless T4A_REQUIRE_GPU asks
// for at least `needed` devices (any positive value asks for one): then 1.
inline int skip_or_fail(const std::string &why, int needed = 1) {
  const char *req = std::getenv("T4A_REQUIRE_GPU");
  int want = req != nullptr && *req != '\0' ? std::atoi(req) : 0;
  if (want >= needed || (want > 0 && needed == 1)) {
    std::fprintf(stderr, "FAILED: %s (T4A_REQUIRE_GPU=%s)\n", why.c_str(), req);
    return 1;
  }
  std::printf("SKIPPED: %s\n", why.c_str());
  return 77;
}

} // namespace example
