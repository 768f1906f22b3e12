// Query-then-copy of bytes to a caller's buffer, the convention of every
// entry point that returns text or an image (t4a_artifact_log,
// t4a_toolkit_headers, t4a_driver_lacks, ...).
#pragma once

#include <cstring>
#include <string>

#include "core/error.hpp"
#include "t4acuda.h"

namespace t4a::capi {

// `terminate` adds a NUL (text) and counts it in *needed.
inline t4a_status copy_out(const std::string &s, void *buf, size_t capacity,
                           size_t *needed, bool terminate) {
  if (buf == nullptr && capacity != 0)
    return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                      "buf is NULL but capacity is %zu", capacity);
  if (needed != nullptr) *needed = s.size() + (terminate ? 1 : 0);
  if (capacity == 0) return T4A_SUCCESS;
  char *out = static_cast<char *>(buf);
  size_t room = terminate ? capacity - 1 : capacity;
  size_t n = s.size() < room ? s.size() : room;
  std::memcpy(out, s.data(), n);
  if (terminate) out[n] = '\0';
  return T4A_SUCCESS;
}

} // namespace t4a::capi
