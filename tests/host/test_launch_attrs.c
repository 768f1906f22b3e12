/*
 * Launch attributes on the fake driver (issue 28): t4a_launch_ex with
 * thread block clusters and programmatic dependent launch, kernels compiled
 * with __cluster_dims__, t4a_kernel_cluster_occupancy, graph capture of an
 * attributed launch and the runtime's stream priority. Every rejection is
 * checked to name the field and the values and to enqueue nothing.
 *
 * Modes (argv[1]; the driver is loaded once per process, so each runs in
 * its own ctest): none, the main suite; "cc80", the devices report compute
 * capability 8.0 (FAKE_CUDA_CC): clusters and programmatic launches are
 * UNSUPPORTED naming 8.0 and 9.0; "no_ex", a driver without
 * cuLaunchKernelEx and the cluster occupancy entry points (FAKE_CUDA_HIDE):
 * UNSUPPORTED naming the entry point and the CUDA version it needs, while
 * plain launches still work. (A driver older than CUDA 12.0 is refused as a
 * whole: NO_DRIVER naming both versions, test_driver_versions.)
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L
#define T4A_EXPERIMENTAL 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "t4acuda.h"
#include "test_assert.h"

typedef unsigned long (*last_ex_fn)(unsigned out[5]);
typedef unsigned long (*launch_count_fn)(int cooperative);
typedef void (*cluster_dims_fn)(int, int, int, int);

static unsigned long ex_launches(unsigned out[5]) {
  return ((last_ex_fn)fake_symbol("fake_cuda_last_launch_ex"))(out);
}
static unsigned long plain_launches(void) {
  return ((launch_count_fn)fake_symbol("fake_cuda_launch_count"))(0);
}
static void set_cluster_dims(int x, int y, int z, int must) {
  ((cluster_dims_fn)fake_symbol("fake_cuda_set_cluster_dims"))(x, y, z, must);
}
static int non_portable_set(void) {
  return ((int (*)(void))fake_symbol("fake_cuda_non_portable"))();
}

typedef struct setup {
  t4a_runtime rt;
  t4a_module module;
  t4a_kernel kernel;
} setup;

static setup make(void) {
  setup s;
  ASSERT_OK(t4a_runtime_create(NULL, &s.rt));
  unsigned char image[16] = {7};
  ASSERT_OK(t4a_module_load_data(s.rt, image, sizeof image, &s.module));
  ASSERT_OK(t4a_kernel_get(s.module, "k", &s.kernel));
  return s;
}

static void drop(setup *s) {
  ASSERT_OK(t4a_kernel_release(s->kernel));
  ASSERT_OK(t4a_module_release(s->module));
  ASSERT_OK(t4a_runtime_destroy(s->rt));
}

static t4a_launch_desc desc_of(t4a_kernel k, uint32_t grid_x) {
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = k;
  d.grid[0] = grid_x;
  d.block[0] = 128;
  return d;
}

static uint64_t launches_counted(t4a_runtime rt) {
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(rt, &st));
  return st.launches;
}

/* A rejected launch: `want`, a message naming `needle`, nothing enqueued
 * (neither entry point called) and nothing counted. */
static void expect_refused(const setup *s, const t4a_launch_desc *d,
                           const t4a_launch_attrs *a, t4a_status want,
                           const char *needle) {
  unsigned long ex0 = ex_launches(NULL), plain0 = plain_launches();
  uint64_t counted0 = launches_counted(s->rt);
  ASSERT_STATUS(t4a_launch_ex(s->rt, d, a), want);
  ASSERT_MESSAGE_HAS(needle);
  assert_int_equal(ex_launches(NULL), ex0);
  assert_int_equal(plain_launches(), plain0);
  assert_int_equal(launches_counted(s->rt), counted0);
}

