#include "core/registry.hpp"

#include <mutex>

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

// Inlined into each caller: a launch runs it once per handle under one lock.
__attribute__((always_inline)) inline HandleCheck
Registry::find(uint64_t id, Kind kind, uint32_t *index) const {
  if (id == 0) return HandleCheck::Null;
  if (kind_of(id) != kind) return HandleCheck::WrongKind;
  uint32_t i = static_cast<uint32_t>(id);
  uint32_t gen = static_cast<uint32_t>(id >> 32) & k_generation_mask;
  if (i >= slots_.size() || gen == 0) return HandleCheck::Unknown;
  const Slot &s = slots_[i];
  if (gen > s.generation) return HandleCheck::Unknown;
  if (s.obj == nullptr || s.generation != gen) return HandleCheck::Stale;
  // The slot is live but holds another type: the id's kind byte was forged.
  if (s.obj->kind() != kind) return HandleCheck::Unknown;
  *index = i;
  return HandleCheck::Ok;
}

uint64_t Registry::insert(Ref<Object> obj) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t i;
  if (!free_.empty()) {
    i = free_.back();
    free_.pop_back();
  } else {
    slots_.emplace_back();
    i = static_cast<uint32_t>(slots_.size() - 1);
  }
  Slot &s = slots_[i];
  Kind kind = obj->kind();
  s.obj = obj.detach();
  s.handle_refs = 1;
  ++live_;
  return make_id(kind, s.generation, i);
}

HandleCheck Registry::resolve(uint64_t id, Kind kind, Ref<Object> *out) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t i = 0;
  HandleCheck c = find(id, kind, &i);
  if (c == HandleCheck::Ok) *out = Ref<Object>(slots_[i].obj);
  return c;
}

HandleCheck Registry::resolve_many(const Lookup *lookups, size_t n,
                                   Object **out, size_t *bad_index) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t k = 0; k < n; ++k) {
    uint32_t i = 0;
    HandleCheck c = find(lookups[k].id, lookups[k].kind, &i);
    if (c != HandleCheck::Ok) {
      // Never the last reference: each of these objects' slots holds one.
      for (size_t j = 0; j < k; ++j) out[j]->drop_ref();
      *bad_index = k;
      return c;
    }
    out[k] = slots_[i].obj;
    out[k]->add_ref();
  }
  return HandleCheck::Ok;
}

HandleCheck Registry::retain(uint64_t id, Kind kind) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t i = 0;
  HandleCheck c = find(id, kind, &i);
  if (c != HandleCheck::Ok) return c;
  if (slots_[i].handle_refs == UINT32_MAX) return HandleCheck::Saturated;
  ++slots_[i].handle_refs;
  return c;
}

HandleCheck Registry::drop(uint64_t id, Kind kind, bool all,
                           Ref<Object> *removed) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t i = 0;
  HandleCheck c = find(id, kind, &i);
  if (c != HandleCheck::Ok) return c;
  Slot &s = slots_[i];
  if (!all && --s.handle_refs > 0) return c;
  s.handle_refs = 0;
  *removed = Ref<Object>::adopt(s.obj);
  s.obj = nullptr;
  --live_;
  // A generation that would wrap retires the slot: ids never repeat.
  if (++s.generation <= k_generation_mask) free_.push_back(i);
  return c;
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
    return;
  }
  if (phase == ForkPhase::Child && drop_driver_objects) {
    for (Slot &s : slots_) {
      if (s.obj == nullptr || !is_driver_kind(s.obj->kind())) continue;
      // Leaked on purpose: its destructor would call the driver. The slot
      // keeps its generation and stays off the free list, so the id reads
      // as stale for good.
      s.obj = nullptr;
      s.handle_refs = 0;
      --live_;
    }
  }
  mu_.unlock(); // in the child: the only thread, the one that locked it
}

size_t Registry::live_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

} // namespace t4a::core
