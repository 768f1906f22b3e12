//! Raw declarations of the t4acuda C ABI (`include/t4acuda.h` and the
//! DLPack entry points of `include/t4acuda_dlpack.h`): no bindgen, no
//! crates outside std. The structs come from `abi/layouts.json`
//! (`structs.rs`, written by `abi/gen-bindings`); functions and constants
//! are declared here.
//!
//! * Handles are `#[repr(C)] struct { id: u64 }`, passed by value.
//! * Every input struct is FFI-safe: zero bytes with `struct_size` set
//!   (`T::init()`, the C `_INIT` macros) mean all defaults.
//! * Feature `link` (default): linked at build time (build.rs finds the
//!   library through `T4ACUDA_LIB_DIR`, else `pkg-config t4acuda`).
//! * Feature `dlopen`: [`dl::Api::load`] loads the library at run time.
//! * The header's experimental section (`#if defined(T4A_EXPERIMENTAL)`)
//!   is bound in part, always (no feature: it is the same library), each
//!   item tagged "Experimental" in its documentation: the launch
//!   attributes ([`t4a_launch_ex`], [`t4a_kernel_cluster_occupancy`],
//!   [`t4a_launch_attrs`], [`t4a_cluster_occupancy`], `T4A_LAUNCH_ATTR_*`)
//!   and [`T4A_EXPERIMENTAL_REVISION`]. They may change in any release;
//!   their functions are `optional` for `dl::Api`. Their structs are
//!   declared here by hand (abi/gen-bindings writes the stable ones only)
//!   and checked against `abi/layouts.json` like the generated ones.
//!
//! `tests/layouts.rs` checks every declaration against `abi/layouts.json`.
#![allow(non_camel_case_types, non_upper_case_globals)]

pub use std::ffi::{c_char, c_void};

#[macro_use]
mod macros;
pub mod abi;

/// A status: #T4A_SUCCESS (0), #T4A_NOT_READY, or an error code.
pub type t4a_status = i32;
/// A log level (`T4A_LOG_*`).
pub type t4a_log_level = i32;
/// The log callback (t4a_set_log_callback).
pub type t4a_log_fn = unsafe extern "C" fn(user: *mut c_void, level: i32, message: *const c_char);