static void test_cluster_launch_goes_through_launch_ex(void **state) {
  (void)state;
  setup s = make();
  t4a_launch_desc d = desc_of(s.kernel, 8);
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 2;
  unsigned long ex0 = ex_launches(NULL), plain0 = plain_launches();
  ASSERT_OK(t4a_launch_ex(s.rt, &d, &a));
  unsigned got[5];
  assert_int_equal(ex_launches(got), ex0 + 1);
  assert_int_equal(plain_launches(), plain0);
  unsigned want[5] = {1, 2, 1, 1, 0}; /* one attribute: 2 x 1 x 1 */
  assert_memory_equal(got, want, sizeof want);
  assert_int_equal(launches_counted(s.rt), 1);
  /* y and z 0 mean 1; a 3-D cluster is passed as given. */
  d.grid[1] = 4;
  a.cluster[0] = 2, a.cluster[1] = 2, a.cluster[2] = 0;
  ASSERT_OK(t4a_launch_ex(s.rt, &d, &a));
  ex_launches(got);
  assert_int_equal(got[1], 2);
  assert_int_equal(got[2], 2);
  assert_int_equal(got[3], 1);
  drop(&s);
}

static void test_no_attributes_is_a_plain_launch(void **state) {
  (void)state;
  setup s = make();
  t4a_launch_desc d = desc_of(s.kernel, 3);
  t4a_launch_attrs zero = T4A_LAUNCH_ATTRS_INIT;
  unsigned long ex0 = ex_launches(NULL), plain0 = plain_launches();
  ASSERT_OK(t4a_launch_ex(s.rt, &d, NULL));
  ASSERT_OK(t4a_launch_ex(s.rt, &d, &zero));
  ASSERT_OK(t4a_launch(s.rt, &d));
  assert_int_equal(ex_launches(NULL), ex0);
  assert_int_equal(plain_launches(), plain0 + 3);
  drop(&s);
}

static void test_programmatic_launch(void **state) {
  (void)state;
  setup s = make();
  t4a_launch_desc d = desc_of(s.kernel, 3);
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.flags = T4A_LAUNCH_ATTR_PROGRAMMATIC;
  ASSERT_OK(t4a_launch_ex(s.rt, &d, &a));
  unsigned got[5];
  ex_launches(got);
  unsigned want[5] = {1, 0, 0, 0, 1}; /* programmatic alone */
  assert_memory_equal(got, want, sizeof want);
  a.cluster[0] = 3;
  ASSERT_OK(t4a_launch_ex(s.rt, &d, &a));
  ex_launches(got);
  unsigned both[5] = {2, 3, 1, 1, 1};
  assert_memory_equal(got, both, sizeof both);
  drop(&s);
}

static void test_cluster_shape_refusals(void **state) {
  (void)state;
  setup s = make();
  t4a_launch_desc d = desc_of(s.kernel, 3);
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 2;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT,
                 "grid[0] (x) is 3, not a multiple of 2");
  d.grid[0] = 4, d.grid[2] = 3;
  a.cluster[2] = 2;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT,
                 "grid[2] (z) is 3, not a multiple of 2");
  d.grid[2] = 0;
  a.cluster[0] = 0, a.cluster[1] = 2, a.cluster[2] = 0;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT,
                 "cluster[0] (x) must be set");
  /* Above the portable maximum without the opt-in. */
  d = desc_of(s.kernel, 16);
  a = (t4a_launch_attrs)T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 16;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT,
                 "16 blocks; the portable maximum is 8");
  assert_int_equal(non_portable_set(), 0);
  /* Bad fields. */
  a = (t4a_launch_attrs)T4A_LAUNCH_ATTRS_INIT;
  a.flags = 0x4;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT, "attrs->flags is 0x4");
  a.flags = 0;
  a.reserved0 = 1;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT,
                 "attrs->reserved0 is 1");
  a.reserved0 = 0;
  a.flags = T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT,
                 "but there is no cluster");
  /* struct_size: inside a field, and a larger size with a non-zero tail. */
  a = (t4a_launch_attrs)T4A_LAUNCH_ATTRS_INIT;
  a.struct_size = 6;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT, "attrs");
  struct {
    t4a_launch_attrs a;
    uint32_t tail;
  } big;
  memset(&big, 0, sizeof big);
  big.a.struct_size = sizeof big;
  big.tail = 1;
  expect_refused(&s, &d, &big.a, T4A_ERROR_VERSION_MISMATCH, "attrs");
  /* The descriptor is still checked first. */
  d.grid[0] = 0;
  a = (t4a_launch_attrs)T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 2;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT, "desc->grid[0]");
  drop(&s);
}

