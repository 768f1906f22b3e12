/*
 * Installed-tree check (scripts/test release): a C11 program built against
 * the installed headers (t4acuda.h and the DLPack interchange header
 * t4acuda_dlpack.h) and library (CMake package or pkg-config). It must
 * link, load the installed library and agree with the header's version;
 * without a CUDA driver the driver query reports NO_DRIVER, with one it
 * succeeds: both are fine here, anything else is not.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include "t4acuda.h"
#include "t4acuda_dlpack.h"

#include <stdio.h>

int main(void) {
  int32_t count = -1;
  t4a_status s;
  if (t4a_version() != T4A_VERSION_NUMBER) {
    fprintf(stderr, "consumer_c: header %u, library %u\n",
            (unsigned)T4A_VERSION_NUMBER, (unsigned)t4a_version());
    return 1;
  }
  s = t4a_device_count(&count);
  if (s != T4A_SUCCESS && s != T4A_ERROR_NO_DRIVER) {
    fprintf(stderr, "consumer_c: t4a_device_count: %s\n", t4a_status_name(s));
    return 1;
  }
  /* The DLPack header's entry points link against the installed library
   * and refuse what they are not given (a null runtime, no tensor). */
  {
    t4a_runtime none = {T4A_NULL_ID};
    t4a_buffer out = {T4A_NULL_ID};
    s = t4a_buffer_from_dlpack(none, NULL, &out);
    if (s == T4A_SUCCESS || out.id != T4A_NULL_ID) {
      fprintf(stderr, "consumer_c: t4a_buffer_from_dlpack(null) gave %s\n",
              t4a_status_name(s));
      return 1;
    }
  }
  printf("consumer_c: t4acuda %s, t4a_device_count: %s\n", t4a_version_string(),
         t4a_status_name(s));
  return 0;
}
