// Makes a context current for the scope and restores the caller's context on
// every exit path. It changes nothing when the target is already
// current, so it never clears a context another runtime relies on.
#pragma once

#include <cuda.h>

#include "t4acuda.h"

namespace t4a::core {

class ContextScope {
public:
  ContextScope() = default;
  ~ContextScope();
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

  // Saves the current context and makes `target` current; records the
  // failure (with `what`) and changes nothing when that fails.
  // `record` false (teardown paths): a failure is logged, not recorded as
  // the thread's last error.
  t4a_status enter(CUcontext target, const char *what, bool record = true);
  // Restores the caller's context now (the destructor then does nothing).
  void restore();

private:
  CUcontext saved_ = nullptr;
  bool switched_ = false;
};

} // namespace t4a::core