static void test_non_portable_cluster(void **state) {
  (void)state;
  setup s = make();
  t4a_launch_desc d = desc_of(s.kernel, 32);
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 16;
  a.flags = T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE;
  ASSERT_OK(t4a_launch_ex(s.rt, &d, &a));
  assert_int_equal(non_portable_set(), 1);
  unsigned got[5];
  ex_launches(got);
  assert_int_equal(got[1], 16);
  /* Above what the device allows for the shape (the fake: 16). */
  a.cluster[0] = 32;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT,
                 "allows at most 16 blocks per cluster");
  drop(&s);
  set_cluster_dims(0, 0, 0, 0); /* clears the non-portable attribute */
}

static void test_cooperative_is_not_combined(void **state) {
  (void)state;
  setup s = make();
  t4a_launch_desc d = desc_of(s.kernel, 4);
  d.flags = T4A_LAUNCH_COOPERATIVE;
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 2;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT,
                 "T4A_LAUNCH_COOPERATIVE with a thread block cluster");
  a.cluster[0] = 0;
  a.flags = T4A_LAUNCH_ATTR_PROGRAMMATIC;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT,
                 "T4A_LAUNCH_COOPERATIVE with T4A_LAUNCH_ATTR_PROGRAMMATIC");
  drop(&s);
}

