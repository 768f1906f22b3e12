/*
 * Host lane: real CUDA source through real NVRTC (no GPU needed) — the
 * toolkit headers found without options, and a disk cache keyed by every
 * file a compile could read (issue 23 items 1, 2 and 7):
 *   - three spellings of #include that the old text scan missed (the
 *     digraph %:, a line splice inside the directive, a splice with CR LF)
 *     never serve the old kernel after the header changes;
 *   - a header found through -I is cached on disk and served to a fresh
 *     process while unchanged, recompiled when changed, and a header of
 *     the same name added in a directory searched earlier is noticed;
 *   - cuda_fp16.h compiles without -I; a fresh process gets it from disk;
 *     T4A_COMPILE_NO_TOOLKIT_HEADERS opts out; a toolkit directory of
 *     another version named by T4A_CUDA_INCLUDE is refused, naming both;
 *   - an include named by a macro is never cached;
 *   - a relative toolkit directory follows chdir; a toolkit directory of
 *     "." is not a prefix of every path; a name ending in '/' and its
 *     directory are told apart (a fresh process, mode `fresh FILE`);
 *   - artifact info says where an artifact came from and how long it took;
 *   - property: random programs and header edits; the cached result always
 *     equals what NVRTC makes now, and the key changes whenever it does.
 * Modes: `main` (all of the above) and `child DIR VALUE ORIGIN` (a fresh
 * process compiling the -I program, run by `main`).
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compile_support.h"
#include "t4acuda.h"
#include "test_assert.h"

/* ---- helpers ------------------------------------------------------------ */

/* A fresh private directory under the build tree. */
static void fresh_dir(char *buf, size_t capacity, const char *what) {
  static int serial;
  snprintf(buf, capacity, "%s/compile-deps/%s-%d-%d", T4A_TEST_BINARY_DIR, what,
           (int)getpid(), serial++);
  char parent[1024];
  snprintf(parent, sizeof parent, "%s/compile-deps", T4A_TEST_BINARY_DIR);
  (void)mkdir(parent, 0700); /* may exist */
  assert_int_equal(mkdir(buf, 0700), 0);
}

/* A directory of its own as the disk cache (T4A_CACHE_DIR). */
static void use_cache(const char *what) {
  char dir[1100];
  fresh_dir(dir, sizeof dir, what);
  assert_int_equal(setenv("T4A_CACHE_DIR", dir, 1), 0);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
}

static void write_value(const char *path, int value) {
  char text[64];
  snprintf(text, sizeof text, "#define VALUE %d\n", value);
  write_text(path, text);
}

/* The PTX of `a` (caller frees). */
static char *ptx_of(t4a_artifact a) {
  size_t bytes = 0;
  ASSERT_OK(t4a_artifact_image(a, NULL, 0, &bytes));
  char *image = calloc(1, bytes + 1);
  assert_non_null(image);
  ASSERT_OK(t4a_artifact_image(a, image, bytes, NULL));
  return image;
}

static int stores(t4a_artifact a, int value) {
  char text[32];
  char *ptx = ptx_of(a);
  snprintf(text, sizeof text, "%d", value);
  int found = strstr(ptx, text) != NULL;
  free(ptx);
  return found;
}

static t4a_compile_request ptx_request(const char *source) {
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  r.source = source;
  r.output = T4A_COMPILE_PTX;
  r.cc_major = 9;
  return r;
}

static t4a_artifact_info info_of(t4a_artifact a) {
  t4a_artifact_info info = T4A_ARTIFACT_INFO_INIT;
  ASSERT_OK(t4a_artifact_info_get(a, &info));
  return info;
}

/* ---- the bypass spellings ------------------------------------------------ */

/* `source` includes value.h next to the program name through a spelling
 * of its own; after the header changes, a lookup that goes to the disk
 * cache (the memory cache bypassed, as a new process) must not get the
 * old kernel. Fails with the text scan this replaced. */
static void check_spelling(const char *spelling) {
  char dir[1100], header[1200], program[1200], source[512];
  int first = 610000 + (int)(getpid() % 1000) * 10;
  fresh_dir(dir, sizeof dir, "spelling");
  use_cache("spelling-cache");
  snprintf(header, sizeof header, "%s/value.h", dir);
  snprintf(program, sizeof program, "%s/kernel.cu", dir);
  snprintf(source, sizeof source,
           "%s\nextern \"C\" __global__ void store(int *p) { *p = VALUE; }\n",
           spelling);
  t4a_compile_request r = ptx_request(source);
  r.program_name = program;
  r.flags = T4A_COMPILE_NO_MEMORY_CACHE;
  for (int round = 0; round < 3; ++round) {
    int value = first + (round == 1 ? 1 : 0); /* A, B, then A again */
    write_value(header, value);
    t4a_artifact a = {0};
    ASSERT_OK(t4a_compile(&r, &a));
    if (!stores(a, value))
      fail_msg("spelling %s: round %d does not store %d: a stale kernel",
               spelling, round, value);
    ASSERT_OK(t4a_artifact_release(a));
  }
}

