// Host lane (fake driver): a keepalive cannot be lost between the enqueue
// and its commit (issue 8, item 5). The DMA of
// t4a_buffer_upload_host / t4a_buffer_download_host must keep the host
// buffer alive until the stream proves it done. Before the fix the keep
// was added after the enqueue without reserved room, so a failed
// allocation there (std::bad_alloc, reported as OUT_OF_HOST_MEMORY) left
// the DMA in flight with nothing keeping the host buffer: releasing it
// freed the pinned memory under the DMA. Here every allocation of such a
// call is made to fail in turn (a one-shot failure of the k-th operator
// new, for k = 1, 2, ...); after each, the host buffer is released, and
// the fake driver counts a cuMemFreeHost of memory an unobserved copy
// still uses (fake_cuda_early_host_frees). There must be none. The
// reservation type (src/core/epochs.hpp) also makes the old pattern a
// compile error: Epochs::keep() takes only a Reservation made before the
// enqueue.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "t4acuda.h"

#define T4A_TEST_NAME "test_keep_reservation"
#include "new_hook.hpp"

int main() {
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  t4a_runtime rt{};
  CHECK(t4a_runtime_create(nullptr, &rt));
  // The library loaded the fake driver: the same instance is found here.
  void *fake = dlopen(T4A_FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  auto early_frees = fake == nullptr
                         ? nullptr
                         : reinterpret_cast<unsigned long (*)(void)>(
                               dlsym(fake, "fake_cuda_early_host_frees"));
  if (early_frees == nullptr) {
    std::fprintf(stderr, "fake_cuda_early_host_frees not found\n");
    return 1;
  }
  t4a_buffer b{};
  CHECK(t4a_buffer_alloc(rt, 4096, 0, &b));
  int failures = 0, injected = 0;
  for (int dir = 0; dir < 2; ++dir) {
    for (long k = 1; k <= 12; ++k) {
      t4a_host_buffer hb{};
      CHECK(t4a_host_buffer_alloc(rt, 4096, &hb));
      // After a synchronize the open epoch holds nothing: the next keep is
      // its first (the case that allocated after the enqueue).
      CHECK(t4a_runtime_synchronize(rt));
      g_countdown.store(k);
      t4a_status s = dir == 0 ? t4a_buffer_upload_host(rt, b, 0, hb, 0, 4096)
                              : t4a_buffer_download_host(rt, b, 0, hb, 0, 4096);
      bool hit = g_countdown.exchange(0) == 0; // the k-th new failed
      injected += hit;
      if (s != T4A_SUCCESS && s != T4A_ERROR_OUT_OF_HOST_MEMORY)
        return fail(dir == 0 ? "upload_host" : "download_host", s);
      unsigned long before = early_frees();
      CHECK(t4a_host_buffer_release(hb)); // the DMA is not observed yet
      unsigned long early = early_frees() - before;
      if (early != 0) {
        std::fprintf(stderr,
                     "%s with allocation %ld failing returned %s; releasing "
                     "the host buffer then freed it under its DMA\n",
                     dir == 0 ? "upload_host" : "download_host", k,
                     t4a_status_name(s));
        ++failures;
      }
    }
  }
  CHECK(t4a_runtime_synchronize(rt));
  CHECK(t4a_buffer_release(b));
  CHECK(t4a_runtime_destroy(rt));
  t4a_process_stats ps = T4A_PROCESS_STATS_INIT;
  CHECK(t4a_process_stats_get(&ps));
  if (ps.leaked_host_buffers != 0) {
    std::fprintf(stderr, "%llu host buffers leaked\n",
                 static_cast<unsigned long long>(ps.leaked_host_buffers));
    ++failures;
  }
  // The injection must have hit allocations of the calls, or this proves
  // nothing.
  if (injected == 0) {
    std::fprintf(stderr, "no allocation failed inside the transfers\n");
    ++failures;
  }
  std::printf("%d allocation failures injected; %d early frees\n", injected,
              failures);
  return failures == 0 ? 0 : 1;
}
