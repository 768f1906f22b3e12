/*
 * Host lane: t4acuda calls that fail during process exit, after the main
 * thread's C++ thread-local destructors have run (exit() runs them before
 * atexit handlers), must still record their error safely: the last-error
 * record must not live in a destroyed thread_local. Run under ASan this
 * catches a write to freed memory; without it, a crash or heap corruption.
 * The process exits 0 only if every call behaved.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t4acuda.h"

static int g_bad = 0;

static void at_exit_calls(void) {
  for (int i = 0; i < 3; ++i) {
    if (t4a_device_count(NULL) != T4A_ERROR_INVALID_ARGUMENT) g_bad = 1;
    char buf[256];
    size_t needed = 0;
    if (t4a_last_error_message(buf, sizeof buf, &needed) != T4A_SUCCESS ||
        strstr(buf, "t4a_device_count") == NULL)
      g_bad = 1;
    t4a_runtime forged = {0x0100000100000009ull};
    if (t4a_runtime_destroy(forged) != T4A_ERROR_INVALID_HANDLE) g_bad = 1;
  }
  if (g_bad) {
    fprintf(stderr, "test_exit: a call at exit misbehaved\n");
    _Exit(1);
  }
  printf("1 passed, 0 failed\n");
  fflush(stdout);
}

int main(void) {
  /* A failure now puts a heap-allocated message in this thread's record. */
  if (t4a_device_count(NULL) != T4A_ERROR_INVALID_ARGUMENT) return 1;
  if (atexit(at_exit_calls) != 0) return 1;
  return 0;
}
