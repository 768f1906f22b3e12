// Host lane (fake driver): t4a_raw_begin when publishing the scope's
// handle fails (std::bad_alloc from the handle registry's growth, reported
// as OUT_OF_HOST_MEMORY). Before the fix the failure path ended the scope
// through a raw pointer after the only reference had gone with the failed
// insert: the scope was destroyed first (its destructor abandons the
// admission lock without unlocking it), then used after free, and the
// runtime's admission stayed locked by this thread: every later call on
// the runtime from this thread returned REENTRANT ("holds a raw scope")
// and from other threads blocked forever. Here each allocation of
// t4a_raw_begin is made to fail in turn (a one-shot failure of the k-th
// operator new), with the registry at every fill level up to 80 handles,
// so that the insert's growth is hit; after each failure the runtime must
// work on this thread and the caller's context must be current again.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "t4acuda.h"

#define T4A_TEST_NAME "test_raw_alloc_failure"
#include "new_hook.hpp"

int main() {
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  t4a_runtime rt{};
  CHECK(t4a_runtime_create(nullptr, &rt));
  void *fake = dlopen(T4A_FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  using GetProc = int (*)(const char *, void **, int, uint64_t, void *);
  using GetCurrent = int (*)(void **);
  auto get_proc =
      fake == nullptr
          ? nullptr
          : reinterpret_cast<GetProc>(dlsym(fake, "cuGetProcAddress_v2"));
  void *fn = nullptr;
  if (get_proc != nullptr) get_proc("cuCtxGetCurrent", &fn, 12000, 0, nullptr);
  auto get_current = reinterpret_cast<GetCurrent>(fn);
  if (get_current == nullptr) {
    std::fprintf(stderr, "cuCtxGetCurrent not found in the fake driver\n");
    return 1;
  }
  void *before = nullptr;
  if (get_current(&before) != 0) return 1;
  t4a_buffer b{};
  CHECK(t4a_buffer_alloc(rt, 4096, 0, &b));
  std::vector<t4a_buffer> fillers; // empty buffers: handles only
  fillers.reserve(100);
  int injected = 0;
  for (int level = 0; level <= 80; ++level) {
    t4a_buffer e{};
    CHECK(t4a_buffer_alloc(rt, 0, 0, &e));
    fillers.push_back(e);
    for (long k = 1; k <= 6; ++k) {
      t4a_raw_scope scope{};
      t4a_raw_info info = T4A_RAW_INFO_INIT;
      g_countdown.store(k);
      t4a_status s = t4a_raw_begin(rt, &scope, &info);
      g_countdown.store(0);
      if (s == T4A_SUCCESS) {
        CHECK(t4a_raw_end(scope));
      } else if (s == T4A_ERROR_OUT_OF_HOST_MEMORY) {
        ++injected;
      } else {
        return fail("t4a_raw_begin with an allocation failing", s);
      }
      void *now = nullptr;
      if (get_current(&now) != 0 || now != before) {
        std::fprintf(stderr,
                     "test_raw_alloc_failure: after t4a_raw_begin returned %s "
                     "(allocation %ld failing, %d handles) the current "
                     "context is %p, expected %p\n",
                     t4a_status_name(s), k, level + 2, now, before);
        return 1;
      }
      // The runtime must still admit this thread (and others).
      t4a_status f = t4a_buffer_fill(rt, b, 0, 16, 1);
      if (f != T4A_SUCCESS) {
        std::fprintf(stderr,
                     "test_raw_alloc_failure: after t4a_raw_begin returned "
                     "%s (allocation %ld failing, %d handles): ",
                     t4a_status_name(s), k, level + 2);
        return fail("t4a_buffer_fill", f);
      }
    }
  }
  if (injected == 0) {
    std::fprintf(stderr, "test_raw_alloc_failure: no allocation failure was "
                         "injected into t4a_raw_begin\n");
    return 1;
  }
  for (t4a_buffer e : fillers) CHECK(t4a_buffer_release(e));
  CHECK(t4a_buffer_release(b));
  CHECK(t4a_runtime_destroy(rt));
  std::printf("test_raw_alloc_failure: %d injected failures, runtime usable "
              "after each\n",
              injected);
  return 0;
}
