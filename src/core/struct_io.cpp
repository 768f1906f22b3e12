#include "core/struct_io.hpp"

namespace t4a::core {

t4a_status fail_struct(const StructFault &f, const char *arg, size_t ours) {
  if (f.status == T4A_ERROR_VERSION_MISMATCH)
    return fail(T4A_ERROR_VERSION_MISMATCH,
                "%s->struct_size is %u, larger than this library's %zu, and "
                "byte %zu of the unknown tail is non-zero (0x%02x): the "
                "caller uses fields this library version does not have",
                arg, f.size, ours, f.byte, f.value);
  if (f.size < sizeof(uint32_t))
    return fail(T4A_ERROR_INVALID_ARGUMENT,
                "%s->struct_size is %u; it must be at least 4 (set it with "
                "the struct's _INIT macro)",
                arg, f.size);
  return fail(T4A_ERROR_INVALID_ARGUMENT,
              "%s->struct_size is %u, which ends inside a field of this "
              "library's %zu-byte struct; a smaller size must be the size of "
              "an older version of the struct (set it with the struct's _INIT "
              "macro)",
              arg, f.size, ours);
}

} // namespace t4a::core
