/*
 * Faults lane (label faults): a real device fault. A kernel
 * stores to an illegal address; the runtime that ran it is broken, and so
 * (as measured on current drivers) is every other runtime of
 * the process, on every device, and every new one. Each case runs in its
 * own process (argv[1]): a fault poisons the whole process for good.
 *   same_runtime   the faulting runtime: DEVICE_FAULT (CUresult 700) naming
 *                  the device and the operation; later operations quote it;
 *                  t4a_process_fault_get reports it
 *   other_runtime  a second runtime of the same device, created before
 *   leaks          destroying broken runtimes returns DEVICE_FAULT and
 *                  leaks exactly what was alive (t4a_process_stats_get)
 *   create_after   a new runtime afterwards: DEVICE_FAULT, no crash
 *   other_device   (two devices) a runtime on device 1, created before a
 *                  fault on device 0
 *   cross_runtime  a copy between two runtimes enqueued behind a fault:
 *                  copies naming a broken runtime say which side; the
 *                  released source is not freed (test_cross_runtime)
 *   fake           the process fault record on the fake driver of
 *                  tests/fake with injected sticky results (host lane)
 * The GPU cases exit 77 (SKIPPED) without a GPU unless T4A_REQUIRE_GPU is
 * set.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_support.h"
#include "t4acuda.h"
#include "t4acuda_testing.h"
#include "test_assert.h"

/* A byte store through the pointer it is given: 0x1 is never mapped. */
static const char *const k_src =
    "extern \"C\" __global__ void poke(unsigned char *p, unsigned char v) {\n"
    "  *(volatile unsigned char *)p = v;\n"
    "}\n"
    "extern \"C\" __global__ void nothing(void) {}\n";

#define ILLEGAL_ADDRESS 700 /* CUDA_ERROR_ILLEGAL_ADDRESS */

static t4a_error_info last_info(void) {
  t4a_error_info ei = T4A_ERROR_INFO_INIT;
  (void)t4a_last_error(&ei);
  return ei;
}

/* Fails unless `got` is DEVICE_FAULT with CUresult `result` and a message
 * holding every string of the NULL-terminated list; shows what happened. */
static void expect_fault_at(const char *file, int line, const char *call,
                            t4a_status got, int32_t result, ...) {
  t4a_error_info ei = last_info();
  const char *msg = last_message();
  if (got != T4A_ERROR_DEVICE_FAULT || ei.status != T4A_ERROR_DEVICE_FAULT ||
      ei.driver_result != result) {
    print_error("%s returned %s (last error %s, CUresult %d, entry '%s'); "
                "expected T4A_ERROR_DEVICE_FAULT with CUresult %d. "
                "Message: %s\n",
                call, t4a_status_name(got), t4a_status_name(ei.status),
                (int)ei.driver_result, ei.entry_point ? ei.entry_point : "",
                (int)result, msg);
    _fail(file, line);
  }
  va_list ap;
  va_start(ap, result);
  for (const char *want = va_arg(ap, const char *); want != NULL;
       want = va_arg(ap, const char *)) {
    if (strstr(msg, want) == NULL) {
      va_end(ap);
      print_error("%s: the message lacks '%s': %s\n", call, want, msg);
      _fail(file, line);
    }
  }
  va_end(ap);
}
#define EXPECT_FAULT(call, result, ...)                                        \
  expect_fault_at(__FILE__, __LINE__, #call, (call), result, __VA_ARGS__,      \
                  (const char *)NULL)

static t4a_runtime make_runtime(int32_t ordinal) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  o.device_ordinal = ordinal;
  t4a_runtime rt = {0};
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  return rt;
}

static uint64_t domain_of(t4a_runtime rt) {
  t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
  ASSERT_OK(t4a_runtime_info_get(rt, &info));
  return info.domain_id;
}

static t4a_process_fault process_fault(void) {
  t4a_process_fault f = T4A_PROCESS_FAULT_INIT;
  ASSERT_OK(t4a_process_fault_get(&f));
  return f;
}

static t4a_process_stats process_stats(void) {
  t4a_process_stats s = T4A_PROCESS_STATS_INIT;
  ASSERT_OK(t4a_process_stats_get(&s));
  return s;
}

