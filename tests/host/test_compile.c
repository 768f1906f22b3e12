/*
 * Host lane: t4a_compile through real NVRTC (which needs no GPU), the
 * in-memory and disk caches, and the compile counters:
 *   - PTX and CUBIN for sm_90: non-empty images with the right magic,
 *     target, key, lowered names, query-then-copy getters;
 *   - a memory hit returns the same handle, retained, without NVRTC;
 *   - a disk hit across two processes (this program runs itself again);
 *   - corrupt or truncated entries are compiled again, replaced, counted;
 *   - four processes compiling the same source at once all succeed and
 *     leave one good entry;
 *   - the disk cache's bound evicts the least recently used entry;
 *   - bad requests are rejected with messages naming the field and index;
 *   - a failed compile with 290 diagnostics gives its complete log;
 *   - an empty image (CUBIN for a virtual arch) is an error, never cached.
 * Modes: `main` (all of the above), `no_compiler` (T4A_NVRTC_PATH points
 * nowhere), and `child TAG EXPECT` (used by `main`).
 * Every case uses its own cache directory under the build tree.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compile_support.h"
#include "host_support.h"
#include "t4acuda.h"
#include "test_assert.h"

#define SENTINEL_ID UINT64_C(0xA5A5A5A5A5A5A5A5)
#define NVRTC_ERROR_COMPILATION 6 /* nvrtcResult */

/* ---- helpers ------------------------------------------------------------ */

/* A kernel whose source differs by `tag` (a comment), so each case gets
 * keys of its own. */
static void kernel_source(char *buf, size_t capacity, const char *tag) {
  snprintf(buf, capacity,
           "// %s\n"
           "extern \"C\" __global__ void scale(float *x, float a) {\n"
           "  x[threadIdx.x] *= a;\n"
           "}\n"
           "template <typename T> __global__ void fill(T *p, T v) {\n"
           "  p[threadIdx.x] = v;\n"
           "}\n",
           tag);
}

static const char *const k_names[] = {"scale", "&fill<float>"};

static t4a_compile_request request_for(const char *source, uint32_t output,
                                       uint32_t flags) {
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  r.source = source;
  r.program_name = "scale.cu";
  r.output = output;
  r.cc_major = 9;
  r.cc_minor = 0;
  r.flags = flags;
  r.name_expressions = k_names;
  r.name_expression_count = 2;
  return r;
}

/* Removes what `dir` holds; with `depth` 1, the files of its
 * subdirectories (the cache's shard directories) and those too. */
static void empty_dir(const char *dir, int depth) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[1400];
  struct stat st;
  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (depth > 0 && lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
      empty_dir(path, depth - 1);
      assert_int_equal(rmdir(path), 0);
    } else {
      assert_int_equal(unlink(path), 0);
    }
  }
  closedir(d);
}

/* A fresh, empty cache directory for one case, made T4A_CACHE_DIR. */
static void fresh_cache_dir(char *dir, size_t capacity, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/compile-cache", T4A_TEST_BINARY_DIR);
  (void)mkdir(path, 0700);
  snprintf(dir, capacity, "%s/compile-cache/%s", T4A_TEST_BINARY_DIR, name);
  (void)mkdir(dir, 0700);
  empty_dir(dir, 1);
  assert_int_equal(setenv("T4A_CACHE_DIR", dir, 1), 0);
}

/* Counts entry files (*.t4ac) and temporary files (.*.tmp) in `dir` and
 * in its shard directories (`dir`/00 .. `dir`/ff). */
static void count_files_in(const char *dir, int depth, int *entries,
                           int *temps) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[1400];
  struct stat st;
  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (n > 5 && strcmp(e->d_name + n - 5, ".t4ac") == 0)
      ++*entries;
    else if (n > 4 && e->d_name[0] == '.' &&
             strcmp(e->d_name + n - 4, ".tmp") == 0)
      ++*temps;
    else if (depth > 0 && n == 2 && lstat(path, &st) == 0 &&
             S_ISDIR(st.st_mode))
      count_files_in(path, depth - 1, entries, temps);
  }
  closedir(d);
}

static void count_files(const char *dir, int *entries, int *temps) {
  *entries = 0;
  *temps = 0;
  count_files_in(dir, 1, entries, temps);
}

/* `dir`/<first two hex digits of the key>/<key>.t4ac (the sharded
 * layout, docs/compilation.md). */
static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Compiles `tag`'s kernel (CUBIN, sm_90) with `flags`; returns the
 * artifact (released by the caller). */
static t4a_artifact compile_tag(const char *tag, uint32_t flags) {
  char source[1024];
  t4a_compile_request r;
  t4a_artifact a = {SENTINEL_ID};
  kernel_source(source, sizeof source, tag);
  r = request_for(source, T4A_COMPILE_CUBIN, flags);
  ASSERT_OK(t4a_compile(&r, &a));
  assert_int_not_equal(a.id, SENTINEL_ID);
  assert_int_not_equal(a.id, T4A_NULL_ID);
  return a;
}

/* Runs this program again as `child TAG EXPECT`; returns the pid. */
static pid_t spawn_child(const char *tag, const char *expect) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char *const argv[] = {(char *)"test_compile", (char *)"child", (char *)tag,
                          (char *)expect, NULL};
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  return pid;
}