static void test_digraph_include(void **state) {
  (void)state;
  check_spelling("%:include \"value.h\"");
}

static void test_spliced_include(void **state) {
  (void)state;
  check_spelling("#inc\\\nlude \"value.h\"");
}

static void test_crlf_spliced_include(void **state) {
  (void)state;
  check_spelling("#\\\r\ninclude \"value.h\"");
}

static void test_comment_and_has_include(void **state) {
  (void)state;
  check_spelling("/* a\n */ # /**/ include \"value.h\"");
  check_spelling("#if __has_include(\"value.h\")\n#include \"value.h\"\n"
                 "#else\n#define VALUE 1\n#endif");
}

/* ---- -I headers: cached by content, shadowing noticed ------------------- */

static const char k_include_source[] =
    "#include \"value.h\"\n"
    "extern \"C\" __global__ void store(int *p) { *p = VALUE; }\n";

/* Compiles k_include_source with -I<dir>/first -I<dir>/second. */
static t4a_artifact compile_include(const char *dir, uint32_t flags) {
  char o1[1200], o2[1200];
  const char *options[2] = {o1, o2};
  snprintf(o1, sizeof o1, "-I%s/first", dir);
  snprintf(o2, sizeof o2, "--include-path=%s/second", dir);
  t4a_compile_request r = ptx_request(k_include_source);
  r.program_name = "include.cu";
  r.options = options;
  r.option_count = 2;
  r.flags = flags;
  t4a_artifact a = {0};
  ASSERT_OK(t4a_compile(&r, &a));
  return a;
}

static pid_t spawn_child(const char *dir, int value, int origin) {
  char v[32], o[32];
  snprintf(v, sizeof v, "%d", value);
  snprintf(o, sizeof o, "%d", origin);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char *const argv[] = {
        (char *)"test_compile_deps", (char *)"child", (char *)dir, v, o, NULL};
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  return pid;
}

