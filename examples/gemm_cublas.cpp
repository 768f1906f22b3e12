// cuBLAS SGEMM through t4acuda's raw seam (docs/raw-seam.md): C = A * B on
// a runtime's stream, checked against a CPU GEMM. cuBLAS is loaded with
// dlopen (libcublas.so.13): neither this program nor t4acuda links it.
// Exit 0 on a match, 1 on a mismatch or an error, 77 (skipped) when there
// is no GPU or no cuBLAS and T4A_REQUIRE_GPU is unset.
#include <cublas_v2.h> // types and prototypes only

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include <t4acuda.hpp>

#include "example_exit.hpp"

namespace {

using example::skip_or_fail;

struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
};

template <class F> bool resolve(void *lib, const char *name, F &out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  if (out == nullptr) std::fprintf(stderr, "libcublas.so.13 lacks %s\n", name);
  return out != nullptr;
}

bool ok(cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "FAILED: %s returned cublasStatus_t %d\n", what,
               static_cast<int>(s));
  return false;
}

} // namespace

int main() {
  int32_t devices = 0;
  if (t4a::device_count(devices, std::nothrow) != T4A_SUCCESS || devices < 1)
    return skip_or_fail("no CUDA device");
  void *lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return skip_or_fail(dlerror());
  Cublas blas;
  if (!resolve(lib, "cublasCreate_v2", blas.create) ||
      !resolve(lib, "cublasDestroy_v2", blas.destroy) ||
      !resolve(lib, "cublasSetStream_v2", blas.set_stream) ||
      !resolve(lib, "cublasSgemm_v2", blas.sgemm))
    return 1;

  // Column-major, odd sizes: C (m x n) = A (m x k) * B (k x n).
  const int m = 67, n = 45, k = 131;
  std::vector<float> a(size_t(m) * k), b(size_t(k) * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i * 7 % 23) - 11) / 8;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i * 5 % 19) - 9) / 4;

  try {
    t4a::Runtime rt(t4a::RuntimeOptions{});
    t4a::DeviceArray<float> da(rt, a), db(rt, b), dc(rt, size_t(m) * n);
    cublasHandle_t handle = nullptr;
    {
      // The scope holds the runtime's admission: the uploads above are
      // ordered before the GEMM on the same stream.
      t4a::RawScope raw(rt);
      if (!ok(blas.create(&handle), "cublasCreate")) return 1;
      if (!ok(blas.set_stream(handle, static_cast<cudaStream_t>(raw.stream())),
              "cublasSetStream"))
        return 1;
      const float alpha = 1.0f, beta = 0.0f;
      if (!ok(blas.sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha,
                         raw.pointer(da), m, raw.pointer(db), k, &beta,
                         raw.pointer(dc), m),
              "cublasSgemm"))
        return 1;
    } // end: the caller's context is back; da, db, dc are kept until done
    std::vector<float> c = dc.to_vector(rt); // ordered after the GEMM
    {
      // cublasDestroy synchronizes the device; it needs the context current.
      t4a::RawScope raw(rt);
      if (!ok(blas.destroy(handle), "cublasDestroy")) return 1;
    }
    int bad = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double want = 0;
        for (int p = 0; p < k; ++p)
          want += double(a[size_t(p) * m + i]) * double(b[size_t(j) * k + p]);
        float got = c[size_t(j) * m + i];
        if (std::fabs(got - want) > 1e-3 * (1 + std::fabs(want)) && bad++ < 5)
          std::fprintf(stderr, "C[%d,%d] = %.6f, CPU %.6f\n", i, j, got, want);
      }
    if (bad != 0) {
      std::fprintf(stderr, "FAILED: %d of %d elements differ\n", bad, m * n);
      return 1;
    }
    std::printf("cuBLAS SGEMM %dx%dx%d through the raw seam matches the CPU\n",
                m, n, k);
    return 0;
  } catch (const t4a::Error &e) {
    std::fprintf(stderr, "FAILED: %s\n", e.what());
    return 1;
  }
}
