// The entry guard every extern "C" entry point goes through (T4A_ENTRY):
// it runs the entry point's body, turns any C++ exception into a status
// (std::bad_alloc -> OUT_OF_HOST_MEMORY, anything else -> INTERNAL) and
// finishes a failure by stamping the last error with the entry point's
// name. Nothing is thrown across the C boundary.
#pragma once

#include <exception>
#include <new>

#include "core/error.hpp"

namespace t4a::capi {

template <class F> t4a_status guarded(const char *entry, F &&body) noexcept {
  t4a_status s;
  try {
    s = body();
  } catch (const std::bad_alloc &) {
    s = core::fail_quietly(T4A_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  } catch (const std::exception &e) {
    s = core::fail_quietly(T4A_ERROR_INTERNAL, e.what());
  } catch (...) {
    s = core::fail_quietly(T4A_ERROR_INTERNAL, "unknown exception");
  }
  if (s != T4A_SUCCESS && s != T4A_NOT_READY) [[unlikely]]
    core::finish_failure(entry, s);
  return s;
}

#define T4A_ENTRY(...)                                                         \
  ::t4a::capi::guarded(__func__, [&]() -> t4a_status __VA_ARGS__)

} // namespace t4a::capi
