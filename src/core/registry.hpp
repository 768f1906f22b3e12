// The handle registry: maps generation-tagged 64-bit ids to objects.
//
// id = kind (8 bits) << 56 | generation (24 bits, never 0) << 32 | slot.
// A slot's generation grows each time it is freed, so a stale id never
// matches again; a slot whose generation would wrap is retired for good.
// Each live slot holds one internal reference to its object plus the count
// of handle references (_retain/_release). Every operation holds one plain
// mutex for a few dozen instructions (a lookup: bounds, generation and kind
// checks and one atomic increment); a reader-writer lock, a spin lock and
// a hand-written futex mutex all measured slower on the allocation path.
// Objects are destroyed outside the lock (by dropping the returned Ref).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "core/error.hpp"
#include "core/fork.hpp"
#include "core/object.hpp"
#include "t4acuda.h"

namespace t4a::core {

enum class HandleCheck { Ok, Null, WrongKind, Unknown, Stale, Saturated };

// One id to resolve and the kind it must have.
struct Lookup {
  uint64_t id;
  Kind kind;
};

// Aligned so that the lock and the slot vector (all a lookup reads of the
// registry itself) share one cache line.
class alignas(64) Registry {
public:
  static Registry &instance();

  // Registers obj with a handle count of 1; returns its id.
  uint64_t insert(Ref<Object> obj);
  // Resolves id to a new internal reference, or reports why not.
  HandleCheck resolve(uint64_t id, Kind kind, Ref<Object> *out) const;
  // Resolves lookups[0..n), in order, under one lock (the launch path:
  // runtime, kernel and buffers). On success out[k] holds a new internal
  // reference to each object, owned by the caller (Ref::adopt, or
  // drop_ref). Otherwise the first lookup that failed is reported
  // (*bad_index is its index) and no reference is taken.
  HandleCheck resolve_many(const Lookup *lookups, size_t n, Object **out,
                           size_t *bad_index) const;
  HandleCheck retain(uint64_t id, Kind kind);
  // Drops one handle reference; when none are left the slot is freed and
  // its object reference moved to *removed.
  HandleCheck release(uint64_t id, Kind kind, Ref<Object> *removed);
  // Frees the slot whatever its handle count (destroy of unshared objects).
  HandleCheck remove(uint64_t id, Kind kind, Ref<Object> *removed);

  size_t live_count() const;

  // Fork safety (core/fork.hpp): prepare takes the lock, the parent
  // releases it. The child releases it too; when the child cannot use the
  // driver (`drop_driver_objects`), every slot of a driver object (all
  // kinds but artifacts and test objects) is emptied without destroying
  // its object (destruction would call the driver): the object is leaked
  // in the child, and its handle reports k_fork_message (fail_handle).
  void at_fork(ForkPhase phase, bool drop_driver_objects);

  static Kind kind_of(uint64_t id) { return static_cast<Kind>(id >> 56); }
  static const char *describe(HandleCheck c);

private:
  struct Slot {
    uint32_t generation = 1;
    uint32_t handle_refs = 0;
    Object *obj = nullptr; // owns one reference while live
  };
  HandleCheck find(uint64_t id, Kind kind, uint32_t *index) const;
  HandleCheck drop(uint64_t id, Kind kind, bool all, Ref<Object> *removed);

  mutable std::mutex mu_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  size_t live_ = 0;
};

namespace detail {
// The registry's storage: constant-initialized (no guard to test per call,
// no static-initialization order) and never destroyed, since handles may be
// released by other libraries' static destructors at exit (objects alive
// then are deliberately leaked).
union RegistryStorage {
  Registry registry;
  constexpr RegistryStorage() : registry() {}
  ~RegistryStorage() {}
};
extern RegistryStorage g_registry;
} // namespace detail

inline Registry &Registry::instance() { return detail::g_registry.registry; }

// Records a failed resolution of the handle argument `arg`: "<arg> (id
// 0x...) is <why>", INVALID_HANDLE (INVALID_ARGUMENT for Saturated).
T4A_COLD t4a_status fail_handle(HandleCheck c, uint64_t id, const char *arg);

} // namespace t4a::core
