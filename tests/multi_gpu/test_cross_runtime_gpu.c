/*
 * Copies between runtimes on real GPUs (docs/multi-gpu.md). One process per
 * group (argv[1]): same_device  (label gpu, one GPU) two runtimes on device 0:
 * the event bracket, data-verified, odd sizes and offsets, the source released
 * right after the call, the destination read by a kernel on its own runtime
 * with no synchronization between the copy and the kernel; both directions from
 * two threads peer         (label multi_gpu) runtimes on devices 0 and 1 after
 *                t4a_runtime_enable_peer: 64 MiB + 1 bytes at odd offsets,
 *                each way, counted as peer copies; both directions from two
 *                threads at once; the destination read by a kernel
 *   staged       (label multi_gpu) the same with peer access not enabled
 *                (explicit mode): counted as staged copies
 * Exits 77 (SKIPPED) with too few GPUs unless T4A_REQUIRE_GPU asks for
 * them. Failures print the first differing byte and the counters.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
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

/* Adds 1 to every byte of [p, p + n): reads the copy's destination on the
 * destination runtime's stream. */
static const char *const k_src =
    "extern \"C\" __global__ void add_one(unsigned char *p,\n"
    "                                     unsigned long long n) {\n"
    "  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x +\n"
    "                         threadIdx.x;\n"
    "  for (; i < n; i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    p[i] = (unsigned char)(p[i] + 1);\n"
    "}\n";

static unsigned char pattern(uint64_t i, unsigned seed) {
  return (unsigned char)((i * 131u + seed * 7u + (i >> 11)) & 0xFF);
}

static t4a_runtime make_runtime(int32_t ordinal) {
  t4a_runtime_options o = T4A_RUNTIME_OPTIONS_INIT;
  o.device_ordinal = ordinal;
  t4a_runtime rt = {0};
  ASSERT_OK(t4a_runtime_create(&o, &rt));
  return rt;
}

static t4a_runtime_stats stats_of(t4a_runtime rt) {
  t4a_runtime_stats s = T4A_RUNTIME_STATS_INIT;
  ASSERT_OK(t4a_runtime_stats_get(rt, &s));
  return s;
}

static t4a_kernel add_one_kernel(t4a_runtime rt) {
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  r.source = k_src;
  r.runtime = rt;
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  t4a_artifact a = {0};
  ASSERT_OK(t4a_compile(&r, &a));
  t4a_module m = {0};
  ASSERT_OK(t4a_module_load(rt, a, &m));
  ASSERT_OK(t4a_artifact_release(a));
  t4a_kernel k = {0};
  ASSERT_OK(t4a_kernel_get(m, "add_one", &k));
  ASSERT_OK(t4a_module_release(m)); /* the kernel keeps its module */
  return k;
}

/* The kernel on `rt` over [offset, offset + n) of `b`. */
static t4a_status launch_add_one(t4a_runtime rt, t4a_kernel k, t4a_buffer b,
                                 uint64_t offset, uint64_t n) {
  unsigned long long count = n;
  t4a_arg args[2] = {T4A_ARG_INIT, T4A_ARG_INIT};
  args[0].kind = T4A_ARG_BUFFER;
  args[0].buffer = b;
  args[0].offset = offset;
  args[1].kind = T4A_ARG_SCALAR;
  args[1].value = &count;
  args[1].size = sizeof count;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = k;
  d.grid[0] = 1024;
  d.block[0] = 256;
  d.args = args;
  d.arg_count = 2;
  return t4a_launch(rt, &d);
}

/* One copy of `n` bytes from a fresh source on `src_rt` (offset src_off)
 * into a fresh destination on `dst_rt` (offset dst_off, filled 0xEE); the
 * source is released right after the call; then the kernel adds 1 on the
 * destination runtime (no synchronization in between) and the whole
 * destination is checked. Returns an empty string or what differed. */
typedef struct copy_job {
  t4a_runtime dst_rt, src_rt;
  t4a_kernel dst_kernel;
  uint64_t n, src_off, dst_off;
  unsigned seed;
  int rounds;
  char failure[768];
} copy_job;