static int wait_child(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- PTX and CUBIN ------------------------------------------------------ */

static void test_ptx_and_cubin(void **state) {
  char tag[128], source[1024], dir[1024], key_cubin[T4A_ARTIFACT_KEY_CAPACITY],
      key_ptx[T4A_ARTIFACT_KEY_CAPACITY], name[256];
  t4a_compile_request r;
  t4a_artifact cubin = {0}, ptx = {0};
  t4a_artifact_info info = T4A_ARTIFACT_INFO_INIT;
  unsigned char *image;
  size_t needed = 0, i;
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "ptx-cubin");
  unique_tag(tag, sizeof tag, "ptx-cubin");
  kernel_source(source, sizeof source, tag);

  r = request_for(source, T4A_COMPILE_CUBIN, 0);
  ASSERT_OK(t4a_compile(&r, &cubin));
  ASSERT_OK(t4a_artifact_info_get(cubin, &info));
  assert_int_equal(info.output, T4A_COMPILE_CUBIN);
  assert_int_equal(info.cc_major, 9);
  assert_int_equal(info.cc_minor, 0);
  assert_true(info.image_bytes > 64);
  assert_int_equal(info.name_expression_count, 2);
  ASSERT_OK(t4a_artifact_image(cubin, NULL, 0, &needed));
  assert_int_equal(needed, info.image_bytes);
  image = malloc(needed);
  assert_non_null(image);
  ASSERT_OK(t4a_artifact_image(cubin, image, needed, NULL));
  assert_memory_equal(image,
                      "\x7f"
                      "ELF",
                      4); /* an ELF file */
  free(image);

  r = request_for(source, T4A_COMPILE_PTX, 0);
  ASSERT_OK(t4a_compile(&r, &ptx));
  info.struct_size = sizeof info;
  ASSERT_OK(t4a_artifact_info_get(ptx, &info));
  assert_int_equal(info.output, T4A_COMPILE_PTX);
  assert_int_equal(info.cc_major, 9);
  assert_true(info.image_bytes > 16);
  image = malloc(info.image_bytes);
  assert_non_null(image);
  ASSERT_OK(t4a_artifact_image(ptx, image, info.image_bytes, &needed));
  assert_int_equal(needed, info.image_bytes);
  assert_int_equal(image[needed - 1], '\0'); /* PTX text with its NUL */
  assert_true(strncmp((char *)image, "//", 2) == 0 ||
              strncmp((char *)image, ".version", 8) == 0);
  assert_true(t4a_test_contains((char *)image, ".target sm_90"));
  assert_true(t4a_test_contains((char *)image, ".entry scale"));
  free(image);

  /* Keys: 64 lower-case hex digits; the output kind is part of the key. */
  ASSERT_OK(t4a_artifact_key(cubin, key_cubin, sizeof key_cubin, &needed));
  assert_int_equal(needed, T4A_ARTIFACT_KEY_CAPACITY);
  assert_int_equal(strlen(key_cubin), 64);
  for (i = 0; i < 64; ++i)
    assert_non_null(strchr("0123456789abcdef", key_cubin[i]));
  ASSERT_OK(t4a_artifact_key(ptx, key_ptx, sizeof key_ptx, NULL));
  assert_string_not_equal(key_cubin, key_ptx);

  /* Lowered names, in the order of the name expressions. */
  ASSERT_OK(t4a_artifact_lowered_name(cubin, 0, name, sizeof name, &needed));
  assert_string_equal(name, "scale");
  assert_int_equal(needed, 6);
  ASSERT_OK(t4a_artifact_lowered_name(cubin, 1, name, sizeof name, NULL));
  assert_true(t4a_test_starts_with(name, "_Z"));
  assert_true(t4a_test_contains(name, "fill"));
  ASSERT_STATUS(t4a_artifact_lowered_name(cubin, 2, name, sizeof name, NULL),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("index is 2; the artifact has 2 lowered names");

  /* Query-then-copy: short buffers are filled and terminated. */
  ASSERT_OK(t4a_artifact_key(cubin, name, 9, &needed));
  assert_int_equal(needed, 65);
  assert_int_equal(strlen(name), 8);
  assert_memory_equal(name, key_cubin, 8);
  ASSERT_OK(t4a_artifact_log(cubin, NULL, 0, &needed));
  assert_true(needed >= 1);
  ASSERT_STATUS(t4a_artifact_log(cubin, NULL, 4, &needed),
                T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("buf is NULL but capacity is 4");

  ASSERT_OK(t4a_artifact_release(cubin));
  ASSERT_OK(t4a_artifact_release(ptx));
}

/* ---- memory cache ------------------------------------------------------- */

static void test_memory_hit(void **state) {
  char tag[128], dir[1024];
  t4a_compile_stats before, after;
  t4a_artifact a, b, c;
  t4a_artifact_info info = T4A_ARTIFACT_INFO_INIT;
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "memory-hit");
  unique_tag(tag, sizeof tag, "memory-hit");
  before = stats_now();
  a = compile_tag(tag, 0);
  b = compile_tag(tag, 0);
  after = stats_now();
  assert_int_equal(b.id, a.id); /* the same handle, retained */
  assert_int_equal(after.requests - before.requests, 2);
  assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 1);
  assert_int_equal(after.nvrtc_successes - before.nvrtc_successes, 1);
  assert_int_equal(after.memory_hits - before.memory_hits, 1);
  assert_int_equal(after.disk_hits - before.disk_hits, 0);
  assert_int_equal(after.disk_writes - before.disk_writes, 1);
  /* Both references released: the handle is gone, but the cache holds
   * the artifact with a reference of its own (issue 8, item 11), and
   * hands it out again under a new handle. */
  ASSERT_OK(t4a_artifact_release(a));
  ASSERT_OK(t4a_artifact_release(b));
  ASSERT_STATUS(t4a_artifact_info_get(a, &info), T4A_ERROR_INVALID_HANDLE);
  c = compile_tag(tag, 0);
  ASSERT_OK(t4a_artifact_info_get(c, &info));
  assert_int_equal(stats_now().memory_hits - before.memory_hits, 2);
  assert_int_equal(stats_now().nvrtc_invocations - before.nvrtc_invocations, 1);
  ASSERT_OK(t4a_artifact_release(c));
  /* Bypassing the memory cache finds the disk entry. */
  c = compile_tag(tag, T4A_COMPILE_NO_MEMORY_CACHE);
  assert_int_not_equal(c.id, a.id);
  after = stats_now();
  assert_int_equal(after.disk_hits - before.disk_hits, 1);
  assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 1);
  ASSERT_OK(t4a_artifact_release(c));
}

