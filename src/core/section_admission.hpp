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
// operation and enters the section again (resume). The references live
// until this object is destroyed, after admission was given back, and keep
// the borrowed objects usable whatever was released meanwhile. A section
// that cannot pause (nested in another, or a gate window) waits inside it,
// as before.
//
// REENTRANT and a closed runtime (INVALID_HANDLE) are reported as by
// Admission; the testing admission hook (T4A_TESTING) runs before the try
// and again before the wait.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>

#include "core/admission.hpp"
#include "core/borrow.hpp"
#include "core/object.hpp"

namespace t4a::core {

class SectionAdmission {
public:
  // `borrowed`, then `more[0..n_more-1]`: the objects the caller borrowed
  // in `section` and uses under admission (referenced only when the lock
  // is busy).
  SectionAdmission(BorrowSection &section, AdmissionLock &lock,
                   std::initializer_list<Object *> borrowed,
                   Object *const *more = nullptr, uint32_t n_more = 0) {
    adm_.emplace(lock, Admission::Try);
    if (adm_->busy()) [[unlikely]]
      wait(section, lock, borrowed, more, n_more);
  }
  SectionAdmission(const SectionAdmission &) = delete;
  SectionAdmission &operator=(const SectionAdmission &) = delete;

  // SUCCESS once admitted; REENTRANT or INVALID_HANDLE (recorded) when not.
  t4a_status status() const { return adm_->status(); }

private:
  // Out of line and cold: only a contended lock gets here. May throw
  // std::bad_alloc before anything is held (the references' array).
  [[gnu::noinline, gnu::cold]] void
  wait(BorrowSection &section, AdmissionLock &lock,
       std::initializer_list<Object *> borrowed, Object *const *more,
       uint32_t n_more) {
    held_.reset(new Ref<Object>[borrowed.size() + n_more]);
    size_t j = 0;
    for (Object *o : borrowed) held_[j++] = Ref<Object>(o);
    for (uint32_t i = 0; i < n_more; ++i) held_[j++] = Ref<Object>(more[i]);
    adm_.reset(); // busy: it holds nothing
    bool paused = section.pause();
    adm_.emplace(lock);
    if (paused) section.resume();
  }

  // Declared first, destroyed last: the references go after admission.
  // Empty on the warm path (its destruction is one test).
  std::unique_ptr<Ref<Object>[]> held_;
  std::optional<Admission> adm_;
};

} // namespace t4a::core