static t4a_kernel kernel_of(t4a_runtime rt, const char *name) {
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  r.source = k_src;
  r.output = T4A_COMPILE_CUBIN;
  r.runtime = rt;
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  t4a_artifact a = {0};
  ASSERT_OK(t4a_compile(&r, &a));
  t4a_module m = {0};
  ASSERT_OK(t4a_module_load(rt, a, &m));
  ASSERT_OK(t4a_artifact_release(a));
  t4a_kernel k = {0};
  ASSERT_OK(t4a_kernel_get(m, name, &k));
  ASSERT_OK(t4a_module_release(m));
  return k;
}

static t4a_status launch_poke(t4a_runtime rt, t4a_kernel k, uint64_t ptr) {
  static const unsigned char v = 42;
  t4a_arg args[2] = {T4A_ARG_INIT, T4A_ARG_INIT};
  args[0].kind = T4A_ARG_DEVICE_POINTER;
  args[0].device_pointer = ptr;
  args[1].kind = T4A_ARG_SCALAR;
  args[1].value = &v;
  args[1].size = 1;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = k;
  d.grid[0] = 1;
  d.block[0] = 1;
  d.args = args;
  d.arg_count = 2;
  return t4a_launch(rt, &d);
}

/* Runs the illegal store on `rt` and waits for it: the launch itself
 * succeeds (the fault is asynchronous) unless the device already faulted;
 * the wait returns DEVICE_FAULT with CUresult 700 naming the device. */
static void fault_on(t4a_runtime rt, t4a_kernel k, int32_t ordinal) {
  char device[32];
  snprintf(device, sizeof device, "device %d", (int)ordinal);
  t4a_status s = launch_poke(rt, k, 0x1);
  if (s == T4A_SUCCESS) {
    EXPECT_FAULT(t4a_runtime_synchronize(rt), ILLEGAL_ADDRESS, device,
                 "CUDA_ERROR_ILLEGAL_ADDRESS");
  } else {
    expect_fault_at(__FILE__, __LINE__, "t4a_launch (illegal store)", s,
                    ILLEGAL_ADDRESS, device, "CUDA_ERROR_ILLEGAL_ADDRESS",
                    (const char *)NULL);
  }
}

/* Checks the process record: the first fault, on `ordinal`, of `domain`. */
static void expect_process_fault(int32_t ordinal, uint64_t domain) {
  t4a_process_fault f = process_fault();
  assert_int_equal(f.has_fault, 1);
  assert_int_equal(f.device_ordinal, ordinal);
  assert_int_equal(f.driver_result, ILLEGAL_ADDRESS);
  assert_int_equal(f.domain_id, domain);
  if (strstr(f.operation, "CUDA_ERROR_ILLEGAL_ADDRESS") == NULL)
    fail_msg("process fault operation lacks the CUresult: '%s'", f.operation);
  assert_int_equal(f.operation[sizeof f.operation - 1], 0);
}

/* (a) The faulting runtime, then its later operations. */
static void test_same_runtime(void **state) {
  (void)state;
  assert_int_equal(process_fault().has_fault, 0);
  t4a_runtime rt = make_runtime(0);
  t4a_kernel k = kernel_of(rt, "poke");
  t4a_buffer b = {0};
  ASSERT_OK(t4a_buffer_alloc(rt, 4096, 0, &b));
  ASSERT_OK(t4a_runtime_synchronize(rt));
  fault_on(rt, k, 0);
  expect_process_fault(0, domain_of(rt));

  /* Later operations quote the original fault, without the driver. */
  t4a_buffer b2 = {0};
  t4a_last_error_clear();
  EXPECT_FAULT(t4a_buffer_alloc(rt, 4096, 0, &b2), ILLEGAL_ADDRESS,
               "earlier device fault", "device 0", "CUDA_ERROR_ILLEGAL_ADDRESS",
               "new process");
  assert_int_equal(b2.id, 0);
  unsigned char host[64] = {0};
  t4a_last_error_clear();
  EXPECT_FAULT(t4a_buffer_upload(rt, b, 0, host, sizeof host), ILLEGAL_ADDRESS,
               "earlier device fault", "device 0",
               "CUDA_ERROR_ILLEGAL_ADDRESS");
  t4a_last_error_clear();
  EXPECT_FAULT(launch_poke(rt, k, 0x1), ILLEGAL_ADDRESS, "earlier device fault",
               "device 0", "CUDA_ERROR_ILLEGAL_ADDRESS");
  t4a_last_error_clear();
  EXPECT_FAULT(t4a_runtime_synchronize(rt), ILLEGAL_ADDRESS,
               "earlier device fault", "CUDA_ERROR_ILLEGAL_ADDRESS");
  /* The record is the first fault, unchanged. */
  expect_process_fault(0, domain_of(rt));
}