c_consts! {
    pub const T4A_VERSION_MAJOR: i32 = 0;
    pub const T4A_VERSION_MINOR: i32 = 1;
    pub const T4A_VERSION_PATCH: i32 = 0;
    pub const T4A_VERSION_NUMBER: i32 =
        T4A_VERSION_MAJOR * 10000 + T4A_VERSION_MINOR * 100 + T4A_VERSION_PATCH;
    pub const T4A_VERSION_STRING: &str = "0.1.0";
    pub const T4A_NULL_ID: u64 = 0;
    pub const T4A_DEVICE_NAME_CAPACITY: i32 = 256;
    pub const T4A_POOL_KEEP_ALL: u64 = u64::MAX;
    pub const T4A_POOL_RELEASE_ALL: u64 = u64::MAX - 1;
    pub const T4A_DEFAULT_STAGING_BYTES: u64 = 64 << 20;
    pub const T4A_DEFAULT_STAGING_CHUNK_BYTES: u64 = 8 << 20;
    pub const T4A_STAGING_THREADS_AUTO: i32 = 0;
    pub const T4A_DEFAULT_MODULE_CACHE_ENTRIES: u32 = 64;
    pub const T4A_DEFAULT_MODULE_CACHE_BYTES: u64 = 256 << 20;
    pub const T4A_PEER_ACCESS_EXPLICIT: u32 = 0;
    pub const T4A_PEER_ACCESS_AUTO: u32 = 1;
    pub const T4A_BUFFER_ZERO: u32 = 1;
    pub const T4A_COMPILE_CUBIN: u32 = 0;
    pub const T4A_COMPILE_PTX: u32 = 1;
    pub const T4A_COMPILE_NO_MEMORY_CACHE: u32 = 1;
    pub const T4A_COMPILE_NO_DISK_CACHE: u32 = 2;
    pub const T4A_COMPILE_NO_TOOLKIT_HEADERS: u32 = 4;
    pub const T4A_COMPILE_NO_PCH: u32 = 8;
    pub const T4A_ARTIFACT_FROM_NVRTC: u32 = 1;
    pub const T4A_ARTIFACT_FROM_MEMORY: u32 = 2;
    pub const T4A_ARTIFACT_FROM_DISK: u32 = 3;
    pub const T4A_DEFAULT_DISK_CACHE_BYTES: u64 = 1 << 30;
    pub const T4A_MEMORY_CACHE_ENTRIES: i32 = 256;
    pub const T4A_MEMORY_CACHE_BYTES: u64 = 256 << 20;
    pub const T4A_ARTIFACT_KEY_CAPACITY: i32 = 65;
    pub const T4A_PARAMS_UNKNOWN: i32 = -1;
    pub const T4A_ARG_BUFFER: u32 = 1;
    pub const T4A_ARG_SCALAR: u32 = 2;
    pub const T4A_ARG_DEVICE_POINTER: u32 = 3;
    pub const T4A_MAX_PARAM_BYTES: u32 = 32764;
    pub const T4A_PROCESS_FAULT_OPERATION_BYTES: i32 = 256;
    /// Only under `#if defined(T4A_EXPERIMENTAL)` in C: the revision of the
    /// experimental section these declarations follow.
    pub const T4A_EXPERIMENTAL_REVISION: i32 = 4;
    /// Experimental (`#if defined(T4A_EXPERIMENTAL)` in C):
    /// t4a_launch_attrs::flags, programmatic dependent launch
    /// (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`; compute
    /// capability 9.0).
    pub const T4A_LAUNCH_ATTR_PROGRAMMATIC: u32 = 0x1;
    /// Experimental (`#if defined(T4A_EXPERIMENTAL)` in C):
    /// t4a_launch_attrs::flags, allow a cluster of more than 8 blocks (up
    /// to what the device reports for the launch's shape).
    pub const T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE: u32 = 0x2;

    // enum t4a_status_code
    pub const T4A_SUCCESS: t4a_status = 0;
    pub const T4A_NOT_READY: t4a_status = 1;
    pub const T4A_ERROR_INVALID_ARGUMENT: t4a_status = 2;
    pub const T4A_ERROR_INVALID_HANDLE: t4a_status = 3;
    pub const T4A_ERROR_WRONG_RUNTIME: t4a_status = 4;
    pub const T4A_ERROR_NO_DRIVER: t4a_status = 5;
    pub const T4A_ERROR_NO_DEVICE: t4a_status = 6;
    pub const T4A_ERROR_NO_COMPILER: t4a_status = 7;
    pub const T4A_ERROR_OUT_OF_MEMORY: t4a_status = 8;
    pub const T4A_ERROR_OUT_OF_HOST_MEMORY: t4a_status = 9;
    pub const T4A_ERROR_DRIVER: t4a_status = 10;
    pub const T4A_ERROR_COMPILE: t4a_status = 11;
    pub const T4A_ERROR_UNKNOWN_ENTRY_POINT: t4a_status = 12;
    pub const T4A_ERROR_DEVICE_FAULT: t4a_status = 13;
    pub const T4A_ERROR_REENTRANT: t4a_status = 14;
    pub const T4A_ERROR_UNSUPPORTED: t4a_status = 15;
    pub const T4A_ERROR_VERSION_MISMATCH: t4a_status = 16;
    pub const T4A_ERROR_ABANDONED: t4a_status = 17;
    pub const T4A_ERROR_INTERNAL: t4a_status = 18;
    pub const T4A_ERROR_CAPTURING: t4a_status = 19;

    // enum t4a_log_level
    pub const T4A_LOG_OFF: t4a_log_level = 0;
    pub const T4A_LOG_ERROR: t4a_log_level = 1;
    pub const T4A_LOG_WARN: t4a_log_level = 2;
    pub const T4A_LOG_INFO: t4a_log_level = 3;
    pub const T4A_LOG_DEBUG: t4a_log_level = 4;

    // include/t4acuda_dlpack.h (DLPACK_CONSTANTS)
    pub const T4A_DLPACK_READ_ONLY: u32 = 1;
    pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
    pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
    // DLDeviceType
    pub const kDLCPU: i32 = 1;
    pub const kDLCUDA: i32 = 2;
    pub const kDLCUDAHost: i32 = 3;
    pub const kDLOpenCL: i32 = 4;
    pub const kDLVulkan: i32 = 7;
    pub const kDLMetal: i32 = 8;
    pub const kDLVPI: i32 = 9;
    pub const kDLROCM: i32 = 10;
    pub const kDLROCMHost: i32 = 11;
    pub const kDLExtDev: i32 = 12;
    pub const kDLCUDAManaged: i32 = 13;
    pub const kDLOneAPI: i32 = 14;
    pub const kDLWebGPU: i32 = 15;
    pub const kDLHexagon: i32 = 16;
    pub const kDLMAIA: i32 = 17;
    // DLDataTypeCode
    pub const kDLInt: u8 = 0;
    pub const kDLUInt: u8 = 1;
    pub const kDLFloat: u8 = 2;
    pub const kDLOpaqueHandle: u8 = 3;
    pub const kDLBfloat: u8 = 4;
    pub const kDLComplex: u8 = 5;
    pub const kDLBool: u8 = 6;
    pub const DLPACK_MAJOR_VERSION: u32 = 1;
    pub const DLPACK_MINOR_VERSION: u32 = 0;
    pub const T4A_DLPACK_STREAM_NONE: i64 = -1;
    pub const T4A_DLPACK_STREAM_LEGACY: i64 = 1;
    pub const T4A_DLPACK_STREAM_PER_THREAD: i64 = 2;
    pub const T4A_DLPACK_MAX_NDIM: i32 = 32;
    /// t4a_buffer_info::flags: the buffer refuses writes (a read-only
    /// DLPack import).
    pub const T4A_BUFFER_INFO_READ_ONLY: u32 = 0x1;
    /// t4a_buffer_info::flags: the buffer wraps memory imported through
    /// DLPack.
    pub const T4A_BUFFER_INFO_IMPORTED: u32 = 0x2;
    /// t4a_buffer_info::flags: a view of a module global
    /// (t4a_module_global): holds its module, never frees its memory.
    pub const T4A_BUFFER_INFO_VIEW: u32 = 0x4;
}

