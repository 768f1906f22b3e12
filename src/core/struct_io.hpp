// struct_size rules for every struct crossing the C boundary.
//   input:  size < 4 -> INVALID_ARGUMENT; size < ours -> the size must end
//           where a field of ours begins (an older version of a struct
//           never ends inside a field: a size that would take half of a
//           pointer is INVALID_ARGUMENT), the fields it covers are taken,
//           the rest keep their defaults; size > ours ->
//           accepted only when the unknown tail is all zero bytes, else
//           VERSION_MISMATCH.
//   output: filled up to min(caller's size, ours); struct_size untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/error.hpp"
#include "t4acuda.h"
#include "t4acuda_dlpack.h"

namespace t4a::core {

// Where each field of an input struct begins, after struct_size: the sizes
// smaller than ours that a caller built against an older header can pass.
// Every versioned struct has an entry, generated from abi/layouts.json
// (abi/gen-bindings) with static_asserts that hold the header to that file;
// a struct without one does not compile with copy_struct/read_struct.
template <class T> struct FieldStarts;
#include "core/field_starts.inc"

// Whether `size` (4 <= size < sizeof(T)) ends where a field of T begins.
template <class T> constexpr bool ends_at_field(uint32_t size) {
  if (size == sizeof(uint32_t)) return true; // struct_size alone
  for (size_t start : FieldStarts<T>::at)
    if (start == size) return true;
  return false;
}

// What is wrong with an input struct (status SUCCESS: nothing), found
// without recording anything, so that a caller can report other arguments
// first (t4a_launch reports its runtime handle before its descriptor).
struct StructFault {
  t4a_status status = T4A_SUCCESS;
  uint32_t size = 0;       // the caller's struct_size
  size_t byte = 0;         // VERSION_MISMATCH: the first non-zero byte of the
  unsigned char value = 0; // unknown tail, and its value
};

// Records `f` (not SUCCESS) for the input struct `arg` of `ours` bytes.
T4A_COLD t4a_status fail_struct(const StructFault &f, const char *arg,
                                size_t ours);

// read_struct without recording: `in` is not NULL; `out` (defaults on
// entry) is filled only when the result is SUCCESS.
template <class T> StructFault copy_struct(const T *in, T *out) {
  StructFault f;
  uint32_t size = in->struct_size;
  f.size = size;
  if (size < sizeof(uint32_t) ||
      (size < sizeof(T) && !ends_at_field<T>(size))) {
    f.status = T4A_ERROR_INVALID_ARGUMENT;
    return f;
  }
  if (size > sizeof(T)) {
    const unsigned char *tail =
        reinterpret_cast<const unsigned char *>(in) + sizeof(T);
    for (size_t k = 0; k < size - sizeof(T); ++k)
      if (tail[k] != 0) {
        f.status = T4A_ERROR_VERSION_MISMATCH;
        f.byte = sizeof(T) + k;
        f.value = tail[k];
        return f;
      }
    size = sizeof(T);
  }
  uint32_t keep = out->struct_size;
  if (size == sizeof(T)) // the usual case, as a fixed-size copy
    std::memcpy(out, in, sizeof(T));
  else
    std::memcpy(out, in, size);
  out->struct_size = keep;
  return f;
}

// `out` holds the defaults on entry; `in` may be NULL (defaults kept).
template <class T>
t4a_status read_struct(const T *in, T *out, const char *arg) {
  if (in == nullptr) return T4A_SUCCESS;
  StructFault f = copy_struct(in, out);
  if (f.status != T4A_SUCCESS) [[unlikely]]
    return fail_struct(f, arg, sizeof(T));
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
