#include "core/context_scope.hpp"

#include "core/error.hpp"
#include "core/log.hpp"

namespace t4a::core {

using namespace t4a::driver;

t4a_status ContextScope::enter(CUcontext target, const char *what) {
  CUcontext current = nullptr;
  if (auto r = cu::ctx_get_current(&current); !r)
    return fail_driver(r, "%s: reading the current context", what);
  if (current == target) return T4A_SUCCESS;
  if (auto r = cu::ctx_set_current(target); !r)
    return fail_driver(r, "%s: making the runtime's context current", what);
  saved_ = current;
  switched_ = true;
  return T4A_SUCCESS;
}

ContextScope::~ContextScope() { restore(); }

void ContextScope::restore() {
  if (!switched_) return;
  switched_ = false;
  if (auto r = cu::ctx_set_current(saved_); !r)
    logf(T4A_LOG_ERROR,
         "could not restore the caller's current context %p: %s returned %s",
         static_cast<void *>(saved_), r.entry, describe(r.code).c_str());
}

} // namespace t4a::core
