// Host lane (fake driver): the warm launch path allocates no heap memory
// for up to 32 arguments. This program replaces the global
// operator new/delete (which libt4acuda's calls resolve to), counts the
// allocations made during 1,000 warm launches of a kernel with 4 and with
// 32 arguments, and fails unless the count is exactly zero. The kernel is
// compiled by real NVRTC for sm_90; the fake driver (tests/fake) accepts
// the launch without running it. The same holds for the C++ facade's
// variadic Kernel::launch (t4acuda.hpp), which packs its arguments in
// stack storage: 1,000 warm launches through it, with 4 and with 32
// arguments, allocate nothing either.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "t4acuda.h"

#define T4A_TEST_NAME "test_warm_launch_allocs"
#include "new_hook.hpp"
#include "t4acuda.hpp"

// Launches `k` `count` times with `nargs` arguments (the first `nbuf`
// buffers, the rest 4-byte scalars) and returns the operator new calls.
static long allocations_during(t4a_runtime rt, t4a_kernel k, t4a_buffer b,
                               unsigned nargs, unsigned nbuf, int count,
                               t4a_status *status) {
  t4a_arg args[32];
  int scalar = 7;
  for (unsigned i = 0; i < nargs; ++i) {
    args[i] = t4a_arg T4A_ARG_INIT;
    if (i < nbuf) {
      args[i].kind = T4A_ARG_BUFFER;
      args[i].buffer = b;
    } else {
      args[i].kind = T4A_ARG_SCALAR;
      args[i].value = &scalar;
      args[i].size = sizeof scalar;
    }
  }
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.grid[0] = 1;
  d.block[0] = 1;
  d.kernel = k;
  d.arg_count = nargs;
  d.args = args;
  *status = T4A_SUCCESS;
  for (int i = 0; i < 16 && *status == T4A_SUCCESS; ++i) // warm up
    *status = t4a_launch(rt, &d);
  long before = g_news.load();
  for (int i = 0; i < count && *status == T4A_SUCCESS; ++i)
    *status = t4a_launch(rt, &d);
  return g_news.load() - before;
}

// The same launches through the facade's variadic launch (4 arguments:
// two typed arrays and two ints; 32: two buffers and 30 ints).
static long facade_allocations_during(t4a::Runtime &rt, const t4a::Kernel &four,
                                      const t4a::Kernel &many,
                                      const t4a::DeviceArray<float> &a,
                                      const t4a::Buffer &b, int count,
                                      long *n32, t4a_status *status) {
  const int s = 7;
  *status = T4A_SUCCESS;
  for (int i = 0; i < 16 && *status == T4A_SUCCESS; ++i) // warm up
    *status = four.launch(rt, 1, 1, a, a, s, s, std::nothrow);
  long before = g_news.load();
  for (int i = 0; i < count && *status == T4A_SUCCESS; ++i)
    four.launch(rt, 1, 1, a, a, s, s); // throwing form: no error expected
  long n4 = g_news.load() - before;
  for (int i = 0; i < 16 && *status == T4A_SUCCESS; ++i) // warm up
    *status =
        many.launch(rt, 1, 1, b, b, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s,
                    s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, std::nothrow);
  before = g_news.load();
  for (int i = 0; i < count && *status == T4A_SUCCESS; ++i)
    *status =
        many.launch(rt, 1, 1, b, b, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s,
                    s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, std::nothrow);
  *n32 = g_news.load() - before;
  return n4;
}

