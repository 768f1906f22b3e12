// Host lane, issue 8 ("what a new user hit": C++ consumers building with
// -Wold-style-cast -Werror failed on T4A_NULL_ID and the default-size
// macros, which were written `((uint64_t)0)`): t4acuda.h and t4acuda.hpp
// compile in a C++ translation unit built with
//   -Wold-style-cast -Wall -Wextra -Wpedantic -Werror
// (tests/host/CMakeLists.txt), every T4A_<NAME>_INIT macro and T4A_NULL_ID
// are used here, and the macros keep their documented types and values.
// The class templates of the facade are instantiated explicitly so that
// every member function is compiled with these flags too.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include "t4acuda.h" // first: it must need nothing before it
#include "t4acuda.hpp"
#include "t4acuda_dlpack.h" // the DLPack header in C++ too

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

// The id and size macros are uint64_t constants usable at compile time.
static_assert(
    std::is_same<std::remove_cv_t<decltype(T4A_NULL_ID)>, std::uint64_t>::value,
    "T4A_NULL_ID is a uint64_t");
static_assert(T4A_NULL_ID == 0, "the null id is 0");
static_assert(
    std::is_same<decltype(T4A_DEFAULT_STAGING_BYTES), std::uint64_t>::value,
    "size macros are uint64_t");
static_assert(T4A_DEFAULT_STAGING_BYTES == 64ull << 20, "64 MiB");
static_assert(T4A_DEFAULT_STAGING_CHUNK_BYTES == 8ull << 20, "8 MiB");
static_assert(T4A_DEFAULT_MODULE_CACHE_BYTES == 256ull << 20, "256 MiB");
static_assert(T4A_DEFAULT_DISK_CACHE_BYTES == 1ull << 30, "1 GiB");
static_assert(T4A_MEMORY_CACHE_BYTES == 256ull << 20, "256 MiB");
static_assert(T4A_POOL_KEEP_ALL == UINT64_MAX, "keep all");
static_assert(T4A_POOL_RELEASE_ALL == UINT64_MAX - 1, "release all");
#if defined(T4A_EXPERIMENTAL) // header_cxx_experimental
static_assert(T4A_EXPERIMENTAL_REVISION >= 1, "experimental revision");
static const t4a_barrier_desc k_barrier_desc = T4A_BARRIER_DESC_INIT;
static const t4a_barrier_audit k_barrier_audit = T4A_BARRIER_AUDIT_INIT;
static_assert(sizeof(k_barrier_desc) == 40 && sizeof(k_barrier_audit) == 64,
              "the experimental barrier structs");
static const t4a_launch_attrs k_launch_attrs = T4A_LAUNCH_ATTRS_INIT;
typedef t4a_cluster_occupancy cluster_occ;
static const cluster_occ k_cluster_occupancy = T4A_CLUSTER_OCCUPANCY_INIT;
static_assert(sizeof(k_launch_attrs) == 24 && sizeof(k_cluster_occupancy) == 16,
              "the experimental launch-attribute structs");
// The facade's cooperative option sets the flag.
static_assert(T4A_LAUNCH_COOPERATIVE == 1u, "cooperative flag");
// The graph facade: a move-only capture, a reference-counted graph.
static_assert(!std::is_copy_constructible<t4a::Capture>::value, "move-only");
static_assert(std::is_nothrow_move_constructible<t4a::Capture>::value &&
                  std::is_nothrow_move_constructible<t4a::Graph>::value,
              "noexcept moves");
#elif defined(T4A_EXPERIMENTAL_REVISION)
#error "experimental declarations are visible without T4A_EXPERIMENTAL"
#endif