// Structs, handles and their _INIT values: generated from abi/layouts.json
// by abi/gen-bindings. DLDevice::device_type is the C enum DLDeviceType
// (int-sized): kDLCUDA = 2. t4a_arg has no struct_size: its layout is
// frozen.
include!("structs.rs");

// The experimental section's structs (include/t4acuda.h, `#if
// defined(T4A_EXPERIMENTAL)`): written here, since abi/gen-bindings leaves
// experimental structs out of structs.rs; tests/layouts.rs checks them
// against abi/layouts.json as it checks the generated ones.
c_structs! {
    fn experimental_struct_layouts;
    /// C `t4a_launch_attrs` (include/t4acuda.h, experimental): the launch
    /// attributes of t4a_launch_ex(). Zero bytes (`init()`) are "no
    /// attribute". `cluster`: blocks per cluster in x, y, z (all 0: none,
    /// or the kernel's compiled `__cluster_dims__`; with `cluster[0]` set,
    /// 0 in y or z means 1); each must divide the grid's extent.
    pub struct t4a_launch_attrs {
        pub struct_size: u32,
        pub flags: u32,
        pub cluster: [u32; 3],
        pub reserved0: u32,
    }
    /// C `t4a_cluster_occupancy` (include/t4acuda.h, experimental): what
    /// t4a_kernel_cluster_occupancy() reports.
    pub struct t4a_cluster_occupancy {
        pub struct_size: u32,
        pub max_active_clusters: i32,
        pub max_cluster_size: i32,
        pub reserved0: u32,
    }
}

versioned!(
    fn experimental_struct_inits;
    t4a_launch_attrs,
    t4a_cluster_occupancy;
    zero:
);