/* ---- disk cache --------------------------------------------------------- */

static void test_disk_hit_across_processes(void **state) {
  char tag[128], dir[1024];
  int entries, temps;
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "two-processes");
  unique_tag(tag, sizeof tag, "two-processes");
  assert_int_equal(wait_child(spawn_child(tag, "nvrtc")), 0);
  count_files(dir, &entries, &temps);
  assert_int_equal(entries, 1);
  assert_int_equal(temps, 0);
  assert_int_equal(wait_child(spawn_child(tag, "disk")), 0);
}

/* The one NVRTC record ("nvrtc-*.id") in `dir`: its path; fails unless
 * there is exactly one. */
static void record_path(const char *dir, char *path, size_t capacity) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int found = 0;
  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (strncmp(e->d_name, "nvrtc-", 6) == 0 && n > 3 &&
        strcmp(e->d_name + n - 3, ".id") == 0) {
      snprintf(path, capacity, "%s/%s", dir, e->d_name);
      ++found;
    }
  }
  closedir(d);
  assert_int_equal(found, 1);
}

static void read_text(const char *path, char *buf, size_t capacity) {
  FILE *f = fopen(path, "r");
  size_t n;
  assert_non_null(f);
  n = fread(buf, 1, capacity - 1, f);
  buf[n] = '\0';
  fclose(f);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
}

/* `text` with its line starting with `prefix` replaced by `line`. */
static void replace_line(const char *text, const char *prefix, const char *line,
                         char *out, size_t capacity) {
  const char *at = strstr(text, prefix);
  const char *end;
  assert_non_null(at);
  end = strchr(at, '\n');
  assert_non_null(end);
  snprintf(out, capacity, "%.*s%s%s", (int)(at - text), text, line, end);
}

/* A fresh process answers a disk hit from the NVRTC record without loading
 * NVRTC; a stale, mismatched or garbled record is not believed (NVRTC is
 * loaded to identify it, the answer is still the right entry) and is
 * replaced, so the next fresh process again loads nothing. */
static void test_nvrtc_record(void **state) {
  char tag[128], dir[1024], path[1200], good[4096], bad[4096];
  int i;
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "nvrtc-record");
  unique_tag(tag, sizeof tag, "nvrtc-record");
  assert_int_equal(wait_child(spawn_child(tag, "nvrtc")), 0);
  record_path(dir, path, sizeof path);
  read_text(path, good, sizeof good);
  assert_non_null(strstr(good, "\nversion "));
  assert_int_equal(wait_child(spawn_child(tag, "disk")), 0);
  for (i = 0; i < 4; ++i) {
    switch (i) {
    case 0: /* another NVRTC version than the file's */
      replace_line(good, "version ", "version 99 0", bad, sizeof bad);
      break;
    case 1: /* the file changed since the record was written */
      replace_line(good, "identity ", "identity 1 2 3 4.5 6.7", bad,
                   sizeof bad);
      break;
    case 2: /* another file */
      replace_line(good, "file ", "file /nonexistent/libnvrtc.so.13", bad,
                   sizeof bad);
      break;
    default: /* not a record */
      snprintf(bad, sizeof bad, "t4acuda NVRTC record 1\nversion\n");
    }
    write_text(path, bad);
    assert_int_equal(wait_child(spawn_child(tag, "disk-loaded")), 0);
    record_path(dir, path, sizeof path);
    read_text(path, bad, sizeof bad);
    assert_string_equal(bad, good);
    assert_int_equal(wait_child(spawn_child(tag, "disk")), 0);
  }
}

static void test_corrupt_entries_recompiled(void **state) {
  enum {
    TRUNCATE_HALF,
    TRUNCATE_HEADER,
    EMPTY,
    FLIP_PAYLOAD,
    FLIP_MAGIC,
    FLIP_KEY,
    APPEND,
    CASES
  };
  char tag[128], dir[1024], path[1200];
  long size;
  int k;
  t4a_artifact a;
  t4a_compile_stats before, after;
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "corrupt");
  unique_tag(tag, sizeof tag, "corrupt");
  a = compile_tag(tag, T4A_COMPILE_NO_MEMORY_CACHE);
  entry_path(path, sizeof path, dir, a);
  ASSERT_OK(t4a_artifact_release(a));
  size = file_size(path);
  assert_true(size > 128);
  for (k = 0; k < CASES; ++k) {
    FILE *f;
    int entries, temps;
    switch (k) {
    case TRUNCATE_HALF: assert_int_equal(truncate(path, size / 2), 0); break;
    case TRUNCATE_HEADER: assert_int_equal(truncate(path, 20), 0); break;
    case EMPTY: assert_int_equal(truncate(path, 0), 0); break;
    case APPEND:
      f = fopen(path, "ab");
      assert_non_null(f);
      fputc('x', f);
      fclose(f);
      break;
    default: {
      long at = k == FLIP_MAGIC ? 0 : k == FLIP_KEY ? 20 : size - 1;
      int c;
      f = fopen(path, "r+b");
      assert_non_null(f);
      assert_int_equal(fseek(f, at, SEEK_SET), 0);
      c = fgetc(f);
      assert_int_equal(fseek(f, at, SEEK_SET), 0);
      fputc(c ^ 0x40, f);
      fclose(f);
    }
    }
    before = stats_now();
    a = compile_tag(tag, T4A_COMPILE_NO_MEMORY_CACHE);
    after = stats_now();
    if (after.disk_corrupt_entries - before.disk_corrupt_entries != 1)
      fail_msg("case %d: corrupt entry not counted", k);
    assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 1);
    assert_int_equal(after.disk_hits - before.disk_hits, 0);
    assert_int_equal(after.disk_writes - before.disk_writes, 1);
    ASSERT_OK(t4a_artifact_release(a));
    /* Replaced by a good entry: the next compile is a verified disk hit. */
    assert_int_equal(file_size(path), size);
    before = stats_now();
    a = compile_tag(tag, T4A_COMPILE_NO_MEMORY_CACHE);
    after = stats_now();
    assert_int_equal(after.disk_hits - before.disk_hits, 1);
    assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 0);
    assert_int_equal(after.disk_corrupt_entries - before.disk_corrupt_entries,
                     0);
    ASSERT_OK(t4a_artifact_release(a));
    count_files(dir, &entries, &temps);
    assert_int_equal(entries, 1);
    assert_int_equal(temps, 0);
  }
}

