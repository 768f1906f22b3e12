/*
 * Host lane: guarantees of t4a_compile under realistic use (issue 8),
 * through real NVRTC (no GPU needed). Modes, each its own ctest:
 *   main             the disk cache's trust rules (item 7: an untrusted
 *                    directory or entry is not loaded, a FIFO does not
 *                    hang, a 1 TiB sparse entry is corrupt), headers found
 *                    through -I (item 8), an entry without name
 *                    expressions (item 9, UBSan in the asan lane), one
 *                    release too many of a cached artifact (item 11);
 *   lock_first_load  a log callback compiling from inside the INFO of the
 *                    first NVRTC load (item 2): a fresh process, so that
 *                    the call_once is the first one;
 *   lock_two_threads two threads whose log callbacks compile each other's
 *                    keys (item 3).
 * A hang would be the failure: an alarm ends the process instead.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compile_support.h"
#include "t4acuda.h"
#include "test_assert.h"

/* Seconds before a hung case kills the process (a failure for ctest). */
#define WATCHDOG_SECONDS 120

/* ---- helpers ------------------------------------------------------------ */

static void kernel_source(char *buf, size_t capacity, const char *tag) {
  snprintf(buf, capacity,
           "// %s\n"
           "extern \"C\" __global__ void scale(float *x, float a) {\n"
           "  x[threadIdx.x] *= a;\n"
           "}\n",
           tag);
}

/* Removes a shard directory of the cache and its files. */
static void empty_shard(const char *shard) {
  DIR *d = opendir(shard);
  struct dirent *e;
  char path[1700];
  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", shard, e->d_name);
    assert_int_equal(unlink(path), 0);
  }
  closedir(d);
  assert_int_equal(chmod(shard, 0700), 0);
  assert_int_equal(rmdir(shard), 0);
}

/* A fresh, empty (mode 0700) cache directory, made T4A_CACHE_DIR. */
static void fresh_cache_dir(char *dir, size_t capacity, const char *name) {
  DIR *d;
  struct dirent *e;
  char path[1200];
  snprintf(path, sizeof path, "%s/guarantees-cache", T4A_TEST_BINARY_DIR);
  (void)mkdir(path, 0700);
  snprintf(dir, capacity, "%s/guarantees-cache/%s", T4A_TEST_BINARY_DIR, name);
  (void)mkdir(dir, 0700);
  assert_int_equal(chmod(dir, 0700), 0);
  d = opendir(dir);
  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
      empty_shard(path); /* a shard directory, removed with its files */
    else
      assert_int_equal(unlink(path), 0);
  }
  closedir(d);
  assert_int_equal(setenv("T4A_CACHE_DIR", dir, 1), 0);
}

/* CUBIN for sm_90 of `source`, with `flags`. */
static t4a_artifact compile_source(const char *source, uint32_t flags) {
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  t4a_artifact a = {0};
  r.source = source;
  r.program_name = "scale.cu";
  r.cc_major = 9;
  r.flags = flags;
  ASSERT_OK(t4a_compile(&r, &a));
  assert_int_not_equal(a.id, T4A_NULL_ID);
  return a;
}

/* Compiles `source` bypassing the memory cache (as a new process would)
 * and checks what answered: NVRTC (and whether the entry counted as
 * corrupt) or the disk. */
static void expect_nvrtc(const char *source, int corrupt) {
  t4a_compile_stats before = stats_now(), after;
  ASSERT_OK(t4a_artifact_release(
      compile_source(source, T4A_COMPILE_NO_MEMORY_CACHE)));
  after = stats_now();
  assert_int_equal(after.disk_hits - before.disk_hits, 0);
  assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 1);
  assert_int_equal(after.disk_corrupt_entries - before.disk_corrupt_entries,
                   corrupt);
}

static void expect_disk_hit(const char *source) {
  t4a_compile_stats before = stats_now(), after;
  ASSERT_OK(t4a_artifact_release(
      compile_source(source, T4A_COMPILE_NO_MEMORY_CACHE)));
  after = stats_now();
  assert_int_equal(after.disk_hits - before.disk_hits, 1);
  assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 0);
}

/* A good entry for a fresh source in a fresh directory; its path. */
static void good_entry(const char *name, char *dir, size_t dir_capacity,
                       char *source, size_t source_capacity, char *path,
                       size_t path_capacity) {
  char tag[128];
  t4a_artifact a;
  fresh_cache_dir(dir, dir_capacity, name);
  unique_tag(tag, sizeof tag, name);
  kernel_source(source, source_capacity, tag);
  a = compile_source(source, T4A_COMPILE_NO_MEMORY_CACHE);
  entry_path(path, path_capacity, dir, a);
  ASSERT_OK(t4a_artifact_release(a));
  expect_disk_hit(source);
}

