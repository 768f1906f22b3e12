// Driver calls that name a stream run in that stream's context: the hot
// paths (stream-ordered allocation and free, zeroing, kernel launches) do
// not make the runtime's context current first, which would cost a driver
// call each way. Should a driver still answer CUDA_ERROR_INVALID_CONTEXT,
// the call is repeated once with the runtime's context current (and the
// caller's restored after).
#pragma once

#include "core/context_scope.hpp"
#include "core/runtime.hpp"

namespace t4a::core {

template <class F> driver::DrvResult in_stream_context(Runtime &rt, F call) {
  driver::DrvResult r = call();
  if (r.code != CUDA_ERROR_INVALID_CONTEXT) return r;
  ContextScope scope;
  if (scope.enter(rt.context(), "retrying with the runtime's context", false) !=
      T4A_SUCCESS)
    return r;
  return call();
}

} // namespace t4a::core
