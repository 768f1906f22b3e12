// struct_size rules for every struct crossing the C boundary (R-ABI-5).
//   input:  size < 4 -> INVALID_ARGUMENT; size <= ours -> the fields it
//           covers are taken, the rest keep their defaults; size > ours ->
//           accepted only when the unknown tail is all zero bytes, else
//           VERSION_MISMATCH.
//   output: filled up to min(caller's size, ours); struct_size untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/error.hpp"

namespace t4a::core {

// `out` holds the defaults on entry; `in` may be NULL (defaults kept).
template <class T>
t4a_status read_struct(const T *in, T *out, const char *arg) {
  if (in == nullptr) return T4A_SUCCESS;
  uint32_t size = in->struct_size;
  if (size < sizeof(uint32_t))
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "%s->struct_size is %u; it must be at least 4 (set it with "
                "the struct's _INIT macro)",
                arg, size);
  if (size > sizeof(T)) {
    const unsigned char *tail =
        reinterpret_cast<const unsigned char *>(in) + sizeof(T);
    for (size_t k = 0; k < size - sizeof(T); ++k)
      if (tail[k] != 0)
        return fail(T4A_ERROR_VERSION_MISMATCH,
                    "%s->struct_size is %u, larger than this library's %zu, "
                    "and byte %zu of the unknown tail is non-zero (0x%02x): "
                    "the caller uses fields this library version does not "
                    "have",
                    arg, size, sizeof(T), sizeof(T) + k, tail[k]);
    size = sizeof(T);
  }
  uint32_t keep = out->struct_size;
  std::memcpy(out, in, size);
  out->struct_size = keep;
  return T4A_SUCCESS;
}

// Checks an output struct's pointer and size before any work is done.
template <class T> t4a_status check_out_struct(const T *out, const char *arg) {
  if (out == nullptr)
    return fail(T4A_ERROR_INVALID_ARGUMENT, "%s is NULL", arg);
  if (out->struct_size < sizeof(uint32_t))
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "%s->struct_size is %u; it must be at least 4 (set it with "
                "the struct's _INIT macro)",
                arg, out->struct_size);
  return T4A_SUCCESS;
}

// Copies `full` into the caller's struct up to min(sizes), after the size.
template <class T> void write_struct(T *out, const T &full) {
  size_t n = out->struct_size < sizeof(T) ? out->struct_size : sizeof(T);
  if (n > sizeof(uint32_t))
    std::memcpy(reinterpret_cast<unsigned char *>(out) + sizeof(uint32_t),
                reinterpret_cast<const unsigned char *>(&full) +
                    sizeof(uint32_t),
                n - sizeof(uint32_t));
}

} // namespace t4a::core