/* ---- item 7: the disk cache's trust rules ------------------------------- */

/* A verified entry (its checksum matches: as good as one planted with a
 * recomputed checksum) in a directory writable by others is not loaded;
 * nothing is written there either. */
static void test_untrusted_directory_ignored(void **state) {
  char dir[1024], source[512], path[1200];
  t4a_compile_stats before, after;
  (void)state;
  good_entry("world-writable", dir, sizeof dir, source, sizeof source, path,
             sizeof path);
  assert_int_equal(chmod(dir, 0777), 0);
  before = stats_now();
  expect_nvrtc(source, 0);
  after = stats_now();
  assert_int_equal(after.disk_writes - before.disk_writes, 0);
  /* Group-writable is not trusted either. */
  assert_int_equal(chmod(dir, 0770), 0);
  expect_nvrtc(source, 0);
  /* Private again: the entry is trusted again. */
  assert_int_equal(chmod(dir, 0700), 0);
  expect_disk_hit(source);
}

/* Counts the warnings that name the untrusted cache directory. */
static void count_untrusted(void *user, int32_t level, const char *message) {
  if (level == T4A_LOG_WARN && strstr(message, "is not trusted") != NULL)
    ++*(int *)user;
}

/* A memory hit does not read the disk cache's configuration (its
 * directory's trust check costs system calls on every compile): a
 * directory that became untrusted after the entry was made is neither
 * read nor reported by a compile the memory cache answers; the next
 * compile that would use the disk reports it. */
static void test_memory_hit_reads_no_disk_config(void **state) {
  char dir[1024], source[512], tag[128];
  t4a_compile_stats before, after;
  int warned = 0;
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "memory-hit-no-disk");
  unique_tag(tag, sizeof tag, "memory-hit-no-disk");
  kernel_source(source, sizeof source, tag);
  ASSERT_OK(t4a_artifact_release(compile_source(source, 0))); /* NVRTC */
  assert_int_equal(chmod(dir, 0777), 0);
  ASSERT_OK(t4a_set_log_callback(count_untrusted, &warned, T4A_LOG_WARN));
  before = stats_now();
  ASSERT_OK(t4a_artifact_release(compile_source(source, 0)));
  after = stats_now();
  assert_int_equal(after.memory_hits - before.memory_hits, 1);
  assert_int_equal(warned, 0);
  /* A compile that goes past the memory cache reads it, and says so. */
  expect_nvrtc(source, 0);
  ASSERT_OK(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN));
  assert_int_equal(warned, 1);
  assert_int_equal(chmod(dir, 0700), 0);
}

/* An entry writable by others, in a trusted directory, is not loaded: it
 * is taken as corrupt and replaced by a private one. */
static void test_untrusted_entry_replaced(void **state) {
  char dir[1024], source[512], path[1200];
  struct stat st;
  (void)state;
  good_entry("entry-0666", dir, sizeof dir, source, sizeof source, path,
             sizeof path);
  assert_int_equal(chmod(path, 0666), 0);
  expect_nvrtc(source, 1);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 022, 0);
  expect_disk_hit(source);
  /* A link at the entry's path is not followed. */
  {
    char target[1300];
    snprintf(target, sizeof target, "%s.target", path);
    assert_int_equal(rename(path, target), 0);
    assert_int_equal(symlink(target, path), 0);
    expect_nvrtc(source, 1);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(unlink(target), 0);
  }
}

/* A FIFO at an entry's path: the compile neither blocks on it nor reads
 * it; it compiles and replaces it. */
