/*
 * The fake driver (tests/fake) as the cmocka suites of the host lane use
 * it: the library pointed at it, its control functions and its driver
 * entry points looked up in the instance the library loaded. Needs
 * T4A_FAKE_CUDA_PATH (tests/host/CMakeLists.txt defines it) for the
 * lookups; include after <cmocka.h>; uses setenv() (define
 * _POSIX_C_SOURCE 200809L or _GNU_SOURCE before the first #include).
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#ifndef T4A_TESTS_FAKE_DRIVER_H
#define T4A_TESTS_FAKE_DRIVER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Points the library at the fake driver (T4A_CUDA_DRIVER_PATH): 0, or 1
 * with a message when the test was built without it (main returns 1). */
static inline int use_fake_driver(void) {
#if !defined(T4A_FAKE_CUDA_PATH)
  fprintf(stderr, "built without the fake driver\n");
  return 1;
#else
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  return 0;
#endif
}

#if defined(T4A_FAKE_CUDA_PATH)
#include <dlfcn.h>

/* `name` in the fake driver the library loaded; fails the test when the
 * driver is not loaded or has no such symbol. */
static inline void *fake_symbol(const char *name) {
  void *lib = dlopen(T4A_FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (lib == NULL) fail_msg("the fake driver is not loaded: %s", dlerror());
  void *sym = dlsym(lib, name);
  if (sym == NULL) fail_msg("the fake driver has no %s", name);
  return sym;
}

/* The driver entry point `name` as cuGetProcAddress gives it for CUDA
 * 12.0; fails the test when there is none. */
static inline void *driver_entry(const char *name) {
  typedef int (*get_proc_fn)(const char *, void **, int, uint64_t, void *);
  get_proc_fn get = (get_proc_fn)fake_symbol("cuGetProcAddress_v2");
  void *fn = NULL;
  if (get(name, &fn, 12000, 0, NULL) != 0 || fn == NULL)
    fail_msg("the fake driver has no %s", name);
  return fn;
}

/* The fake driver's live count of `what` (fake_cuda_live). */
static inline int fake_live(const char *what) {
  return ((int (*)(const char *))fake_symbol("fake_cuda_live"))(what);
}

/* Device allocations the fake driver holds. */
static inline int live_allocations(void) { return fake_live("allocations"); }
#endif

#endif /* T4A_TESTS_FAKE_DRIVER_H */
