/* t4acuda-warm-probe: a fixed number of warm operations, for profiling the
 * warm path per call under callgrind with the fake driver (no GPU):
 *
 *   T4A_CUDA_DRIVER_PATH=build/default/tests/fake/libt4a_fake_cuda.so \
 *   valgrind --tool=callgrind --toggle-collect='t4a_launch' \
 *     build/default/bench/t4acuda-warm-probe launch 10000
 *
 * Modes: "launch" (4 arguments: two buffers, two scalars, one kernel),
 * "alternating" (the same over 8 modules in turn), "alternating64" (over
 * 64 modules), "cluster" (the 4-argument launch through t4a_launch_ex with
 * a cluster of 2 blocks on a grid of 2; toggle t4a_launch_ex), "alloc" (alloc +
 * release of 1 MiB), "upload_host" (t4a_buffer_upload_host of 4 KiB from a
 * host buffer + t4a_runtime_synchronize), "download_host" (the same
 * downloading into the host buffer), "sync" (t4a_runtime_synchronize of an
 * idle runtime). As in the benchmark, the runtime's context is made
 * current on the calling thread first (through the driver named by
 * T4A_CUDA_DRIVER_PATH, else libcuda.so.1). Each mode first runs 1000
 * untimed warm-up calls. The
 * instructions per call are callgrind's total for the toggled function
 * divided by N. Exits 1 on any failure. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T4A_EXPERIMENTAL 1
#include "t4acuda.h"

static void ok(t4a_status s, const char *what) {
  if (s == T4A_SUCCESS) return;
  fprintf(stderr, "warm-probe: %s: %s\n", what, t4a_status_name(s));
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr,
            "usage: %s launch|alternating|alternating64|alloc|upload_host|"
            "download_host|sync N\n",
            argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  long n = atol(argv[2]);
  t4a_runtime rt = {0};
  ok(t4a_runtime_create(NULL, &rt), "runtime");
  {
    const char *path = getenv("T4A_CUDA_DRIVER_PATH");
    void *h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW);
    typedef int (*gpa_fn)(const char *, void **, int, unsigned long long,
                          void *);
    gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    void *set_current = NULL;
    int q = 0;
    if (gpa == NULL ||
        gpa("cuCtxSetCurrent", &set_current, 12000, 0, &q) != 0 ||
        set_current == NULL) {
      fprintf(stderr, "warm-probe: cannot resolve cuCtxSetCurrent\n");
      return 1;
    }
    t4a_runtime_info info = T4A_RUNTIME_INFO_INIT;
    ok(t4a_runtime_info_get(rt, &info), "runtime info");
    if (((int (*)(void *))set_current)(info.context) != 0) {
      fprintf(stderr, "warm-probe: cuCtxSetCurrent failed\n");
      return 1;
    }
  }
  if (!strcmp(mode, "alloc")) {
    for (long i = 0; i < n + 1000; ++i) {
      t4a_buffer b = {0};
      ok(t4a_buffer_alloc(rt, 1 << 20, 0, &b), "alloc");
      ok(t4a_buffer_release(b), "release");
    }
  } else if (!strcmp(mode, "upload_host") || !strcmp(mode, "download_host")) {
    int up = !strcmp(mode, "upload_host");
    t4a_buffer b = {0};
    t4a_host_buffer hb = {0};
    ok(t4a_buffer_alloc(rt, 4096, 0, &b), "alloc");
    ok(t4a_host_buffer_alloc(rt, 4096, &hb), "host buffer");
    for (long i = 0; i < n + 1000; ++i) {
      if (up)
        ok(t4a_buffer_upload_host(rt, b, 0, hb, 0, 4096), "upload");
      else
        ok(t4a_buffer_download_host(rt, b, 0, hb, 0, 4096), "download");
      ok(t4a_runtime_synchronize(rt), "synchronize");
    }
    ok(t4a_host_buffer_release(hb), "release");
    ok(t4a_buffer_release(b), "release");
  } else if (!strcmp(mode, "sync")) {
    for (long i = 0; i < n + 1000; ++i) ok(t4a_runtime_synchronize(rt), "sync");
  } else {
    enum { MODS = 64 };
    const int cluster = !strcmp(mode, "cluster");
    int mods = !strcmp(mode, "alternating")     ? 8
               : !strcmp(mode, "alternating64") ? MODS
                                                : 1;
    t4a_module m[MODS];
    t4a_kernel k[MODS];
    for (int i = 0; i < mods; ++i) {
      /* the fake driver loads any bytes as a module; distinct bytes make
       * distinct modules */
      unsigned char image[16] = {(unsigned char)(i + 1)};
      ok(t4a_module_load_data(rt, image, sizeof image, &m[i]), "module");
      ok(t4a_kernel_get(m[i], "axpy4", &k[i]), "kernel");
    }
    t4a_buffer y = {0}, x = {0};
    ok(t4a_buffer_alloc(rt, 1024, 0, &y), "alloc");
    ok(t4a_buffer_alloc(rt, 1024, 0, &x), "alloc");
    int count = 256;
    float a = 2.0f;
    t4a_arg args[4] = {T4A_ARG_INIT, T4A_ARG_INIT, T4A_ARG_INIT, T4A_ARG_INIT};
    args[0].kind = T4A_ARG_BUFFER;
    args[0].buffer = y;
    args[1].kind = T4A_ARG_BUFFER;
    args[1].buffer = x;
    args[2].kind = T4A_ARG_SCALAR;
    args[2].value = &count;
    args[2].size = sizeof count;
    args[3].kind = T4A_ARG_SCALAR;
    args[3].value = &a;
    args[3].size = sizeof a;
    t4a_launch_desc d[MODS];
    for (int i = 0; i < mods; ++i) {
      t4a_launch_desc init = T4A_LAUNCH_DESC_INIT;
      d[i] = init;
      d[i].kernel = k[i];
      d[i].grid[0] = cluster ? 2 : 1;
      d[i].block[0] = 256;
      d[i].arg_count = 4;
      d[i].args = args;
    }
    t4a_launch_attrs attrs = T4A_LAUNCH_ATTRS_INIT;
    attrs.cluster[0] = 2;
    if (cluster)
      for (long i = 0; i < n + 1000; ++i)
        ok(t4a_launch_ex(rt, &d[0], &attrs), "cluster launch");
    else
      for (long i = 0; i < n + 1000; ++i)
        ok(t4a_launch(rt, &d[i % mods]), "launch");
    ok(t4a_runtime_synchronize(rt), "synchronize");
    for (int i = 0; i < mods; ++i) {
      ok(t4a_kernel_release(k[i]), "release");
      ok(t4a_module_release(m[i]), "release");
    }
    ok(t4a_buffer_release(y), "release");
    ok(t4a_buffer_release(x), "release");
  }
  ok(t4a_runtime_destroy(rt), "destroy");
  return 0;
}
