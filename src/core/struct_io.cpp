#include "core/struct_io.hpp"

namespace t4a::core {

t4a_status fail_struct(const StructFault &f, const char *arg, size_t ours) {
  if (f.status == T4A_ERROR_VERSION_MISMATCH)
    return fail(T4A_ERROR_VERSION_MISMATCH,
                "%s->struct_size is %u, larger than this library's %zu, and "
                "byte %zu of the unknown tail is non-zero (0x%02x): the "
                "caller uses fields this library version does not have",
                arg, f.size, ours, f.byte, f.value);
  return fail(T4A_ERROR_INVALID_ARGUMENT,
              "%s->struct_size is %u; it must be at least 4 (set it with the "
              "struct's _INIT macro)",
              arg, f.size);
}

} // namespace t4a::core
