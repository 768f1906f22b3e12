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

#endif
