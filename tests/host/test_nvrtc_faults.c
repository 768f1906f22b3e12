/*
 * Host lane: NVRTC calls go through the driver layer's typed wrappers,
 * which count them and inject failures like the driver's (real NVRTC, no
 * GPU). An injected failure of nvrtcCompileProgram, nvrtcGetCUBIN or
 * nvrtcCreateProgram surfaces with the status its result maps to, names
 * the failing entry point and carries its nvrtcResult; every program that
 * was created is destroyed (nvrtcDestroyProgram is counted once per
 * created program), and a created-then-failed program (the AFTER mode) is
 * destroyed too. Caches are off, so every compile runs NVRTC.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "t4acuda.h"
#include "t4acuda_testing.h"
#include "test_assert.h"

#define NVRTC_ERROR_OUT_OF_MEMORY 1 /* nvrtcResult */
#define NVRTC_ERROR_COMPILATION 6   /* nvrtcResult */
#define SENTINEL_ID UINT64_C(0xA5A5A5A5A5A5A5A5)

static const char k_source[] =
    "extern \"C\" __global__ void scale(float *x, float a) {\n"
    "  x[threadIdx.x] *= a;\n"
    "}\n";

static t4a_compile_request request(uint32_t output) {
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  r.source = k_source;
  r.program_name = "scale.cu";
  r.output = output;
  r.cc_major = 9;
  r.cc_minor = 0;
  r.flags = T4A_COMPILE_NO_MEMORY_CACHE | T4A_COMPILE_NO_DISK_CACHE;
  return r;
}

static int setup(void **state) {
  int major = 0, minor = 0;
  (void)state;
  /* NVRTC loaded before counting starts (its version query is a call). */
  if (t4a_nvrtc_version(&major, &minor) != T4A_SUCCESS) {
    print_error("NVRTC is needed: %s\n", last_message());
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  t4a_testing_fault_reset();
  return 0;
}

static int64_t calls(const char *entry) {
  int64_t n = t4a_testing_call_count(entry);
  assert_true(n >= 0); /* a known entry point name */
  return n;
}

/* Compiles with `entry`'s first call failing with `result` in `mode`;
 * expects `want`, a message naming the entry point, the result in
 * compiler_result, no artifact, one nvrtcCreateProgram call and
 * `destroyed` nvrtcDestroyProgram calls (one per program that exists). */
static void expect_injected(const char *entry, int32_t result, int32_t mode,
                            t4a_status want, uint32_t output,
                            int64_t destroyed) {
  t4a_compile_request r = request(output);
  t4a_artifact a = {SENTINEL_ID};
  t4a_error_info info;
  t4a_testing_fault_reset();
  t4a_testing_count_calls(1);
  ASSERT_OK(t4a_testing_fault_arm(entry, 1, result, mode));
  ASSERT_STATUS(t4a_compile(&r, &a), want);
  ASSERT_MESSAGE_HAS(entry);
  assert_true(a.id == SENTINEL_ID); /* untouched on failure */
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ASSERT_OK(t4a_last_error(&info));
  assert_int_equal(info.status, want);
  assert_int_equal(info.compiler_result, result);
  /* Nothing leaks: every program created was destroyed, once. */
  assert_int_equal(calls(entry), 1);
  assert_int_equal(calls("nvrtcCreateProgram"), 1);
  assert_int_equal(calls("nvrtcDestroyProgram"), destroyed);
  t4a_testing_fault_reset();
}

static void test_counted(void **state) {
  t4a_compile_request r = request(T4A_COMPILE_CUBIN);
  t4a_artifact a = {0};
  (void)state;
  t4a_testing_fault_reset();
  t4a_testing_count_calls(1);
  ASSERT_OK(t4a_compile(&r, &a));
  assert_int_equal(calls("nvrtcCreateProgram"), 1);
  assert_int_equal(calls("nvrtcCompileProgram"), 1);
  assert_int_equal(calls("nvrtcGetCUBINSize"), 1);
  assert_int_equal(calls("nvrtcGetCUBIN"), 1);
  assert_int_equal(calls("nvrtcGetPTX"), 0);
  assert_int_equal(calls("nvrtcDestroyProgram"), 1);
  ASSERT_OK(t4a_artifact_release(a));
  t4a_testing_fault_reset();
}

static void test_compile_program_fails(void **state) {
  (void)state;
  expect_injected("nvrtcCompileProgram", NVRTC_ERROR_COMPILATION,
                  T4A_TESTING_FAULT_INSTEAD, T4A_ERROR_COMPILE,
                  T4A_COMPILE_CUBIN, 1);
}

static void test_get_cubin_fails(void **state) {
  (void)state;
  /* NVRTC out of memory is the host's: OUT_OF_HOST_MEMORY. */
  expect_injected("nvrtcGetCUBIN", NVRTC_ERROR_OUT_OF_MEMORY,
                  T4A_TESTING_FAULT_INSTEAD, T4A_ERROR_OUT_OF_HOST_MEMORY,
                  T4A_COMPILE_CUBIN, 1);
  /* After really copying the image: the failure still wins. */
  expect_injected("nvrtcGetCUBIN", NVRTC_ERROR_OUT_OF_MEMORY,
                  T4A_TESTING_FAULT_AFTER, T4A_ERROR_OUT_OF_HOST_MEMORY,
                  T4A_COMPILE_CUBIN, 1);
}

static void test_get_ptx_fails(void **state) {
  (void)state;
  expect_injected("nvrtcGetPTX", NVRTC_ERROR_OUT_OF_MEMORY,
                  T4A_TESTING_FAULT_INSTEAD, T4A_ERROR_OUT_OF_HOST_MEMORY,
                  T4A_COMPILE_PTX, 1);
}

static void test_create_program_fails(void **state) {
  (void)state;
  /* Instead: no program exists, so none is destroyed. */
  expect_injected("nvrtcCreateProgram", NVRTC_ERROR_OUT_OF_MEMORY,
                  T4A_TESTING_FAULT_INSTEAD, T4A_ERROR_OUT_OF_HOST_MEMORY,
                  T4A_COMPILE_CUBIN, 0);
  /* After: NVRTC made the program, the call reports failure: it is
   * destroyed all the same. */
  expect_injected("nvrtcCreateProgram", NVRTC_ERROR_OUT_OF_MEMORY,
                  T4A_TESTING_FAULT_AFTER, T4A_ERROR_OUT_OF_HOST_MEMORY,
                  T4A_COMPILE_CUBIN, 1);
}

static void test_unknown_entry_rejected(void **state) {
  (void)state;
  ASSERT_STATUS(t4a_testing_fault_arm("nvrtcNoSuchEntry", 1, 1,
                                      T4A_TESTING_FAULT_INSTEAD),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("nvrtcNoSuchEntry");
  assert_int_equal(t4a_testing_call_count("nvrtcNoSuchEntry"), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counted),
      cmocka_unit_test(test_compile_program_fails),
      cmocka_unit_test(test_get_cubin_fails),
      cmocka_unit_test(test_get_ptx_fails),
      cmocka_unit_test(test_create_program_fails),
      cmocka_unit_test(test_unknown_entry_rejected),
  };
  return cmocka_run_group_tests_name("nvrtc_faults", tests, setup, teardown);
}