static void test_concurrent_processes(void **state) {
  enum { CHILDREN = 4 };
  char tag[128], dir[1024];
  pid_t pids[CHILDREN];
  int i, entries, temps;
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "concurrent");
  unique_tag(tag, sizeof tag, "concurrent");
  for (i = 0; i < CHILDREN; ++i) pids[i] = spawn_child(tag, "any");
  for (i = 0; i < CHILDREN; ++i)
    if (wait_child(pids[i]) != 0) fail_msg("child %d failed", i);
  count_files(dir, &entries, &temps);
  assert_int_equal(entries, 1);
  assert_int_equal(temps, 0);
  /* The one entry is good: a fresh process reads it. */
  assert_int_equal(wait_child(spawn_child(tag, "disk")), 0);
}

struct nested_probe {
  const char *source;
  int calls;
  t4a_status nested;
};

/* Compiles the same source from the log callback of its own compile. */
static void compiling_logger(void *user, int32_t level, const char *message) {
  struct nested_probe *p = user;
  t4a_compile_request r;
  t4a_artifact a = {0};
  (void)level;
  if (p->calls++ > 0 || strstr(message, "(NVRTC)") == NULL) return;
  r = request_for(p->source, T4A_COMPILE_CUBIN, 0);
  p->nested = t4a_compile(&r, &a);
  if (p->nested == T4A_SUCCESS) (void)t4a_artifact_release(a);
}

/* A thread leading a compile is never made to wait for itself: a log
 * callback compiling the same source from inside that compile returns
 * (it would hang otherwise). */
static void test_nested_compile_from_log(void **state) {
  char tag[128], dir[1024], source[1024];
  struct nested_probe p = {source, 0, T4A_ERROR_INTERNAL};
  t4a_compile_request r;
  t4a_artifact a = {0};
  (void)state;
  if (getenv("T4A_LOG") != NULL) skip();
  fresh_cache_dir(dir, sizeof dir, "nested");
  unique_tag(tag, sizeof tag, "nested");
  kernel_source(source, sizeof source, tag);
  r = request_for(source, T4A_COMPILE_CUBIN, 0);
  ASSERT_OK(t4a_set_log_callback(compiling_logger, &p, T4A_LOG_INFO));
  ASSERT_OK(t4a_compile(&r, &a));
  ASSERT_OK(t4a_set_log_callback(NULL, NULL, T4A_LOG_WARN));
  assert_true(p.calls >= 1);
  ASSERT_STATUS(p.nested, T4A_SUCCESS);
  ASSERT_OK(t4a_artifact_release(a));
}

/* Threads of one fresh process compiling at once: with nothing cached,
 * with only the disk entry and record, and with the record gone. */
static void test_concurrent_threads(void **state) {
  char tag[128], dir[1024], path[1200];
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "threads");
  unique_tag(tag, sizeof tag, "threads");
  assert_int_equal(wait_child(spawn_child(tag, "threads")), 0);
  assert_int_equal(wait_child(spawn_child(tag, "threads")), 0);
  record_path(dir, path, sizeof path);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(wait_child(spawn_child(tag, "threads")), 0);
  record_path(dir, path, sizeof path); /* left again */
}

static void set_mtime(const char *path, time_t when) {
  struct timespec times[2];
  times[0].tv_sec = when;
  times[0].tv_nsec = 0;
  times[1] = times[0];
  assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
}

static void test_disk_bound_evicts_lru(void **state) {
  char tags[3][128], paths[3][1200], dir[1024], bound[64];
  long sizes[3];
  int i;
  t4a_artifact a;
  t4a_compile_stats before, after;
  time_t now = time(NULL);
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "bounded");
  for (i = 0; i < 3; ++i) unique_tag(tags[i], sizeof tags[i], "bounded");
  for (i = 0; i < 2; ++i) {
    a = compile_tag(tags[i], T4A_COMPILE_NO_MEMORY_CACHE);
    entry_path(paths[i], sizeof paths[i], dir, a);
    ASSERT_OK(t4a_artifact_release(a));
    sizes[i] = file_size(paths[i]);
    assert_true(sizes[i] > 0);
  }
  /* Entry 0 is older than entry 1... */
  set_mtime(paths[0], now - 200);
  set_mtime(paths[1], now - 100);
  /* ...until a hit makes it the most recently used. */
  before = stats_now();
  a = compile_tag(tags[0], T4A_COMPILE_NO_MEMORY_CACHE);
  ASSERT_OK(t4a_artifact_release(a));
  assert_int_equal(stats_now().disk_hits - before.disk_hits, 1);
  /* Room for two and a half entries: the third write evicts entry 1. */
  snprintf(bound, sizeof bound, "%ld", sizes[0] + sizes[1] + sizes[0] / 2);
  assert_int_equal(setenv("T4A_CACHE_MAX_BYTES", bound, 1), 0);
  a = compile_tag(tags[2], T4A_COMPILE_NO_MEMORY_CACHE);
  entry_path(paths[2], sizeof paths[2], dir, a);
  ASSERT_OK(t4a_artifact_release(a));
  assert_int_equal(unsetenv("T4A_CACHE_MAX_BYTES"), 0);
  after = stats_now();
  assert_int_equal(after.disk_evictions - before.disk_evictions, 1);
  assert_true(file_size(paths[0]) > 0);
  assert_int_equal(file_size(paths[1]), -1);
  assert_true(file_size(paths[2]) > 0);
}

