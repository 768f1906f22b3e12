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
// after admission was given back, outside the section. pause_for_wait()
// does the same
// for a step under admission that may wait (a seal at the sealed-epoch
// limit). A section that cannot pause (nested in another, or a gate
// window) waits inside it, as before.
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
#include "core/object.hpp"

namespace t4a::core {

class SectionAdmission {
public:
  // `borrowed` (at most k_first), then `more[0..n_more-1]`: the objects
  // the caller borrowed in `section` and uses under admission (referenced
  // only when the operation leaves the section; `more` must outlive this
  // object).
  static constexpr size_t k_first = 3;
  SectionAdmission(BorrowSection &section, AdmissionLock &lock,
                   std::initializer_list<Object *> borrowed,
                   Object *const *more = nullptr, uint32_t n_more = 0)
      : section_(section), more_(more), n_more_(n_more) {
    assert(borrowed.size() <= k_first);
    for (Object *o : borrowed) first_[n_first_++] = o;
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
    if (held_) [[unlikely]]
      drop_held();
  }
  SectionAdmission(const SectionAdmission &) = delete;
  SectionAdmission &operator=(const SectionAdmission &) = delete;

  // SUCCESS once admitted; REENTRANT or INVALID_HANDLE (recorded) when not.
  t4a_status status() const { return adm_->status(); }

  // For a step that may wait on the host while admitted (a seal at the
  // sealed-epoch limit waits for the oldest epoch's event and drops what
  // retires): leaves the section, holding references to what was borrowed;
  // resume_after_wait(the result) enters it again. False (nothing left)
  // when the section cannot pause (nested, or a gate window).
  bool pause_for_wait() {
    hold();
    return section_.pause();
  }
  void resume_after_wait(bool paused) {
    if (paused) section_.resume();
  }

private:
  // A reference on each borrowed object, once (no allocation: the
  // pointers are the ones given).
  void hold() {
    if (held_) return;
    for (size_t i = 0; i < n_first_; ++i) first_[i]->add_ref();
    for (uint32_t i = 0; i < n_more_; ++i) more_[i]->add_ref();
    held_ = true;
  }
  template <class F> void each_held(F f) {
    for (size_t i = 0; i < n_first_; ++i) f(first_[i]);
    for (uint32_t i = 0; i < n_more_; ++i) f(more_[i]);
  }
  // Out of line and cold: only a contended lock gets here.
  [[gnu::noinline, gnu::cold]] void wait(AdmissionLock &lock) {
    hold();
    adm_.reset(); // busy: it holds nothing
    bool paused = section_.pause();
    adm_.emplace(lock);
    if (paused) section_.resume();
  }
  [[gnu::noinline, gnu::cold]] void drop_held() {
    held_ = false;
    if (section_.pause()) {
      each_held([](Object *o) { o->drop_ref(); });
      section_.resume();
    } else {
      each_held([](Object *o) { retire(o); });
    }
  }

  BorrowSection &section_;
  Object *first_[k_first] = {};
  size_t n_first_ = 0;
  Object *const *more_;
  uint32_t n_more_;
  bool held_ = false; // a reference taken on each borrowed object
  std::optional<Admission> adm_;
};

} // namespace t4a::core