/* (f) A cross-runtime copy and a fault (issue 10): a copy from `good` into
 * `bad` is enqueued right behind the illegal store on `bad`, and its source
 * released at once. Whatever the copy's own calls answered (SUCCESS, or
 * DEVICE_FAULT if the fault had already surfaced), afterwards: copies
 * naming a broken runtime fail with DEVICE_FAULT (700) saying which side
 * is broken; `good` becomes broken by its own driver call (as in (b): the
 * driver poisons every context); and the released source is never freed
 * (its runtime's frees do not move: it is kept by `bad`'s epoch, which is
 * never proven complete, or leaked by a broken runtime). */
static void test_cross_runtime(void **state) {
  (void)state;
  const uint64_t n = (4u << 20) + 1;
  t4a_runtime bad = make_runtime(0), good = make_runtime(0);
  t4a_kernel k = kernel_of(bad, "poke");
  t4a_buffer src = {0}, dst = {0}, gdst = {0};
  ASSERT_OK(t4a_buffer_alloc(good, n, T4A_BUFFER_ZERO, &src));
  ASSERT_OK(t4a_buffer_alloc(bad, n, 0, &dst));
  ASSERT_OK(t4a_buffer_alloc(good, n, 0, &gdst));
  ASSERT_OK(t4a_buffer_copy(bad, dst, 0, src, 0, n)); /* before the fault */
  ASSERT_OK(t4a_runtime_synchronize(bad));
  ASSERT_OK(t4a_runtime_synchronize(good));
  t4a_runtime_stats g0 = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(good, &g0));

  t4a_status poke = launch_poke(bad, k, 0x1);
  t4a_status copy = t4a_buffer_copy(bad, dst, 1, src, 3, n - 7);
  if (copy != T4A_SUCCESS && copy != T4A_ERROR_DEVICE_FAULT)
    fail_msg("the copy behind the fault returned %s (%s); expected SUCCESS "
             "or DEVICE_FAULT",
             t4a_status_name(copy), last_message());
  ASSERT_OK(t4a_buffer_release(src)); /* right after the enqueue */
  if (poke == T4A_SUCCESS)
    EXPECT_FAULT(t4a_runtime_synchronize(bad), ILLEGAL_ADDRESS, "device 0",
                 "CUDA_ERROR_ILLEGAL_ADDRESS");
  t4a_last_error_clear();
  EXPECT_FAULT(t4a_buffer_copy(good, gdst, 0, dst, 0, 16), ILLEGAL_ADDRESS,
               "copying between runtimes", "is broken",
               "CUDA_ERROR_ILLEGAL_ADDRESS");
  t4a_status gs = t4a_runtime_synchronize(good);
  if (gs != T4A_ERROR_DEVICE_FAULT)
    fail_msg("the other runtime's synchronize returned %s after the fault; "
             "a runtime sharing the faulted context expects DEVICE_FAULT: %s",
             t4a_status_name(gs), last_message());
  t4a_last_error_clear();
  EXPECT_FAULT(t4a_buffer_copy(bad, dst, 0, gdst, 0, 16), ILLEGAL_ADDRESS,
               "the destination runtime", "is broken");
  t4a_runtime_stats g1 = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(good, &g1));
  if (g1.frees != g0.frees)
    fail_msg("the source runtime freed %llu allocation(s) after the fault; "
             "the released source must not be freed while a broken runtime "
             "might still read it",
             (unsigned long long)(g1.frees - g0.frees));
  ASSERT_OK(t4a_buffer_release(dst));
  ASSERT_OK(t4a_buffer_release(gdst));
  ASSERT_STATUS(t4a_runtime_destroy(bad), T4A_ERROR_DEVICE_FAULT);
  ASSERT_STATUS(t4a_runtime_destroy(good), T4A_ERROR_DEVICE_FAULT);
}

/* (b) A second runtime of the same device, created before the fault. */
static void test_other_runtime(void **state) {
  (void)state;
  t4a_runtime bad = make_runtime(0);
  t4a_runtime other = make_runtime(0);
  t4a_kernel k = kernel_of(bad, "poke");
  t4a_kernel other_k = kernel_of(other, "nothing");
  ASSERT_OK(t4a_runtime_synchronize(other));
  fault_on(bad, k, 0);
  /* The driver poisons every context of the process. */
  EXPECT_FAULT(t4a_runtime_synchronize(other), ILLEGAL_ADDRESS, "device 0",
               "CUDA_ERROR_ILLEGAL_ADDRESS");
  /* Now broken too: later operations quote its own first fault. */
  t4a_last_error_clear();
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = other_k;
  d.grid[0] = 1;
  d.block[0] = 1;
  EXPECT_FAULT(t4a_launch(other, &d), ILLEGAL_ADDRESS, "earlier device fault",
               "CUDA_ERROR_ILLEGAL_ADDRESS");
  /* The process record stays the first fault (the faulting runtime). */
  expect_process_fault(0, domain_of(bad));
}

