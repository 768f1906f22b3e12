#include "core/context_scope.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "driver/result_class.hpp"

namespace t4a::core {

using namespace t4a::driver;

t4a_status ContextScope::enter(CUcontext target, const char *what,
                               bool record) {
  CUcontext current = nullptr;
  DrvResult r = cu::ctx_get_current(&current);
  if (r && current == target) return T4A_SUCCESS;
  if (r) r = cu::ctx_set_current(target);
  if (r) {
    saved_ = current;
    switched_ = true;
    return T4A_SUCCESS;
  }
  if (record)
    return fail_driver(r, "%s: making the runtime's context current", what);
  logf(T4A_LOG_WARN, "%s: making the runtime's context current: %s returned %s",
       what, r.entry, describe(r.code).c_str());
  return status_for(r.code);
}

ContextScope::~ContextScope() { restore(); }

void ContextScope::restore() {
  if (!switched_) return;
  switched_ = false;
  auto r = cu::ctx_set_current(saved_);
  // A driver already shut down (process exit with threads still inside the
  // library) has no current context left to restore: nothing to report.
  if (!r && !is_driver_gone(r.code))
    logf(T4A_LOG_ERROR,
         "could not restore the caller's current context %p: %s returned %s",
         static_cast<void *>(saved_), r.entry, describe(r.code).c_str());
}

} // namespace t4a::core
