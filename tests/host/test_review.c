/*
 * Host lane: cases found by the independent review of issue 8. Each group
 * failed on the reviewed code (the descriptions below say what it showed)
 * and passes with its fix. One process per group (argv[1]):
 *   source_dir  issue 8 item 8: NVRTC adds the directory of the
 *               program name to the include path (it is the "input file";
 *               --no-source-include turns that off), so a quoted #include
 *               without any -I option still reads a header from disk. The
 *               identity key does not cover that header, so after the header
 *               changed, a new process must not get the old image from the
 *               disk cache.
 *   destroy_transient  issue 8 item 4: destroy of an idle runtime
 *               whose open completion epoch holds a keepalive, when creating
 *               the sealing event fails transiently (CUDA_ERROR_OUT_OF_MEMORY,
 *               not sticky). Destroy closed admission, so a plain stream
 *               drain proves every kept object complete: no event is needed.
 *               Today the seal's failure skips the drain, and the runtime
 *               and its keepalives are leaked (runtimes_leaked + 1) though
 *               nothing is in doubt.
 *   release_sticky  a successful call never leaves an error in
 *               the thread's last error. t4a_buffer_release whose
 *               cuMemFreeAsync answers a sticky result (700) returns SUCCESS
 *               (the handle is released) but device_free() records
 *               DEVICE_FAULT through fail_op (src/memory/buffer.cpp): the
 *               status and the last error disagree.
 *   launch_frees_host  "no hidden host waits": a host buffer
 *               released by its caller while the open epoch keeps it (after
 *               t4a_buffer_upload_host) is freed with cuMemFreeHost when a
 *               later seal retires its epoch, and that seal runs inside
 *               t4a_launch (Epochs::seal polls the oldest epochs and drops
 *               what retired, under admission). cuMemFreeHost (like
 *               cuModuleUnload for a released module) may synchronize the
 *               device; host_waits does not count it. The test shows the
 *               call happening inside a launch.
 *   fork_nvrtc  fork safety: a child forked while another parent thread is
 *               inside an NVRTC compile (a cache miss) compiles a new
 *               source itself (context-free: it needs no driver) under
 *               alarm(10); none may hang. Seen: 14 of 20 children hang in
 *               nvrtcCompileProgram on a mutex of libnvrtc that a parent
 *               thread held at the fork (no t4acuda lock is involved).
 * test_fork forks only while compiles are answered by the memory cache.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compile_support.h"
#include "core/epoch_limits.h"
#include "t4acuda.h"
#include "t4acuda_testing.h"
#include "test_assert.h"
#include "test_helpers.h"

/* A fresh, empty (mode 0700) directory under the build tree. */
static void fresh_dir(char *dir, size_t capacity, const char *name) {
  DIR *d;
  struct dirent *e;
  char path[1600];
  snprintf(path, sizeof path, "%s/review", T4A_TEST_BINARY_DIR);
  (void)mkdir(path, 0700);
  snprintf(dir, capacity, "%s/review/%s-%ld", T4A_TEST_BINARY_DIR, name,
           (long)getpid());
  (void)mkdir(dir, 0700);
  assert_int_equal(chmod(dir, 0700), 0);
  d = opendir(dir);
  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    (void)unlink(path);
  }
  closedir(d);
}

/* PTX of a kernel storing VALUE from "value.h" (no option at all), the
 * program named `program_name`; fails unless the image stores `value`. */
static void compile_expect(const char *program_name, int value) {
  char text[64];
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  t4a_artifact a = {0};
  size_t bytes = 0;
  char *image;
  r.source = "#include \"value.h\"\n"
             "extern \"C\" __global__ void store(int *p) { *p = VALUE; }\n";
  r.program_name = program_name;
  r.output = T4A_COMPILE_PTX;
  r.cc_major = 9;
  /* as a new process would: the memory cache is bypassed */
  r.flags = T4A_COMPILE_NO_MEMORY_CACHE;
  ASSERT_OK(t4a_compile(&r, &a));
  ASSERT_OK(t4a_artifact_image(a, NULL, 0, &bytes));
  image = calloc(1, bytes + 1);
  assert_non_null(image);
  ASSERT_OK(t4a_artifact_image(a, image, bytes, NULL));
  snprintf(text, sizeof text, "%d", value);
  if (getenv("REVIEW_DUMP")) fprintf(stderr, "%s\n", image);
  if (strstr(image, text) == NULL)
    fail_msg("the PTX does not store %d: a stale image from the disk cache "
             "(the header next to the program name changed)",
             value);
  free(image);
  ASSERT_OK(t4a_artifact_release(a));
}