int main() {
#if !defined(T4A_FAKE_CUDA_PATH)
  std::fprintf(stderr, "built without the fake driver\n");
  return 1;
#else
  setenv("T4A_CUDA_DRIVER_PATH", T4A_FAKE_CUDA_PATH, 1);
  std::string src = "extern \"C\" __global__ void four(float *a, float *b, "
                    "int n, int m) {}\n"
                    "extern \"C\" __global__ void many(";
  for (int i = 0; i < 32; ++i) {
    src += i < 2 ? "float *p" : "int s";
    src += std::to_string(i);
    src += i + 1 < 32 ? ", " : ") {}\n";
  }
  t4a_compile_request r = T4A_COMPILE_REQUEST_INIT;
  r.source = src.c_str();
  r.cc_major = 9;
  r.cc_minor = 0;
  r.flags = T4A_COMPILE_NO_DISK_CACHE;
  t4a_artifact art{};
  long before_compile = g_news.load();
  CHECK(t4a_compile(&r, &art));
  // The replacement must see the library's allocations, or a zero below
  // would prove nothing: compiling allocates (strings, the image).
  if (g_news.load() - before_compile < 3) {
    std::fprintf(stderr, "operator new is not interposed for libt4acuda\n");
    return 1;
  }
  t4a_runtime rt{};
  CHECK(t4a_runtime_create(nullptr, &rt));
  t4a_module m{};
  CHECK(t4a_module_load(rt, art, &m));
  t4a_kernel four{}, many{};
  CHECK(t4a_kernel_get(m, "four", &four));
  CHECK(t4a_kernel_get(m, "many", &many));
  t4a_buffer b{};
  CHECK(t4a_buffer_alloc(rt, 4096, 0, &b));

  t4a_status s = T4A_SUCCESS;
  long n4 = allocations_during(rt, four, b, 4, 2, 1000, &s);
  if (s != T4A_SUCCESS) return fail("launch with 4 arguments", s);
  long n32 = allocations_during(rt, many, b, 32, 2, 1000, &s);
  if (s != T4A_SUCCESS) return fail("launch with 32 arguments", s);
  // Issue 8, item 1: launches cycling among more modules than an open epoch
  // holds (T4A_OPEN_EPOCH_LIMIT, 256) keep a module each, so the open epoch
  // is sealed every 256 launches and sealed epochs retire; in the steady
  // state that allocates nothing either (the event pool, the ring of sealed
  // epochs and their item arrays are reused).
  constexpr int kModules = 256 + 8;
  t4a_module mods[kModules];
  t4a_kernel ks[kModules];
  for (int i = 0; i < kModules; ++i) {
    unsigned char image[16] = {7, static_cast<unsigned char>(i),
                               static_cast<unsigned char>(i >> 8)};
    CHECK(t4a_module_load_data(rt, image, sizeof image, &mods[i]));
    CHECK(t4a_kernel_get(mods[i], "k", &ks[i]));
  }
  t4a_launch_desc md = T4A_LAUNCH_DESC_INIT;
  md.grid[0] = 1;
  md.block[0] = 1;
  for (int i = 0; i < 4096 && s == T4A_SUCCESS; ++i) { // warm up
    md.kernel = ks[i % kModules];
    s = t4a_launch(rt, &md);
  }
  long before_multi = g_news.load();
  for (int i = 0; i < 20000 && s == T4A_SUCCESS; ++i) {
    md.kernel = ks[i % kModules];
    s = t4a_launch(rt, &md);
  }
  long nmulti = g_news.load() - before_multi;
  if (s != T4A_SUCCESS) return fail("launch alternating modules", s);
  t4a_runtime_stats st = T4A_RUNTIME_STATS_INIT;
  CHECK(t4a_runtime_stats_get(rt, &st));
  std::printf("operator new calls in 20000 launches over %d modules: %ld; "
              "events %llu\n",
              kModules, nmulti,
              static_cast<unsigned long long>(st.events_recorded));
  for (int i = 0; i < kModules; ++i) {
    CHECK(t4a_kernel_release(ks[i]));
    CHECK(t4a_module_release(mods[i]));
  }
  std::printf("operator new calls in 1000 warm launches: %ld (4 args), "
              "%ld (32 args); launches %llu, events %llu\n",
              n4, n32, static_cast<unsigned long long>(st.launches),
              static_cast<unsigned long long>(st.events_recorded));
  // The facade's variadic launch, on the same kernels.
  long f4 = 0, f32 = 0;
  uint64_t facade_launches = 0;
  {
    t4a::Runtime frt(t4a::RuntimeOptions{});
    CHECK(t4a_artifact_retain(art)); // a reference for the Artifact below
    t4a::Module fm(frt, t4a::Artifact(art));
    t4a::Kernel ffour = fm.kernel("four"), fmany = fm.kernel("many");
    t4a::DeviceArray<float> fa(frt, 1024);
    t4a::Buffer fb(frt, 4096);
    f4 = facade_allocations_during(frt, ffour, fmany, fa, fb, 1000, &f32, &s);
    if (s != T4A_SUCCESS) return fail("facade launch", s);
    facade_launches = frt.stats().launches;
  }
  std::printf("operator new calls in 1000 warm facade launches: %ld (4 args), "
              "%ld (32 args); launches %llu\n",
              f4, f32, static_cast<unsigned long long>(facade_launches));
  CHECK(t4a_buffer_release(b));
  CHECK(t4a_kernel_release(four));
  CHECK(t4a_kernel_release(many));
  CHECK(t4a_module_release(m));
  CHECK(t4a_artifact_release(art));
  CHECK(t4a_runtime_destroy(rt));
  bool ok = n4 == 0 && n32 == 0 && nmulti == 0 && f4 == 0 && f32 == 0 &&
            facade_launches == 2 * (16 + 1000) &&
            st.launches == 2 * (16 + 1000) + 4096 + 20000 &&
            st.events_recorded >= (4096 + 20000) / 256 - 1;
  std::printf("%d passed, %d failed\n", ok ? 1 : 0, ok ? 0 : 1);
  return ok ? 0 : 1;
#endif
}