static void test_compiled_cluster_dims(void **state) {
  (void)state;
  set_cluster_dims(2, 1, 1, 0);
  setup s = make(); /* the kernel reads its attributes at lookup */
  t4a_launch_desc d = desc_of(s.kernel, 3);
  unsigned long ex0 = ex_launches(NULL), plain0 = plain_launches();
  ASSERT_STATUS(t4a_launch(s.rt, &d), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("grid[0] (x) is 3, not a multiple of 2");
  assert_int_equal(plain_launches(), plain0);
  /* A valid grid is launched as it is: the driver has the dimensions. */
  d.grid[0] = 4;
  ASSERT_OK(t4a_launch(s.rt, &d));
  assert_int_equal(plain_launches(), plain0 + 1);
  assert_int_equal(ex_launches(NULL), ex0);
  /* Attributes must match the compiled dimensions. */
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 4;
  expect_refused(&s, &d, &a, T4A_ERROR_INVALID_ARGUMENT,
                 "compiled with __cluster_dims__(2, 1, 1)");
  /* Equal ones are checked and not passed: a plain launch, as compiled. */
  a.cluster[0] = 2;
  ASSERT_OK(t4a_launch_ex(s.rt, &d, &a));
  assert_int_equal(ex_launches(NULL), ex0);
  assert_int_equal(plain_launches(), plain0 + 2);
  /* Occupancy of the compiled cluster: 4 SMs x 16 blocks of 128 threads
   * / 2. */
  t4a_cluster_occupancy o = T4A_CLUSTER_OCCUPANCY_INIT;
  ASSERT_OK(t4a_kernel_cluster_occupancy(&d, NULL, &o));
  assert_int_equal(o.max_active_clusters, 32);
  drop(&s);
  /* A kernel that must have a cluster. */
  set_cluster_dims(0, 0, 0, 1);
  s = make();
  d = desc_of(s.kernel, 4);
  ASSERT_STATUS(t4a_launch(s.rt, &d), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("must be launched with a cluster");
  a = (t4a_launch_attrs)T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 2;
  ASSERT_OK(t4a_launch_ex(s.rt, &d, &a));
  drop(&s);
  set_cluster_dims(0, 0, 0, 0);
}

static void test_cluster_occupancy(void **state) {
  (void)state;
  setup s = make();
  t4a_launch_desc d = desc_of(s.kernel, 8);
  d.block[0] = 256; /* the fake: 8 blocks per SM, 4 SMs */
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 2;
  t4a_cluster_occupancy o = T4A_CLUSTER_OCCUPANCY_INIT;
  ASSERT_OK(t4a_kernel_cluster_occupancy(&d, &a, &o));
  assert_int_equal(o.max_active_clusters, 16);
  assert_int_equal(o.max_cluster_size, 8);
  /* No cluster: single-block clusters. */
  ASSERT_OK(t4a_kernel_cluster_occupancy(&d, NULL, &o));
  assert_int_equal(o.max_active_clusters, 32);
  /* The non-portable opt-in raises the largest cluster. */
  d.grid[0] = 16;
  a.cluster[0] = 16;
  a.flags = T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE;
  ASSERT_OK(t4a_kernel_cluster_occupancy(&d, &a, &o));
  assert_int_equal(o.max_cluster_size, 16);
  assert_int_equal(o.max_active_clusters, 2);
  /* Checked as a launch is; out written only on success. */
  a.cluster[0] = 3;
  o.max_active_clusters = -7;
  ASSERT_STATUS(t4a_kernel_cluster_occupancy(&d, &a, &o),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("not a multiple of 3");
  assert_int_equal(o.max_active_clusters, -7);
  ASSERT_STATUS(t4a_kernel_cluster_occupancy(NULL, NULL, &o),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(t4a_kernel_cluster_occupancy(&d, NULL, NULL),
                T4A_ERROR_INVALID_ARGUMENT);
  drop(&s);
  set_cluster_dims(0, 0, 0, 0);
}

static void test_capture_keeps_attributes(void **state) {
  (void)state;
  setup s = make();
  t4a_launch_desc d = desc_of(s.kernel, 4);
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 2;
  a.flags = T4A_LAUNCH_ATTR_PROGRAMMATIC;
  unsigned long ex0 = ex_launches(NULL);
  ASSERT_OK(t4a_capture_begin(s.rt, NULL));
  ASSERT_OK(t4a_launch_ex(s.rt, &d, &a));
  ASSERT_OK(t4a_launch_ex(s.rt, &d, &a));
  t4a_graph g = {0};
  ASSERT_OK(t4a_capture_end(s.rt, &g));
  /* Captured through cuLaunchKernelEx (the fake records nothing then). */
  assert_int_equal(ex_launches(NULL), ex0);
  t4a_graph_info info = T4A_GRAPH_INFO_INIT;
  ASSERT_OK(t4a_graph_info_get(g, &info));
  assert_int_equal(info.node_count, 2);
  ASSERT_OK(t4a_graph_launch(s.rt, g));
  ASSERT_OK(t4a_runtime_synchronize(s.rt));
  ASSERT_OK(t4a_graph_release(g));
  drop(&s);
}

static void test_stream_priority(void **state) {
  (void)state;
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime rt = {0};
  t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
  /* The default. */
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  ASSERT_OK(t4a_runtime_info_get(rt, &info));
  assert_int_equal(info.stream_priority, 0);
  ASSERT_OK(t4a_runtime_destroy(rt));
  /* Within the range (the fake: 0 down to -5), reported back. */
  o.stream_priority = -3;
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  ASSERT_OK(t4a_runtime_info_get(rt, &info));
  assert_int_equal(info.stream_priority, -3);
  ASSERT_OK(t4a_runtime_destroy(rt));
  /* Outside: refused, naming the range; nothing created. */
  int streams = fake_live("streams");
  int32_t bad[2] = {1, -6};
  for (int i = 0; i < 2; ++i) {
    o.stream_priority = bad[i];
    rt.id = 99;
    ASSERT_STATUS(t4a_runtime_create(&o, &rt), T4A_ERROR_INVALID_ARGUMENT);
    ASSERT_MESSAGE_HAS("allows 0 (the default, lowest) down to -5");
    assert_int_equal(rt.id, 99);
    assert_int_equal(fake_live("streams"), streams);
  }
  o.stream_priority = 0;
  o.reserved3 = 1;
  ASSERT_STATUS(t4a_runtime_create(&o, &rt), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("options->reserved3 is 1");
}

/* Mode cc80: a device of compute capability 8.0. */
static void test_old_device_is_unsupported(void **state) {
  (void)state;
  setup s = make();
  t4a_launch_desc d = desc_of(s.kernel, 4);
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 2;
  expect_refused(&s, &d, &a, T4A_ERROR_UNSUPPORTED,
                 "need compute capability 9.0 (Hopper) or newer; the device "
                 "is 8.0");
  a.cluster[0] = 0;
  a.flags = T4A_LAUNCH_ATTR_PROGRAMMATIC;
  expect_refused(&s, &d, &a, T4A_ERROR_UNSUPPORTED,
                 "programmatic dependent launch needs compute capability 9.0 "
                 "(Hopper) or newer; the device is 8.0");
  t4a_cluster_occupancy o = T4A_CLUSTER_OCCUPANCY_INIT;
  ASSERT_STATUS(t4a_kernel_cluster_occupancy(&d, NULL, &o),
                T4A_ERROR_UNSUPPORTED);
  ASSERT_MESSAGE_HAS("the device is 8.0");
  /* Plain launches are unaffected. */
  ASSERT_OK(t4a_launch_ex(s.rt, &d, NULL));
  drop(&s);
}

/* Mode no_ex: a driver without cuLaunchKernelEx and the cluster occupancy
 * entry points. */
static void test_driver_without_launch_ex(void **state) {
  (void)state;
  setup s = make();
  t4a_launch_desc d = desc_of(s.kernel, 4);
  t4a_launch_attrs a = T4A_LAUNCH_ATTRS_INIT;
  a.cluster[0] = 2;
  expect_refused(&s, &d, &a, T4A_ERROR_UNSUPPORTED, "cuLaunchKernelEx");
  ASSERT_MESSAGE_HAS("needs CUDA 11.6");
  a.cluster[0] = 0;
  a.flags = T4A_LAUNCH_ATTR_PROGRAMMATIC;
  expect_refused(&s, &d, &a, T4A_ERROR_UNSUPPORTED, "cuLaunchKernelEx");
  t4a_cluster_occupancy o = T4A_CLUSTER_OCCUPANCY_INIT;
  ASSERT_STATUS(t4a_kernel_cluster_occupancy(&d, NULL, &o),
                T4A_ERROR_UNSUPPORTED);
  ASSERT_MESSAGE_HAS("cuOccupancyMaxActiveClusters");
  /* Plain launches still work (cuLaunchKernel). */
  ASSERT_OK(t4a_launch(s.rt, &d));
  drop(&s);
  char buf[2048];
  size_t needed = 0;
  ASSERT_OK(t4a_driver_lacks(buf, sizeof buf, &needed));
  if (strstr(buf, "cuLaunchKernelEx") == NULL)
    fail_msg("t4a_driver_lacks does not list cuLaunchKernelEx: %s", buf);
}

int main(int argc, char **argv) {
  if (use_fake_driver() != 0) return 1;
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "cc80") == 0) {
    setenv("FAKE_CUDA_CC", "80", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_old_device_is_unsupported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
  }
  if (strcmp(mode, "no_ex") == 0) {
    setenv("FAKE_CUDA_HIDE",
           "cuLaunchKernelEx,cuOccupancyMaxActiveClusters,"
           "cuOccupancyMaxPotentialClusterSize",
           1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_without_launch_ex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cluster_launch_goes_through_launch_ex),
      cmocka_unit_test(test_no_attributes_is_a_plain_launch),
      cmocka_unit_test(test_programmatic_launch),
      cmocka_unit_test(test_cluster_shape_refusals),
      cmocka_unit_test(test_non_portable_cluster),
      cmocka_unit_test(test_cooperative_is_not_combined),
      cmocka_unit_test(test_compiled_cluster_dims),
      cmocka_unit_test(test_cluster_occupancy),
      cmocka_unit_test(test_capture_keeps_attributes),
      cmocka_unit_test(test_stream_priority),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