/* (c) Destroying broken runtimes: DEVICE_FAULT, and what was alive leaks,
 * exactly. */
static void test_leaks(void **state) {
  (void)state;
  t4a_runtime bad = make_runtime(0);
  t4a_runtime other = make_runtime(0);
  t4a_kernel k = kernel_of(bad, "poke");
  const uint64_t sizes[3] = {4096, 1 << 20, 3 << 20};
  t4a_buffer bufs[3], other_buf;
  for (int i = 0; i < 3; ++i)
    ASSERT_OK(t4a_buffer_alloc(bad, sizes[i], 0, &bufs[i]));
  ASSERT_OK(t4a_buffer_alloc(other, 8192, 0, &other_buf));
  ASSERT_OK(t4a_runtime_synchronize(bad));
  ASSERT_OK(t4a_runtime_synchronize(other));
  const t4a_process_stats before = process_stats();
  fault_on(bad, k, 0);
  ASSERT_OK(t4a_kernel_release(k));

  EXPECT_FAULT(t4a_runtime_destroy(bad), ILLEGAL_ADDRESS, "device 0",
               "CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_FAULT(t4a_runtime_destroy(other), ILLEGAL_ADDRESS, "device 0",
               "CUDA_ERROR_ILLEGAL_ADDRESS");
  t4a_process_stats mid = process_stats();
  assert_int_equal(mid.runtimes_leaked, before.runtimes_leaked + 2);
  assert_int_equal(mid.runtimes_live, before.runtimes_live - 2);
  /* The buffers (still held) leak when released: never freed. */
  for (int i = 0; i < 3; ++i) ASSERT_OK(t4a_buffer_release(bufs[i]));
  ASSERT_OK(t4a_buffer_release(other_buf));
  t4a_process_stats after = process_stats();
  assert_int_equal(after.leaked_device_allocations,
                   before.leaked_device_allocations + 4);
  assert_int_equal(after.leaked_device_bytes, before.leaked_device_bytes +
                                                  sizes[0] + sizes[1] +
                                                  sizes[2] + 8192);
  assert_int_equal(after.runtimes_leaked, before.runtimes_leaked + 2);
  /* The handles are gone. */
  assert_int_equal(t4a_runtime_synchronize(bad), T4A_ERROR_INVALID_HANDLE);
}

/* (d) A new runtime after the fault: DEVICE_FAULT, never a crash; the
 * record stays the first fault. */
static void test_create_after(void **state) {
  (void)state;
  t4a_runtime bad = make_runtime(0);
  t4a_kernel k = kernel_of(bad, "poke");
  const uint64_t domain = domain_of(bad);
  fault_on(bad, k, 0);
  for (int round = 0; round < 2; ++round) {
    t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
    t4a_runtime rt = {0};
    t4a_status s = t4a_runtime_create(&o, &rt);
    t4a_error_info ei = last_info();
    if (s != T4A_ERROR_DEVICE_FAULT)
      fail_msg("t4a_runtime_create after the fault (round %d) returned %s "
               "(CUresult %d): %s; expected T4A_ERROR_DEVICE_FAULT",
               round, t4a_status_name(s), (int)ei.driver_result,
               last_message());
    assert_int_equal(rt.id, 0);
    /* Destroying the broken runtime in between changes nothing. */
    if (round == 0)
      assert_int_equal(t4a_runtime_destroy(bad), T4A_ERROR_DEVICE_FAULT);
  }
  expect_process_fault(0, domain);
}

/* (e) A runtime on device 1, created before a fault on device 0. */
static void test_other_device(void **state) {
  (void)state;
  t4a_runtime bad = make_runtime(0);
  t4a_runtime far = make_runtime(1);
  t4a_kernel k = kernel_of(bad, "poke");
  ASSERT_OK(t4a_runtime_synchronize(far));
  fault_on(bad, k, 0);
  /* Measured: the fault poisons every device's context. */
  EXPECT_FAULT(t4a_runtime_synchronize(far), ILLEGAL_ADDRESS, "device 1",
               "CUDA_ERROR_ILLEGAL_ADDRESS");
  t4a_last_error_clear();
  t4a_buffer b = {0};
  EXPECT_FAULT(t4a_buffer_alloc(far, 4096, 0, &b), ILLEGAL_ADDRESS,
               "earlier device fault", "device 1");
  expect_process_fault(0, domain_of(bad));
}

