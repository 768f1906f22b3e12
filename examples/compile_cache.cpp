/*
 * t4acuda-compile-cache: where a compiled kernel comes from, then
 * y = a * x + y over 2^20 floats through the C++ facade, with timings.
 * (examples/saxpy.cpp, t4acuda-saxpy, is the short version in the README.)
 *
 * Compiles the kernel with t4a::compile (a CUBIN for the runtime's device,
 * or for compute capability 9.0 when there is no GPU or driver, so that the
 * compile and the disk cache still run) and says where the artifact came
 * from: NVRTC, the in-memory cache or the disk cache. A second run of the
 * program finds the kernel in the disk cache ($T4A_CACHE_DIR, else
 * $XDG_CACHE_HOME/t4acuda, else ~/.cache/t4acuda). With a GPU it then
 * uploads x and y, launches saxpy, downloads y and checks every element
 * against the CPU (exit 1 on a mismatch). Without a GPU or driver it says
 * so and exits 0.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "t4acuda.hpp"

namespace {

const char *const k_source =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y,\n"
    "                                   unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The disk cache directory t4a_compile uses with request.cache_dir NULL.
std::string cache_dir() {
  if (const char *d = std::getenv("T4A_CACHE_DIR"))
    return *d != '\0' ? std::string(d)
                      : std::string("(disabled by T4A_CACHE_DIR=\"\")");
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/t4acuda";
  if (const char *h = std::getenv("HOME"); h != nullptr && *h != '\0')
    return std::string(h) + "/.cache/t4acuda";
  return "(none: no HOME)";
}

// Opens a runtime on device 0, or says why there is none.
bool open_runtime(t4a::Runtime &rt, std::string &reason) {
  int32_t count = 0;
  t4a_status s = t4a::device_count(count, std::nothrow);
  if (s != T4A_SUCCESS) {
    reason = std::string(t4a_status_name(s)) + ": " + t4a::last_error_message();
    return false;
  }
  if (count == 0) {
    reason = "the CUDA driver sees no devices";
    return false;
  }
  s = t4a::Runtime::create(t4a::RuntimeOptions(), rt, std::nothrow);
  if (s != T4A_SUCCESS) {
    reason = std::string(t4a_status_name(s)) + ": " + t4a::last_error_message();
    return false;
  }
  return true;
}

int run() {
  std::printf("t4acuda %s\n", t4a_version_string());

  t4a::Runtime rt;
  std::string no_gpu_reason;
  const bool have_gpu = open_runtime(rt, no_gpu_reason);

  t4a::CompileRequest request(k_source);
  request.with_program_name("saxpy.cu");
  if (have_gpu)
    request.for_runtime(rt);
  else
    request.for_cc(9, 0); // sm_90: something to compile for without a device

  const t4a_compile_stats before = t4a::compile_stats();
  const Clock::time_point t_compile = Clock::now();
  t4a::Artifact artifact;
  t4a_status s = t4a::compile(request, artifact, std::nothrow);
  const double compile_ms = ms_since(t_compile);
  if (s == T4A_ERROR_NO_COMPILER) {
    std::printf("no NVRTC available: cannot compile the kernel (reason: %s)\n",
                t4a::last_error_message().c_str());
    return 1;
  }
  if (s == T4A_ERROR_COMPILE) {
    std::fprintf(stderr, "compile failed:\n%s\n",
                 t4a::last_compile_log().c_str());
    return 1;
  }
  t4a::check(s);
  const t4a_compile_stats after = t4a::compile_stats();

  const char *origin = "unknown";
  if (after.memory_hits > before.memory_hits)
    origin = "the in-memory cache";
  else if (after.disk_hits > before.disk_hits)
    origin = "the disk cache (hit)";
  else if (after.nvrtc_invocations > before.nvrtc_invocations)
    origin = after.disk_writes > before.disk_writes
                 ? "NVRTC (compiled now; written to the disk cache)"
                 : "NVRTC (compiled now)";

  const t4a_artifact_info info = artifact.info();
  std::printf("kernel: %s for %s_%d%d, %llu bytes, key %.16s...\n",
              info.output == T4A_COMPILE_CUBIN ? "CUBIN" : "PTX",
              info.output == T4A_COMPILE_CUBIN ? "sm" : "compute",
              info.cc_major, info.cc_minor,
              static_cast<unsigned long long>(info.image_bytes),
              artifact.key().c_str());
  std::printf("artifact from: %s in %.2f ms\n", origin, compile_ms);
  std::printf("disk cache: %s\n", cache_dir().c_str());

  if (!have_gpu) {
    std::printf("no CUDA GPU/driver available: compiled the kernel, skipped "
                "running it (reason: %s)\n",
                no_gpu_reason.c_str());
    return 0;
  }

  const uint32_t n = 1u << 20;
  const float a = 2.0f;
  // Small dyadic values: a * x + y is exact with or without FMA contraction,
  // so the GPU and the CPU must agree bit for bit.
  std::vector<float> x(n), y(n), expect(n), got(n);
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000) * 0.25f;
    y[i] = static_cast<float>(i % 777);
    expect[i] = a * x[i] + y[i];
  }

  t4a::Module module(rt, artifact);
  t4a::Kernel kernel = module.kernel("saxpy");
  t4a::DeviceArray<float> dx(rt, n), dy(rt, n);

  const Clock::time_point t_upload = Clock::now();
  dx.upload(rt, x);
  dy.upload(rt, y);
  rt.synchronize();
  const double upload_ms = ms_since(t_upload);

  const uint32_t block = 256;
  const Clock::time_point t_kernel = Clock::now();
  kernel.launch(rt, (n + block - 1) / block, block, a, dx, dy, n);
  rt.synchronize();
  const double kernel_ms = ms_since(t_kernel);

  const Clock::time_point t_download = Clock::now();
  dy.download(rt, got);
  const double download_ms = ms_since(t_download);

  uint64_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (got[i] != expect[i]) {
      if (bad < 5)
        std::fprintf(stderr, "mismatch at %u: got %g, expected %g\n", i,
                     static_cast<double>(got[i]),
                     static_cast<double>(expect[i]));
      ++bad;
    }
  }
  const t4a_device_info dev = t4a::device_info(rt.info().device_ordinal);
  std::printf("device: %s (compute capability %d.%d)\n", dev.name, dev.cc_major,
              dev.cc_minor);
  std::printf("saxpy over %u floats: upload %.3f ms, launch + wait %.3f ms, "
              "download %.3f ms\n",
              n, upload_ms, kernel_ms, download_ms);
  if (bad != 0) {
    std::printf("FAILED: %llu of %u elements differ from the CPU result\n",
                static_cast<unsigned long long>(bad), n);
    return 1;
  }
  std::printf("all %u elements match the CPU result\n", n);
  return 0;
}

} // namespace

int main() {
  try {
    return run();
  } catch (const t4a::Error &e) {
    std::fprintf(stderr, "t4acuda-compile-cache: %s\n", e.what());
    return 1;
  }
}