static void test_fifo_entry_does_not_hang(void **state) {
  char dir[1024], source[512], path[1200];
  struct stat st;
  (void)state;
  good_entry("fifo", dir, sizeof dir, source, sizeof source, path, sizeof path);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(mkfifo(path, 0600), 0);
  alarm(WATCHDOG_SECONDS); /* a blocking open would hang here */
  expect_nvrtc(source, 1);
  alarm(0);
  assert_int_equal(stat(path, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  expect_disk_hit(source);
}

/* A 1 TiB sparse entry is larger than any bound: corrupt, compiled again
 * (not OUT_OF_HOST_MEMORY from trying to read it). */
static void test_huge_sparse_entry_is_corrupt(void **state) {
  char dir[1024], source[512], path[1200];
  int fd;
  (void)state;
  good_entry("sparse", dir, sizeof dir, source, sizeof source, path,
             sizeof path);
  fd = open(path, O_WRONLY);
  assert_true(fd >= 0);
  if (ftruncate(fd, (off_t)1 << 40) != 0) {
    close(fd);
    skip(); /* the file system cannot hold such a file */
  }
  close(fd);
  expect_nvrtc(source, 1);
  expect_disk_hit(source);
}

/* ---- item 8: headers found through -I ----------------------------------- */

/* PTX of a kernel storing VALUE from <inc_dir>/value.h, found through
 * `option` + inc_dir; checks that the image stores `value`. */
static void compile_with_include(const char *option, const char *inc_dir,
                                 int value, uint32_t flags) {
  char opt[1200], text[64];
  const char *options[1] = {opt};
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  t4a_artifact a = {0};
  size_t bytes = 0;
  char *image;
  snprintf(opt, sizeof opt, "%s%s", option, inc_dir);
  r.source = "#include \"value.h\"\n"
             "extern \"C\" __global__ void store(int *p) { *p = VALUE; }\n";
  r.program_name = "include.cu";
  r.output = T4A_COMPILE_PTX;
  r.cc_major = 9;
  r.flags = flags;
  r.options = options;
  r.option_count = 1;
  ASSERT_OK(t4a_compile(&r, &a));
  ASSERT_OK(t4a_artifact_image(a, NULL, 0, &bytes));
  image = calloc(1, bytes + 1);
  assert_non_null(image);
  ASSERT_OK(t4a_artifact_image(a, image, bytes, NULL));
  snprintf(text, sizeof text, "%d", value);
  if (strstr(image, text) == NULL)
    fail_msg("the PTX does not store %d (a stale result?)", value);
  free(image);
  ASSERT_OK(t4a_artifact_release(a));
}

/* Headers found through an include path are dependencies of the key
 * (issue 23 item 2): an unchanged header is served from disk, a changed
 * one compiles again, and its old content is found again on disk. */
static void test_include_path_cached_by_content(void **state) {
  static const char *const spellings[] = {"-I", "--include-path="};
  char dir[1024], inc[1200], header[1300];
  size_t k;
  (void)state;
  for (k = 0; k < 2; ++k) {
    t4a_compile_stats before, after;
    int first = 424242 + (int)k * 1000 + (int)(getpid() % 500);
    fresh_cache_dir(dir, sizeof dir, "include-path");
    snprintf(inc, sizeof inc, "%s/inc", dir);
    (void)mkdir(inc, 0700);
    snprintf(header, sizeof header, "%s/value.h", inc);
    write_header(header, first);
    before = stats_now();
    /* As a new process would: the memory cache is bypassed. */
    compile_with_include(spellings[k], inc, first, T4A_COMPILE_NO_MEMORY_CACHE);
    write_header(header, first + 1);
    compile_with_include(spellings[k], inc, first + 1,
                         T4A_COMPILE_NO_MEMORY_CACHE);
    write_header(header, first);
    compile_with_include(spellings[k], inc, first, T4A_COMPILE_NO_MEMORY_CACHE);
    after = stats_now();
    assert_int_equal(after.disk_hits - before.disk_hits, 1);
    assert_int_equal(after.disk_writes - before.disk_writes, 2);
    assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 2);
    assert_int_equal(unlink(header), 0);
    assert_int_equal(rmdir(inc), 0);
  }
}

/* ---- item 9: an entry without name expressions -------------------------- */

/* Written and read back; under UBSan (asan lane) a memcpy from the empty
 * name list's NULL would abort. */
static void test_entry_without_name_expressions(void **state) {
  char dir[1024], tag[128], source[512];
  t4a_artifact a;
  t4a_artifact_info info = T4A_ARTIFACT_INFO_INIT;
  t4a_compile_stats before;
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "no-names");
  unique_tag(tag, sizeof tag, "no-names");
  kernel_source(source, sizeof source, tag);
  before = stats_now();
  ASSERT_OK(t4a_artifact_release(
      compile_source(source, T4A_COMPILE_NO_MEMORY_CACHE)));
  assert_int_equal(stats_now().disk_writes - before.disk_writes, 1);
  a = compile_source(source, T4A_COMPILE_NO_MEMORY_CACHE);
  assert_int_equal(stats_now().disk_hits - before.disk_hits, 1);
  ASSERT_OK(t4a_artifact_info_get(a, &info));
  assert_int_equal(info.name_expression_count, 0);
  ASSERT_OK(t4a_artifact_release(a));
}

