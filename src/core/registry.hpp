// The handle registry: maps generation-tagged 64-bit ids to objects.
//
// id = kind (8 bits) << 56 | generation (24 bits, never 0) << 32 | slot.
// A slot's generation grows each time it is freed, so a stale id never
// matches again; a slot whose generation would wrap is retired for good.
// Each live slot holds one internal reference to its object plus the count
// of handle references (_retain/_release).
//
// No operation on a live handle takes a lock. Slots live in chunks that
// are never moved or freed while the process lives (chunk c holds 1024 << c
// slots); a slot is an atomic object pointer and an atomic state word
// (generation, kind, handle count). Lookups read the pointer, then the
// state, and accept the object only when the state has the id's
// generation and kind and a handle count above 0. Retain and release
// change the state with one compare-and-swap; the release that takes the
// count to 0 also unpublishes the slot (the generation moves on, or the
// slot is retired when it would wrap) and clears the pointer. Whether an
// object read from a slot may still be used is the borrow protocol's
// business (core/borrow.hpp): borrow returns plain pointers valid
// until the caller's BorrowSection ends, resolve takes a reference inside
// one, and a freed slot's reference is dropped through retire().
//
// Free slot indices are cached per thread (up to k_thread_free, no lock);
// a thread takes and gives back batches from the shared free list under
// a mutex, which also makes new slots (and chunks).
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

// Aligned so that what a lookup reads of the registry itself (the slot
// count and the chunk pointers) starts a cache line; the shared free list
// and its lock follow.
class alignas(64) Registry {
  // #lizard forgives: a class, which lizard reads as a function named
  // alignas (scripts/check-functions).
public:
  static Registry &instance();

  // Registers obj with a handle count of 1; returns its id.
  uint64_t insert(Ref<Object> obj);
  // Resolves id to a new internal reference, or reports why not (no lock:
  // a borrow section around the lookup and the increment).
  HandleCheck resolve(uint64_t id, Kind kind, Ref<Object> *out) const;
  // Resolves id without a lock and without taking a reference (the launch
  // path: runtime, kernel and buffers). The caller must be inside a
  // BorrowSection (core/borrow.hpp): *out stays valid until that section
  // ends. Inline: a launch runs it per handle.
  HandleCheck borrow(uint64_t id, Kind kind, Object **out) const;
  HandleCheck retain(uint64_t id, Kind kind);
  // Drops one handle reference; when none are left the slot is freed, its
  // reference retired (core/borrow.hpp) and, when `removed` is not null, a
  // new reference to the object stored there.
  HandleCheck release(uint64_t id, Kind kind, Ref<Object> *removed);
  // Frees the slot whatever its handle count (destroy of unshared objects);
  // `removed` as for release.
  HandleCheck remove(uint64_t id, Kind kind, Ref<Object> *removed);

  size_t live_count() const;

  // Fork safety (core/fork.hpp): prepare takes the free list's lock, the
  // parent releases it. The child releases it too; when the child cannot use
  // the driver (`drop_driver_objects`), every slot of a driver object (all
  // kinds but artifacts and test objects) is emptied without destroying
  // its object (destruction would call the driver): the object is leaked
  // in the child, and its handle reports k_fork_message (fail_handle).
  void at_fork(ForkPhase phase, bool drop_driver_objects);

  static Kind kind_of(uint64_t id) { return static_cast<Kind>(id >> 56); }
  static constexpr uint32_t k_generation_bits = 0xFFFFFFu; // 24 bits
  static const char *describe(HandleCheck c);

private:
  struct Slot {
    std::atomic<Object *> obj{nullptr}; // owns one reference while live
    // kind << 56 | generation (24 bits) << 32 | handle count: the upper half
    // laid out as a live id's (so a lookup compares them whole); 0: never
    // used.
    std::atomic<uint64_t> state{0};
  };
  // Chunk c holds slots [1024 * (2^c - 1), 1024 * (2^(c+1) - 1)).
  static constexpr uint32_t k_first_chunk = 1024;
  static constexpr int k_chunks = 23; // covers every 32-bit slot index
  // Slots made, and moved between a thread's cache and the shared list, at
  // a time (divides k_first_chunk: a batch never spans two chunks).
  static constexpr uint32_t k_batch = 32;
  // The acquire load of the chunk pointer pairs with its publication
  // before size_ (a slot index below size_ is in a published chunk). The
  // first chunk (slots below k_first_chunk, where a process with fewer
  // live handles keeps them all) needs no chunk arithmetic.
  Slot *slot(uint32_t i) const {
    if (i < k_first_chunk) [[likely]]
      return chunks_[0].load(std::memory_order_acquire) + i;
    uint64_t j = uint64_t(i) + k_first_chunk;
    int c = 63 - __builtin_clzll(j) - 10;
    return chunks_[c].load(std::memory_order_acquire) +
           (j - (uint64_t(k_first_chunk) << c));
  }
  T4A_COLD HandleCheck find_slow(uint64_t id, Kind kind, Object **out) const;
  // The id's own checks (null, kind, a slot made, a generation): Ok when the
  // slot's state must tell the rest.
  HandleCheck check_id(uint64_t id, Kind kind) const;
  // Clears slot i, whose state this thread just unpublished, gives it back
  // when `reusable` and retires its reference (a new one to `removed`).
  void free_slot(uint32_t i, bool reusable, Ref<Object> *removed);
  // The writers' check of the state word `st` against the id.
  static HandleCheck check_state(uint64_t id, Kind kind, uint64_t st);
  HandleCheck drop(uint64_t id, Kind kind, bool all, Ref<Object> *removed);
  uint32_t take_slot(); // a free slot index for insert (may throw)
  // take_slot's refill from the shared list (or new slots), out of line.
  [[gnu::noinline]] uint32_t take_slot_slow();
  void give_slot(uint32_t i); // a freed slot index

public:
  // Free slot indices back to the shared list (a thread's cache, at its
  // exit or when full).
  void give_back(const uint32_t *index, uint32_t n);

private:
  std::atomic<uint32_t> size_{0}; // slots made (published after their chunk)
  std::atomic<Slot *> chunks_[k_chunks] = {};
  // The shared free list and slot growth.
  mutable FastMutex mu_;
  std::vector<uint32_t> free_;
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

// The lookup: the object pointer first, then the state. The warm case is
// one comparison of the state's upper half (generation and kind) with the
// id's and a non-zero handle count; anything else is classified by
// find_slow.
__attribute__((always_inline)) inline HandleCheck
Registry::borrow(uint64_t id, Kind kind, Object **out) const {
  uint32_t i = static_cast<uint32_t>(id);
  if (kind_of(id) == kind && i < size_.load(std::memory_order_acquire))
      [[likely]] {
    const Slot &s = *slot(i);
    // seq_cst: ordered after the caller's borrow-section entry, and the
    // state after the pointer (borrow.hpp).
    Object *obj = s.obj.load(std::memory_order_seq_cst);
    uint64_t st = s.state.load(std::memory_order_seq_cst);
    // The state's upper half is the id's (kind, generation; registry.cpp's
    // pack()), its lower half the handle count.
    if (((st ^ id) >> 32) == 0 && uint32_t(st) != 0 && obj != nullptr)
        [[likely]] {
      *out = obj;
      return HandleCheck::Ok;
    }
  }
  return find_slow(id, kind, out);
}

// Records a failed resolution of the handle argument `arg`: "<arg> (id
// 0x...) is <why>", INVALID_HANDLE (INVALID_ARGUMENT for Saturated).
T4A_COLD t4a_status fail_handle(HandleCheck c, uint64_t id, const char *arg);

} // namespace t4a::core
