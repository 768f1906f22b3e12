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
  OpScope(Runtime &rt, const char *what) : adm_(rt.admission()) {
    status_ = adm_.status();
    if (status_ == T4A_SUCCESS) status_ = rt.check_usable();
    if (status_ == T4A_SUCCESS) status_ = ctx_.enter(rt.context(), what);
  }
  t4a_status status() const { return status_; }

private:
  Admission adm_;
  ContextScope ctx_;
  t4a_status status_;
};

} // namespace t4a::core