c_functions! {
    required {
        fn t4a_version() -> u32;
        fn t4a_version_string() -> *const c_char;
        fn t4a_status_name(status: t4a_status) -> *const c_char;
        fn t4a_status_description(status: t4a_status) -> *const c_char;
        fn t4a_last_error(info: *mut t4a_error_info) -> t4a_status;
        fn t4a_last_error_message(buf: *mut c_char, capacity: usize, needed: *mut usize) -> t4a_status;
        fn t4a_last_error_clear();
        fn t4a_set_log_callback(fn_: Option<t4a_log_fn>, user: *mut c_void, max_level: i32) -> t4a_status;
        fn t4a_driver_version(version: *mut i32) -> t4a_status;
        fn t4a_driver_lacks(buf: *mut c_char, capacity: usize, needed: *mut usize) -> t4a_status;
        fn t4a_built_cuda_version() -> i32;
        fn t4a_nvrtc_version(major: *mut i32, minor: *mut i32) -> t4a_status;
        fn t4a_device_count(count: *mut i32) -> t4a_status;
        fn t4a_device_info_get(ordinal: i32, info: *mut t4a_device_info) -> t4a_status;
        fn t4a_device_can_access_peer(ordinal: i32, peer: i32, can_access: *mut i32) -> t4a_status;
        fn t4a_runtime_create(options: *const t4a_runtime_options, runtime: *mut t4a_runtime) -> t4a_status;
        fn t4a_runtime_destroy(runtime: t4a_runtime) -> t4a_status;
        fn t4a_runtime_synchronize(runtime: t4a_runtime) -> t4a_status;
        fn t4a_runtime_trim(runtime: t4a_runtime) -> t4a_status;
        fn t4a_runtime_info_get(runtime: t4a_runtime, info: *mut t4a_runtime_info) -> t4a_status;
        fn t4a_runtime_stats_get(runtime: t4a_runtime, stats: *mut t4a_runtime_stats) -> t4a_status;
        fn t4a_runtime_enable_peer(runtime: t4a_runtime, peer: t4a_runtime) -> t4a_status;
        fn t4a_buffer_alloc(runtime: t4a_runtime, bytes: u64, flags: u32, buffer: *mut t4a_buffer) -> t4a_status;
        fn t4a_buffer_retain(buffer: t4a_buffer) -> t4a_status;
        fn t4a_buffer_release(buffer: t4a_buffer) -> t4a_status;
        fn t4a_buffer_info_get(buffer: t4a_buffer, info: *mut t4a_buffer_info) -> t4a_status;
        fn t4a_buffer_fill(runtime: t4a_runtime, buffer: t4a_buffer, offset: u64, bytes: u64, value: u8) -> t4a_status;
        fn t4a_buffer_copy(runtime: t4a_runtime, dst: t4a_buffer, dst_offset: u64, src: t4a_buffer, src_offset: u64, bytes: u64) -> t4a_status;
        fn t4a_buffer_upload(runtime: t4a_runtime, dst: t4a_buffer, offset: u64, src: *const c_void, bytes: u64) -> t4a_status;
        fn t4a_buffer_download(runtime: t4a_runtime, src: t4a_buffer, offset: u64, bytes: u64, download: *mut t4a_download) -> t4a_status;
        fn t4a_download_poll(download: t4a_download, dst: *mut c_void) -> t4a_status;
        fn t4a_download_wait(download: t4a_download, dst: *mut c_void) -> t4a_status;
        fn t4a_download_size(download: t4a_download, bytes: *mut u64) -> t4a_status;
        fn t4a_download_release(download: t4a_download) -> t4a_status;
        fn t4a_buffer_download_sync(runtime: t4a_runtime, src: t4a_buffer, offset: u64, dst: *mut c_void, bytes: u64) -> t4a_status;
        fn t4a_host_buffer_alloc(runtime: t4a_runtime, bytes: u64, host_buffer: *mut t4a_host_buffer) -> t4a_status;
        fn t4a_host_buffer_retain(host_buffer: t4a_host_buffer) -> t4a_status;
        fn t4a_host_buffer_release(host_buffer: t4a_host_buffer) -> t4a_status;
        fn t4a_host_buffer_pointer(host_buffer: t4a_host_buffer, pointer: *mut *mut c_void, bytes: *mut u64) -> t4a_status;
        fn t4a_buffer_upload_host(runtime: t4a_runtime, dst: t4a_buffer, dst_offset: u64, src: t4a_host_buffer, src_offset: u64, bytes: u64) -> t4a_status;
        fn t4a_buffer_download_host(runtime: t4a_runtime, src: t4a_buffer, src_offset: u64, dst: t4a_host_buffer, dst_offset: u64, bytes: u64) -> t4a_status;
        fn t4a_compile(request: *const t4a_compile_request, artifact: *mut t4a_artifact) -> t4a_status;
        fn t4a_last_compile_log(buf: *mut c_char, capacity: usize, needed: *mut usize) -> t4a_status;
        fn t4a_toolkit_headers(buf: *mut c_char, capacity: usize, needed: *mut usize) -> t4a_status;
        fn t4a_artifact_retain(artifact: t4a_artifact) -> t4a_status;
        fn t4a_artifact_release(artifact: t4a_artifact) -> t4a_status;
        fn t4a_artifact_info_get(artifact: t4a_artifact, info: *mut t4a_artifact_info) -> t4a_status;
        fn t4a_artifact_image(artifact: t4a_artifact, buf: *mut c_void, capacity: usize, needed: *mut usize) -> t4a_status;
        fn t4a_artifact_log(artifact: t4a_artifact, buf: *mut c_char, capacity: usize, needed: *mut usize) -> t4a_status;
        fn t4a_artifact_lowered_name(artifact: t4a_artifact, index: u32, buf: *mut c_char, capacity: usize, needed: *mut usize) -> t4a_status;
        fn t4a_artifact_lowered_name_of(artifact: t4a_artifact, expression: *const c_char, buf: *mut c_char, capacity: usize, needed: *mut usize) -> t4a_status;
        fn t4a_artifact_key(artifact: t4a_artifact, buf: *mut c_char, capacity: usize, needed: *mut usize) -> t4a_status;
        fn t4a_compile_stats_get(stats: *mut t4a_compile_stats) -> t4a_status;
        fn t4a_module_load(runtime: t4a_runtime, artifact: t4a_artifact, module: *mut t4a_module) -> t4a_status;
        fn t4a_module_load_data(runtime: t4a_runtime, image: *const c_void, bytes: usize, module: *mut t4a_module) -> t4a_status;
        fn t4a_module_retain(module: t4a_module) -> t4a_status;
        fn t4a_module_release(module: t4a_module) -> t4a_status;
        fn t4a_kernel_get(module: t4a_module, name: *const c_char, kernel: *mut t4a_kernel) -> t4a_status;
        fn t4a_module_global(module: t4a_module, name: *const c_char, view: *mut t4a_buffer) -> t4a_status;
        fn t4a_kernel_retain(kernel: t4a_kernel) -> t4a_status;
        fn t4a_kernel_release(kernel: t4a_kernel) -> t4a_status;
        fn t4a_kernel_info_get(kernel: t4a_kernel, info: *mut t4a_kernel_info) -> t4a_status;
        fn t4a_kernel_param(kernel: t4a_kernel, index: u32, offset: *mut u64, size: *mut u64) -> t4a_status;
        fn t4a_kernel_occupancy(kernel: t4a_kernel, block_size: i32, dynamic_shared: u64, blocks_per_sm: *mut i32) -> t4a_status;
        fn t4a_kernel_suggest_block_size(kernel: t4a_kernel, dynamic_shared: u64, block_size: *mut i32, min_grid_size: *mut i32) -> t4a_status;
        fn t4a_launch(runtime: t4a_runtime, desc: *const t4a_launch_desc) -> t4a_status;
        fn t4a_runtime_record(runtime: t4a_runtime, completion: *mut t4a_completion) -> t4a_status;
        fn t4a_completion_poll(completion: t4a_completion) -> t4a_status;
        fn t4a_completion_wait(completion: t4a_completion) -> t4a_status;
        fn t4a_runtime_wait(runtime: t4a_runtime, completion: t4a_completion) -> t4a_status;
        fn t4a_completion_retain(completion: t4a_completion) -> t4a_status;
        fn t4a_completion_release(completion: t4a_completion) -> t4a_status;
        fn t4a_raw_begin(runtime: t4a_runtime, scope: *mut t4a_raw_scope, info: *mut t4a_raw_info) -> t4a_status;
        fn t4a_raw_buffer(scope: t4a_raw_scope, buffer: t4a_buffer, device_pointer: *mut u64) -> t4a_status;
        fn t4a_raw_end(scope: t4a_raw_scope) -> t4a_status;
        fn t4a_runtime_wait_stream(runtime: t4a_runtime, stream: *mut c_void) -> t4a_status;
        fn t4a_runtime_signal_stream(runtime: t4a_runtime, stream: *mut c_void) -> t4a_status;
        fn t4a_process_stats_get(stats: *mut t4a_process_stats) -> t4a_status;
        fn t4a_process_fault_get(fault: *mut t4a_process_fault) -> t4a_status;
    }
    optional {
        fn t4a_buffer_to_dlpack(runtime: t4a_runtime, buffer: t4a_buffer, desc: *const t4a_dlpack_desc, consumer_stream: i64, out: *mut *mut DLManagedTensorVersioned) -> t4a_status;
        fn t4a_buffer_to_dlpack_legacy(runtime: t4a_runtime, buffer: t4a_buffer, desc: *const t4a_dlpack_desc, consumer_stream: i64, out: *mut *mut DLManagedTensor) -> t4a_status;
        fn t4a_buffer_from_dlpack(runtime: t4a_runtime, tensor: *mut DLManagedTensorVersioned, out: *mut t4a_buffer) -> t4a_status;
        fn t4a_buffer_from_dlpack_legacy(runtime: t4a_runtime, tensor: *mut DLManagedTensor, out: *mut t4a_buffer) -> t4a_status;
        // Experimental (`#if defined(T4A_EXPERIMENTAL)` in C): launch
        // attributes. t4a_launch_ex: t4a_launch with attributes (NULL or
        // zero attributes launch exactly as t4a_launch);
        // t4a_kernel_cluster_occupancy: reads desc's kernel, grid, block
        // and shared bytes (not its arguments) and the attributes.
        fn t4a_launch_ex(runtime: t4a_runtime, desc: *const t4a_launch_desc, attrs: *const t4a_launch_attrs) -> t4a_status;
        fn t4a_kernel_cluster_occupancy(desc: *const t4a_launch_desc, attrs: *const t4a_launch_attrs, out: *mut t4a_cluster_occupancy) -> t4a_status;
    }
}