static int wait_child(pid_t pid) {
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void test_include_path_cached_by_content(void **state) {
  char dir[1100], sub[1200], first[1200], second[1200];
  int value = 720000 + (int)(getpid() % 1000) * 10;
  (void)state;
  fresh_dir(dir, sizeof dir, "include-path");
  use_cache("include-path-cache");
  snprintf(sub, sizeof sub, "%s/first", dir);
  assert_int_equal(mkdir(sub, 0700), 0);
  snprintf(sub, sizeof sub, "%s/second", dir);
  assert_int_equal(mkdir(sub, 0700), 0);
  snprintf(first, sizeof first, "%s/first/value.h", dir);
  snprintf(second, sizeof second, "%s/second/value.h", dir);
  write_value(second, value);

  /* A fresh process compiles and writes, the next one reads from disk. */
  assert_int_equal(wait_child(spawn_child(dir, value, T4A_ARTIFACT_FROM_NVRTC)),
                   0);
  assert_int_equal(wait_child(spawn_child(dir, value, T4A_ARTIFACT_FROM_DISK)),
                   0);
  /* Changed content: compiled again; back to the first: from disk. */
  write_value(second, value + 1);
  assert_int_equal(
      wait_child(spawn_child(dir, value + 1, T4A_ARTIFACT_FROM_NVRTC)), 0);
  write_value(second, value);
  assert_int_equal(wait_child(spawn_child(dir, value, T4A_ARTIFACT_FROM_DISK)),
                   0);
  /* A header of the same name where the search looks first. */
  write_value(first, value + 2);
  assert_int_equal(
      wait_child(spawn_child(dir, value + 2, T4A_ARTIFACT_FROM_NVRTC)), 0);
  /* In this process too: the memory cache validates the files. */
  t4a_artifact a = compile_include(dir, 0);
  assert_true(stores(a, value + 2));
  ASSERT_OK(t4a_artifact_release(a));
  write_value(first, value + 3);
  a = compile_include(dir, 0);
  assert_true(stores(a, value + 3));
  assert_int_equal(info_of(a).origin, T4A_ARTIFACT_FROM_NVRTC);
  ASSERT_OK(t4a_artifact_release(a));
  a = compile_include(dir, 0);
  assert_int_equal(info_of(a).origin, T4A_ARTIFACT_FROM_MEMORY);
  ASSERT_OK(t4a_artifact_release(a));
}

static int run_child(const char *dir, int value, int origin) {
  t4a_artifact a = compile_include(dir, 0);
  t4a_artifact_info info = info_of(a);
  int ok = stores(a, value) && (int)info.origin == origin;
  if (!ok)
    fprintf(stderr, "child: value %d origin %u (wanted %d from %d)\n",
            stores(a, value) ? value : -1, info.origin, value, origin);
  ASSERT_OK(t4a_artifact_release(a));
  return ok ? 0 : 1;
}

/* ---- toolkit headers ----------------------------------------------------- */

static const char k_fp16_source[] =
    "#include <cuda_fp16.h>\n"
    "extern \"C\" __global__ void half_add(__half *p) {\n"
    "  p[threadIdx.x] = __hadd(p[threadIdx.x], __float2half(1.0f));\n"
    "}\n";

static void test_toolkit_headers_without_options(void **state) {
  (void)state;
  use_cache("toolkit-cache");
  t4a_compile_request r = ptx_request(k_fp16_source);
  t4a_artifact a = {0};
  ASSERT_OK(t4a_compile(&r, &a));
  t4a_artifact_info info = info_of(a);
  assert_int_equal(info.origin, T4A_ARTIFACT_FROM_NVRTC);
  assert_true(info.compile_ns >= info.nvrtc_ns);
  assert_true(info.nvrtc_ns > 0);
  ASSERT_OK(t4a_artifact_release(a));
  ASSERT_OK(t4a_compile(&r, &a));
  assert_int_equal(info_of(a).origin, T4A_ARTIFACT_FROM_MEMORY);
  ASSERT_OK(t4a_artifact_release(a));
  r.flags = T4A_COMPILE_NO_MEMORY_CACHE; /* as a new process would */
  ASSERT_OK(t4a_compile(&r, &a));
  info = info_of(a);
  assert_int_equal(info.origin, T4A_ARTIFACT_FROM_DISK);
  assert_int_equal(info.nvrtc_ns, 0);
  ASSERT_OK(t4a_artifact_release(a));

  r.flags = T4A_COMPILE_NO_TOOLKIT_HEADERS;
  assert_int_equal(t4a_compile(&r, &a), T4A_ERROR_COMPILE);
  assert_non_null(strstr(last_message(), "T4A_COMPILE_NO_TOOLKIT_HEADERS"));
}

static void test_toolkit_of_another_version_refused(void **state) {
  char dir[1100], cuda_h[1200];
  (void)state;
  fresh_dir(dir, sizeof dir, "old-toolkit");
  snprintf(cuda_h, sizeof cuda_h, "%s/cuda.h", dir);
  write_text(cuda_h, "#pragma once\n#define CUDA_VERSION 12040\n");
  assert_int_equal(setenv("T4A_CUDA_INCLUDE", dir, 1), 0);
  t4a_compile_request r = ptx_request(k_fp16_source);
  t4a_artifact a = {0};
  assert_int_equal(t4a_compile(&r, &a), T4A_ERROR_VERSION_MISMATCH);
  assert_non_null(strstr(last_message(), "12.4"));
  assert_non_null(strstr(last_message(), "NVRTC is "));
  /* The request's own directory wins over the variable. */
  char empty[1100];
  fresh_dir(empty, sizeof empty, "no-cuda-h");
  r.toolkit_include = empty;
  assert_int_equal(t4a_compile(&r, &a), T4A_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(last_message(), "no cuda.h"));
  assert_int_equal(unsetenv("T4A_CUDA_INCLUDE"), 0);
  r.toolkit_include = NULL;
  ASSERT_OK(t4a_compile(&r, &a));
  ASSERT_OK(t4a_artifact_release(a));
}

/* Automatic precompiled headers change how fast NVRTC is, never what it
 * makes: a cooperative-groups program with and without them (caches off,
 * so both run NVRTC; the second program in the process uses the PCH). */
static void test_pch_same_output(void **state) {
  (void)state;
  const char *src = "#include <cooperative_groups.h>\n"
                    "namespace cg = cooperative_groups;\n"
                    "extern \"C\" __global__ void k(int *p) {\n"
                    "  cg::grid_group g = cg::this_grid();\n"
                    "  p[g.thread_rank()] = 1; g.sync(); }\n";
  const uint32_t off = T4A_COMPILE_NO_MEMORY_CACHE | T4A_COMPILE_NO_DISK_CACHE;
  t4a_compile_request r = ptx_request(src);
  t4a_artifact plain = {0}, first = {0}, second = {0};
  r.flags = off | T4A_COMPILE_NO_PCH;
  ASSERT_OK(t4a_compile(&r, &plain));
  r.flags = off;
  ASSERT_OK(t4a_compile(&r, &first));  /* creates the PCH */
  ASSERT_OK(t4a_compile(&r, &second)); /* uses it */
  char *a = ptx_of(plain), *b = ptx_of(first), *c = ptx_of(second);
  assert_string_equal(a, b);
  assert_string_equal(a, c);
  free(a);
  free(b);
  free(c);
  ASSERT_OK(t4a_artifact_release(plain));
  ASSERT_OK(t4a_artifact_release(first));
  ASSERT_OK(t4a_artifact_release(second));
}

/* ---- what cannot be proven is not cached --------------------------------- */

static void test_computed_include_not_cached(void **state) {
  char dir[1100], header[1200], program[1200];
  (void)state;
  fresh_dir(dir, sizeof dir, "computed");
  use_cache("computed-cache");
  snprintf(header, sizeof header, "%s/value.h", dir);
  snprintf(program, sizeof program, "%s/kernel.cu", dir);
  t4a_compile_request r =
      ptx_request("#define H \"value.h\"\n#include H\n"
                  "extern \"C\" __global__ void store(int *p) { *p = VALUE; "
                  "}\n");
  r.program_name = program;
  for (int value = 830001; value <= 830002; ++value) {
    write_value(header, value);
    t4a_compile_stats before = stats_now();
    t4a_artifact a = {0};
    ASSERT_OK(t4a_compile(&r, &a)); /* memory cache allowed: still NVRTC */
    assert_true(stores(a, value));
    t4a_compile_stats after = stats_now();
    assert_int_equal(after.nvrtc_invocations - before.nvrtc_invocations, 1);
    assert_int_equal(after.disk_writes - before.disk_writes, 0);
    ASSERT_OK(t4a_artifact_release(a));
  }
}

/* ---- an independent review's findings ----------------------------------- */

/* The cached result (memory cache bypassed: disk, or NVRTC) must equal what
 * NVRTC makes now (both caches off). */
static void expect_current(t4a_compile_request r, const char *what) {
  t4a_artifact cached = {0}, fresh = {0};
  r.flags = T4A_COMPILE_NO_MEMORY_CACHE;
  ASSERT_OK(t4a_compile(&r, &cached));
  r.flags = T4A_COMPILE_NO_MEMORY_CACHE | T4A_COMPILE_NO_DISK_CACHE;
  ASSERT_OK(t4a_compile(&r, &fresh));
  char *a = ptx_of(cached), *b = ptx_of(fresh);
  if (strcmp(a, b) != 0) fail_msg("%s: a stale kernel from the cache", what);
  free(a);
  free(b);
  ASSERT_OK(t4a_artifact_release(cached));
  ASSERT_OK(t4a_artifact_release(fresh));
}

/* In a directory of its own as the current directory (restored after). */
static void enter_fresh_dir(const char *what, char *old, size_t capacity) {
  char dir[1100];
  assert_non_null(getcwd(old, capacity));
  fresh_dir(dir, sizeof dir, what);
  assert_int_equal(chdir(dir), 0);
  use_cache("review-cache");
}

static const char k_value_kernel[] =
    "extern \"C\" __global__ void k(int *p) { *p = VALUE; }\n";

/* 1: an angle name in a macro is expanded where it is tested. */
static void test_expanded_angle_names(void **state) {
  char old[1100], src[512];
  (void)state;
  enter_fresh_dir("expanded", old, sizeof old);
  assert_int_equal(mkdir("inc", 0700), 0);
  const char *options[1] = {"-Iinc"};
  static const char *const forms[] = {
      "#define HAS_HDR(name) __has_include(<name.h>)\n#if HAS_HDR(zz)\n",
      "#define zzname zz\n#define MY_HAS_INCLUDE(x) __has_include(x)\n"
      "#if MY_HAS_INCLUDE(<zzname.h>)\n",
      "#define zzname zz\n#define TEST_HDR __has_include(<zzname.h>)\n"
      "#if TEST_HDR\n"};
  for (size_t i = 0; i < 3; ++i) {
    snprintf(src, sizeof src,
             "%s#define VALUE 1000002\n#else\n#define VALUE 1000001\n"
             "#endif\n%s",
             forms[i], k_value_kernel);
    t4a_compile_request r = ptx_request(src);
    r.options = options;
    r.option_count = 1;
    (void)unlink("inc/zz.h"); /* may not exist */
    expect_current(r, forms[i]);
    write_text("inc/zz.h", "\n");
    expect_current(r, forms[i]);
  }
  assert_int_equal(chdir(old), 0);
}

/* 2: a given header's quoted includes are found in its name's directory. */
static void test_given_header_in_a_directory(void **state) {
  char old[1100];
  (void)state;
  enter_fresh_dir("given-dir", old, sizeof old);
  assert_int_equal(mkdir("sub", 0700), 0);
  const char *names[1] = {"sub/h.h"}, *sources[1] = {"#include \"x.h\"\n"};
  char src[256];
  snprintf(src, sizeof src, "#include \"sub/h.h\"\n%s", k_value_kernel);
  t4a_compile_request r = ptx_request(src);
  r.header_names = names;
  r.header_sources = sources;
  r.header_count = 1;
  write_text("sub/x.h", "#define VALUE 1000001\n");
  expect_current(r, "given sub/h.h");
  write_text("sub/x.h", "#define VALUE 1000002\n");
  expect_current(r, "given sub/h.h");
  assert_int_equal(chdir(old), 0);
}

/* 3: NVRTC takes include option values without the blanks around them;
 * a value-less last option is refused. */
static void test_option_values_with_blanks(void **state) {
  char old[1100], src[256];
  (void)state;
  enter_fresh_dir("blanks", old, sizeof old);
  assert_int_equal(mkdir("inc", 0700), 0);
  snprintf(src, sizeof src, "#include \"v.h\"\n%s", k_value_kernel);
  static const char *const spellings[][2] = {{"-Iinc ", NULL},
                                             {"-I inc", NULL},
                                             {"-I", "  inc"},
                                             {"--include-path", " inc"}};
  for (size_t i = 0; i < 4; ++i) {
    t4a_compile_request r = ptx_request(src);
    r.options = spellings[i];
    r.option_count = spellings[i][1] ? 2 : 1;
    write_text("inc/v.h", "#define VALUE 1000001\n");
    expect_current(r, spellings[i][0]);
    write_text("inc/v.h", "#define VALUE 1000002\n");
    expect_current(r, spellings[i][0]);
  }
  const char *last[1] = {"-I"};
  t4a_compile_request r = ptx_request(src);
  r.options = last;
  r.option_count = 1;
  t4a_artifact a = {0};
  assert_int_equal(t4a_compile(&r, &a), T4A_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(last_message(), "has no value"));
  assert_int_equal(chdir(old), 0);
}

/* 4: an absent toolkit path through a symbolic link (dangling, or with
 * "..") is checked where the link leads. */
static void test_toolkit_paths_through_links(void **state) {
  char old[1100], cwd[1100], tk[1300], src[256];
  (void)state;
  enter_fresh_dir("toolkit-links", old, sizeof old);
  assert_non_null(getcwd(cwd, sizeof cwd));
  snprintf(tk, sizeof tk, "%s/tk", cwd);
  assert_int_equal(mkdir("tk", 0700), 0);
  char cuda_h[64];
  snprintf(cuda_h, sizeof cuda_h, "#define CUDA_VERSION %d\n",
           0); /* replaced below by NVRTC's version */
  int32_t major = 0, minor = 0;
  ASSERT_OK(t4a_nvrtc_version(&major, &minor));
  snprintf(cuda_h, sizeof cuda_h, "#define CUDA_VERSION %d\n",
           major * 1000 + minor * 10);
  write_text("tk/cuda.h", cuda_h);
  assert_int_equal(symlink("../target.h", "tk/x.h"), 0);
  assert_int_equal(symlink("../extdir", "tk/sub"), 0);
  assert_int_equal(setenv("T4A_CUDA_INCLUDE", tk, 1), 0);
  static const char *const names[] = {"x.h", "sub/x.h", "sub/../x.h"};
  for (size_t i = 0; i < 3; ++i) {
    snprintf(src, sizeof src,
             "#if __has_include(<%s>)\n#include <%s>\n#else\n"
             "#define VALUE 1000001\n#endif\n%s",
             names[i], names[i], k_value_kernel);
    t4a_compile_request r = ptx_request(src);
    (void)unlink("target.h");   /* may not exist */
    (void)unlink("extdir/x.h"); /* may not exist */
    expect_current(r, names[i]);
    write_text("target.h", "#define VALUE 1000002\n");
    (void)mkdir("extdir", 0700); /* may exist */
    write_text("extdir/x.h", "#define VALUE 1000003\n");
    write_text("x.h", "#define VALUE 1000004\n");
    expect_current(r, names[i]);
  }
  assert_int_equal(unsetenv("T4A_CUDA_INCLUDE"), 0);
  assert_int_equal(chdir(old), 0);
}

/* ---- toolkit directories named relative, by '.', or with a '/' ---------- */

/* A toolkit directory `dir` whose cuda.h is `version` (0: NVRTC's). */
static void make_toolkit(const char *dir, int version) {
  char cuda_h[1200], text[64];
  if (version == 0) {
    int32_t major = 0, minor = 0;
    ASSERT_OK(t4a_nvrtc_version(&major, &minor));
    version = major * 1000 + minor * 10;
  }
  (void)mkdir(dir, 0700); /* may exist */
  snprintf(cuda_h, sizeof cuda_h, "%s/cuda.h", dir);
  snprintf(text, sizeof text, "#define CUDA_VERSION %d\n", version);
  write_text(cuda_h, text);
}

static t4a_artifact compile_ok(const t4a_compile_request *r) {
  t4a_artifact a = {0};
  ASSERT_OK(t4a_compile(r, &a));
  return a;
}

/* The toolkit named "tk" is the current directory's: after a chdir the
 * other directory's toolkit is used (its headers and its version check),
 * never the first one's from the memory or the disk cache. */
static void test_relative_toolkit_follows_chdir(void **state) {
  char old[1100];
  (void)state;
  enter_fresh_dir("relative-toolkit", old, sizeof old);
  assert_int_equal(mkdir("A", 0700), 0);
  assert_int_equal(mkdir("B", 0700), 0);
  assert_int_equal(mkdir("C", 0700), 0);
  make_toolkit("A/tk", 0);
  make_toolkit("B/tk", 0);
  make_toolkit("C/tk", 12040);
  write_value("A/tk/mark.h", 1000001);
  write_value("B/tk/mark.h", 1000002);
  write_value("C/tk/mark.h", 1000003);
  char src[256];
  snprintf(src, sizeof src, "#include <mark.h>\n%s", k_value_kernel);
  t4a_compile_request r = ptx_request(src);
  r.toolkit_include = "tk";
  for (uint32_t flags = 0; flags <= T4A_COMPILE_NO_MEMORY_CACHE;
       flags += T4A_COMPILE_NO_MEMORY_CACHE) {
    r.flags = flags;
    static const char *const dirs[] = {"A", "B", "A"};
    for (int i = 0; i < 3; ++i) {
      assert_int_equal(chdir(dirs[i]), 0);
      t4a_artifact a = compile_ok(&r);
      if (!stores(a, dirs[i][0] == 'A' ? 1000001 : 1000002))
        fail_msg("flags %u, in %s: another directory's toolkit", flags,
                 dirs[i]);
      ASSERT_OK(t4a_artifact_release(a));
      assert_int_equal(chdir(".."), 0);
    }
    assert_int_equal(chdir("C"), 0);
    t4a_artifact a = {0};
    assert_int_equal(t4a_compile(&r, &a), T4A_ERROR_VERSION_MISMATCH);
    assert_non_null(strstr(last_message(), "12.4"));
    assert_int_equal(chdir(".."), 0);
  }
  assert_int_equal(chdir(old), 0);
}

/* Toolkit directory "." (the current directory holds cuda.h): it is not a
 * prefix of every absolute path, so a user header under an absolute -I
 * directory is still validated on a memory hit. */
static void test_toolkit_dot_is_not_every_path(void **state) {
  char old[1100], cwd[1100], inc[1200], opt[1300], header[1300];
  (void)state;
  enter_fresh_dir("toolkit-dot", old, sizeof old);
  assert_non_null(getcwd(cwd, sizeof cwd));
  make_toolkit("tk", 0);
  snprintf(inc, sizeof inc, "%s/inc", cwd);
  assert_int_equal(mkdir(inc, 0700), 0);
  snprintf(header, sizeof header, "%s/v.h", inc);
  snprintf(opt, sizeof opt, "-I%s", inc);
  const char *options[1] = {opt};
  char src[256];
  snprintf(src, sizeof src, "#include \"v.h\"\n%s", k_value_kernel);
  t4a_compile_request r = ptx_request(src);
  r.toolkit_include = ".";
  r.options = options;
  r.option_count = 1;
  assert_int_equal(chdir("tk"), 0);
  for (int value = 1000001; value <= 1000003; ++value) {
    write_value(header, value);
    t4a_artifact a = compile_ok(&r);
    if (!stores(a, value)) fail_msg("toolkit '.': stale v.h %d", value);
    ASSERT_OK(t4a_artifact_release(a));
  }
  assert_int_equal(chdir(old), 0);
}

/* A fresh process (this binary in mode `fresh SOURCE-FILE`, the toolkit
 * from T4A_CUDA_INCLUDE) compiles the source with the memory cache off
 * and checks the result against NVRTC now. */
static int run_fresh(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return 2;
  static char src[4096];
  size_t n = fread(src, 1, sizeof src - 1, f);
  src[n] = '\0';
  fclose(f);
  t4a_compile_request r = ptx_request(src);
  t4a_artifact cached = {0}, fresh = {0};
  r.flags = T4A_COMPILE_NO_MEMORY_CACHE;
  if (t4a_compile(&r, &cached) != T4A_SUCCESS) return 3;
  r.flags |= T4A_COMPILE_NO_DISK_CACHE;
  if (t4a_compile(&r, &fresh) != T4A_SUCCESS) return 3;
  char *a = ptx_of(cached), *b = ptx_of(fresh);
  int same = strcmp(a, b) == 0;
  if (!same) fprintf(stderr, "fresh: a stale kernel from the disk cache\n");
  free(a);
  free(b);
  (void)t4a_artifact_release(cached); /* exiting */
  (void)t4a_artifact_release(fresh);
  return same ? 0 : 1;
}

static int fresh_process(const char *path) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char *const argv[] = {(char *)"test_compile_deps", (char *)"fresh",
                          (char *)path, NULL};
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  return wait_child(pid);
}

