#include "core/component.hpp"

#include <cstdio>
#include <cstdlib>

namespace t4a::core {

namespace {
// Zero-initialized before any dynamic initializer runs, so a slot may be
// registered from any translation unit's initializer.
struct PartTable {
  int count;
  const char *names[k_max_parts];
  int ranks[k_max_parts];
  uint8_t order[k_max_parts]; // slot indices by ascending rank
};
constinit PartTable g_parts{};

[[noreturn]] void bad_registration(const char *name, int rank,
                                   const char *why) {
  // Static initialization: no runtime, no log callback yet; stderr only.
  std::fprintf(stderr, "t4acuda: runtime part '%s' (teardown rank %d): %s\n",
               name, rank, why);
  std::abort();
}
} // namespace

PartSlot register_part(const char *name, int teardown_rank) {
  PartTable &t = g_parts;
  if (t.count == k_max_parts)
    bad_registration(name, teardown_rank,
                     "no slot left (core::k_max_parts is too small)");
  for (int i = 0; i < t.count; ++i)
    if (t.ranks[i] == teardown_rank)
      bad_registration(name, teardown_rank,
                       "the rank is already taken by another part");
  const auto index = static_cast<uint8_t>(t.count);
  t.names[index] = name;
  t.ranks[index] = teardown_rank;
  // Insertion into the order list, kept sorted by rank.
  int at = t.count;
  while (at > 0 && t.ranks[t.order[at - 1]] > teardown_rank) {
    t.order[at] = t.order[at - 1];
    --at;
  }
  t.order[at] = index;
  ++t.count;
  return PartSlot{index};
}

int part_count() { return g_parts.count; }

PartSlot part_in_order(int i) { return PartSlot{g_parts.order[i]}; }

} // namespace t4a::core
