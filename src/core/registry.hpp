// The handle registry: maps generation-tagged 64-bit ids to objects.
//
// id = kind (8 bits) << 56 | generation (24 bits, never 0) << 32 | slot.
// A slot's generation grows each time it is freed, so a stale id never
// matches again; a slot whose generation would wrap is retired for good.
// Each live slot holds one internal reference to its object plus the count
// of handle references (_retain/_release).
//
// Writers (insert, retain, release, remove) hold one mutex
// (core/fast_mutex.hpp) for a few dozen instructions. Readers take no lock:
// slots live in chunks that are never moved or freed while the process lives
// (chunk c holds 1024 << c slots), and a slot's object pointer and generation
// are atomics. A lookup reads the object pointer, then the generation, and
// accepts the object only when the generation is the id's: a slot is
// unpublished by bumping its generation before clearing its pointer, and
// republished by storing the new object after that, so a pointer read together
// with the id's generation is the id's object. Whether that object may still be
// used is the borrow protocol's business (core/borrow.hpp): borrow_many
// returns plain pointers valid until the caller's BorrowSection ends, and
// resolve takes a reference inside one. A freed slot's reference is
// dropped through retire(), outside the lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/borrow.hpp"
#include "core/error.hpp"
#include "core/fast_mutex.hpp"
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

// Aligned so that what a lookup reads of the registry itself (the slot
// count and the chunk pointers) starts a cache line; the writers' lock and
// free list follow.
class alignas(64) Registry {
public:
  static Registry &instance();

  // Registers obj with a handle count of 1; returns its id.
  uint64_t insert(Ref<Object> obj);
  // Resolves id to a new internal reference, or reports why not (no lock:
  // a borrow section around the lookup and the increment).
  HandleCheck resolve(uint64_t id, Kind kind, Ref<Object> *out) const;
  // Resolves lookups[0..n), in order, without a lock and without taking
  // references (the launch path: runtime, kernel and buffers). The caller
  // must be inside a BorrowSection (core/borrow.hpp): out[k] stays valid
  // until that section ends. Otherwise the first lookup that failed is
  // reported (*bad_index is its index).
  HandleCheck borrow_many(const Lookup *lookups, size_t n, Object **out,
                          size_t *bad_index) const;
  HandleCheck retain(uint64_t id, Kind kind);
  // Drops one handle reference; when none are left the slot is freed, its
  // reference retired (core/borrow.hpp) and, when `removed` is not null, a
  // new reference to the object stored there.
  HandleCheck release(uint64_t id, Kind kind, Ref<Object> *removed);
  // Frees the slot whatever its handle count (destroy of unshared objects);
  // `removed` as for release.
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
    std::atomic<Object *> obj{nullptr}; // owns one reference while live
    std::atomic<uint32_t> generation{1};
    uint32_t handle_refs = 0; // under mu_
  };
  // Chunk c holds slots [1024 * (2^c - 1), 1024 * (2^(c+1) - 1)).
  static constexpr uint32_t k_first_chunk = 1024;
  static constexpr int k_chunks = 23; // covers every 32-bit slot index
  Slot *slot(uint32_t i) const {
    uint64_t j = uint64_t(i) + k_first_chunk;
    int c = 63 - __builtin_clzll(j) - 10;
    return chunks_[c].load(std::memory_order_acquire) +
           (j - (uint64_t(k_first_chunk) << c));
  }
  HandleCheck find(uint64_t id, Kind kind, Object **out) const;
  HandleCheck find_locked(uint64_t id, Kind kind, Slot **out) const;
  HandleCheck drop(uint64_t id, Kind kind, bool all, Ref<Object> *removed);

  std::atomic<uint32_t> size_{0}; // slots made (published after their chunk)
  std::atomic<Slot *> chunks_[k_chunks] = {};
  mutable FastMutex mu_;
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
