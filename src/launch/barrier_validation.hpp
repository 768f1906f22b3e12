// Grid-barrier declarations (t4a_kernel_declare_barrier, experimental
// section of t4acuda.h) checked by pure functions: what the caller gave,
// the kernel's declared barriers and the global the module has in; SUCCESS
// or the rejection naming the field and the values out. No driver, no
// admission, nothing recorded: launch/cooperative.cpp records a rejection
// and does the rest (the global's lookup, the audit ring). Fuzzed by
// fuzz/fuzz_barrier_desc.cpp.
#pragma once

#include <cstdint>

#include "core/check.hpp"
#include "t4acuda.h"

namespace t4a::launch {

// A declaration whose fields were accepted.
struct BarrierDecl {
  uint32_t width = 4; // 4 or 8
  uint32_t flags = 0; // T4A_BARRIER_EXPECT_PER_BLOCK | _AT_MOST
  uint64_t reset = 0;
  uint64_t expected = 0;
};

// The bits a counter of `width` (4 or 8) bytes holds.
inline uint64_t width_mask(uint32_t width) {
  return width == 8 ? ~uint64_t{0} : uint64_t{0xffffffffu};
}

// The fields of `d` (already read through its struct_size). Rejected, in
// this order: a NULL or empty global_name; a width other than 0 (4), 4 or
// 8; unknown flags; reserved0 not 0; a reset or expected value wider than
// the counter. `*out` is written only when accepted: then its width is 4
// or 8, its flags known and both values fit in the width.
void check_barrier_desc(const t4a_barrier_desc &d, BarrierDecl *out,
                        core::Check *c);

// Room for barrier `name` of kernel `kernel` whose `n` declared barriers
// are named `declared[0..n)`: rejected when one of them is `name` or when
// `n` is already `max`.
void check_barrier_room(const char *name, const char *const *declared,
                        uint32_t n, uint32_t max, const char *kernel,
                        core::Check *c);

// The global found for barrier `name`: `bytes` long at `ptr`; rejected
// unless it is exactly `width` bytes, aligned to them.
void check_barrier_global(const char *name, uint64_t bytes, uint64_t ptr,
                          uint32_t width, core::Check *c);

} // namespace t4a::launch
