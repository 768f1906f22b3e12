// The verdict of a pure validation function (runtime options, capture
// options, grid-barrier declarations): SUCCESS, or a status and the
// message that names the field and the values involved. The function
// records nothing; its caller records the rejection with
// fail(c.status, "%s", c.message). Header-only, so that the validators
// build alone into their fuzz targets (fuzz/).
#pragma once

#include <cstdarg>
#include <cstdio>

#include "t4acuda.h"

namespace t4a::core {

struct Check {
  t4a_status status = T4A_SUCCESS;
  // Set when status is not SUCCESS (truncated beyond its size; the fields
  // named come first). Room for two long lowered names.
  char message[1024];

  Check() { message[0] = '\0'; }

  bool ok() const { return status == T4A_SUCCESS; }

  // Rejects with `s` (not SUCCESS) and the formatted message. The first
  // rejection stands: a second one changes nothing.
  void reject(t4a_status s, const char *fmt, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 3, 4)))
#endif
  {
    if (status != T4A_SUCCESS) return;
    status = s;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
  }
};

} // namespace t4a::core