/* A name with a trailing '/' (<d/>, in a dead branch, which the scan still
 * counts) and the directory d looked up later are different questions: a
 * header added in d reaches the next fresh process. */
static void test_trailing_slash_name_and_its_directory(void **state) {
  char old[1100], cwd[1100], tk[1200];
  (void)state;
  enter_fresh_dir("trailing-slash", old, sizeof old);
  assert_non_null(getcwd(cwd, sizeof cwd));
  snprintf(tk, sizeof tk, "%s/tk", cwd);
  make_toolkit(tk, 0);
  assert_int_equal(mkdir("tk/d", 0700), 0);
  write_text("k.cu",
             "#if 0\n#include <d/>\n#endif\n"
             "#if __has_include(<d/x.h>)\n#include <d/x.h>\n#else\n"
             "#define VALUE 1000001\n#endif\n"
             "extern \"C\" __global__ void k(int *p) { *p = VALUE; }\n");
  assert_int_equal(setenv("T4A_CUDA_INCLUDE", tk, 1), 0);
  assert_int_equal(fresh_process("k.cu"), 0);
  write_value("tk/d/x.h", 1000002);
  assert_int_equal(fresh_process("k.cu"), 0);
  assert_int_equal(unsetenv("T4A_CUDA_INCLUDE"), 0);
  assert_int_equal(chdir(old), 0);
}

