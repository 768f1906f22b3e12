/*
 * Host lane: a C program that is not linked with t4acuda dlopens the built
 * library by path, resolves every exported symbol (the list read from the
 * library with nm) and calls through the pointers. Also checks the export
 * surface: every defined dynamic symbol except the version node T4ACUDA_0
 * is a t4a_ function carrying the default version @@T4ACUDA_0.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _GNU_SOURCE /* dlvsym, RTLD_DEFAULT */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "host_support.h"
#include "t4acuda.h" /* macros and types only: nothing is linked */

#define VERSION_NODE "T4ACUDA_0"
#define MAX_SYMBOLS 512

static t4a_test_symbol g_symbols[MAX_SYMBOLS];
static long g_count;

static int setup(void **state) {
  char why[1024];
  (void)state;
  g_count = t4a_test_read_dynamic_symbols(T4A_TEST_LIBRARY_PATH, g_symbols,
                                          MAX_SYMBOLS, why, sizeof why);
  if (g_count <= 0 || g_count > MAX_SYMBOLS) {
    print_error("cannot list the symbols of %s: %s\n", T4A_TEST_LIBRARY_PATH,
                why);
    return -1;
  }
  return 0;
}

static void test_not_linked(void **state) {
  (void)state;
  /* Not loaded yet: this program does not link the library. */
  assert_null(dlopen(T4A_TEST_LIBRARY_PATH, RTLD_NOW | RTLD_NOLOAD));
  assert_null(dlsym(RTLD_DEFAULT, "t4a_version"));
}

static void test_export_surface(void **state) {
  long i;
  int functions = 0, nodes = 0;
  (void)state;
  for (i = 0; i < g_count; ++i) {
    const t4a_test_symbol *s = &g_symbols[i];
    if (strcmp(s->name, VERSION_NODE) == 0) {
      assert_int_equal(s->type, 'A');
      ++nodes;
      continue;
    }
    if (!t4a_test_starts_with(s->name, "t4a_"))
      fail_msg("exported symbol %s lacks the t4a_ prefix", s->name);
    if (s->type != 'T')
      fail_msg("exported %s has type %c; only functions are exported", s->name,
               s->type);
    if (!s->default_version || strcmp(s->version, VERSION_NODE) != 0)
      fail_msg("exported %s has version '%s%s', expected '@@" VERSION_NODE "'",
               s->name, s->default_version ? "@@" : "@", s->version);
    ++functions;
  }
  assert_int_equal(nodes, 1);
  assert_true(functions > 0);
}

static void test_resolve_every_export(void **state) {
  void *lib;
  long i;
  (void)state;
  lib = dlopen(T4A_TEST_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) fail_msg("dlopen: %s", dlerror());
  for (i = 0; i < g_count; ++i) {
    const char *name = g_symbols[i].name;
    void *plain, *versioned;
    if (g_symbols[i].type != 'T') continue;
    plain = dlsym(lib, name);
    if (plain == NULL) fail_msg("dlsym(%s): %s", name, dlerror());
    versioned = dlvsym(lib, name, VERSION_NODE);
    if (versioned == NULL)
      fail_msg("dlvsym(%s, " VERSION_NODE "): %s", name, dlerror());
    assert_ptr_equal(plain, versioned);
  }
  assert_null(dlsym(lib, "t4a_no_such_function"));
  /* RTLD_LOCAL: nothing leaked into the global namespace. */
  assert_null(dlsym(RTLD_DEFAULT, "t4a_version"));
  {
    /* Call through the pointers (ISO C forbids a direct object-to-function
     * pointer cast; POSIX guarantees the memcpy). */
    uint32_t (*version)(void);
    const char *(*version_string)(void);
    const char *(*status_name)(t4a_status);
    void *p;
    p = dlsym(lib, "t4a_version");
    memcpy(&version, &p, sizeof p);
    p = dlsym(lib, "t4a_version_string");
    memcpy(&version_string, &p, sizeof p);
    p = dlsym(lib, "t4a_status_name");
    memcpy(&status_name, &p, sizeof p);
    assert_int_equal(version(), T4A_VERSION_NUMBER);
    assert_string_equal(version_string(), T4A_VERSION_STRING);
    assert_string_equal(status_name(T4A_ERROR_INVALID_HANDLE),
                        "T4A_ERROR_INVALID_HANDLE");
  }
  assert_int_equal(dlclose(lib), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_not_linked),
      cmocka_unit_test(test_export_surface),
      cmocka_unit_test(test_resolve_every_export),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
