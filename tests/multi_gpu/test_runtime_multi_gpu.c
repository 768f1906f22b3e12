/*
 * Multi-GPU lane (two or more devices): runtimes of different devices have
 * different contexts; the peer-access matrix equals the driver's; creating
 * and destroying runtimes of one device leaves another device's context
 * current.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_support.h"
#include "t4acuda.h"
#include "test_assert.h"

static int g_devices;

/* Runtimes created by the running test; teardown destroys those a failed
 * assertion left behind (an already destroyed one is a harmless
 * INVALID_HANDLE: ids are never reused). */
#define MAX_TRACKED 256
static t4a_runtime g_tracked[MAX_TRACKED];
static int g_ntracked;

static t4a_runtime create_on(int ordinal) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  o.device_ordinal = ordinal;
  t4a_runtime rt = {T4A_NULL_ID};
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  if (g_ntracked < MAX_TRACKED) g_tracked[g_ntracked++] = rt;
  return rt;
}

static t4a_runtime_info info_of(t4a_runtime rt) {
  t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
  ASSERT_OK(t4a_runtime_info_get(rt, &info));
  return info;
}

static int setup(void **state) {
  (void)state;
  gpu_set_current(NULL);
  t4a_last_error_clear();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (int i = 0; i < g_ntracked; ++i) (void)t4a_runtime_destroy(g_tracked[i]);
  g_ntracked = 0;
  gpu_set_current(NULL);
  return 0;
}

/* Runtimes of devices 0 and 1 each hold their own device's primary
 * context. */
static void test_contexts_differ(void **state) {
  (void)state;
  CUcontext p0 = gpu_primary_retain(0);
  CUcontext p1 = gpu_primary_retain(1);
  t4a_runtime r0 = create_on(0);
  t4a_runtime r1 = create_on(1);
  t4a_runtime_info i0 = info_of(r0);
  t4a_runtime_info i1 = info_of(r1);
  assert_int_equal(i0.device_ordinal, 0);
  assert_int_equal(i1.device_ordinal, 1);
  assert_ptr_not_equal(i0.context, i1.context);
  assert_ptr_equal(i0.context, p0);
  assert_ptr_equal(i1.context, p1);
  assert_ptr_not_equal(i0.stream, i1.stream);
  assert_ptr_not_equal(i0.memory_pool, i1.memory_pool);
  assert_true(i0.domain_id != i1.domain_id);
  ASSERT_OK(t4a_runtime_synchronize(r0));
  ASSERT_OK(t4a_runtime_synchronize(r1));
  ASSERT_OK(t4a_runtime_trim(r0));
  ASSERT_OK(t4a_runtime_trim(r1));
  ASSERT_OK(t4a_runtime_destroy(r0));
  ASSERT_OK(t4a_runtime_destroy(r1));
  ASSERT_CURRENT(NULL);
  gpu_primary_release(0);
  gpu_primary_release(1);
}

/* The peer matrix over all pairs equals cuDeviceCanAccessPeer; a device
 * and itself give 0; ordinals out of range are NO_DEVICE. */
static void test_peer_matrix(void **state) {
  (void)state;
  int pairs_with_access = 0;
  for (int i = 0; i < g_devices; ++i) {
    for (int j = 0; j < g_devices; ++j) {
      int32_t can = -1;
      ASSERT_OK(t4a_device_can_access_peer(i, j, &can));
      if (i == j) {
        assert_int_equal(can, 0);
        continue;
      }
      int want = -1;
      assert_int_equal(
          gpu_cu.cuDeviceCanAccessPeer(&want, gpu_device(i), gpu_device(j)),
          CUDA_SUCCESS);
      if (can != want)
        fail_msg("t4a_device_can_access_peer(%d, %d) = %d; the driver says "
                 "%d",
                 i, j, (int)can, want);
      pairs_with_access += can;
    }
  }
  print_message("peer access: %d of %d ordered pairs\n", pairs_with_access,
                g_devices * (g_devices - 1));
  int32_t can = 7;
  ASSERT_STATUS(t4a_device_can_access_peer(0, g_devices, &can),
                T4A_ERROR_NO_DEVICE);
  ASSERT_STATUS(t4a_device_can_access_peer(g_devices, 0, &can),
                T4A_ERROR_NO_DEVICE);
  assert_int_equal(can, 7); /* untouched */
}