/* ---- property: random programs and header edits ------------------------ */

static uint64_t g_rng;
static unsigned next_rand(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (unsigned)(g_rng >> 11);
}

/* The spelling of an include of `name`, chosen at random; #include_next
 * only where `next` (in the source, where it acts as #include: a header's
 * #include_next would skip its own directory, which the generator's
 * __has_include guard does not model). */
static void random_include(char *out, size_t capacity, const char *name,
                           int next) {
  static const char *const forms[] = {
      "#include \"%s\"\n",
      "%%:include \"%s\"\n",
      "#inc\\\nlude \"%s\"\n",
      "#\\\r\ninclude \"%s\"\n",
      "  # /* c */ include <%s>\r\n",
      "#if __has_include(<%s>)\n#include <%s>\n#endif\n",
      "/*\n*/ #include \"%s\"\n",
      "#include_next <%s>\n",
  };
  size_t count = sizeof forms / sizeof forms[0] - (next ? 0 : 1);
  const char *f = forms[next_rand() % count];
  snprintf(out, capacity, f, name, name);
}

static void test_property_cache_equals_nvrtc(void **state) {
  char dir[1100], path[1300];
  const char *seed_text = getenv("T4A_PROPERTY_SEED");
  uint64_t seed = seed_text ? strtoull(seed_text, NULL, 10)
                            : (uint64_t)getpid() * 2654435761u + 1;
  int iterations = getenv("T4A_PROPERTY_ITERATIONS")
                       ? atoi(getenv("T4A_PROPERTY_ITERATIONS"))
                       : 24;
  (void)state;
  g_rng = seed | 1;
  printf("property seed %llu (T4A_PROPERTY_SEED reproduces it)\n",
         (unsigned long long)seed);
  fresh_dir(dir, sizeof dir, "property");
  use_cache("property-cache");
  static const char *const dirs[] = {"a", "b"};
  for (int d = 0; d < 2; ++d) {
    snprintf(path, sizeof path, "%s/%s", dir, dirs[d]);
    assert_int_equal(mkdir(path, 0700), 0);
  }
  char opt_a[1200], opt_b[1200];
  snprintf(opt_a, sizeof opt_a, "-I%s/a", dir);
  snprintf(opt_b, sizeof opt_b, "-I%s/b", dir);
  const char *options[2] = {opt_a, opt_b};
  char key_before[T4A_ARTIFACT_KEY_CAPACITY] = "", *ptx_before = NULL;
  char source[4096];
  for (int it = 0; it < iterations; ++it) {
    /* Each header defines its value; h0 may include h1. */
    if (it == 0 || next_rand() % 2 == 0) {
      int h = (int)(next_rand() % 2), d = (int)(next_rand() % 2);
      snprintf(path, sizeof path, "%s/%s/h%d.h", dir, dirs[d], h);
      if (next_rand() % 4 == 0) {
        (void)unlink(path); /* may not exist */
      } else {
        char text[512], inc[256] = "";
        if (h == 0 && next_rand() % 2 == 0)
          random_include(inc, sizeof inc, "h1.h", 0);
        snprintf(text, sizeof text,
                 "#pragma once\n#if __has_include(<h1.h>)\n%s#endif\n"
                 "#define V%d_%s %u\n",
                 inc, h, dirs[d], next_rand() % 1000);
        write_text(path, text);
      }
    }
    char inc0[256], inc1[256];
    random_include(inc0, sizeof inc0, "h0.h", 1);
    random_include(inc1, sizeof inc1, "h1.h", 1);
    snprintf(source, sizeof source,
             "#if __has_include(<h0.h>)\n%s#endif\n"
             "#if __has_include(<h1.h>)\n%s#endif\n"
             "#ifndef V0_a\n#define V0_a 1\n#endif\n"
             "#ifndef V0_b\n#define V0_b 2\n#endif\n"
             "#ifndef V1_a\n#define V1_a 3\n#endif\n"
             "#ifndef V1_b\n#define V1_b 4\n#endif\n"
             "extern \"C\" __global__ void k(int *p) {\n"
             "  p[0] = V0_a; p[1] = V0_b; p[2] = V1_a; p[3] = V1_b;\n}\n",
             inc0, inc1);
    t4a_compile_request r = ptx_request(source);
    r.options = options;
    r.option_count = 2;
    r.program_name = "property.cu";
    /* What NVRTC makes now, and what the caches give. */
    t4a_artifact fresh = {0}, cached = {0};
    r.flags = T4A_COMPILE_NO_MEMORY_CACHE | T4A_COMPILE_NO_DISK_CACHE;
    ASSERT_OK(t4a_compile(&r, &fresh));
    r.flags = it % 2 == 0 ? 0 : T4A_COMPILE_NO_MEMORY_CACHE;
    ASSERT_OK(t4a_compile(&r, &cached));
    char *want = ptx_of(fresh), *got = ptx_of(cached);
    if (strcmp(want, got) != 0)
      fail_msg("iteration %d (seed %llu): the cache served a kernel NVRTC "
               "no longer makes",
               it, (unsigned long long)seed);
    char key[T4A_ARTIFACT_KEY_CAPACITY];
    ASSERT_OK(t4a_artifact_key(cached, key, sizeof key, NULL));
    if (ptx_before != NULL && strcmp(ptx_before, want) != 0 &&
        strcmp(key, key_before) == 0)
      fail_msg("iteration %d (seed %llu): NVRTC's output changed but the "
               "key did not",
               it, (unsigned long long)seed);
    free(ptx_before);
    ptx_before = want;
    memcpy(key_before, key, sizeof key);
    free(got);
    ASSERT_OK(t4a_artifact_release(fresh));
    ASSERT_OK(t4a_artifact_release(cached));
  }
  free(ptx_before);
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "child") == 0)
    return run_child(argv[2], atoi(argv[3]), atoi(argv[4]));
  if (argc == 3 && strcmp(argv[1], "fresh") == 0) return run_fresh(argv[2]);
  (void)unsetenv("T4A_CUDA_INCLUDE");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_digraph_include),
      cmocka_unit_test(test_spliced_include),
      cmocka_unit_test(test_crlf_spliced_include),
      cmocka_unit_test(test_comment_and_has_include),
      cmocka_unit_test(test_include_path_cached_by_content),
      cmocka_unit_test(test_toolkit_headers_without_options),
      cmocka_unit_test(test_toolkit_of_another_version_refused),
      cmocka_unit_test(test_pch_same_output),
      cmocka_unit_test(test_computed_include_not_cached),
      cmocka_unit_test(test_expanded_angle_names),
      cmocka_unit_test(test_given_header_in_a_directory),
      cmocka_unit_test(test_option_values_with_blanks),
      cmocka_unit_test(test_toolkit_paths_through_links),
      cmocka_unit_test(test_relative_toolkit_follows_chdir),
      cmocka_unit_test(test_toolkit_dot_is_not_every_path),
      cmocka_unit_test(test_trailing_slash_name_and_its_directory),
      cmocka_unit_test(test_property_cache_equals_nvrtc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