/* ---- item 11: the memory cache holds its own reference ------------------ */

static void test_release_too_many_is_invalid_handle(void **state) {
  char dir[1024], tag[128], source[512];
  t4a_artifact a, b;
  t4a_artifact_info info = T4A_ARTIFACT_INFO_INIT;
  t4a_compile_stats before, after;
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "release-too-many");
  unique_tag(tag, sizeof tag, "release-too-many");
  kernel_source(source, sizeof source, tag);
  a = compile_source(source, 0);
  ASSERT_OK(t4a_artifact_release(a));
  /* The cache still holds the artifact, but not through this handle. */
  ASSERT_STATUS(t4a_artifact_release(a), T4A_ERROR_INVALID_HANDLE);
  ASSERT_STATUS(t4a_artifact_info_get(a, &info), T4A_ERROR_INVALID_HANDLE);
  before = stats_now();
  b = compile_source(source, 0);
  after = stats_now();
  assert_int_equal(after.memory_hits - before.memory_hits, 1);
  assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 0);
  assert_int_equal(after.disk_hits - before.disk_hits, 0);
  ASSERT_OK(t4a_artifact_info_get(b, &info));
  /* A live handle is shared: a hit retains it, and each reference needs
   * its own release, then one more is refused. */
  a = compile_source(source, 0);
  assert_int_equal(a.id, b.id);
  ASSERT_OK(t4a_artifact_release(a));
  ASSERT_OK(t4a_artifact_release(b));
  ASSERT_STATUS(t4a_artifact_release(b), T4A_ERROR_INVALID_HANDLE);
  before = stats_now();
  ASSERT_OK(t4a_artifact_release(compile_source(source, 0)));
  assert_int_equal(stats_now().memory_hits - before.memory_hits, 1);
}

/* ---- items 2 and 3: log callbacks that compile -------------------------- */

struct first_load_probe {
  char source[512];
  int calls;
  t4a_status nested;
};

/* On the INFO of the first NVRTC load, compiles another source. */
static void compile_on_load(void *user, int32_t level, const char *message) {
  struct first_load_probe *p = user;
  t4a_artifact a = {0};
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  (void)level;
  if (strstr(message, "NVRTC") == NULL || strstr(message, "loaded") == NULL ||
      p->calls++ > 0)
    return;
  r.source = p->source;
  r.cc_major = 9;
  p->nested = t4a_compile(&r, &a);
  if (p->nested == T4A_SUCCESS) (void)t4a_artifact_release(a);
}

static void test_log_callback_on_first_load(void **state) {
  struct first_load_probe p;
  char tag[128], source[512];
  t4a_artifact a;
  (void)state;
  memset(&p, 0, sizeof p);
  p.nested = T4A_ERROR_INTERNAL;
  unique_tag(tag, sizeof tag, "first-load-nested");
  kernel_source(p.source, sizeof p.source, tag);
  unique_tag(tag, sizeof tag, "first-load");
  kernel_source(source, sizeof source, tag);
  /* No disk cache: NVRTC is loaded (no record is believed instead). */
  assert_int_equal(setenv("T4A_CACHE_DIR", "", 1), 0);
  ASSERT_OK(t4a_set_log_callback(compile_on_load, &p, T4A_LOG_INFO));
  alarm(WATCHDOG_SECONDS);
  a = compile_source(source, 0);
  alarm(0);
  ASSERT_OK(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN));
  assert_int_equal(p.calls, 1);
  ASSERT_STATUS(p.nested, T4A_SUCCESS);
  ASSERT_OK(t4a_artifact_release(a));
}

