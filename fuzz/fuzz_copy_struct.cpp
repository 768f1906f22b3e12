// libFuzzer target (issue 8, "Fuzz targets": copy_struct for every input
// struct): the struct_size rule (src/core/struct_io.hpp) for
// every struct the public header passes IN with a struct_size
// (t4a_runtime_options, t4a_compile_request, t4a_launch_desc; the other
// struct_size structs are outputs: only their size is read, by
// check_out_struct). A new input struct of include/t4acuda.h belongs in
// the switch below. Arbitrary struct_size and bytes; the result is checked
// against the rule:
//   size < 4                    -> INVALID_ARGUMENT, `out` untouched;
//   4 <= size < sizeof(T), ending inside a field (not the size of an
//                  older version)  -> INVALID_ARGUMENT, `out` untouched;
//   4 <= size <= sizeof(T), else -> SUCCESS, bytes [4, size) from the
//                                  caller, the rest the defaults;
//   size > sizeof(T), zero tail -> SUCCESS, bytes [4, sizeof T) copied;
//   size > sizeof(T), else      -> VERSION_MISMATCH naming the first
//                                  non-zero byte and its value, `out`
//                                  untouched.
// `out->struct_size` always keeps its own value. The caller's struct is
// exactly `size` bytes (at least 4) on the heap, so any read past what the
// caller promised is an ASan report.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/struct_io.hpp"

#include "fuzz_reader.hpp"

