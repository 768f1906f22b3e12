// Compiled with -fno-exceptions: only the non-throwing facade exists.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include "t4acuda.hpp"

#if T4A_HPP_EXCEPTIONS
#error "the facade must hide its throwing methods without exceptions"
#endif

t4a_status facade_noexcept_create(t4a::Runtime &out) {
  int32_t count = 0;
  t4a_status s = t4a::device_count(count, std::nothrow);
  if (s != T4A_ERROR_NO_DRIVER) return T4A_ERROR_INTERNAL;
  return t4a::Runtime::create(t4a::RuntimeOptions{}, out, std::nothrow);
}