/* Two threads, each compiling its own source; the log callback of each,
 * on the INFO of its own compile, waits (bounded) until the other thread
 * is in its callback too, then compiles the other thread's source. With a
 * log delivered under the compile lead, each would wait for the other's
 * lead forever. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int arrived;
  char sources[2][512];
  t4a_status outer[2], nested[2];
} g_pair = {PTHREAD_MUTEX_INITIALIZER,
            PTHREAD_COND_INITIALIZER,
            0,
            {{0}},
            {T4A_ERROR_INTERNAL, T4A_ERROR_INTERNAL},
            {T4A_ERROR_INTERNAL, T4A_ERROR_INTERNAL}};
static _Thread_local int tl_role = -1;
static _Thread_local int tl_done;

static void compile_other(void *user, int32_t level, const char *message) {
  struct timespec until;
  t4a_artifact a = {0};
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  (void)user;
  (void)level;
  if (tl_role < 0 || tl_done || strstr(message, "(NVRTC)") == NULL) return;
  tl_done = 1;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 20;
  pthread_mutex_lock(&g_pair.mu);
  ++g_pair.arrived;
  pthread_cond_broadcast(&g_pair.cv);
  while (g_pair.arrived < 2)
    if (pthread_cond_timedwait(&g_pair.cv, &g_pair.mu, &until) == ETIMEDOUT)
      break;
  pthread_mutex_unlock(&g_pair.mu);
  r.source = g_pair.sources[1 - tl_role];
  r.cc_major = 9;
  g_pair.nested[tl_role] = t4a_compile(&r, &a);
  if (g_pair.nested[tl_role] == T4A_SUCCESS) (void)t4a_artifact_release(a);
}

static void *pair_thread(void *arg) {
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  t4a_artifact a = {0};
  tl_role = (int)(intptr_t)arg;
  r.source = g_pair.sources[tl_role];
  r.cc_major = 9;
  g_pair.outer[tl_role] = t4a_compile(&r, &a);
  if (g_pair.outer[tl_role] == T4A_SUCCESS) (void)t4a_artifact_release(a);
  return NULL;
}

static void test_two_threads_compile_each_other(void **state) {
  char tag[128], warm[512];
  pthread_t th[2];
  int i;
  (void)state;
  /* No disk cache: both compiles run NVRTC and lead their keys. */
  assert_int_equal(setenv("T4A_CACHE_DIR", "", 1), 0);
  unique_tag(tag, sizeof tag, "pair-warm");
  kernel_source(warm, sizeof warm, tag); /* loads NVRTC first */
  ASSERT_OK(t4a_artifact_release(compile_source(warm, 0)));
  for (i = 0; i < 2; ++i) {
    unique_tag(tag, sizeof tag, "pair");
    kernel_source(g_pair.sources[i], sizeof g_pair.sources[i], tag);
  }
  ASSERT_OK(t4a_set_log_callback(compile_other, NULL, T4A_LOG_INFO));
  alarm(WATCHDOG_SECONDS);
  for (i = 0; i < 2; ++i)
    assert_int_equal(
        pthread_create(&th[i], NULL, pair_thread, (void *)(intptr_t)i), 0);
  for (i = 0; i < 2; ++i) pthread_join(th[i], NULL);
  alarm(0);
  ASSERT_OK(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN));
  assert_int_equal(g_pair.arrived, 2);
  for (i = 0; i < 2; ++i) {
    ASSERT_STATUS(g_pair.outer[i], T4A_SUCCESS);
    ASSERT_STATUS(g_pair.nested[i], T4A_SUCCESS);
  }
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_untrusted_directory_ignored),
      cmocka_unit_test(test_memory_hit_reads_no_disk_config),
      cmocka_unit_test(test_untrusted_entry_replaced),
      cmocka_unit_test(test_fifo_entry_does_not_hang),
      cmocka_unit_test(test_huge_sparse_entry_is_corrupt),
      cmocka_unit_test(test_include_path_cached_by_content),
      cmocka_unit_test(test_entry_without_name_expressions),
      cmocka_unit_test(test_release_too_many_is_invalid_handle),
  };
  const struct CMUnitTest first_load[] = {
      cmocka_unit_test(test_log_callback_on_first_load),
  };
  const struct CMUnitTest two_threads[] = {
      cmocka_unit_test(test_two_threads_compile_each_other),
  };
  /* No driver is needed for any of this; a log level set by the caller's
   * environment would change what the callbacks see. */
  setenv("T4A_CUDA_DRIVER_PATH", "/nonexistent/libcuda.so.1", 1);
  unsetenv("T4A_LOG");
  /* A hang anywhere fails instead of stalling the suite. */
  signal(SIGALRM, SIG_DFL);
  if (argc == 2 && strcmp(argv[1], "main") == 0)
    return cmocka_run_group_tests_name("compile_guarantees", tests, NULL, NULL);
  if (argc == 2 && strcmp(argv[1], "lock_first_load") == 0)
    return cmocka_run_group_tests_name("lock_first_load", first_load, NULL,
                                       NULL);
  if (argc == 2 && strcmp(argv[1], "lock_two_threads") == 0)
    return cmocka_run_group_tests_name("lock_two_threads", two_threads, NULL,
                                       NULL);
  fprintf(stderr, "usage: %s main|lock_first_load|lock_two_threads\n", argv[0]);
  return 1;
}
