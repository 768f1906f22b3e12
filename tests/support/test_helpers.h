/*
 * Calls the cmocka suites of the host lane make again and again, each
 * asserted to succeed (ASSERT_OK, test_assert.h): a runtime on a device,
 * and the stats and infos read back. Include after <cmocka.h>.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#ifndef T4A_TESTS_TEST_HELPERS_H
#define T4A_TESTS_TEST_HELPERS_H

#include "t4acuda.h"
#include "test_assert.h"

/* A runtime on device `ordinal`, other options the defaults. */
static inline t4a_runtime runtime_on(int32_t ordinal) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime rt;
  o.device_ordinal = ordinal;
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  return rt;
}

static inline t4a_runtime_stats stats_of(t4a_runtime rt) {
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(rt, &st));
  return st;
}

static inline t4a_runtime_info runtime_info(t4a_runtime rt) {
  t4a_runtime_info i = T4A_RUNTIME_INFO_INIT;
  ASSERT_OK(t4a_runtime_info_get(rt, &i));
  return i;
}

static inline t4a_buffer_info buffer_info(t4a_buffer b) {
  t4a_buffer_info i = T4A_BUFFER_INFO_INIT;
  ASSERT_OK(t4a_buffer_info_get(b, &i));
  return i;
}

static inline t4a_process_stats process_stats(void) {
  t4a_process_stats ps = T4A_PROCESS_STATS_INIT;
  ASSERT_OK(t4a_process_stats_get(&ps));
  return ps;
}

#endif /* T4A_TESTS_TEST_HELPERS_H */
