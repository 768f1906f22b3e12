/*
 * Helpers of the host tests that compile through NVRTC and look into the
 * disk cache: compile counters, tags that make each case's source (and so
 * its keys) its own, an entry's path in the sharded cache, a header file
 * to include. Include after <cmocka.h>; uses getpid() (<unistd.h>, POSIX).
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#ifndef T4A_TESTS_COMPILE_SUPPORT_H
#define T4A_TESTS_COMPILE_SUPPORT_H

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "t4acuda.h"
#include "test_assert.h"

static inline t4a_compile_stats stats_now(void) {
  t4a_compile_stats s = T4A_COMPILE_STATS_INIT;
  ASSERT_OK(t4a_compile_stats_get(&s));
  return s;
}

/* "<what>-<pid>-<serial>-<time>": distinct across cases and processes. */
static inline void unique_tag(char *buf, size_t capacity, const char *what) {
  static int serial;
  snprintf(buf, capacity, "%s-%ld-%d-%ld", what, (long)getpid(), ++serial,
           (long)time(NULL));
}

/* The path of `a`'s entry in the cache directory `dir`, in the sharded
 * layout: <dir>/<first two hex digits>/<key>.t4ac. */
static inline void entry_path(char *buf, size_t capacity, const char *dir,
                              t4a_artifact a) {
  char key[T4A_ARTIFACT_KEY_CAPACITY];
  ASSERT_OK(t4a_artifact_key(a, key, sizeof key, NULL));
  snprintf(buf, capacity, "%s/%.2s/%s.t4ac", dir, key, key);
}

/* Writes "#define VALUE <value>" to `path`. */
static inline void write_header(const char *path, int value) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "#define VALUE %d\n", value);
  assert_int_equal(fclose(f), 0);
}

#endif /* T4A_TESTS_COMPILE_SUPPORT_H */