static void test_disk_cache_disabled_and_request_dir(void **state) {
  char tag[128], dir[1024], path[1200];
  t4a_compile_stats before, after;
  t4a_artifact a;
  t4a_compile_request r;
  char source[1024];
  (void)state;
  unique_tag(tag, sizeof tag, "disabled");
  /* T4A_CACHE_DIR set but empty: no disk cache at all. */
  assert_int_equal(setenv("T4A_CACHE_DIR", "", 1), 0);
  before = stats_now();
  ASSERT_OK(
      t4a_artifact_release(compile_tag(tag, T4A_COMPILE_NO_MEMORY_CACHE)));
  ASSERT_OK(
      t4a_artifact_release(compile_tag(tag, T4A_COMPILE_NO_MEMORY_CACHE)));
  after = stats_now();
  assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 2);
  assert_int_equal(after.disk_writes - before.disk_writes, 0);
  assert_int_equal(after.disk_hits - before.disk_hits, 0);
  /* Without T4A_CACHE_DIR, the request's directory is used. */
  fresh_cache_dir(dir, sizeof dir, "request-dir");
  assert_int_equal(unsetenv("T4A_CACHE_DIR"), 0);
  kernel_source(source, sizeof source, tag);
  r = request_for(source, T4A_COMPILE_CUBIN, T4A_COMPILE_NO_MEMORY_CACHE);
  r.cache_dir = dir;
  ASSERT_OK(t4a_compile(&r, &a));
  entry_path(path, sizeof path, dir, a);
  assert_true(file_size(path) > 0);
  ASSERT_OK(t4a_artifact_release(a));
  /* The flag turns it off. */
  before = stats_now();
  r.flags |= T4A_COMPILE_NO_DISK_CACHE;
  ASSERT_OK(t4a_compile(&r, &a));
  ASSERT_OK(t4a_artifact_release(a));
  after = stats_now();
  assert_int_equal(after.disk_hits - before.disk_hits, 0);
  assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 1);
  /* Later cases must not write to the user's cache. */
  fresh_cache_dir(dir, sizeof dir, "after-request-dir");
}

/* ---- bad requests ------------------------------------------------------- */

static void expect_rejected(const t4a_compile_request *r, t4a_status want,
                            const char *part) {
  t4a_artifact a = {SENTINEL_ID};
  t4a_error_info info = T4A_ERROR_INFO_INIT;
  t4a_compile_stats before = stats_now();
  ASSERT_STATUS(t4a_compile(r, &a), want);
  assert_int_equal(a.id, SENTINEL_ID);
  ASSERT_OK(t4a_last_error(&info));
  assert_string_equal(info.entry_point, "t4a_compile");
  ASSERT_MESSAGE_HAS(part);
  /* Rejected before any work: not a request, no NVRTC. */
  assert_int_equal(stats_now().requests, before.requests);
}

static void test_bad_requests(void **state) {
  const char *good_names[] = {"a.h", "b.h"};
  const char *good_sources[] = {"#define A 1\n", "#define B 2\n"};
  const char *newline_names[] = {"a.h", "b\n.h"};
  const char *cr_names[] = {"a\r.h"};
  const char *null_names[] = {"a.h", NULL};
  const char *empty_names[] = {""};
  const char *bad_options[] = {"-std=c++17", "-DX=1\n-DY=2"};
  const char *cr_options[] = {"-DX=1\r"};
  const char *null_options[] = {NULL};
  const char *null_exprs[] = {"scale", NULL};
  unsigned char bigger[sizeof(t4a_compile_request) + 8];
  t4a_compile_request r;
  t4a_artifact a = {SENTINEL_ID};
  (void)state;
#define RESET()                                                                \
  (r = request_for("__global__ void k() {}", T4A_COMPILE_CUBIN, 0),            \
   r.name_expression_count = 0)
  RESET();
  expect_rejected(NULL, T4A_ERROR_INVALID_ARGUMENT, "request is NULL");
  ASSERT_STATUS(t4a_compile(&r, NULL), T4A_ERROR_INVALID_ARGUMENT);
  ASSERT_MESSAGE_HAS("artifact is NULL");
  r.source = NULL;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT, "request->source is NULL");
  RESET();
  r.header_count = 2;
  r.header_sources = good_sources;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->header_names is NULL but request->header_count "
                  "is 2");
  r.header_names = good_names;
  r.header_sources = NULL;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->header_sources is NULL");
  r.header_sources = good_sources;
  r.header_names = newline_names;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->header_names[1] (\"b\n.h\") contains a newline at "
                  "byte 1");
  r.header_names = cr_names;
  r.header_count = 1;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->header_names[0] (\"a\r.h\") contains a carriage "
                  "return at byte 1");
  r.header_names = null_names;
  r.header_count = 2;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->header_names[1] is NULL");
  r.header_names = empty_names;
  r.header_count = 1;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->header_names[0] is empty");
  RESET();
  r.option_count = 2;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->options is NULL but request->option_count is 2");
  r.options = bad_options;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->options[1] (\"-DX=1\n-DY=2\") contains a newline "
                  "at byte 5");
  r.options = cr_options;
  r.option_count = 1;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->options[0] (\"-DX=1\r\") contains a carriage "
                  "return at byte 5");
  r.options = null_options;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->options[0] is NULL");
  RESET();
  r.name_expressions = null_exprs;
  r.name_expression_count = 2;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->name_expressions[1] is NULL");
  r.name_expressions = NULL;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->name_expressions is NULL but "
                  "request->name_expression_count is 2");
  RESET();
  r.cc_major = 0;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "no target: request->runtime is the null handle and "
                  "request->cc_major is 0");
  r.cc_major = 100;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->cc_major is 100; it must be 1..99");
  r.cc_major = -3;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->cc_major is -3; it must be 1..99");
  r.cc_major = 9;
  r.cc_minor = 10;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->cc_minor is 10; it must be 0..9");
  RESET();
  r.output = 7;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT, "request->output is 7");
  RESET();
  r.flags = 0x90;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT,
                  "request->flags is 0x90; unknown bits 0x90");
  RESET();
  r.struct_size = 3;
  expect_rejected(&r, T4A_ERROR_INVALID_ARGUMENT, "request->struct_size is 3");
  /* A newer caller's struct: a zero tail is accepted, a non-zero one is a
   * version mismatch. */
  RESET();
  memset(bigger, 0, sizeof bigger);
  memcpy(bigger, &r, sizeof r);
  ((t4a_compile_request *)(void *)bigger)->struct_size = sizeof bigger;
  bigger[sizeof r + 3] = 1;
  expect_rejected((const t4a_compile_request *)(void *)bigger,
                  T4A_ERROR_VERSION_MISMATCH, "is non-zero");
  /* An older caller's struct without the cache fields: accepted. */
  RESET();
  r.struct_size = offsetof(t4a_compile_request, disk_cache_max_bytes);
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  r.cache_dir = "/nonexistent/never-read";
  ASSERT_OK(t4a_compile(&r, &a));
  ASSERT_OK(t4a_artifact_release(a));