static void test_header_next_to_program_name(void **state) {
  char dir[1000], cache[1100], header[1100], program[1100];
  int first = 515151 + (int)(getpid() % 1000);
  t4a_compile_stats before, after;
  (void)state;
  fresh_dir(dir, sizeof dir, "srcdir");
  snprintf(cache, sizeof cache, "%s-cache", dir);
  (void)mkdir(cache, 0700);
  assert_int_equal(chmod(cache, 0700), 0);
  assert_int_equal(setenv("T4A_CACHE_DIR", cache, 1), 0);
  snprintf(header, sizeof header, "%s/value.h", dir);
  snprintf(program, sizeof program, "%s/kernel.cu", dir);
  write_header(header, first);
  before = stats_now();
  compile_expect(program, first);
  write_header(header, first + 1);
  compile_expect(program, first + 1);
  after = stats_now();
  printf(
      "disk hits %llu, disk writes %llu, nvrtc %llu\n",
      (unsigned long long)(after.disk_hits - before.disk_hits),
      (unsigned long long)(after.disk_writes - before.disk_writes),
      (unsigned long long)(after.nvrtc_invocations - before.nvrtc_invocations));
  assert_int_equal(after.disk_hits - before.disk_hits, 0);
}

/* The include scan keeps caching what is safe to cache: an include that a
 * given header satisfies is written to disk; one named by a macro (its
 * file unknown) is not. */
static void compile_counting_writes(const char *source, uint64_t writes) {
  char cache[1100], dir[1000];
  const char *names[1] = {"given.h"};
  const char *sources[1] = {"#define W 7\n"};
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  t4a_artifact a = {0};
  fresh_dir(dir, sizeof dir, "given");
  snprintf(cache, sizeof cache, "%s-cache", dir);
  (void)mkdir(cache, 0700);
  assert_int_equal(chmod(cache, 0700), 0);
  assert_int_equal(setenv("T4A_CACHE_DIR", cache, 1), 0);
  r.source = source;
  r.header_names = names;
  r.header_sources = sources;
  r.header_count = 1;
  r.output = T4A_COMPILE_PTX;
  r.cc_major = 9;
  r.flags = T4A_COMPILE_NO_MEMORY_CACHE;
  t4a_compile_stats before = stats_now();
  ASSERT_OK(t4a_compile(&r, &a));
  t4a_compile_stats after = stats_now();
  assert_int_equal(after.disk_writes - before.disk_writes, writes);
  ASSERT_OK(t4a_artifact_release(a));
}

static void test_given_headers_still_cached(void **state) {
  (void)state;
  compile_counting_writes(
      "  #  include \"given.h\"\n#include <given.h>\n"
      "extern \"C\" __global__ void k(int *p) { *p = W; }\n",
      1);
  compile_counting_writes(
      "#define H \"given.h\"\n#include H\n"
      "extern \"C\" __global__ void k(int *p) { *p = W + 1; }\n",
      0);
}

static void test_destroy_with_transient_event_failure(void **state) {
  t4a_runtime rt = {0};
  t4a_module m = {0};
  t4a_kernel k = {0};
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  unsigned char image[16] = {7, 7};
  t4a_process_stats before, after;
  t4a_status s;
  (void)state;
  before = process_stats();
  ASSERT_OK(t4a_runtime_create(NULL, &rt));
  ASSERT_OK(t4a_module_load_data(rt, image, sizeof image, &m));
  ASSERT_OK(t4a_kernel_get(m, "k", &k));
  d.kernel = k;
  ASSERT_OK(t4a_launch(rt, &d)); /* the open epoch keeps the module */
  ASSERT_OK(t4a_kernel_release(k));
  ASSERT_OK(t4a_module_release(m));
  /* the event pool is empty: sealing creates an event, which fails once */
  ASSERT_OK(t4a_testing_fault_arm("cuEventCreate", 1, 2 /* OUT_OF_MEMORY */,
                                  T4A_TESTING_FAULT_INSTEAD));
  s = t4a_runtime_destroy(rt);
  t4a_testing_fault_reset();
  after = process_stats();
  printf("destroy: %s; runtimes_live %+lld, runtimes_leaked %+lld\n",
         t4a_status_name(s),
         (long long)(after.runtimes_live - before.runtimes_live),
         (long long)(after.runtimes_leaked - before.runtimes_leaked));
  assert_int_equal(after.runtimes_leaked, before.runtimes_leaked);
  assert_int_equal(after.runtimes_live, before.runtimes_live);
  ASSERT_OK(s);
}