/* With device 1's runtime context current, creating, using and destroying
 * a runtime on device 0 leaves device 1's context current and usable. */
static void test_other_device_keeps_current(void **state) {
  (void)state;
  t4a_runtime r1 = create_on(1);
  CUcontext c1 = (CUcontext)info_of(r1).context;
  gpu_set_current(c1);
  t4a_runtime r0 = create_on(0);
  ASSERT_CURRENT(c1);
  CUcontext c0 = (CUcontext)info_of(r0).context;
  assert_ptr_not_equal(c0, c1);
  ASSERT_OK(t4a_runtime_synchronize(r0));
  ASSERT_CURRENT(c1);
  ASSERT_OK(t4a_runtime_trim(r0));
  ASSERT_CURRENT(c1);
  /* r0 is the last holder of device 0's primary context. */
  ASSERT_OK(t4a_runtime_destroy(r0));
  ASSERT_CURRENT(c1);
  assert_int_equal(gpu_alloc_free(1 << 20), CUDA_SUCCESS);
  ASSERT_OK(t4a_runtime_synchronize(r1));
  ASSERT_CURRENT(c1);
  gpu_set_current(NULL);
  ASSERT_OK(t4a_runtime_destroy(r1));
  ASSERT_CURRENT(NULL);
}

/* Destroying device 1's runtime while device 0's context is current leaves
 * device 0's context current and usable. */
static void test_destroy_other_device_keeps_current(void **state) {
  (void)state;
  t4a_runtime r0 = create_on(0);
  t4a_runtime r1 = create_on(1);
  CUcontext c0 = (CUcontext)info_of(r0).context;
  gpu_set_current(c0);
  ASSERT_OK(t4a_runtime_synchronize(r1));
  ASSERT_CURRENT(c0);
  ASSERT_OK(t4a_runtime_destroy(r1));
  ASSERT_CURRENT(c0);
  assert_int_equal(gpu_primary_active(1), 0);
  assert_int_equal(gpu_alloc_free(1 << 20), CUDA_SUCCESS);
  ASSERT_OK(t4a_runtime_synchronize(r0));
  /* And the last runtime of device 0, destroyed while its own context is
   * current, leaves that handle current. */
  ASSERT_OK(t4a_runtime_destroy(r0));
  ASSERT_CURRENT(c0);
  gpu_set_current(NULL);
}

/* Every device at once, each created with a different device's context
 * current; destroyed in reverse with yet another one current. */
static void test_all_devices_rotating_current(void **state) {
  (void)state;
  enum { MAX = 64 };
  int n = g_devices < MAX ? g_devices : MAX;
  CUcontext primary[MAX];
  t4a_runtime rts[MAX];
  for (int i = 0; i < n; ++i) primary[i] = gpu_primary_retain(i);
  for (int i = 0; i < n; ++i) {
    CUcontext other = primary[(i + 1) % n];
    gpu_set_current(other);
    rts[i] = create_on(i);
    ASSERT_CURRENT(other);
    assert_ptr_equal(info_of(rts[i]).context, primary[i]);
    ASSERT_OK(t4a_runtime_synchronize(rts[i]));
    ASSERT_CURRENT(other);
  }
  for (int i = n - 1; i >= 0; --i) {
    CUcontext other = primary[(i + n - 1) % n];
    gpu_set_current(other);
    ASSERT_OK(t4a_runtime_destroy(rts[i]));
    ASSERT_CURRENT(other);
  }
  gpu_set_current(NULL);
  for (int i = 0; i < n; ++i) gpu_primary_release(i);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  g_devices = gpu_lane_require(2);
  const struct CMUnitTest tests[] = {
      T(test_contexts_differ),
      T(test_peer_matrix),
      T(test_other_device_keeps_current),
      T(test_destroy_other_device_keeps_current),
      T(test_all_devices_rotating_current),
  };
  int failed =
      cmocka_run_group_tests_name("runtime_multi_gpu", tests, NULL, NULL);
  return failed == 0 ? 0 : 1; /* never 77, which ctest reads as SKIPPED */
}