// Every initializer as a constant initializer at namespace scope.
static const t4a_error_info k_error_info = T4A_ERROR_INFO_INIT;
static const t4a_dlpack_desc k_dlpack_desc = T4A_DLPACK_DESC_INIT;
static_assert(sizeof(DLManagedTensorVersioned) == 80, "DLPack ABI");
static_assert(sizeof(DLDeviceType) == 4, "DLPack enums are int-sized");
static const t4a_device_info k_device_info = T4A_DEVICE_INFO_INIT;
static const t4a_runtime_options k_runtime_options = T4A_RUNTIME_OPTIONS_INIT;
static const t4a_runtime_info k_runtime_info = T4A_RUNTIME_INFO_INIT;
static const t4a_runtime_stats k_runtime_stats = T4A_RUNTIME_STATS_INIT;
static const t4a_buffer_info k_buffer_info = T4A_BUFFER_INFO_INIT;
static const t4a_process_stats k_process_stats = T4A_PROCESS_STATS_INIT;
static const t4a_process_fault k_process_fault = T4A_PROCESS_FAULT_INIT;
static const t4a_raw_info k_raw_info = T4A_RAW_INFO_INIT;
static const t4a_compile_request k_compile_request = T4A_COMPILE_REQUEST_INIT;
static const t4a_artifact_info k_artifact_info = T4A_ARTIFACT_INFO_INIT;
static const t4a_compile_stats k_compile_stats = T4A_COMPILE_STATS_INIT;
static const t4a_arg k_arg = T4A_ARG_INIT;
static const t4a_launch_desc k_launch_desc = T4A_LAUNCH_DESC_INIT;
static const t4a_kernel_info k_kernel_info = T4A_KERNEL_INFO_INIT;
#if defined(T4A_EXPERIMENTAL)
static const t4a_capture_options k_capture_options = T4A_CAPTURE_OPTIONS_INIT;
static const t4a_graph_info k_graph_info = T4A_GRAPH_INFO_INIT;
#endif

// Handles initialized from T4A_NULL_ID, as C++ code writes them.
static const t4a_runtime k_runtime{T4A_NULL_ID};
static const t4a_buffer k_buffer = {T4A_NULL_ID};

// Every member of the facade's class templates, compiled with the flags.
template class t4a::detail::RuntimeOps<t4a::Runtime>;
template class t4a::detail::RuntimeOps<t4a::RuntimeView>;
template class t4a::detail::Shared<t4a_buffer, t4a_buffer_retain,
                                   t4a_buffer_release>;
template class t4a::detail::Shared<t4a_host_buffer, t4a_host_buffer_retain,
                                   t4a_host_buffer_release>;
template class t4a::detail::Shared<t4a_artifact, t4a_artifact_retain,
                                   t4a_artifact_release>;
template class t4a::detail::Shared<t4a_kernel, t4a_kernel_retain,
                                   t4a_kernel_release>;
template class t4a::detail::Shared<t4a_module, t4a_module_retain,
                                   t4a_module_release>;
template class t4a::detail::Shared<t4a_completion, t4a_completion_retain,
                                   t4a_completion_release>;
template t4a_arg t4a::arg_scalar<float>(const float &) noexcept;
template class t4a::DeviceArray<float>;
template class t4a::DeviceArray<std::uint8_t>;

// The facade's member and function templates, compiled with the flags
// (never called: there is no driver here).
[[maybe_unused]] static void use_templates(t4a::Runtime &rt,
                                           const t4a::Kernel &k) {
  std::vector<float> v(4);
  std::array<double, 2> a{};
  t4a::DeviceArray<float> d(rt, v);
  d.upload(rt, v, 1);
  d.download(rt, v);
  (void)d.to_vector(rt);
  t4a::Buffer b(rt, 64);
  t4a::upload(rt, b, a, 8);
  t4a::download(rt, b, a);
  (void)t4a::download(rt, b, v, std::nothrow);
  const int n = 4;
  k.launch(rt, 1, 32, d, b, n, 2.0, t4a::arg_buffer(d, 1));
  (void)k.launch(rt, t4a::LaunchConfig({1, 1, 1}, 32, 128), d, n, std::nothrow);
  (void)t4a::compile(t4a::CompileRequest("x")
                         .for_runtime(rt)
                         .with_header("h", "")
                         .with_option("-DX")
                         .with_name_expression("&k"));
}

static int g_failures = 0;

static void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    ++g_failures;
  }
}