static void test_release_with_sticky_free(void **state) {
  t4a_runtime rt = {0};
  t4a_buffer b = {0};
  t4a_status s;
  t4a_error_info ei = T4A_ERROR_INFO_INIT;
  (void)state;
  ASSERT_OK(t4a_runtime_create(NULL, &rt));
  ASSERT_OK(t4a_buffer_alloc(rt, 1024, 0, &b));
  t4a_last_error_clear();
  ASSERT_OK(t4a_testing_fault_arm("cuMemFreeAsync", 1,
                                  700 /* ILLEGAL_ADDRESS */,
                                  T4A_TESTING_FAULT_INSTEAD));
  s = t4a_buffer_release(b);
  t4a_testing_fault_reset();
  (void)t4a_last_error(&ei);
  printf("release: %s; last error %s (CUresult %d)\n", t4a_status_name(s),
         t4a_status_name(ei.status), (int)ei.driver_result);
  if (s == T4A_SUCCESS && ei.status != T4A_SUCCESS)
    fail_msg("t4a_buffer_release returned SUCCESS but left %s in the last "
             "error",
             t4a_status_name(ei.status));
  (void)t4a_runtime_destroy(rt); /* broken: reports the fault and leaks */
}

#define MODULES 24

static void test_launch_frees_host_buffer(void **state) {
  t4a_runtime rt = {0};
  t4a_module m[MODULES];
  t4a_kernel k[MODULES];
  t4a_buffer b = {0};
  t4a_host_buffer hb = {0};
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  long i, freed_in = -1;
  (void)state;
  ASSERT_OK(t4a_runtime_create(NULL, &rt));
  for (i = 0; i < MODULES; ++i) {
    unsigned char image[16] = {9, (unsigned char)i};
    ASSERT_OK(t4a_module_load_data(rt, image, sizeof image, &m[i]));
    ASSERT_OK(t4a_kernel_get(m[i], "k", &k[i]));
  }
  ASSERT_OK(t4a_buffer_alloc(rt, 256, 0, &b));
  ASSERT_OK(t4a_host_buffer_alloc(rt, 256, &hb));
  ASSERT_OK(t4a_buffer_upload_host(rt, b, 0, hb, 0, 256));
  ASSERT_OK(t4a_host_buffer_release(hb)); /* now only the epoch keeps it */
  t4a_testing_count_calls(1);
  for (i = 0; i < 8L * T4A_OPEN_EPOCH_LIMIT; ++i) {
    d.kernel = k[i % MODULES];
    ASSERT_OK(t4a_launch(rt, &d));
    if (freed_in < 0 && t4a_testing_call_count("cuMemFreeHost") > 0)
      freed_in = i;
  }
  t4a_testing_fault_reset();
  if (freed_in >= 0)
    fail_msg("cuMemFreeHost ran inside t4a_launch #%ld (a call that may "
             "synchronize the device, on the warm launch path, not counted "
             "as a host wait)",
             freed_in);
  /* Parked, not leaked: the next synchronize (a host wait anyway) frees
   * it, exactly once. */
  t4a_testing_count_calls(1);
  ASSERT_OK(t4a_runtime_synchronize(rt));
  assert_int_equal(t4a_testing_call_count("cuMemFreeHost"), 1);
  t4a_testing_fault_reset();
  for (i = 0; i < MODULES; ++i) {
    ASSERT_OK(t4a_kernel_release(k[i]));
    ASSERT_OK(t4a_module_release(m[i]));
  }
  ASSERT_OK(t4a_buffer_release(b));
  ASSERT_OK(t4a_runtime_destroy(rt));
}

static atomic_int g_stop;

static void fresh_compile(long tag) {
  char src[256];
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  t4a_artifact a = {0};
  snprintf(src, sizeof src,
           "extern \"C\" __global__ void f(int *p) { *p = %ld; }\n", tag);
  r.source = src;
  r.output = T4A_COMPILE_PTX;
  r.cc_major = 9;
  r.flags = T4A_COMPILE_NO_MEMORY_CACHE | T4A_COMPILE_NO_DISK_CACHE;
  ASSERT_OK(t4a_compile(&r, &a));
  ASSERT_OK(t4a_artifact_release(a));
}

static void *compiling_thread(void *arg) {
  long i = 0;
  (void)arg;
  while (!atomic_load(&g_stop)) fresh_compile(1000000L + i++);
  return NULL;
}