#undef RESET
}

/* ---- failures ----------------------------------------------------------- */

/* NVRTC's front end stops after 100 errors, so a log longer than any fixed
 * buffer is made of 90 errors and 200 warnings (#warning): 290 diagnostics,
 * over 30 KB, every one of which must be in the log. */
static void test_complete_error_log(void **state) {
  enum { ERRORS = 90, WARNINGS = 200 };
  char *source, *log;
  size_t at = 0, needed = 0, capacity = 64 * (ERRORS + WARNINGS) + 256;
  int i;
  t4a_compile_request r;
  t4a_artifact a = {SENTINEL_ID};
  t4a_error_info info = T4A_ERROR_INFO_INIT;
  t4a_compile_stats before, after;
  char message[8192], first[64], detected[64], dir[1024];
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "error-log");
  source = malloc(capacity);
  assert_non_null(source);
  at += (size_t)snprintf(source + at, capacity - at,
                         "__global__ void broken(int *out) {\n");
  for (i = 0; i < WARNINGS; ++i)
    at += (size_t)snprintf(source + at, capacity - at,
                           "#warning warning_number_%d\n", i);
  for (i = 0; i < ERRORS; ++i)
    at += (size_t)snprintf(source + at, capacity - at,
                           "  out[%d] = undefined_name_%d;\n", i, i);
  snprintf(source + at, capacity - at, "}\n");
  r = request_for(source, T4A_COMPILE_CUBIN, 0);
  r.name_expression_count = 0;
  before = stats_now();
  ASSERT_STATUS(t4a_compile(&r, &a), T4A_ERROR_COMPILE);
  after = stats_now();
  assert_int_equal(a.id, SENTINEL_ID);
  assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 1);
  assert_int_equal(after.nvrtc_successes - before.nvrtc_successes, 0);
  ASSERT_OK(t4a_last_error(&info));
  assert_int_equal(info.compiler_result, NVRTC_ERROR_COMPILATION);
  assert_int_equal(t4a_last_error_message(message, sizeof message, &needed),
                   T4A_SUCCESS);
  assert_true(needed <= sizeof message);
  /* The message: the NVRTC result and the first lines of the log. */
  assert_true(t4a_test_contains(message, "NVRTC_ERROR_COMPILATION"));
  assert_true(t4a_test_contains(message, "warning_number_0"));
  assert_true(t4a_test_contains(message, "t4a_last_compile_log()"));
  assert_false(t4a_test_contains(message, "undefined_name_89"));
  /* The whole log, whatever its length. */
  ASSERT_OK(t4a_last_compile_log(NULL, 0, &needed));
  assert_true(needed > 30000);
  log = malloc(needed);
  assert_non_null(log);
  ASSERT_OK(t4a_last_compile_log(log, needed, NULL));
  assert_int_equal(strlen(log) + 1, needed);
  for (i = 0; i < WARNINGS; ++i) {
    char name[64];
    snprintf(name, sizeof name, "warning_number_%d\n", i);
    if (!t4a_test_contains(log, name)) fail_msg("the log lacks warning %d", i);
  }
  for (i = 0; i < ERRORS; ++i) {
    char name[64];
    snprintf(name, sizeof name, "\"undefined_name_%d\"", i);
    if (!t4a_test_contains(log, name)) fail_msg("the log lacks error %d", i);
  }
  snprintf(detected, sizeof detected, "%d errors detected", ERRORS);
  assert_true(t4a_test_contains(log, detected));
  /* A short buffer gets the start of it, terminated. */
  ASSERT_OK(t4a_last_compile_log(first, sizeof first, NULL));
  assert_int_equal(strlen(first), sizeof first - 1);
  assert_memory_equal(first, log, sizeof first - 1);
  /* A later successful compile keeps it. */
  ASSERT_OK(t4a_artifact_release(compile_tag("log-kept", 0)));
  ASSERT_OK(t4a_last_compile_log(NULL, 0, &needed));
  assert_int_equal(needed, strlen(log) + 1);
  free(log);
  /* A failure is never cached: compiling it again runs NVRTC again. */
  before = stats_now();
  ASSERT_STATUS(t4a_compile(&r, &a), T4A_ERROR_COMPILE);
  assert_int_equal(stats_now().nvrtc_invocations - before.nvrtc_invocations, 1);
  free(source);
}