static std::string read_file(const char *path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

int main() {
  // The initializers hold the documented sizes and defaults.
  check(k_error_info.struct_size == sizeof(t4a_error_info), "error_info");
  check(k_device_info.struct_size == sizeof(t4a_device_info), "device_info");
  // Zero means the default in every options field.
  check(k_runtime_options.struct_size == sizeof(t4a_runtime_options) &&
            k_runtime_options.pool_release_threshold == 0 &&
            k_runtime_options.staging_bytes == 0 &&
            k_runtime_options.staging_chunk_bytes == 0 &&
            k_runtime_options.module_cache_bytes == 0,
        "runtime_options defaults");
  check(k_runtime_info.struct_size == sizeof(t4a_runtime_info), "runtime_info");
  check(k_runtime_stats.struct_size == sizeof(t4a_runtime_stats),
        "runtime_stats");
  check(k_buffer_info.struct_size == sizeof(t4a_buffer_info), "buffer_info");
  check(k_process_stats.struct_size == sizeof(t4a_process_stats),
        "process_stats");
  check(k_process_fault.struct_size == sizeof(t4a_process_fault),
        "process_fault");
  check(k_raw_info.struct_size == sizeof(t4a_raw_info), "raw_info");
  check(k_dlpack_desc.struct_size == sizeof(t4a_dlpack_desc), "dlpack_desc");
  check(k_compile_request.struct_size == sizeof(t4a_compile_request),
        "compile_request");
  check(k_artifact_info.struct_size == sizeof(t4a_artifact_info),
        "artifact_info");
  check(k_compile_stats.struct_size == sizeof(t4a_compile_stats),
        "compile_stats");
  check(k_arg.kind == 0, "arg");
  check(k_launch_desc.struct_size == sizeof(t4a_launch_desc), "launch_desc");
  check(k_kernel_info.struct_size == sizeof(t4a_kernel_info), "kernel_info");
#if defined(T4A_EXPERIMENTAL)
  check(k_capture_options.struct_size == sizeof(t4a_capture_options),
        "capture_options");
  check(k_graph_info.struct_size == sizeof(t4a_graph_info), "graph_info");
  check(k_barrier_desc.struct_size == sizeof(t4a_barrier_desc) &&
            k_barrier_desc.width == 0 && k_barrier_desc.global_name == nullptr,
        "barrier_desc");
  check(k_barrier_audit.struct_size == sizeof(t4a_barrier_audit),
        "barrier_audit");
  check(k_launch_attrs.struct_size == sizeof(t4a_launch_attrs) &&
            k_launch_attrs.flags == 0 && k_launch_attrs.cluster[0] == 0,
        "launch_attrs");
  check(k_cluster_occupancy.struct_size == sizeof(t4a_cluster_occupancy),
        "cluster_occupancy");
#endif
  check(k_runtime.id == T4A_NULL_ID && k_buffer.id == T4A_NULL_ID,
        "null handles");
  check(!t4a::Runtime() && !t4a::Buffer(), "facade null handles");

  // Every `#define T4A_<NAME>_INIT` of the header is used above, so a new
  // initializer is checked in C++ too.
  const std::string header =
      read_file(T4A_TEST_SOURCE_DIR "/include/t4acuda.h");
  const std::string self =
      read_file(T4A_TEST_SOURCE_DIR "/tests/host/header_cxx.cpp");
  check(!header.empty() && !self.empty(), "sources readable");
  int found = 0;
  const std::string define = "#define T4A_";
  for (auto p = header.find(define); p != std::string::npos;
       p = header.find(define, p + 1)) {
    auto q = p + std::strlen("#define ");
    auto e = q;
    while (e < header.size() &&
           (header[e] == '_' || (header[e] >= 'A' && header[e] <= 'Z') ||
            (header[e] >= '0' && header[e] <= '9')))
      ++e;
    const std::string name = header.substr(q, e - q);
    if (name.size() < 5 || name.compare(name.size() - 5, 5, "_INIT") != 0)
      continue;
    ++found;
    if (self.find("= " + name + ";") == std::string::npos) {
      std::fprintf(stderr, "FAILED: %s is not used in header_cxx.cpp\n",
                   name.c_str());
      ++g_failures;
    }
  }
  check(found >= 14, "the header's initializers were found");
  if (g_failures == 0) std::printf("header_cxx: all checks passed\n");
  return g_failures == 0 ? 0 : 1;
}
