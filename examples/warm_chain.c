/*
 * t4acuda-warm-chain: N launches (default 10000) of one small kernel on one
 * buffer, then a single completion wait, through the C API.
 *
 *   t4acuda-warm-chain [N]
 *
 * Prints what the chain cost in runtime counters (launches, module loads,
 * host waits, events recorded) and the host time to submit one launch. The
 * warm path records no event per launch and waits on the host only once, at
 * the end. Without a CUDA GPU or driver it says so and exits 0.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "t4acuda.h"

static const char *const k_source =
    "extern \"C\" __global__ void add_one(unsigned *p) { atomicAdd(p, 1u); }\n";

static char g_message[1024];

static const char *last_message(void) {
  t4a_last_error_message(g_message, sizeof g_message, NULL);
  return g_message;
}

static int fail(const char *what, t4a_status s) {
  fprintf(stderr, "t4acuda-warm-chain: %s failed: %s: %s\n", what,
          t4a_status_name(s), last_message());
  return 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned long long delta(uint64_t after, uint64_t before) {
  return (unsigned long long)(after - before);
}

int main(int argc, char **argv) {
  long n = 10000;
  if (argc > 1) {
    char *end = NULL;
    n = strtol(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || n < 1 || n > 100000000) {
      fprintf(stderr,
              "usage: %s [N]  (launches, 1..100000000; default 10000)\n",
              argv[0]);
      return 2;
    }
  }

  int32_t count = 0;
  t4a_status s = t4a_device_count(&count);
  if (s == T4A_ERROR_NO_DRIVER || (s == T4A_SUCCESS && count == 0)) {
    printf(
        "no CUDA GPU/driver available: skipped the warm chain (reason: %s)\n",
        s == T4A_SUCCESS ? "the CUDA driver sees no devices" : last_message());
    return 0;
  }
  if (s != T4A_SUCCESS) return fail("t4a_device_count", s);

  t4a_runtime rt = {T4A_NULL_ID};
  s = t4a_runtime_create(NULL, &rt);
  if (s != T4A_SUCCESS) return fail("t4a_runtime_create", s);

  int rc = 1;
  t4a_artifact art = {T4A_NULL_ID};
  t4a_module module = {T4A_NULL_ID};
  t4a_kernel kernel = {T4A_NULL_ID};
  t4a_buffer counter = {T4A_NULL_ID};
  t4a_completion done = {T4A_NULL_ID};

  t4a_compile_request req = T4A_COMPILE_REQUEST_INIT;
  req.source = k_source;
  req.program_name = "warm_chain.cu";
  req.runtime = rt;
  if ((s = t4a_compile(&req, &art)) != T4A_SUCCESS) {
    fail("t4a_compile", s);
    goto out;
  }
  if ((s = t4a_module_load(rt, art, &module)) != T4A_SUCCESS) {
    fail("t4a_module_load", s);
    goto out;
  }
  if ((s = t4a_kernel_get(module, "add_one", &kernel)) != T4A_SUCCESS) {
    fail("t4a_kernel_get", s);
    goto out;
  }
  if ((s = t4a_buffer_alloc(rt, sizeof(unsigned), T4A_BUFFER_ZERO, &counter)) !=
      T4A_SUCCESS) {
    fail("t4a_buffer_alloc", s);
    goto out;
  }

  t4a_arg arg = T4A_ARG_INIT;
  arg.kind = T4A_ARG_BUFFER;
  arg.buffer = counter;
  t4a_launch_desc desc = T4A_LAUNCH_DESC_INIT;
  desc.grid[0] = 1;
  desc.block[0] = 1;
  desc.kernel = kernel;
  desc.arg_count = 1;
  desc.args = &arg;

  /* Warm-up: the first launch and a wait, outside the measured chain. */
  if ((s = t4a_launch(rt, &desc)) != T4A_SUCCESS) {
    fail("t4a_launch (warm-up)", s);
    goto out;
  }
  if ((s = t4a_runtime_synchronize(rt)) != T4A_SUCCESS) {
    fail("t4a_runtime_synchronize", s);
    goto out;
  }

  t4a_runtime_stats s0 = T4A_RUNTIME_STATS_INIT;
  t4a_runtime_stats s1 = T4A_RUNTIME_STATS_INIT;
  t4a_runtime_stats s2 = T4A_RUNTIME_STATS_INIT;
  t4a_compile_stats c0 = T4A_COMPILE_STATS_INIT;
  t4a_compile_stats c1 = T4A_COMPILE_STATS_INIT;
  t4a_runtime_stats_get(rt, &s0);
  t4a_compile_stats_get(&c0);

  double t0 = now_s();
  for (long i = 0; i < n; ++i) {
    if ((s = t4a_launch(rt, &desc)) != T4A_SUCCESS) {
      fprintf(stderr, "launch %ld of %ld: ", i, n);
      fail("t4a_launch", s);
      goto out;
    }
  }
  double t1 = now_s();
  t4a_runtime_stats_get(rt, &s1);

  if ((s = t4a_runtime_record(rt, &done)) != T4A_SUCCESS) {
    fail("t4a_runtime_record", s);
    goto out;
  }
  if ((s = t4a_completion_wait(done)) != T4A_SUCCESS) {
    fail("t4a_completion_wait", s);
    goto out;
  }
  double t2 = now_s();
  t4a_runtime_stats_get(rt, &s2);
  t4a_compile_stats_get(&c1);

  unsigned got = 0;
  if ((s = t4a_buffer_download_sync(rt, counter, 0, &got, sizeof got)) !=
      T4A_SUCCESS) {
    fail("t4a_buffer_download_sync", s);
    goto out;
  }

  printf("warm chain: %ld launches of add_one on one buffer, one final wait\n",
         n);
  printf("  submission       %.3f ms in all, %.3f us per launch\n",
         (t1 - t0) * 1e3, (t1 - t0) * 1e6 / (double)n);
  printf("  final wait       %.3f ms\n", (t2 - t1) * 1e3);
  printf("counters over the chain and its wait:\n");
  printf("  launches         %llu\n", delta(s2.launches, s0.launches));
  printf("  module loads     %llu\n", delta(s2.module_loads, s0.module_loads));
  printf("  host waits       %llu (during the launches: %llu)\n",
         delta(s2.host_waits, s0.host_waits),
         delta(s1.host_waits, s0.host_waits));
  printf("  events recorded  %llu\n",
         delta(s2.events_recorded, s0.events_recorded));
  printf("  NVRTC calls      %llu\n",
         delta(c1.nvrtc_invocations, c0.nvrtc_invocations));
  /* The counter started at 0 and the warm-up added one. */
  if ((long)got != n + 1) {
    printf("FAILED: the counter is %u, expected %ld\n", got, n + 1);
    goto out;
  }
  printf("counter = %u (warm-up + %ld): correct\n", got, n);
  rc = 0;

out:
  t4a_completion_release(done);
  t4a_buffer_release(counter);
  t4a_kernel_release(kernel);
  t4a_module_release(module);
  t4a_artifact_release(art);
  t4a_runtime_destroy(rt);
  return rc;
}