static void test_empty_image_never_cached(void **state) {
  static const char *const virtual_arch[] = {"-arch=compute_90"};
  char tag[128], source[1024], dir[1024], log[256];
  int entries, temps;
  t4a_compile_request r;
  t4a_artifact a = {SENTINEL_ID};
  t4a_artifact_info info = T4A_ARTIFACT_INFO_INIT;
  t4a_compile_stats before, after;
  (void)state;
  fresh_cache_dir(dir, sizeof dir, "empty-image");
  unique_tag(tag, sizeof tag, "empty-image");
  kernel_source(source, sizeof source, tag);
  r = request_for(source, T4A_COMPILE_CUBIN, 0);
  r.options = virtual_arch;
  r.option_count = 1;
  r.cc_major = 0; /* the option chooses the architecture */
  before = stats_now();
  ASSERT_STATUS(t4a_compile(&r, &a), T4A_ERROR_COMPILE);
  assert_int_equal(a.id, SENTINEL_ID);
  ASSERT_MESSAGE_HAS("empty CUBIN");
  ASSERT_MESSAGE_HAS("nothing was cached");
  ASSERT_OK(t4a_last_compile_log(log, sizeof log, NULL));
  ASSERT_STATUS(t4a_compile(&r, &a), T4A_ERROR_COMPILE);
  after = stats_now();
  assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 2);
  assert_int_equal(after.memory_hits - before.memory_hits, 0);
  assert_int_equal(after.disk_writes - before.disk_writes, 0);
  count_files(dir, &entries, &temps);
  assert_int_equal(entries, 0);
  assert_int_equal(temps, 0);
  /* PTX for the same virtual architecture is fine. */
  r.output = T4A_COMPILE_PTX;
  ASSERT_OK(t4a_compile(&r, &a));
  ASSERT_OK(t4a_artifact_info_get(a, &info));
  assert_int_equal(info.output, T4A_COMPILE_PTX);
  assert_int_equal(info.cc_major, 9);
  assert_true(info.image_bytes > 0);
  ASSERT_OK(t4a_artifact_release(a));
  count_files(dir, &entries, &temps);
  assert_int_equal(entries, 1);
}

static void test_headers_and_options_used(void **state) {
  static const char *const names[] = {"factor.h"};
  static const char *const contents[] = {"#define FACTOR 3.0f\n"};
  static const char *const options[] = {"-DOFFSET=1.0f", "-std=c++17"};
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  t4a_artifact a = {0}, b = {0};
  char key_a[T4A_ARTIFACT_KEY_CAPACITY], key_b[T4A_ARTIFACT_KEY_CAPACITY];
  (void)state;
  r.source = "#include \"factor.h\"\n"
             "extern \"C\" __global__ void f(float *x) {\n"
             "  x[0] = x[0] * FACTOR + OFFSET;\n"
             "}\n";
  r.header_names = names;
  r.header_sources = contents;
  r.header_count = 1;
  r.options = options;
  r.option_count = 2;
  r.cc_major = 9;
  r.output = T4A_COMPILE_PTX;
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  ASSERT_OK(t4a_compile(&r, &a));
  /* Without -DOFFSET it does not compile (the options reach NVRTC). */
  r.options = options + 1;
  r.option_count = 1;
  ASSERT_STATUS(t4a_compile(&r, &b), T4A_ERROR_COMPILE);
  ASSERT_MESSAGE_HAS("OFFSET");
  /* The same request again: the same artifact. */
  r.options = options;
  r.option_count = 2;
  ASSERT_OK(t4a_compile(&r, &b));
  assert_int_equal(a.id, b.id);
  ASSERT_OK(t4a_artifact_key(a, key_a, sizeof key_a, NULL));
  ASSERT_OK(t4a_artifact_release(b));
  r.program_name = "other.cu";
  ASSERT_OK(t4a_compile(&r, &b));
  ASSERT_OK(t4a_artifact_key(b, key_b, sizeof key_b, NULL));
  assert_string_not_equal(key_a, key_b);
  ASSERT_OK(t4a_artifact_release(a));
  ASSERT_OK(t4a_artifact_release(b));
}

/* ---- NVRTC missing ------------------------------------------------------ */

static void test_no_compiler(void **state) {
  t4a_compile_request r =
      request_for("__global__ void k() {}", T4A_COMPILE_CUBIN, 0);
  t4a_artifact a = {SENTINEL_ID};
  t4a_compile_stats s;
  (void)state;
  ASSERT_STATUS(t4a_compile(&r, &a), T4A_ERROR_NO_COMPILER);
  assert_int_equal(a.id, SENTINEL_ID);
  ASSERT_MESSAGE_HAS("/nonexistent/libnvrtc.so");
  s = stats_now();
  assert_int_equal(s.requests, 0);
  assert_int_equal(s.nvrtc_invocations, 0);
}

/* ---- child process ------------------------------------------------------ */

/* Whether any libnvrtc is mapped into this process. */
static int nvrtc_mapped(void) {
  char line[4096];
  int found = 0;
  FILE *f = fopen("/proc/self/maps", "r");
  if (f == NULL) return -1;
  while (!found && fgets(line, sizeof line, f) != NULL)
    found = strstr(line, "/libnvrtc") != NULL;
  fclose(f);
  return found;
}

struct thread_compile {
  const char *source;
  t4a_status status;
  uint64_t id;
  char message[512];
};

static void *compile_thread(void *arg) {
  struct thread_compile *t = arg;
  t4a_compile_request r = request_for(t->source, T4A_COMPILE_CUBIN, 0);
  t4a_artifact a = {0};
  t->status = t4a_compile(&r, &a);
  t->id = a.id;
  if (t->status != T4A_SUCCESS)
    snprintf(t->message, sizeof t->message, "%s", last_message());
  return NULL;
}

/* THREADS threads of a fresh process compile TAG's kernel at once (the
 * NVRTC record, the facts, both caches raced); all succeed, the compiles
 * agree on the image, and every request was answered exactly once. */
