#include "core/registry.hpp"

#include <mutex>

#include "core/borrow.hpp"
#include "core/error.hpp"

namespace t4a::core {

namespace {
constexpr uint32_t k_generation_mask = 0xFFFFFFu;
constexpr uint64_t make_id(Kind kind, uint32_t generation, uint32_t index) {
  return (static_cast<uint64_t>(kind) << 56) |
         (static_cast<uint64_t>(generation & k_generation_mask) << 32) | index;
}
} // namespace

constinit detail::RegistryStorage detail::g_registry;

const char *Registry::describe(HandleCheck c) {
  switch (c) {
  case HandleCheck::Ok: return "valid";
  case HandleCheck::Null: return "the null handle";
  case HandleCheck::WrongKind: return "a handle of another type";
  case HandleCheck::Unknown: return "not a handle this library issued";
  case HandleCheck::Stale: return "released (stale)";
  case HandleCheck::Saturated:
    return "retained 4294967295 times already (no more references fit)";
  }
  return "invalid";
}

namespace {
// The kinds whose objects need the driver (see Registry::at_fork).
bool is_driver_kind(Kind k) {
  return k != Kind::Artifact && k != Kind::TestObject && k != Kind::Internal;
}
} // namespace

t4a_status fail_handle(HandleCheck c, uint64_t id, const char *arg) {
  // In a forked child the parent's driver objects were dropped (at_fork):
  // their handles read as stale, and the reason is the fork.
  if (c == HandleCheck::Stale && in_forked_child() &&
      is_driver_kind(Registry::kind_of(id)))
    return fail(T4A_ERROR_NO_DRIVER, "%s (id 0x%016llx) is not usable: %s", arg,
                static_cast<unsigned long long>(id), k_fork_message);
  return fail(c == HandleCheck::Saturated ? T4A_ERROR_INVALID_ARGUMENT
                                          : T4A_ERROR_INVALID_HANDLE,
              "%s (id 0x%016llx) is %s", arg,
              static_cast<unsigned long long>(id), Registry::describe(c));
}

// The lock-free lookup (see registry.hpp): the object pointer first, then
// the generation. Inlined into each caller: a launch runs it per handle.
__attribute__((always_inline)) inline HandleCheck
Registry::find(uint64_t id, Kind kind, Object **out) const {
  if (id == 0) return HandleCheck::Null;
  if (kind_of(id) != kind) return HandleCheck::WrongKind;
  uint32_t i = static_cast<uint32_t>(id);
  uint32_t gen = static_cast<uint32_t>(id >> 32) & k_generation_mask;
  if (i >= size_.load(std::memory_order_acquire) || gen == 0)
    return HandleCheck::Unknown;
  const Slot &s = *slot(i);
  // seq_cst: ordered after the caller's borrow-section entry (borrow.hpp).
  Object *obj = s.obj.load(std::memory_order_seq_cst);
  uint32_t now = s.generation.load(std::memory_order_acquire);
  if (gen > now) return HandleCheck::Unknown;
  if (obj == nullptr || now != gen) return HandleCheck::Stale;
  // The slot is live but holds another type: the id's kind byte was forged.
  if (obj->kind() != kind) return HandleCheck::Unknown;
  *out = obj;
  return HandleCheck::Ok;
}

// The writers' lookup, holding mu_: the slot itself.
HandleCheck Registry::find_locked(uint64_t id, Kind kind, Slot **out) const {
  Object *obj = nullptr;
  HandleCheck c = find(id, kind, &obj);
  if (c == HandleCheck::Ok) *out = slot(static_cast<uint32_t>(id));
  return c;
}

uint64_t Registry::insert(Ref<Object> obj) {
  std::lock_guard<FastMutex> lock(mu_);
  uint32_t i;
  if (!free_.empty()) {
    i = free_.back();
    free_.pop_back();
  } else {
    i = size_.load(std::memory_order_relaxed);
    uint64_t j = uint64_t(i) + k_first_chunk;
    int c = 63 - __builtin_clzll(j) - 10;
    if (j == (uint64_t(k_first_chunk) << c)) { // the first slot of chunk c
      // May throw std::bad_alloc: before anything changed. Never freed:
      // a lock-free reader may hold any slot.
      Slot *chunk = new Slot[size_t(k_first_chunk) << c];
      chunks_[c].store(chunk, std::memory_order_release);
    }
    size_.store(i + 1, std::memory_order_release);
  }
  Slot &s = *slot(i);
  Kind kind = obj->kind();
  s.handle_refs = 1;
  uint32_t gen = s.generation.load(std::memory_order_relaxed);
  // Published after the generation (bumped when the slot was freed).
  s.obj.store(obj.detach(), std::memory_order_release);
  ++live_;
  return make_id(kind, gen, i);
}

HandleCheck Registry::resolve(uint64_t id, Kind kind, Ref<Object> *out) const {
  BorrowSection section;
  Object *obj = nullptr;
  HandleCheck c = find(id, kind, &obj);
  if (c == HandleCheck::Ok) *out = Ref<Object>(obj);
  return c;
}

HandleCheck Registry::borrow_many(const Lookup *lookups, size_t n, Object **out,
                                  size_t *bad_index) const {
  for (size_t k = 0; k < n; ++k) {
    HandleCheck c = find(lookups[k].id, lookups[k].kind, &out[k]);
    if (c != HandleCheck::Ok) [[unlikely]] {
      *bad_index = k;
      return c;
    }
  }
  return HandleCheck::Ok;
}

HandleCheck Registry::retain(uint64_t id, Kind kind) {
  std::lock_guard<FastMutex> lock(mu_);
  Slot *s = nullptr;
  HandleCheck c = find_locked(id, kind, &s);
  if (c != HandleCheck::Ok) return c;
  if (s->handle_refs == UINT32_MAX) return HandleCheck::Saturated;
  ++s->handle_refs;
  return c;
}

HandleCheck Registry::drop(uint64_t id, Kind kind, bool all,
                           Ref<Object> *removed) {
  Object *obj = nullptr;
  {
    std::lock_guard<FastMutex> lock(mu_);
    Slot *s = nullptr;
    HandleCheck c = find_locked(id, kind, &s);
    if (c != HandleCheck::Ok) return c;
    if (!all && --s->handle_refs > 0) return c;
    s->handle_refs = 0;
    // The free list first (may throw std::bad_alloc: nothing changed yet).
    // A generation that would wrap retires the slot: ids never repeat.
    uint32_t gen = s->generation.load(std::memory_order_relaxed);
    if (gen < k_generation_mask) free_.push_back(static_cast<uint32_t>(id));
    // Unpublished: the generation first, so that a reader that still sees
    // the pointer sees a generation its id no longer has.
    s->generation.store(gen + 1, std::memory_order_relaxed);
    obj = s->obj.exchange(nullptr, std::memory_order_seq_cst);
    --live_;
  }
  // The caller's reference is taken while the slot's is still held; the
  // slot's goes through retire(): not while a borrow section may use it.
  if (removed != nullptr) *removed = Ref<Object>(obj);
  retire(obj);
  return HandleCheck::Ok;
}

HandleCheck Registry::release(uint64_t id, Kind kind, Ref<Object> *removed) {
  return drop(id, kind, false, removed);
}

HandleCheck Registry::remove(uint64_t id, Kind kind, Ref<Object> *removed) {
  return drop(id, kind, true, removed);
}

void Registry::at_fork(ForkPhase phase, bool drop_driver_objects) {
  if (phase == ForkPhase::Prepare) {
    mu_.lock();
    borrow_at_fork(phase);
    return;
  }
  borrow_at_fork(phase);
  if (phase == ForkPhase::Child && drop_driver_objects) {
    uint32_t n = size_.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < n; ++i) {
      Slot &s = *slot(i);
      Object *obj = s.obj.load(std::memory_order_relaxed);
      if (obj == nullptr || !is_driver_kind(obj->kind())) continue;
      // Leaked on purpose: its destructor would call the driver. The slot
      // keeps its generation and stays off the free list, so the id reads
      // as stale for good.
      s.obj.store(nullptr, std::memory_order_relaxed);
      s.handle_refs = 0;
      --live_;
    }
  }
  mu_.unlock(); // in the child: the only thread, the one that locked it
}

size_t Registry::live_count() const {
  std::lock_guard<FastMutex> lock(mu_);
  return live_;
}

} // namespace t4a::core
