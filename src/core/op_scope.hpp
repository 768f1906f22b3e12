// The prologue of every enqueuing operation: admission, a check
// that the runtime is not broken and the runtime's context made
// current for the operation and restored after.
#pragma once

#include "core/admission.hpp"
#include "core/context_scope.hpp"
#include "core/runtime.hpp"

namespace t4a::core {

class OpScope {
public:
  // With `uncapturable` (the operation's name): T4A_ERROR_CAPTURING while
  // the runtime captures, checked under admission (a check before it
  // races a t4a_capture_begin of another thread).
  OpScope(Runtime &rt, const char *what, const char *uncapturable = nullptr)
      : adm_(rt.admission()) {
    status_ = adm_.status();
    if (status_ == T4A_SUCCESS) status_ = rt.check_usable();
    if (status_ == T4A_SUCCESS && uncapturable != nullptr)
      status_ = refuse_capturing(rt, uncapturable);
    if (status_ == T4A_SUCCESS) status_ = ctx_.enter(rt.context(), what);
  }
  t4a_status status() const { return status_; }

private:
  Admission adm_;
  ContextScope ctx_;
  t4a_status status_;
};

} // namespace t4a::core