static int child_threads(const char *source) {
  enum { THREADS = 4 };
  pthread_t th[THREADS];
  struct thread_compile t[THREADS];
  t4a_compile_stats s = T4A_COMPILE_STATS_INIT;
  int i, bad = 0;
  size_t bytes0 = 0;
  for (i = 0; i < THREADS; ++i) {
    memset(&t[i], 0, sizeof t[i]);
    t[i].source = source;
    if (pthread_create(&th[i], NULL, compile_thread, &t[i]) != 0) return 8;
  }
  for (i = 0; i < THREADS; ++i) pthread_join(th[i], NULL);
  for (i = 0; i < THREADS; ++i) {
    t4a_artifact a = {t[i].id};
    size_t bytes = 0;
    if (t[i].status != T4A_SUCCESS) {
      fprintf(stderr, "child thread %d: %s\n", i, t[i].message);
      bad = 1;
      continue;
    }
    if (t4a_artifact_image(a, NULL, 0, &bytes) != T4A_SUCCESS) bad = 1;
    if (i == 0) bytes0 = bytes;
    if (bytes == 0 || bytes != bytes0) bad = 1;
    if (t4a_artifact_release(a) != T4A_SUCCESS) bad = 1;
  }
  if (t4a_compile_stats_get(&s) != T4A_SUCCESS) return 4;
  /* Identical compiles at once run NVRTC once (the others wait, then hit
   * the memory cache). */
  if (s.requests != THREADS || s.nvrtc_invocations > 1 ||
      s.memory_hits + s.disk_hits + s.nvrtc_successes != THREADS) {
    fprintf(stderr,
            "child threads: requests %llu memory %llu disk %llu "
            "nvrtc %llu\n",
            (unsigned long long)s.requests, (unsigned long long)s.memory_hits,
            (unsigned long long)s.disk_hits,
            (unsigned long long)s.nvrtc_successes);
    bad = 1;
  }
  return bad ? 2 : 0;
}

/* Compiles TAG's kernel; EXPECT: "nvrtc" (compiled here, not found on
 * disk), "disk" (a disk hit, no NVRTC), "disk-loaded" (a disk hit with
 * NVRTC loaded), "threads" (see child_threads), "any". Exit 0 when as
 * expected. */
static int child_main(const char *tag, const char *expect) {
  char source[1024];
  t4a_compile_request r;
  t4a_artifact a;
  t4a_compile_stats s = T4A_COMPILE_STATS_INIT;
  kernel_source(source, sizeof source, tag);
  if (strcmp(expect, "threads") == 0) return child_threads(source);
  r = request_for(source, T4A_COMPILE_CUBIN, 0);
  if (t4a_compile(&r, &a) != T4A_SUCCESS) {
    fprintf(stderr, "child: compile failed: %s\n", last_message());
    return 3;
  }
  if (t4a_compile_stats_get(&s) != T4A_SUCCESS) return 4;
  if (strcmp(expect, "nvrtc") == 0 &&
      (s.nvrtc_invocations != 1 || s.disk_hits != 0 || s.disk_writes != 1)) {
    fprintf(stderr, "child: expected a compile: nvrtc %llu disk hits %llu\n",
            (unsigned long long)s.nvrtc_invocations,
            (unsigned long long)s.disk_hits);
    return 2;
  }
  if ((strcmp(expect, "disk") == 0 || strcmp(expect, "disk-loaded") == 0) &&
      (s.nvrtc_invocations != 0 || s.disk_hits != 1 ||
       s.disk_corrupt_entries != 0)) {
    fprintf(stderr, "child: expected a disk hit: nvrtc %llu disk hits %llu\n",
            (unsigned long long)s.nvrtc_invocations,
            (unsigned long long)s.disk_hits);
    return 2;
  }
  /* "disk": NVRTC was not even loaded (its record in the cache directory
   * was believed); "disk-loaded": it had to be loaded to be identified. */
  if (strcmp(expect, "disk") == 0 && nvrtc_mapped()) {
    fprintf(stderr, "child: a disk hit loaded NVRTC\n");
    return 6;
  }
  if (strcmp(expect, "disk-loaded") == 0 && !nvrtc_mapped()) {
    fprintf(stderr, "child: NVRTC was not loaded\n");
    return 7;
  }
  return t4a_artifact_release(a) == T4A_SUCCESS ? 0 : 5;
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ptx_and_cubin),
      cmocka_unit_test(test_memory_hit),
      cmocka_unit_test(test_disk_hit_across_processes),
      cmocka_unit_test(test_nvrtc_record),
      cmocka_unit_test(test_corrupt_entries_recompiled),
      cmocka_unit_test(test_concurrent_processes),
      cmocka_unit_test(test_concurrent_threads),
      cmocka_unit_test(test_nested_compile_from_log),
      cmocka_unit_test(test_disk_bound_evicts_lru),
      cmocka_unit_test(test_disk_cache_disabled_and_request_dir),
      cmocka_unit_test(test_bad_requests),
      cmocka_unit_test(test_complete_error_log),
      cmocka_unit_test(test_empty_image_never_cached),
      cmocka_unit_test(test_headers_and_options_used),
  };
  const struct CMUnitTest no_compiler[] = {
      cmocka_unit_test(test_no_compiler),
  };
  /* No driver is needed for any of this. */
  setenv("T4A_CUDA_DRIVER_PATH", "/nonexistent/libcuda.so.1", 1);
  if (argc == 4 && strcmp(argv[1], "child") == 0)
    return child_main(argv[2], argv[3]);
  if (argc == 2 && strcmp(argv[1], "main") == 0)
    return cmocka_run_group_tests_name("compile", tests, NULL, NULL);
  if (argc == 2 && strcmp(argv[1], "no_compiler") == 0)
    return cmocka_run_group_tests_name("compile_no_compiler", no_compiler, NULL,
                                       NULL);
  fprintf(stderr, "usage: %s main|no_compiler|child TAG EXPECT\n", argv[0]);
  return 1;
}