namespace {

using t4a_fuzz::Reader;

[[noreturn]] void broken(const char *what, uint32_t size, size_t ours) {
  std::fprintf(stderr,
               "copy_struct rule broken: %s (struct_size %u, ours %zu)\n", what,
               size, ours);
  std::abort();
}

// Where the fields of each input struct begin (written here from the
// header, apart from the library's own table, so that the two check each
// other): the sizes an older caller can pass.
template <class T> bool field_start(uint32_t size);
#define STARTS(T, ...)                                                         \
  template <> bool field_start<T>(uint32_t size) {                             \
    const size_t at[] = {sizeof(uint32_t), __VA_ARGS__};                       \
    for (size_t a : at)                                                        \
      if (a == size) return true;                                              \
    return false;                                                              \
  }
STARTS(t4a_runtime_options, offsetof(t4a_runtime_options, device_ordinal),
       offsetof(t4a_runtime_options, pool_release_threshold),
       offsetof(t4a_runtime_options, staging_bytes),
       offsetof(t4a_runtime_options, staging_chunk_bytes),
       offsetof(t4a_runtime_options, staging_threads),
       offsetof(t4a_runtime_options, reserved0),
       offsetof(t4a_runtime_options, module_cache_entries),
       offsetof(t4a_runtime_options, reserved1),
       offsetof(t4a_runtime_options, module_cache_bytes),
       offsetof(t4a_runtime_options, peer_access),
       offsetof(t4a_runtime_options, reserved2),
       offsetof(t4a_runtime_options, stream_priority),
       offsetof(t4a_runtime_options, reserved3))
STARTS(t4a_compile_request, offsetof(t4a_compile_request, output),
       offsetof(t4a_compile_request, source),
       offsetof(t4a_compile_request, program_name),
       offsetof(t4a_compile_request, header_names),
       offsetof(t4a_compile_request, header_sources),
       offsetof(t4a_compile_request, header_count),
       offsetof(t4a_compile_request, option_count),
       offsetof(t4a_compile_request, options),
       offsetof(t4a_compile_request, name_expressions),
       offsetof(t4a_compile_request, name_expression_count),
       offsetof(t4a_compile_request, cc_major),
       offsetof(t4a_compile_request, cc_minor),
       offsetof(t4a_compile_request, flags),
       offsetof(t4a_compile_request, runtime),
       offsetof(t4a_compile_request, disk_cache_max_bytes),
       offsetof(t4a_compile_request, cache_dir),
       offsetof(t4a_compile_request, toolkit_include))
STARTS(t4a_launch_desc, offsetof(t4a_launch_desc, flags),
       offsetof(t4a_launch_desc, kernel), offsetof(t4a_launch_desc, grid),
       offsetof(t4a_launch_desc, block),
       offsetof(t4a_launch_desc, dynamic_shared_bytes),
       offsetof(t4a_launch_desc, arg_count), offsetof(t4a_launch_desc, args))
#undef STARTS
// The last field listed above ends each struct: a field appended to the
// header without a line here fails to compile instead of making the
// fuzzer report the library wrong.
static_assert(offsetof(t4a_runtime_options, reserved3) + sizeof(uint32_t) ==
              sizeof(t4a_runtime_options));
static_assert(offsetof(t4a_compile_request, toolkit_include) + sizeof(void *) ==
              sizeof(t4a_compile_request));
static_assert(offsetof(t4a_launch_desc, args) + sizeof(void *) ==
              sizeof(t4a_launch_desc));

template <class T> void check_struct(Reader &r) {
  constexpr size_t ours = sizeof(T);
  // The caller's size: mostly around ours (older, same, newer with a tail
  // up to 64 bytes), sometimes anything below 4.
  uint8_t mode = r.get<uint8_t>();
  uint32_t size = 0;
  switch (mode % 4) {
  case 0: size = r.get<uint8_t>() % 4; break;               // too small
  case 1: size = 4 + r.get<uint16_t>() % (ours - 3); break; // 4 .. ours
  case 2: size = static_cast<uint32_t>(ours); break;        // the same
  default: size = static_cast<uint32_t>(ours + 1 + r.get<uint8_t>() % 64);
  }
  size_t alloc = size < 4 ? 4 : size;
  // The caller's bytes: from the input; a newer caller's tail is zero
  // unless the input says otherwise, so both outcomes are reached.
  unsigned char *in = static_cast<unsigned char *>(std::malloc(alloc));
  if (in == nullptr) return;
  for (size_t i = 0; i < alloc; ++i) in[i] = r.get<uint8_t>();
  if (size > ours && (r.get<uint8_t>() & 1)) {
    std::memset(in + ours, 0, size - ours);
    if (r.get<uint8_t>() & 1) { // one non-zero byte somewhere in the tail
      size_t at = ours + r.get<uint16_t>() % (size - ours);
      in[at] = static_cast<unsigned char>(1 + r.get<uint8_t>() % 255);
    }
  }
  std::memcpy(in, &size, sizeof size);

  // The defaults: a recognisable pattern; struct_size is ours.
  alignas(T) unsigned char defaults[ours];
  std::memset(defaults, 0xA5, ours);
  uint32_t own = static_cast<uint32_t>(ours);
  std::memcpy(defaults, &own, sizeof own);
  alignas(T) unsigned char out[ours];
  std::memcpy(out, defaults, ours);

  // Older callers hand a smaller object: T's layout is read only up to
  // `size` (that is the rule under test), as the C entry points do.
  t4a::core::StructFault f = t4a::core::copy_struct(
      reinterpret_cast<const T *>(in), reinterpret_cast<T *>(out));

  if (f.size != size) broken("fault.size is not the caller's size", size, ours);
  if (size < 4) {
    if (f.status != T4A_ERROR_INVALID_ARGUMENT)
      broken("size < 4 not INVALID_ARGUMENT", size, ours);
    if (std::memcmp(out, defaults, ours) != 0)
      broken("out written on failure", size, ours);
  } else if (size < ours && !field_start<T>(size)) {
    if (f.status != T4A_ERROR_INVALID_ARGUMENT)
      broken("size inside a field not INVALID_ARGUMENT", size, ours);
    if (std::memcmp(out, defaults, ours) != 0)
      broken("out written on failure", size, ours);
  } else if (size <= ours) {
    if (f.status != T4A_SUCCESS) broken("older size refused", size, ours);
    if (std::memcmp(out, defaults, 4) != 0)
      broken("out struct_size overwritten", size, ours);
    if (std::memcmp(out + 4, in + 4, size - 4) != 0)
      broken("known fields not copied", size, ours);
    if (std::memcmp(out + size, defaults + size, ours - size) != 0)
      broken("missing fields lost their defaults", size, ours);
  } else {
    size_t first = 0;
    for (size_t i = ours; i < size && first == 0; ++i)
      if (in[i] != 0) first = i;
    if (first == 0) {
      if (f.status != T4A_SUCCESS)
        broken("newer size with a zero tail refused", size, ours);
      if (std::memcmp(out, defaults, 4) != 0)
        broken("out struct_size overwritten", size, ours);
      if (std::memcmp(out + 4, in + 4, ours - 4) != 0)
        broken("fields not copied", size, ours);
    } else {
      if (f.status != T4A_ERROR_VERSION_MISMATCH)
        broken("non-zero tail not VERSION_MISMATCH", size, ours);
      if (f.byte != first || f.value != in[first])
        broken("VERSION_MISMATCH names the wrong byte", size, ours);
      if (std::memcmp(out, defaults, ours) != 0)
        broken("out written on failure", size, ours);
    }
  }
  std::free(in);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader r{data, size};
  switch (r.get<uint8_t>() % 3) {
  case 0: check_struct<t4a_runtime_options>(r); break;
  case 1: check_struct<t4a_compile_request>(r); break;
  default: check_struct<t4a_launch_desc>(r); break;
  }
  return 0;
}
