#include "launch/barrier_validation.hpp"

#include <cstring>

namespace t4a::launch {

namespace {
using ull = unsigned long long;
} // namespace

void check_barrier_desc(const t4a_barrier_desc &d, BarrierDecl *out,
                        core::Check *c) {
  if (d.global_name == nullptr)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT, "desc->global_name is NULL");
  if (d.global_name[0] == '\0')
    return c->reject(T4A_ERROR_INVALID_ARGUMENT, "desc->global_name is empty");
  uint32_t width = d.width == 0 ? 4 : d.width;
  if (width != 4 && width != 8)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "desc->width is %u; a barrier counter is 4 or 8 bytes "
                     "(0 means 4)",
                     d.width);
  if ((d.flags &
       ~(T4A_BARRIER_EXPECT_PER_BLOCK | T4A_BARRIER_EXPECT_AT_MOST)) != 0)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "desc->flags is 0x%x; the known flags are "
                     "T4A_BARRIER_EXPECT_PER_BLOCK (0x1) and "
                     "T4A_BARRIER_EXPECT_AT_MOST (0x2)",
                     d.flags);
  if (d.reserved0 != 0)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "desc->reserved0 is %u; it must be 0", d.reserved0);
  uint64_t mask = width_mask(width);
  if ((d.reset_value & ~mask) != 0)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "desc->reset_value is %llu; it does not fit the "
                     "counter's %u bytes",
                     static_cast<ull>(d.reset_value), width);
  if ((d.expected_value & ~mask) != 0)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "desc->expected_value is %llu; it does not fit the "
                     "counter's %u bytes",
                     static_cast<ull>(d.expected_value), width);
  out->width = width;
  out->flags = d.flags;
  out->reset = d.reset_value;
  out->expected = d.expected_value;
}

void check_barrier_room(const char *name, const char *const *declared,
                        uint32_t n, uint32_t max, const char *kernel,
                        core::Check *c) {
  for (uint32_t i = 0; i < n; ++i)
    if (std::strcmp(declared[i], name) == 0)
      return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                       "desc->global_name '%s' is already barrier %u of "
                       "kernel '%s'",
                       name, i, kernel);
  if (n >= max)
    c->reject(T4A_ERROR_INVALID_ARGUMENT,
              "kernel '%s' has %u barriers already, the most one kernel may "
              "declare",
              kernel, n);
}

void check_barrier_global(const char *name, uint64_t bytes, uint64_t ptr,
                          uint32_t width, core::Check *c) {
  if (bytes != width || width == 0)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "the global '%s' is %llu bytes; desc->width is %u (a "
                     "barrier counter is one 4- or 8-byte integer)",
                     name, static_cast<ull>(bytes), width);
  if (ptr % width != 0)
    c->reject(T4A_ERROR_INVALID_ARGUMENT,
              "the global '%s' at 0x%llx is not aligned to its %u bytes", name,
              static_cast<ull>(ptr), width);
}

} // namespace t4a::launch