/* The record on the fake driver, with injected sticky results: a create
 * failing with one records it (domain 0) when none was yet; the first
 * broken runtime does not replace it; nothing replaces it later. */
static void test_fake_record(void **state) {
  (void)state;
  assert_int_equal(process_fault().has_fault, 0);
  t4a_runtime a = make_runtime(0);
  /* A non-sticky failure is no fault. */
  ASSERT_OK(t4a_testing_fault_arm("cuStreamSynchronize", 1,
                                  /* CUDA_ERROR_INVALID_VALUE */ 1,
                                  T4A_TESTING_FAULT_INSTEAD));
  assert_int_equal(t4a_runtime_synchronize(a), T4A_ERROR_DRIVER);
  assert_int_equal(process_fault().has_fault, 0);
  /* A create failing with a sticky result is the first fault. */
  ASSERT_OK(t4a_testing_fault_arm("cuStreamCreate", 1, ILLEGAL_ADDRESS,
                                  T4A_TESTING_FAULT_INSTEAD));
  t4a_runtime failed = {0};
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  EXPECT_FAULT(t4a_runtime_create(&o, &failed), ILLEGAL_ADDRESS,
               "cuStreamCreate", "CUDA_ERROR_ILLEGAL_ADDRESS");
  t4a_process_fault f = process_fault();
  assert_int_equal(f.has_fault, 1);
  assert_int_equal(f.device_ordinal, 0);
  assert_int_equal(f.driver_result, ILLEGAL_ADDRESS);
  assert_int_equal(f.domain_id, 0);
  if (strstr(f.operation, "creating a runtime") == NULL ||
      strstr(f.operation, "cuStreamCreate") == NULL)
    fail_msg("operation: '%s'", f.operation);
  /* A runtime broken later does not replace the record. */
  ASSERT_OK(t4a_testing_fault_arm("cuStreamSynchronize", 1,
                                  /* CUDA_ERROR_LAUNCH_FAILED */ 719,
                                  T4A_TESTING_FAULT_AFTER));
  EXPECT_FAULT(t4a_runtime_synchronize(a), 719, "device 0",
               "CUDA_ERROR_LAUNCH_FAILED");
  t4a_process_fault g = process_fault();
  assert_memory_equal(&f, &g, sizeof f);
  /* A smaller caller struct gets its prefix only. */
  t4a_process_fault small;
  memset(&small, 0x5A, sizeof small);
  small.struct_size = offsetof(t4a_process_fault, domain_id);
  ASSERT_OK(t4a_process_fault_get(&small));
  assert_int_equal(small.has_fault, 1);
  assert_int_equal(small.driver_result, ILLEGAL_ADDRESS);
  assert_int_equal((unsigned char)small.operation[0], 0x5A);
  t4a_testing_fault_reset();
  assert_int_equal(t4a_runtime_destroy(a), T4A_ERROR_DEVICE_FAULT);
}

static const struct {
  const char *name;
  CMUnitTestFunction fn;
  int devices; /* 0: the fake driver */
} k_cases[] = {
    {"same_runtime", test_same_runtime, 1},
    {"other_runtime", test_other_runtime, 1},
    {"leaks", test_leaks, 1},
    {"create_after", test_create_after, 1},
    {"other_device", test_other_device, 2},
    {"cross_runtime", test_cross_runtime, 1},
    {"fake", test_fake_record, 0},
};

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; ++i) {
    if (strcmp(c, k_cases[i].name) != 0) continue;
    const struct CMUnitTest one[] = {
        {k_cases[i].name, k_cases[i].fn, NULL, NULL, NULL}};
    if (k_cases[i].devices == 0) {
#if defined(T4A_FAKE_CUDA_PATH)
      setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
#else
      fprintf(stderr, "built without the fake driver\n");
      return 1;
#endif
    } else {
      gpu_lane_require(k_cases[i].devices);
    }
    return cmocka_run_group_tests_name(c, one, NULL, NULL);
  }
  fprintf(stderr,
          "usage: %s same_runtime|other_runtime|leaks|create_after|"
          "other_device|cross_runtime|fake\n",
          argv[0]);
  return 2;
}
