/*
 * Assertions shared by the cmocka suites that call t4acuda: a failing
 * status reports the call, both status names and the library's last error
 * message. Include after <cmocka.h>.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#ifndef T4A_TESTS_TEST_ASSERT_H
#define T4A_TESTS_TEST_ASSERT_H

#include <string.h>

#include "t4acuda.h"

/* The calling thread's last error message (a per-thread buffer). */
static inline const char *last_message(void) {
  static _Thread_local char buf[4096];
  if (t4a_last_error_message(buf, sizeof buf, NULL) != T4A_SUCCESS)
    buf[0] = '\0';
  return buf;
}

#define ASSERT_STATUS(call, want)                                              \
  do {                                                                         \
    t4a_status got_ = (call);                                                  \
    if (got_ != (want))                                                        \
      fail_msg("%s returned %s, expected %s; last error: %s", #call,           \
               t4a_status_name(got_), t4a_status_name(want), last_message());  \
  } while (0)

#define ASSERT_OK(call) ASSERT_STATUS(call, T4A_SUCCESS)

#define ASSERT_MESSAGE_HAS(needle)                                             \
  do {                                                                         \
    const char *m_ = last_message();                                           \
    if (strstr(m_, (needle)) == NULL)                                          \
      fail_msg("last error \"%s\" does not mention \"%s\"", m_, (needle));     \
  } while (0)

/* The test (cmocka's skip()) is skipped when NVRTC's major version is
 * newer than the driver's: nothing NVRTC makes would load (t4a_compile
 * refuses with "no loadable target"). The host lane meets this when it runs
 * the fake driver as CUDA 12.x with NVRTC 13. */
#define SKIP_IF_NVRTC_OUTRUNS_DRIVER()                                         \
  do {                                                                         \
    int32_t d_ = 0, major_ = 0, minor_ = 0;                                    \
    if (t4a_driver_version(&d_) == T4A_SUCCESS &&                              \
        t4a_nvrtc_version(&major_, &minor_) == T4A_SUCCESS &&                  \
        d_ / 1000 < major_) {                                                  \
      print_message("SKIPPED: NVRTC %d.%d makes nothing a CUDA %d.%d driver "  \
                    "loads\n",                                                 \
                    major_, minor_, d_ / 1000, d_ % 1000 / 10);                \
      skip();                                                                  \
    }                                                                          \
  } while (0)

#endif
