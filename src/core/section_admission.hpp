// Admission for an operation that runs inside a borrow section
// (core/borrow.hpp), using the objects it borrowed there through plain
// pointers: the borrowed entry points (capi::call_borrowed) and
// t4a_launch (launch/launch.cpp).
//
// The warm case is one try of the lock: admitted at once, nothing else
// happens. When another thread holds the runtime (a raw scope may hold it
// for long), waiting inside the section would hold up every retire in the
// process, so the operation takes references to what it borrowed, leaves
// the section (BorrowSection::pause), waits for admission like any other
// operation and enters the section again (resume). The references keep the
// borrowed objects usable whatever was released meanwhile; they are dropped
// after admission was given back, outside the section. reserve_keep()
// does the same for the one step under admission that may wait (a seal at
// the sealed-epoch limit). A section that cannot pause (nested in another, or a
// gate window) waits inside it, as before.
//
// REENTRANT and a closed runtime (INVALID_HANDLE) are reported as by
// Admission; the testing admission hook (T4A_TESTING) runs before the try
// and again before the wait.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include "core/admission.hpp"
#include "core/borrow.hpp"
#include "core/epochs.hpp"
#include "core/object.hpp"

namespace t4a::core {

// The objects an operation borrowed in its borrow section, for the paths
// that leave the section: hold() takes a reference on each (counted on the
// objects themselves, no allocation), drop() gives them back. `first`
// holds at most k_first, `more[0..n_more-1]` must outlive this object.
class Borrowed {
public:
  static constexpr size_t k_first = 3;
  Borrowed(std::initializer_list<Object *> first, Object *const *more,
           uint32_t n_more)
      : more_(more), n_more_(n_more) {
    assert(first.size() <= k_first);
    for (Object *o : first) first_[n_first_++] = o;
  }
  // Held and not dropped (an exception): through core::retire, right
  // wherever it runs.
  ~Borrowed() {
    if (held_) [[unlikely]]
      drop(false);
  }
  Borrowed(const Borrowed &) = delete;
  Borrowed &operator=(const Borrowed &) = delete;

  bool held() const { return held_; }
  void hold() {
    if (held_) return;
    each([](Object *o) { o->add_ref(); });
    held_ = true;
  }
  // Outside every section: now. Inside one (the section could not be
  // left): each deferred until the sections open now have ended, since a
  // last reference may run a destructor that waits.
  void drop(bool outside) {
    held_ = false;
    if (outside)
      each([](Object *o) { o->drop_ref(); });
    else
      each([](Object *o) { retire(o); });
  }

private:
  template <class F> void each(F f) {
    for (size_t i = 0; i < n_first_; ++i) f(first_[i]);
    for (uint32_t i = 0; i < n_more_; ++i) f(more_[i]);
  }
  Object *first_[k_first] = {};
  size_t n_first_ = 0;
  Object *const *more_;
  uint32_t n_more_;
  bool held_ = false;
};

// Runs f() outside `section`, holding references to what `held` names
// (objects borrowed in the section), then enters the section again: the
// one way a borrowed operation that may wait leaves its section (a
// thread waiting inside one would hold up every release in the process,
// core/borrow.hpp). The references are dropped outside the section (a
// last one may run a destructor that waits); when the section cannot be
// left (nested, or a gate window) f() runs inside it and each drop is
// deferred until the sections open now have ended (core::retire).
template <class F>
auto run_outside(BorrowSection &section, Borrowed &held, F &&f) {
  held.hold();
  bool paused = section.pause();
  auto r = f();
  held.drop(paused);
  if (paused) section.resume();
  return r;
}

class SectionAdmission {
public:
  // `borrowed` (at most Borrowed::k_first), then `more[0..n_more-1]`: the
  // objects the caller borrowed in `section` and uses under admission
  // (referenced only when the operation leaves the section; `more` must outlive
  // this object).
  SectionAdmission(BorrowSection &section, AdmissionLock &lock,
                   std::initializer_list<Object *> borrowed,
                   Object *const *more = nullptr, uint32_t n_more = 0)
      : section_(section), borrowed_(borrowed, more, n_more) {
    adm_.emplace(lock, Admission::Try);
    if (adm_->busy()) [[unlikely]]
      wait(lock);
  }
  // Admission is given back first. References taken on a path that left
  // the section are then dropped outside it (a last one may run a
  // destructor that waits, a runtime's teardown, or calls the driver):
  // the section is left for the drops and entered again, or, when it
  // cannot be left (nested), each drop is deferred until the sections
  // open now have ended (core::retire).
  ~SectionAdmission() {
    adm_.reset();
    if (borrowed_.held()) [[unlikely]]
      drop_held();
  }
  SectionAdmission(const SectionAdmission &) = delete;
  SectionAdmission &operator=(const SectionAdmission &) = delete;

  // SUCCESS once admitted; REENTRANT or INVALID_HANDLE (recorded) when not.
  t4a_status status() const { return adm_->status(); }

  // Epochs::reserve_keep under this admission. Making room seals the full
  // open epoch, which may wait on the host (at the sealed-epoch limit, for
  // the oldest epoch's event) and drops what retires: that is done outside
  // the section, holding references to what was borrowed (once per
  // k_open_limit keeps). A section that cannot pause (nested, or a gate
  // window) makes it inside.
  Epochs::Reservation reserve_keep(Epochs &ep, Runtime &rt) {
    if (!ep.keep_needs_room()) [[likely]]
      return ep.reserve_keep(rt);
    borrowed_.hold();
    bool paused = section_.pause();
    Epochs::Reservation r = ep.reserve_keep(rt);
    if (paused) section_.resume();
    return r;
  }

private:
  // Out of line and cold: only a contended lock gets here.
  [[gnu::noinline, gnu::cold]] void wait(AdmissionLock &lock) {
    borrowed_.hold();
    adm_.reset(); // busy: it holds nothing
    bool paused = section_.pause();
    adm_.emplace(lock);
    if (paused) section_.resume();
  }
  [[gnu::noinline, gnu::cold]] void drop_held() {
    bool paused = section_.pause();
    borrowed_.drop(paused);
    if (paused) section_.resume();
  }

  BorrowSection &section_;
  Borrowed borrowed_;
  std::optional<Admission> adm_;
};

} // namespace t4a::core
