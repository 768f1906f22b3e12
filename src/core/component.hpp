// Parts of a runtime owned by higher layers (the memory layer's staging
// ring and copy workers, the launch layer's module cache). The runtime
// holds them type-erased in a small fixed table, so core names none of
// them: each owning layer declares its own slot, once, at static
// initialization, with a teardown rank:
//
//   const core::PartSlot k_slot = core::register_part("staging ring", 100);
//
// and reaches its part with rt.part(k_slot) (an array index: no lookup, no
// heap). Teardown order is decided by the ranks alone (ascending, so it
// does not depend on the link order of the translation units): a
// runtime's teardown calls teardown() on every part in rank order, then
// destroys them in the same order; destroy() calls on_destroy() in rank
// order. Ranks by layer: memory 100..199, launch 200..299 (a lower layer's
// parts are torn down before a higher one's; each layer orders its own
// within its range). Ranks are unique; a duplicate, or more than k_max_parts
// slots, is a programming error that aborts at load time with a message.
#pragma once

#include <cstdint>

namespace t4a::core {

class RuntimeComponent {
public:
  virtual ~RuntimeComponent() = default;
  // Frees what it owns when `completion_proven`, else leaks and counts.
  virtual void teardown(bool completion_proven) = 0;
  // t4a_runtime_destroy drained the stream: drop the references this part
  // holds to objects that hold the runtime (cached modules), which would
  // otherwise keep it alive for ever. Runs under admission, after destroy
  // closed it: no operation is admitted afterwards, so nothing refills
  // the part (admission.hpp).
  virtual void on_destroy() {}
};

// Slots a runtime has room for (its parts table is this long).
inline constexpr int k_max_parts = 8;

// A runtime part's slot: an index into every runtime's parts table.
struct PartSlot {
  uint8_t index = 0;
};

// Declares a part: `name` (a string literal, for messages) torn down at
// `teardown_rank`. Call only during static initialization of the library
// (a namespace-scope constant of the owning layer), before any runtime
// exists; the table is read without a lock afterwards.
PartSlot register_part(const char *name, int teardown_rank);

// The registered slots in teardown order (ascending rank): part_count()
// of them, part_in_order(0) first.
int part_count();
PartSlot part_in_order(int i);

} // namespace t4a::core
