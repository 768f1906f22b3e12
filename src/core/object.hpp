// Intrusively reference-counted library objects and the Ref smart pointer.
// Internal references (an object keeping another alive) and the registry's
// handle reference all go through Ref; the object is deleted when the last
// one goes.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace t4a::core {

// Object kinds; the value is stored in handle ids and must never change.
enum class Kind : uint8_t {
  Internal = 0, // never registered: events, staging chunks, snapshots
  Runtime = 1,
  Buffer = 2,
  HostBuffer = 3,
  Download = 4,
  Artifact = 5,
  Module = 6,
  Kernel = 7,
  Completion = 8,
  RawScope = 9,
  Graph = 10,
  TestObject = 255, // test builds: registry stress objects
};

class Object {
public:
  explicit Object(Kind kind) : kind_(kind) {}
  virtual ~Object() = default;
  Object(const Object &) = delete;
  Object &operator=(const Object &) = delete;

  Kind kind() const { return kind_; }
  void add_ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void drop_ref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) last_ref_dropped();
  }
  // Drops a reference; when it is the only one left, frees without the
  // locked decrement. Correct wherever drop_ref is: a new reference is only
  // ever taken by a holder of one (or by a registry lookup, which the
  // registry's own reference covers until it is retired), so a count of 1
  // held by the caller cannot grow meanwhile. Not for recycled objects
  // (last_ref_dropped overridden), which expect the count to reach 0.
  void drop_ref_fast() {
    if (refs_.load(std::memory_order_acquire) == 1)
      last_ref_dropped();
    else
      drop_ref();
  }
  // Drops a reference unless it is the last one: returns false, the
  // reference still held, when dropping it would free the object (a caller
  // that must not free here keeps it and drops it later).
  bool drop_ref_unless_last() {
    uint32_t n = refs_.load(std::memory_order_relaxed);
    while (n > 1)
      if (refs_.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel,
                                      std::memory_order_relaxed))
        return true;
    return false;
  }

protected:
  // Runs when the last reference goes; objects that are recycled rather
  // than deleted (staging chunks) override it.
  virtual void last_ref_dropped() { delete this; }

private:
  // A new object starts with one reference, owned by whoever made it (take
  // it with Ref::adopt): no atomic read-modify-write to create one.
  std::atomic<uint32_t> refs_{1};
  Kind kind_;
};

template <class T> class Ref {
public:
  Ref() = default;
  Ref(std::nullptr_t) {}
  // Takes a new reference to p.
  explicit Ref(T *p) : p_(p) {
    if (p_) p_->add_ref();
  }
  Ref(const Ref &o) : Ref(o.p_) {}
  Ref(Ref &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <class U>
  Ref(Ref<U> &&o) noexcept : p_(o.detach()) {} // NOLINT: upcast
  ~Ref() { reset(); }
  Ref &operator=(Ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  void reset() {
    if (T *p = std::exchange(p_, nullptr)) p->drop_ref();
  }
  T *get() const { return p_; }
  T *operator->() const { return p_; }
  T &operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  // Gives up ownership without dropping the reference.
  T *detach() { return std::exchange(p_, nullptr); }
  // Adopts an already-counted reference.
  static Ref adopt(T *p) {
    Ref r;
    r.p_ = p;
    return r;
  }

private:
  T *p_ = nullptr;
};

template <class T, class... A> Ref<T> make_ref(A &&...args) {
  return Ref<T>::adopt(new T(std::forward<A>(args)...));
}

} // namespace t4a::core
