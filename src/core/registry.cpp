#include "core/registry.hpp"

#include <pthread.h>

#include <mutex>
#include <new>

#include "core/borrow.hpp"
#include "core/error.hpp"

namespace t4a::core {

namespace {
constexpr uint32_t k_generation_mask = Registry::k_generation_bits;
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

namespace {
// The state word: kind << 56 | generation << 32 | handle count, so that a
// live slot's upper half equals its id's (Registry::borrow compares them).
// `gen` is at most k_generation_mask (drop() retires a slot instead of
// wrapping it).
constexpr uint64_t pack(uint32_t gen, Kind kind, uint32_t refs) {
  return (uint64_t(kind) << 56) | (uint64_t(gen) << 32) | refs;
}
constexpr uint32_t gen_of(uint64_t st) {
  return uint32_t(st >> 32) & k_generation_mask;
}
constexpr Kind kind_in(uint64_t st) { return Kind(uint8_t(st >> 56)); }
constexpr uint32_t refs_of(uint64_t st) { return uint32_t(st); }

// This thread's cached free slot indices, on the heap behind an
// initial-exec TLS pointer (a few bytes of the static TLS surplus, no call
// to reach it). Given back to the shared list at thread exit.
constexpr uint32_t k_thread_free = 64;
struct ThreadSlots {
  uint32_t n = 0;
  uint32_t index[k_thread_free];
};
__thread ThreadSlots *tl_slots __attribute__((tls_model("initial-exec"))) =
    nullptr;

void thread_exit(void *p) {
  auto *t = static_cast<ThreadSlots *>(p);
  Registry::instance().give_back(t->index, t->n);
  tl_slots = nullptr;
  delete t;
}

pthread_key_t slots_key() {
  static pthread_key_t key = [] {
    pthread_key_t k;
    // Failure: a thread's cached slots are not given back at its exit
    // (they stay unused, never reissued: ids still never repeat).
    (void)pthread_key_create(&k, &thread_exit);
    return k;
  }();
  return key;
}

// This thread's cache, made on first use; nullptr if that fails.
ThreadSlots *thread_slots() {
  ThreadSlots *t = tl_slots;
  if (t != nullptr) [[likely]]
    return t;
  t = new (std::nothrow) ThreadSlots();
  if (t == nullptr) return nullptr;
  tl_slots = t;
  (void)pthread_setspecific(slots_key(), t); // failure: see slots_key
  return t;
}
} // namespace

HandleCheck Registry::check_id(uint64_t id, Kind kind) const {
  if (id == 0) return HandleCheck::Null;
  if (kind_of(id) != kind) return HandleCheck::WrongKind;
  if (static_cast<uint32_t>(id) >= size_.load(std::memory_order_acquire) ||
      (static_cast<uint32_t>(id >> 32) & k_generation_mask) == 0)
    return HandleCheck::Unknown;
  return HandleCheck::Ok;
}

HandleCheck Registry::find_slow(uint64_t id, Kind kind, Object **out) const {
  if (HandleCheck c = check_id(id, kind); c != HandleCheck::Ok) return c;
  const Slot &s = *slot(static_cast<uint32_t>(id));
  Object *obj = s.obj.load(std::memory_order_seq_cst);
  uint64_t st = s.state.load(std::memory_order_seq_cst);
  if (HandleCheck c = check_state(id, kind, st); c != HandleCheck::Ok) return c;
  if (obj == nullptr) return HandleCheck::Stale;
  *out = obj;
  return HandleCheck::Ok;
}

HandleCheck Registry::check_state(uint64_t id, Kind kind, uint64_t st) {
  uint32_t gen = static_cast<uint32_t>(id >> 32) & k_generation_mask;
  uint32_t now = gen_of(st);
  if (gen > now) return HandleCheck::Unknown;
  if (now != gen || refs_of(st) == 0) return HandleCheck::Stale;
  if (kind_in(st) != kind) return HandleCheck::Unknown;
  return HandleCheck::Ok;
}

inline uint32_t Registry::take_slot() {
  ThreadSlots *t = tl_slots;
  if (t != nullptr && t->n != 0) [[likely]]
    return t->index[--t->n];
  return take_slot_slow();
}

uint32_t Registry::take_slot_slow() {
  ThreadSlots *t = thread_slots();
  if (t == nullptr) throw std::bad_alloc();
  std::lock_guard<FastMutex> lock(mu_);
  uint32_t n = 0;
  while (n < k_batch && !free_.empty()) {
    t->index[n++] = free_.back();
    free_.pop_back();
  }
  if (n == 0) { // make k_batch new slots
    uint32_t i = size_.load(std::memory_order_relaxed);
    if (i > UINT32_MAX - k_batch) throw std::bad_alloc(); // every id used
    uint64_t j = uint64_t(i) + k_first_chunk;
    int c = 63 - __builtin_clzll(j) - 10;
    if (j == (uint64_t(k_first_chunk) << c)) { // the first slot of chunk c
      // May throw std::bad_alloc: before anything changed. Never freed:
      // a lock-free reader may hold any slot.
      Slot *chunk = new Slot[size_t(k_first_chunk) << c];
      chunks_[c].store(chunk, std::memory_order_release);
    }
    size_.store(i + k_batch, std::memory_order_release);
    for (; n < k_batch; ++n) t->index[n] = i + k_batch - 1 - n; // lowest last
  }
  t->n = n - 1;
  return t->index[n - 1];
}

void Registry::give_slot(uint32_t i) {
  ThreadSlots *t = thread_slots();
  if (t == nullptr) [[unlikely]] {
    give_back(&i, 1);
    return;
  }
  if (t->n == k_thread_free) [[unlikely]] {
    give_back(t->index + k_batch, k_thread_free - k_batch);
    t->n = k_batch;
  }
  t->index[t->n++] = i;
}

void Registry::give_back(const uint32_t *index, uint32_t n) {
  std::lock_guard<FastMutex> lock(mu_);
  try {
    free_.insert(free_.end(), index, index + n);
  } catch (const std::bad_alloc &) {
    // Those slots stay unused (never reissued: ids still never repeat).
  }
}

uint64_t Registry::insert(Ref<Object> obj) {
  uint32_t i = take_slot(); // may throw std::bad_alloc: nothing changed
  Slot &s = *slot(i);
  Kind kind = obj->kind();
  uint32_t gen = gen_of(s.state.load(std::memory_order_relaxed));
  if (gen == 0) gen = 1; // first use
  // The pointer first, then the state that makes the slot live (release:
  // a reader of the new id got it after this returned; a reader of an
  // older id that reads this pointer then reads a later generation).
  s.obj.store(obj.detach(), std::memory_order_release);
  s.state.store(pack(gen, kind, 1), std::memory_order_release);
  return make_id(kind, gen, i);
}

HandleCheck Registry::resolve(uint64_t id, Kind kind, Ref<Object> *out) const {
  BorrowSection section;
  Object *obj = nullptr;
  HandleCheck c = borrow(id, kind, &obj);
  if (c == HandleCheck::Ok) *out = Ref<Object>(obj);
  return c;
}

HandleCheck Registry::retain(uint64_t id, Kind kind) {
  if (HandleCheck c = check_id(id, kind); c != HandleCheck::Ok) return c;
  uint32_t i = static_cast<uint32_t>(id);
  Slot &s = *slot(i);
  uint64_t st = s.state.load(std::memory_order_acquire);
  for (;;) {
    if (HandleCheck c = check_state(id, kind, st); c != HandleCheck::Ok)
      return c;
    if (refs_of(st) == UINT32_MAX) return HandleCheck::Saturated;
    if (s.state.compare_exchange_weak(st, st + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
      return HandleCheck::Ok;
  }
}

HandleCheck Registry::drop(uint64_t id, Kind kind, bool all,
                           Ref<Object> *removed) {
  if (HandleCheck c = check_id(id, kind); c != HandleCheck::Ok) return c;
  uint32_t i = static_cast<uint32_t>(id);
  Slot &s = *slot(i);
  uint64_t st = s.state.load(std::memory_order_acquire);
  uint64_t next;
  for (;;) {
    if (HandleCheck c = check_state(id, kind, st); c != HandleCheck::Ok)
      return c;
    uint32_t gen = gen_of(st);
    if (!all && refs_of(st) > 1)
      next = st - 1;
    else if (gen < k_generation_mask)
      next = pack(gen + 1, Kind::Internal, 0); // unpublished
    else
      next = pack(gen, Kind::Internal, 0); // retired: ids never repeat
    // seq_cst: the unpublishing store of the borrow protocol (borrow.hpp).
    if (s.state.compare_exchange_weak(st, next, std::memory_order_seq_cst,
                                      std::memory_order_acquire))
      break;
  }
  if (refs_of(next) != 0) return HandleCheck::Ok;
  free_slot(i, gen_of(next) != gen_of(st), removed);
  return HandleCheck::Ok;
}

void Registry::free_slot(uint32_t i, bool reusable, Ref<Object> *removed) {
  // This thread freed the slot: the pointer is its own to clear (readers
  // already reject the slot by its state).
  Slot &s = *slot(i);
  Object *obj = s.obj.load(std::memory_order_relaxed);
  s.obj.store(nullptr, std::memory_order_release);
  if (reusable) give_slot(i); // else retired: its generation would wrap
  // The caller's reference is taken while the slot's is still held; the
  // slot's goes through retire(): not while a borrow section may use it.
  if (removed != nullptr) *removed = Ref<Object>(obj);
  retire(obj);
}

HandleCheck Registry::release(uint64_t id, Kind kind, Ref<Object> *removed) {
  // The warm case: the id's slot holds its last handle and its generation
  // can move on. Anything else (and a lost race for the state) goes
  // through drop(), which classifies it.
  uint32_t i = static_cast<uint32_t>(id);
  uint32_t gen = static_cast<uint32_t>(id >> 32) & k_generation_mask;
  if (kind_of(id) == kind && i < size_.load(std::memory_order_acquire) &&
      gen - 1 < k_generation_mask - 1) [[likely]] { // 0 < gen < the last
    Slot &s = *slot(i);
    uint64_t st = pack(gen, kind, 1);
    // seq_cst: the unpublishing store of the borrow protocol (borrow.hpp).
    if (s.state.compare_exchange_strong(st, pack(gen + 1, Kind::Internal, 0),
                                        std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) [[likely]] {
      free_slot(i, true, removed);
      return HandleCheck::Ok;
    }
  }
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
      uint64_t st = s.state.load(std::memory_order_relaxed);
      Object *obj = s.obj.load(std::memory_order_relaxed);
      if (refs_of(st) == 0 || obj == nullptr || !is_driver_kind(kind_in(st)))
        continue;
      // Leaked on purpose: its destructor would call the driver. The slot
      // keeps its generation with no handles and is never given back, so
      // the id reads as stale for good.
      s.state.store(pack(gen_of(st), Kind::Internal, 0),
                    std::memory_order_relaxed);
      s.obj.store(nullptr, std::memory_order_relaxed);
    }
  }
  mu_.unlock(); // in the child: the only thread, the one that locked it
}

size_t Registry::live_count() const {
  // A scan (tests and stats only): slots with a handle.
  size_t live = 0;
  uint32_t n = size_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i)
    if (refs_of(slot(i)->state.load(std::memory_order_acquire)) != 0) ++live;
  return live;
}

} // namespace t4a::core