static void *run_copy(void *arg) {
  copy_job *j = arg;
  const uint64_t src_bytes = j->n + j->src_off + 3;
  const uint64_t dst_bytes = j->n + j->dst_off + 5;
  unsigned char *h = malloc(src_bytes > dst_bytes ? src_bytes : dst_bytes);
  if (h == NULL) {
    snprintf(j->failure, sizeof j->failure, "out of host memory");
    return NULL;
  }
  for (int r = 0; r < j->rounds && j->failure[0] == '\0'; ++r) {
    unsigned seed = j->seed + (unsigned)r;
    t4a_buffer src = {0}, dst = {0};
    for (uint64_t i = 0; i < src_bytes; ++i) h[i] = pattern(i, seed);
    const char *step = "allocating the source";
    t4a_status s = t4a_buffer_alloc(j->src_rt, src_bytes, 0, &src);
    if (s == T4A_SUCCESS) {
      step = "uploading the source";
      s = t4a_buffer_upload(j->src_rt, src, 0, h, src_bytes);
    }
    if (s == T4A_SUCCESS) {
      step = "allocating the destination";
      s = t4a_buffer_alloc(j->dst_rt, dst_bytes, 0, &dst);
    }
    if (s == T4A_SUCCESS) {
      step = "filling the destination";
      s = t4a_buffer_fill(j->dst_rt, dst, 0, dst_bytes, 0xEE);
    }
    if (s == T4A_SUCCESS) {
      step = "copying";
      s = t4a_buffer_copy(j->dst_rt, dst, j->dst_off, src, j->src_off, j->n);
    }
    if (s == T4A_SUCCESS) {
      step = "releasing the source right after the copy";
      s = t4a_buffer_release(src);
      src.id = 0;
    }
    if (s == T4A_SUCCESS) {
      step = "the kernel on the destination runtime";
      s = launch_add_one(j->dst_rt, j->dst_kernel, dst, j->dst_off, j->n);
    }
    if (s == T4A_SUCCESS) {
      step = "downloading the destination";
      s = t4a_buffer_download_sync(j->dst_rt, dst, 0, h, dst_bytes);
    }
    if (s != T4A_SUCCESS) {
      snprintf(j->failure, sizeof j->failure, "round %d, %s: %s: %s", r, step,
               t4a_status_name(s), last_message());
    } else {
      for (uint64_t i = 0; i < dst_bytes; ++i) {
        unsigned char want = 0xEE;
        if (i >= j->dst_off && i < j->dst_off + j->n)
          want =
              (unsigned char)(pattern(j->src_off + (i - j->dst_off), seed) + 1);
        if (h[i] != want) {
          snprintf(j->failure, sizeof j->failure,
                   "round %d: destination byte %llu is 0x%02x, expected "
                   "0x%02x (source byte %llu + 1 after the kernel; copy of "
                   "%llu bytes, source offset %llu, destination offset %llu)",
                   r, (unsigned long long)i, h[i], want,
                   (unsigned long long)(j->src_off + (i - j->dst_off)),
                   (unsigned long long)j->n, (unsigned long long)j->src_off,
                   (unsigned long long)j->dst_off);
          break;
        }
      }
    }
    if (src.id != 0) (void)t4a_buffer_release(src);
    if (dst.id != 0) (void)t4a_buffer_release(dst);
  }
  free(h);
  return NULL;
}

static void print_counters(const char *name, t4a_runtime rt) {
  t4a_runtime_stats s = stats_of(rt);
  print_message("%s: same_device_copies %llu, peer_copies %llu, "
                "staged_copies %llu, device_copies %llu\n",
                name, (unsigned long long)s.same_device_copies,
                (unsigned long long)s.peer_copies,
                (unsigned long long)s.staged_copies,
                (unsigned long long)s.device_copies);
}

static void run_one(copy_job *j) {
  run_copy(j);
  if (j->failure[0] != '\0') fail_msg("%s", j->failure);
}

/* Both directions at once from two threads. */
static void run_both(copy_job *x, copy_job *y) {
  pthread_t tx, ty;
  assert_int_equal(pthread_create(&tx, NULL, run_copy, x), 0);
  assert_int_equal(pthread_create(&ty, NULL, run_copy, y), 0);
  pthread_join(tx, NULL);
  pthread_join(ty, NULL);
  if (x->failure[0] != '\0') fail_msg("first direction: %s", x->failure);
  if (y->failure[0] != '\0') fail_msg("second direction: %s", y->failure);
}