static void test_fork_during_nvrtc_compile(void **state) {
  pthread_t t;
  int hung = 0, failed = 0;
  (void)state;
  fresh_compile(1); /* NVRTC loaded */
  assert_int_equal(pthread_create(&t, NULL, compiling_thread, NULL), 0);
  for (int c = 0; c < 20; ++c) {
    struct timespec nap = {0, 30000000L + 7000000L * (c % 5)};
    nanosleep(&nap, NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      alarm(getenv("REVIEW_NO_ALARM") ? 0 : 10);
      fresh_compile(2000000L + c);
      _exit(0);
    }
    int status = 0;
    if (getenv("REVIEW_NO_ALARM")) {
      sleep(4);
      if (waitpid(pid, &status, WNOHANG) == 0) {
        char cmd[128];
        snprintf(cmd, sizeof cmd,
                 "gdb -p %d -batch -ex 'thread apply all bt' 2>/dev/null | "
                 "grep -E '^#|^Thread' | head -40",
                 (int)pid);
        if (system(cmd) != 0) fprintf(stderr, "gdb failed\n");
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      continue;
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
      ++hung;
      break; /* one is enough (each costs the alarm's 10 s) */
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      ++failed;
  }
  atomic_store(&g_stop, 1);
  pthread_join(t, NULL);
  /* REVIEW_NO_ALARM=1: the first child still compiling after 4 s is shown
   * with gdb (a parent thread held NVRTC's own mutex, inside
   * nvrtcCompileProgram, at the fork) and killed; diagnostic only. */
  printf("children: %d hung, %d failed\n", hung, failed);
  assert_int_equal(hung, 0);
  assert_int_equal(failed, 0);
}

/* Whether this binary runs under an AddressSanitizer whose allocator a
 * forked child may find locked. ASan runtimes older than LLVM 18 (GCC
 * 12's libasan, the one of the CI machine, among them) install no
 * pthread_atfork handlers (llvm-project PR 75290, December 2023), so a
 * child forked while another thread is inside malloc can hang in its
 * first allocation. No version is tested: every ASan build skips. */
static int asan_without_fork_handlers(void) {
#if defined(__SANITIZE_ADDRESS__)
  return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return 1;
#else
  return 0;
#endif
#else
  return 0;
#endif
}

int main(int argc, char **argv) {
  const struct CMUnitTest source_dir[] = {
      cmocka_unit_test(test_header_next_to_program_name),
      cmocka_unit_test(test_given_headers_still_cached),
  };
  const struct CMUnitTest destroy_transient[] = {
      cmocka_unit_test(test_destroy_with_transient_event_failure),
  };
  if (argc == 2 && strcmp(argv[1], "fork_nvrtc") == 0) {
    if (asan_without_fork_handlers()) {
      /* The child would wait on the sanitizer's allocator lock, held by
       * the parent's compiling thread at the fork: a hang of the test's
       * runtime, not of the library (one child in 20 hung in CI). */
      printf("skipped under AddressSanitizer: its allocator is not "
             "fork-safe before LLVM's pthread_atfork handlers "
             "(llvm-project PR 75290); the default and tsan lanes run this "
             "test\n");
      return 77;
    }
    const struct CMUnitTest fork_nvrtc[] = {
        cmocka_unit_test(test_fork_during_nvrtc_compile),
    };
    return cmocka_run_group_tests(fork_nvrtc, NULL, NULL);
  }
  if (argc == 2 && strcmp(argv[1], "source_dir") == 0)
    return cmocka_run_group_tests(source_dir, NULL, NULL);
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  if (argc == 2 && strcmp(argv[1], "release_sticky") == 0) {
    const struct CMUnitTest release_sticky[] = {
        cmocka_unit_test(test_release_with_sticky_free),
    };
    return cmocka_run_group_tests(release_sticky, NULL, NULL);
  }
  if (argc == 2 && strcmp(argv[1], "launch_frees_host") == 0) {
    const struct CMUnitTest launch_frees_host[] = {
        cmocka_unit_test(test_launch_frees_host_buffer),
    };
    return cmocka_run_group_tests(launch_frees_host, NULL, NULL);
  }
  if (argc == 2 && strcmp(argv[1], "destroy_transient") == 0)
    return cmocka_run_group_tests(destroy_transient, NULL, NULL);
  fprintf(stderr, "usage: %s source_dir\n", argv[0]);
  return 2;
}