static void test_same_device(void **state) {
  (void)state;
  t4a_runtime a = make_runtime(0), b = make_runtime(0);
  t4a_kernel ka = add_one_kernel(a), kb = add_one_kernel(b);
  copy_job j1 = {b, a, kb, (8u << 20) + 1, 13, 7, 1, 3, ""};
  run_one(&j1);
  copy_job j2 = {a, b, ka, 1001, 1, 255, 9, 3, ""};
  run_one(&j2);
  copy_job x = {b, a, kb, (4u << 20) + 3, 5, 3, 20, 20, ""};
  copy_job y = {a, b, ka, (4u << 20) + 5, 3, 5, 40, 20, ""};
  run_both(&x, &y);
  t4a_runtime_stats sa = stats_of(a), sb = stats_of(b);
  if (sa.same_device_copies != 46 || sb.same_device_copies != 46 ||
      sa.peer_copies + sa.staged_copies + sb.peer_copies + sb.staged_copies !=
          0) {
    print_counters("runtime a", a);
    print_counters("runtime b", b);
    fail_msg("expected 46 same-device copies counted by each runtime and no "
             "other path");
  }
  ASSERT_OK(t4a_kernel_release(ka));
  ASSERT_OK(t4a_kernel_release(kb));
  ASSERT_OK(t4a_runtime_destroy(a));
  ASSERT_OK(t4a_runtime_destroy(b));
}

/* Two devices; `peer` enables peer access first (else staged). */
static void two_devices(int peer) {
  t4a_runtime a = make_runtime(0), b = make_runtime(1);
  if (peer) {
    int32_t can01 = 0, can10 = 0;
    ASSERT_OK(t4a_device_can_access_peer(0, 1, &can01));
    ASSERT_OK(t4a_device_can_access_peer(1, 0, &can10));
    if (!can01 || !can10) {
      ASSERT_STATUS(t4a_runtime_enable_peer(a, b), T4A_ERROR_UNSUPPORTED);
      ASSERT_MESSAGE_HAS("device 0 and device 1 are not peers");
      ASSERT_OK(t4a_runtime_destroy(a));
      ASSERT_OK(t4a_runtime_destroy(b));
      skip(); /* the refusal was checked; there is no peer path here */
    }
    ASSERT_OK(t4a_runtime_enable_peer(a, b));
    ASSERT_OK(t4a_runtime_enable_peer(b, a)); /* idempotent */
  }
  t4a_kernel ka = add_one_kernel(a), kb = add_one_kernel(b);
  const uint64_t big = (64u << 20) + 1;
  copy_job j1 = {b, a, kb, big, 3, 5, 1, 1, ""};
  run_one(&j1);
  copy_job j2 = {a, b, ka, big, 7, 1, 2, 1, ""};
  run_one(&j2);
  copy_job x = {b, a, kb, (8u << 20) + 7, 1, 3, 30, 8, ""};
  copy_job y = {a, b, ka, (8u << 20) + 9, 3, 1, 50, 8, ""};
  run_both(&x, &y);
  t4a_runtime_stats sa = stats_of(a), sb = stats_of(b);
  uint64_t want_bytes = 2 * big + 8 * ((8u << 20) + 7) + 8 * ((8u << 20) + 9);
  uint64_t copies = peer ? sa.peer_copies : sa.staged_copies;
  uint64_t bytes = peer ? sa.peer_bytes : sa.staged_bytes;
  uint64_t other = peer ? sa.staged_copies : sa.peer_copies;
  if (copies != 18 || bytes != want_bytes || other != 0 ||
      (peer ? sb.peer_copies : sb.staged_copies) != 18) {
    print_counters("runtime a (device 0)", a);
    print_counters("runtime b (device 1)", b);
    fail_msg("expected 18 %s copies of %llu bytes in all, counted by both "
             "runtimes, and none on the other path",
             peer ? "peer" : "staged", (unsigned long long)want_bytes);
  }
  ASSERT_OK(t4a_kernel_release(ka));
  ASSERT_OK(t4a_kernel_release(kb));
  ASSERT_OK(t4a_runtime_destroy(a));
  ASSERT_OK(t4a_runtime_destroy(b));
}

static void test_peer(void **state) {
  (void)state;
  two_devices(1);
}

static void test_staged(void **state) {
  (void)state;
  two_devices(0);
}

int main(int argc, char **argv) {
  const char *group = argc > 1 ? argv[1] : "";
  const struct CMUnitTest same[] = {cmocka_unit_test(test_same_device)};
  const struct CMUnitTest peer[] = {cmocka_unit_test(test_peer)};
  const struct CMUnitTest staged[] = {cmocka_unit_test(test_staged)};
  if (strcmp(group, "same_device") == 0) {
    gpu_lane_require(1);
    return cmocka_run_group_tests_name("same_device", same, NULL, NULL);
  }
  if (strcmp(group, "peer") == 0) {
    gpu_lane_require(2);
    return cmocka_run_group_tests_name("peer", peer, NULL, NULL);
  }
  if (strcmp(group, "staged") == 0) {
    gpu_lane_require(2);
    return cmocka_run_group_tests_name("staged", staged, NULL, NULL);
  }
  fprintf(stderr, "usage: %s same_device|peer|staged\n", argv[0]);
  return 2;
}
