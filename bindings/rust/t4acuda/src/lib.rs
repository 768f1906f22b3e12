//! Safe Rust API over the t4acuda C ABI (through `t4acuda-sys`).
//!
//! * RAII: every handle type releases its reference in `Drop`; a
//!   [`Runtime`] is destroyed in `Drop` (use [`Runtime::destroy`] for the
//!   status). Handles are `Send + Sync`: the C API lets every handle be
//!   used and released from any thread. The raw-seam guard [`RawScope`]
//!   is the exception: it belongs to the thread that began it (`!Send`).
//! * Errors are [`Result<T, Error>`]: the status, the driver's `CUresult`,
//!   NVRTC's result, the entry point and the message of the calling
//!   thread's last error.
//! * Host data moves through slices of [`Pod`] types.
//! * [`Runtime::launch`] packs `&dyn KernelArg` arguments (buffers, slices
//!   of buffers, sized scalars); the C layer compares each scalar's size
//!   with the kernel's parameter.
//! * Experimental (the C header's `T4A_EXPERIMENTAL` section, which may
//!   change in any release): launch attributes of [`LaunchConfig`]
//!   (thread block clusters, programmatic dependent launch) and
//!   [`Kernel::cluster_occupancy`].
#![deny(unsafe_op_in_unsafe_fn)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use t4acuda_sys as sys;

mod error;
use error::check;
pub use error::{Error, Result, Status};

/// Plain old data: any bit pattern is a valid value and there is no
/// padding, so values can be copied to and from device memory as bytes.
///
/// # Safety
/// Implement only for types with no padding, no pointers that must be
/// valid, and every bit pattern valid.
pub unsafe trait Pod: Copy + Send + Sync + 'static {}

macro_rules! pod {
    ($($t:ty),*) => {$(unsafe impl Pod for $t {})*};
}
pod!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64);
// SAFETY: an array of Pod has no padding between elements.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

fn bytes_of<T: Pod>(s: &[T]) -> u64 {
    std::mem::size_of_val(s) as u64
}

/// The library's version (t4a_version()): major * 10000 + minor * 100 +
/// patch.
pub fn version() -> u32 {
    // SAFETY: no arguments; never fails.
    unsafe { sys::t4a_version() }
}

/// The installed driver's CUDA version (e.g. 12080).
pub fn driver_version() -> Result<i32> {
    let mut v = 0;
    check(unsafe { sys::t4a_driver_version(&mut v) })?;
    Ok(v)
}

/// The number of CUDA devices.
pub fn device_count() -> Result<i32> {
    let mut n = 0;
    check(unsafe { sys::t4a_device_count(&mut n) })?;
    Ok(n)
}

/// NVRTC's version (major, minor).
pub fn nvrtc_version() -> Result<(i32, i32)> {
    let (mut a, mut b) = (0, 0);
    check(unsafe { sys::t4a_nvrtc_version(&mut a, &mut b) })?;
    Ok((a, b))
}

/// Facts about a device (t4a_device_info_get()).
pub fn device_info(ordinal: i32) -> Result<sys::t4a_device_info> {
    let mut info = sys::t4a_device_info::init();
    check(unsafe { sys::t4a_device_info_get(ordinal, &mut info) })?;
    Ok(info)
}

// ---------------------------------------------------------------- Runtime

/// Options of [`Runtime::with_options`]: the C struct (zero = default).
/// `stream_priority`: the priority of the runtime's stream, 0 (the
/// default) or lower numbers, which run first; outside the device's range
/// (on Hopper 0 down to -5) the runtime is not created (`InvalidArgument`
/// naming the range). [`Runtime::stream_priority`] reports it.
pub type RuntimeOptions = sys::t4a_runtime_options;

/// A runtime: one device's context and stream with its memory pool.
/// Destroyed in `Drop` (waits for its stream to drain).
pub struct Runtime {
    h: sys::t4a_runtime,
}

// SAFETY: every t4acuda function may be called from any thread; a runtime
// admits concurrent operations itself.
unsafe impl Send for Runtime {}
unsafe impl Sync for Runtime {}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Runtime({})", self.h.id)
    }
}

impl Runtime {
    /// A runtime on device 0 with default options.
    pub fn new() -> Result<Runtime> {
        Self::with_options(&RuntimeOptions::init())
    }

    /// A runtime on device `ordinal`.
    pub fn on_device(ordinal: i32) -> Result<Runtime> {
        let mut o = RuntimeOptions::init();
        o.device_ordinal = ordinal;
        Self::with_options(&o)
    }

    /// A runtime with the given options (`struct_size` as given).
    pub fn with_options(options: &RuntimeOptions) -> Result<Runtime> {
        let mut h = sys::t4a_runtime::NULL;
        check(unsafe { sys::t4a_runtime_create(options, &mut h) })?;
        Ok(Runtime { h })
    }

    /// The C handle (borrowed; the runtime still owns it).
    pub fn raw(&self) -> sys::t4a_runtime {
        self.h
    }

    /// Destroys the runtime and reports the status (`Drop` cannot).
    pub fn destroy(self) -> Result<()> {
        let h = self.h;
        std::mem::forget(self);
        check(unsafe { sys::t4a_runtime_destroy(h) })
    }

    /// Waits until every operation enqueued so far has completed.
    pub fn synchronize(&self) -> Result<()> {
        check(unsafe { sys::t4a_runtime_synchronize(self.h) })
    }

    /// Returns cached pool memory to the driver.
    pub fn trim(&self) -> Result<()> {
        check(unsafe { sys::t4a_runtime_trim(self.h) })
    }

    /// The runtime's device, context and stream (and pool threshold and
    /// stream priority, as the driver has them).
    pub fn info(&self) -> Result<sys::t4a_runtime_info> {
        let mut i = sys::t4a_runtime_info::init();
        check(unsafe { sys::t4a_runtime_info_get(self.h, &mut i) })?;
        Ok(i)
    }

    /// The priority of the runtime's stream as the driver reports it
    /// (`RuntimeOptions::stream_priority`; 0 by default).
    pub fn stream_priority(&self) -> Result<i32> {
        Ok(self.info()?.stream_priority)
    }

    /// The runtime's counters.
    pub fn stats(&self) -> Result<sys::t4a_runtime_stats> {
        let mut s = sys::t4a_runtime_stats::init();
        check(unsafe { sys::t4a_runtime_stats_get(self.h, &mut s) })?;
        Ok(s)
    }

    /// An uninitialized device buffer of `bytes` bytes.
    pub fn alloc(&self, bytes: u64) -> Result<Buffer> {
        self.alloc_flags(bytes, 0)
    }

    /// A zero-filled device buffer of `bytes` bytes.
    pub fn alloc_zeroed(&self, bytes: u64) -> Result<Buffer> {
        self.alloc_flags(bytes, sys::T4A_BUFFER_ZERO)
    }

    fn alloc_flags(&self, bytes: u64, flags: u32) -> Result<Buffer> {
        let mut h = sys::t4a_buffer::NULL;
        check(unsafe { sys::t4a_buffer_alloc(self.h, bytes, flags, &mut h) })?;
        Ok(Buffer { h, bytes })
    }

    /// A device buffer holding a copy of `data`.
    pub fn buffer_from<T: Pod>(&self, data: &[T]) -> Result<Buffer> {
        let b = self.alloc(bytes_of(data))?;
        self.upload(&b, 0, data)?;
        Ok(b)
    }

    /// Copies `data` into `dst` at byte `offset` (ordered on the stream;
    /// `data` may be reused when this returns).
    pub fn upload<T: Pod>(&self, dst: &Buffer, offset: u64, data: &[T]) -> Result<()> {
        check(unsafe {
            sys::t4a_buffer_upload(self.h, dst.h, offset, data.as_ptr().cast(), bytes_of(data))
        })
    }

    /// Copies `out.len()` elements of `src` from byte `offset` into `out`,
    /// waiting for them.
    pub fn download<T: Pod>(&self, src: &Buffer, offset: u64, out: &mut [T]) -> Result<()> {
        check(unsafe {
            sys::t4a_buffer_download_sync(
                self.h,
                src.h,
                offset,
                out.as_mut_ptr().cast(),
                bytes_of(out),
            )
        })
    }

    /// Downloads the whole buffer as `T`s (its size must be a multiple of
    /// `size_of::<T>()`).
    pub fn to_vec<T: Pod>(&self, src: &Buffer) -> Result<Vec<T>> {
        let n = elements_of::<T>(src.bytes, "to_vec")?;
        let mut v = vec_for::<T>(n)?;
        // SAFETY: T is Pod (any bytes valid) and the call writes all n
        // elements before set_len makes them visible; on failure the
        // vector is dropped with length 0.
        check(unsafe {
            sys::t4a_buffer_download_sync(self.h, src.h, 0, v.as_mut_ptr().cast(), src.bytes)
        })?;
        unsafe { v.set_len(n) };
        Ok(v)
    }

    /// Starts an asynchronous download of `count` `T`s of `src` from byte
    /// `offset` (a snapshot ordered on the stream); [`Download::wait`]
    /// delivers it.
    pub fn download_async<T: Pod>(
        &self,
        src: &Buffer,
        offset: u64,
        count: usize,
    ) -> Result<Download<T>> {
        let bytes = (count as u64)
            .checked_mul(std::mem::size_of::<T>() as u64)
            .ok_or_else(|| Error::invalid(format!("download_async: {count} elements overflow")))?;
        let mut h = sys::t4a_download::NULL;
        check(unsafe { sys::t4a_buffer_download(self.h, src.h, offset, bytes, &mut h) })?;
        Ok(Download { h, count, _t: PhantomData })
    }

    /// Sets `bytes` bytes of `buffer` from `offset` to `value`.
    pub fn fill(&self, buffer: &Buffer, offset: u64, bytes: u64, value: u8) -> Result<()> {
        check(unsafe { sys::t4a_buffer_fill(self.h, buffer.h, offset, bytes, value) })
    }

    /// Copies `bytes` bytes between device buffers.
    pub fn copy(
        &self,
        dst: &Buffer,
        dst_offset: u64,
        src: &Buffer,
        src_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        check(unsafe { sys::t4a_buffer_copy(self.h, dst.h, dst_offset, src.h, src_offset, bytes) })
    }

    /// Pinned host memory of `bytes` bytes.
    pub fn host_alloc(&self, bytes: u64) -> Result<HostBuffer> {
        let mut h = sys::t4a_host_buffer::NULL;
        check(unsafe { sys::t4a_host_buffer_alloc(self.h, bytes, &mut h) })?;
        let (mut p, mut n) = (std::ptr::null_mut(), 0u64);
        // Owns the handle from here on: an error below releases it. (Not
        // `HostBuffer { .., ..hb }`: its fields are Copy, so that would
        // copy them and still drop `hb`, releasing the handle returned.)
        let mut hb = HostBuffer { h, ptr: std::ptr::null_mut(), bytes: 0 };
        check(unsafe { sys::t4a_host_buffer_pointer(h, &mut p, &mut n) })?;
        hb.ptr = p.cast();
        hb.bytes = n as usize;
        Ok(hb)
    }

    /// Enqueues a DMA from a host buffer (asynchronous: do not change the
    /// host bytes until the runtime has synchronized).
    pub fn upload_host(
        &self,
        dst: &Buffer,
        dst_offset: u64,
        src: &HostBuffer,
        src_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        check(unsafe {
            sys::t4a_buffer_upload_host(self.h, dst.h, dst_offset, src.h, src_offset, bytes)
        })
    }

    /// Enqueues a DMA into a host buffer (asynchronous: read it after the
    /// runtime has synchronized).
    pub fn download_host(
        &self,
        src: &Buffer,
        src_offset: u64,
        dst: &HostBuffer,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        check(unsafe {
            sys::t4a_buffer_download_host(self.h, src.h, src_offset, dst.h, dst_offset, bytes)
        })
    }

    /// Loads a compiled artifact (through the runtime's module cache).
    pub fn load(&self, artifact: &Artifact) -> Result<Module> {
        let mut h = sys::t4a_module::NULL;
        check(unsafe { sys::t4a_module_load(self.h, artifact.h, &mut h) })?;
        Ok(Module { h })
    }

    /// Loads a CUBIN, PTX or fatbin image.
    pub fn load_data(&self, image: &[u8]) -> Result<Module> {
        let mut h = sys::t4a_module::NULL;
        check(unsafe {
            sys::t4a_module_load_data(self.h, image.as_ptr().cast(), image.len(), &mut h)
        })?;
        Ok(Module { h })
    }

    /// Launches `kernel` with `grid` x `block` threads and the arguments
    /// in parameter order. Each scalar's size is compared with the
    /// kernel's parameter by the C layer (INVALID_ARGUMENT when they
    /// differ); nothing is enqueued on a rejection.
    pub fn launch(
        &self,
        kernel: &Kernel,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        self.launch_with(kernel, &LaunchConfig::new(grid, block), args)
    }

    /// As [`Runtime::launch`], with the rest of a [`LaunchConfig`]: dynamic
    /// shared memory and (experimental) launch attributes. A config with a
    /// cluster or an attribute flag goes through `t4a_launch_ex`, which
    /// checks them with the rest before anything is enqueued (a cluster
    /// that does not divide the grid is `InvalidArgument` naming the grid
    /// axis; a device below compute capability 9.0 is `Unsupported`);
    /// without them through `t4a_launch`.
    pub fn launch_with(
        &self,
        kernel: &Kernel,
        config: &LaunchConfig,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        const STACK: usize = 32;
        let mut stack = [sys::t4a_arg::init(); STACK];
        let mut heap = Vec::new();
        let packed: &mut [sys::t4a_arg] = if args.len() <= STACK {
            &mut stack[..args.len()]
        } else {
            heap.resize(args.len(), sys::t4a_arg::init());
            &mut heap
        };
        for (slot, a) in packed.iter_mut().zip(args) {
            *slot = a.pack();
        }
        let mut d = sys::t4a_launch_desc::init();
        d.kernel = kernel.h;
        d.grid = config.grid.0;
        d.block = config.block.0;
        d.dynamic_shared_bytes = config.shared_bytes;
        d.arg_count = u32::try_from(packed.len())
            .map_err(|_| Error::invalid(format!("launch: {} arguments", packed.len())))?;
        d.args = packed.as_ptr();
        // The scalars' `value` pointers point into `args`, which outlive
        // the call; t4a_launch reads them during the call only.
        match config.attrs() {
            Some(a) => check(unsafe { sys::t4a_launch_ex(self.h, &d, &a) }),
            None => check(unsafe { sys::t4a_launch(self.h, &d) }),
        }
    }

    /// Records a completion of everything enqueued so far.
    pub fn record(&self) -> Result<Completion> {
        let mut h = sys::t4a_completion::NULL;
        check(unsafe { sys::t4a_runtime_record(self.h, &mut h) })?;
        Ok(Completion { h })
    }

    /// Makes later work of this runtime wait for `completion` (no host
    /// wait).
    pub fn wait_for(&self, completion: &Completion) -> Result<()> {
        check(unsafe { sys::t4a_runtime_wait(self.h, completion.h) })
    }

    /// Opens a raw scope: the runtime's context and stream for direct
    /// driver or vendor-library calls, on this thread, until the guard is
    /// dropped (or [`RawScope::end`]).
    pub fn raw_scope(&self) -> Result<RawScope<'_>> {
        let mut h = sys::t4a_raw_scope::NULL;
        let mut info = sys::t4a_raw_info::init();
        check(unsafe { sys::t4a_raw_begin(self.h, &mut h, &mut info) })?;
        Ok(RawScope { h, info, _rt: PhantomData, _not_send: PhantomData })
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // The status is dropped: Drop cannot report it; Runtime::destroy
        // returns it. A failing destroy leaves the runtime's resources to
        // the process's leak accounting (t4a_process_stats_get).
        unsafe { sys::t4a_runtime_destroy(self.h) };
    }
}

fn elements_of<T>(bytes: u64, what: &str) -> Result<usize> {
    let size = std::mem::size_of::<T>() as u64;
    if size == 0 || bytes % size != 0 {
        return Err(Error::invalid(format!(
            "{what}: {bytes} bytes is not a whole number of {size}-byte elements"
        )));
    }
    usize::try_from(bytes / size).map_err(|_| Error::invalid(format!("{what}: {bytes} bytes")))
}

fn vec_for<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::host_oom(n * std::mem::size_of::<T>()))?;
    Ok(v)
}

// ---------------------------------------------------------------- handles

macro_rules! handle_type {
    ($(#[$m:meta])* $name:ident, $raw:ty, $release:ident, $retain:ident) => {
        $(#[$m])*
        pub struct $name {
            h: $raw,
        }
        // SAFETY: the C API lets this handle be used, retained and released
        // from any thread.
        unsafe impl Send for $name {}
        unsafe impl Sync for $name {}
        impl $name {
            /// The C handle (borrowed).
            pub fn raw(&self) -> $raw {
                self.h
            }
        }
        impl Clone for $name {
            /// Another reference to the same object (retain).
            fn clone(&self) -> Self {
                let st = unsafe { sys::$retain(self.h) };
                // A live handle of ours can only fail to retain when its
                // reference count would overflow: a bug worth a panic.
                assert_eq!(st, sys::T4A_SUCCESS, "{}: retain failed: {}", stringify!($name), Error::last(st));
                Self { h: self.h }
            }
        }
        impl Drop for $name {
            fn drop(&mut self) {
                // The status is dropped: releasing a live handle of ours
                // cannot fail, and Drop could not report it.
                unsafe { sys::$release(self.h) };
            }
        }
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.h.id)
            }
        }
    };
}

/// Device memory of one runtime.
pub struct Buffer {
    h: sys::t4a_buffer,
    bytes: u64,
}
unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}
impl Drop for Buffer {
    fn drop(&mut self) {
        // The status is dropped: releasing a live handle of ours cannot
        // fail, and Drop could not report it.
        unsafe { sys::t4a_buffer_release(self.h) };
    }
}
impl Clone for Buffer {
    fn clone(&self) -> Self {
        let st = unsafe { sys::t4a_buffer_retain(self.h) };
        assert_eq!(st, sys::T4A_SUCCESS, "Buffer: retain failed: {}", Error::last(st));
        Buffer { h: self.h, bytes: self.bytes }
    }
}
impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Buffer({}, {} bytes)", self.h.id, self.bytes)
    }
}

impl Buffer {
    /// The C handle (borrowed).
    pub fn raw(&self) -> sys::t4a_buffer {
        self.h
    }
    /// Its size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// A byte range of the buffer as a kernel argument (the C layer checks
    /// that the offset is inside the buffer).
    pub fn slice(&self, range: Range<u64>) -> DeviceSlice<'_> {
        DeviceSlice { buffer: self, range }
    }
    /// Its device, size and address.
    pub fn info(&self) -> Result<sys::t4a_buffer_info> {
        let mut i = sys::t4a_buffer_info::init();
        check(unsafe { sys::t4a_buffer_info_get(self.h, &mut i) })?;
        Ok(i)
    }
    /// Whether this is a view of a module global ([`Module::global`]).
    pub fn is_view(&self) -> Result<bool> {
        Ok(self.info()?.flags & sys::T4A_BUFFER_INFO_VIEW != 0)
    }
}

/// A byte range of a [`Buffer`], passed to kernels as the address of its
/// first byte.
#[derive(Clone, Debug)]
pub struct DeviceSlice<'a> {
    buffer: &'a Buffer,
    range: Range<u64>,
}

impl DeviceSlice<'_> {
    /// The byte range.
    pub fn range(&self) -> Range<u64> {
        self.range.clone()
    }
}

/// Pinned host memory (t4a_host_buffer_alloc()).
pub struct HostBuffer {
    h: sys::t4a_host_buffer,
    ptr: *mut u8,
    bytes: usize,
}
// SAFETY: the handle may be used from any thread; the memory is plain
// host memory whose access the unsafe slice accessors leave to the caller.
unsafe impl Send for HostBuffer {}
unsafe impl Sync for HostBuffer {}
impl Drop for HostBuffer {
    fn drop(&mut self) {
        // The status is dropped: releasing a live handle of ours cannot
        // fail; the memory is freed once transfers that use it completed.
        unsafe { sys::t4a_host_buffer_release(self.h) };
    }
}
impl HostBuffer {
    /// The C handle (borrowed).
    pub fn raw(&self) -> sys::t4a_host_buffer {
        self.h
    }
    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }
    /// True when it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
    /// The host address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    /// The bytes.
    ///
    /// # Safety
    /// No DMA into this host buffer may be in flight (synchronize the
    /// runtime after [`Runtime::download_host`]).
    pub unsafe fn as_slice(&self) -> &[u8] {
        if self.bytes == 0 {
            return &[];
        }
        // SAFETY: the library keeps `bytes` bytes at `ptr` while we hold
        // the reference; the caller promises no DMA writes them meanwhile.
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) }
    }
    /// The bytes, writable.
    ///
    /// # Safety
    /// No DMA from or into this host buffer may be in flight.
    pub unsafe fn as_mut_slice(&mut self) -> &mut [u8] {
        if self.bytes == 0 {
            return &mut [];
        }
        // SAFETY: as above; `&mut self` excludes other borrows.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.bytes) }
    }
}

handle_type!(
    /// A compiled image (t4a_compile()): CUBIN or PTX with its log.
    Artifact, sys::t4a_artifact, t4a_artifact_release, t4a_artifact_retain
);
handle_type!(
    /// A loaded module of one runtime.
    Module, sys::t4a_module, t4a_module_release, t4a_module_retain
);
handle_type!(
    /// A kernel of a module.
    Kernel, sys::t4a_kernel, t4a_kernel_release, t4a_kernel_retain
);
handle_type!(
    /// A point on a runtime's stream (t4a_runtime_record()).
    Completion, sys::t4a_completion, t4a_completion_release, t4a_completion_retain
);

/// Reads a query-then-copy string.
fn read_string(f: impl Fn(*mut c_char, usize, *mut usize) -> sys::t4a_status) -> Result<String> {
    let mut needed = 0usize;
    check(f(std::ptr::null_mut(), 0, &mut needed))?;
    let mut buf = vec![0u8; needed.max(1)];
    check(f(buf.as_mut_ptr().cast(), buf.len(), &mut needed))?;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    buf.truncate(end);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

impl Artifact {
    /// Output kind, target and sizes.
    pub fn info(&self) -> Result<sys::t4a_artifact_info> {
        let mut i = sys::t4a_artifact_info::init();
        check(unsafe { sys::t4a_artifact_info_get(self.h, &mut i) })?;
        Ok(i)
    }
    /// The CUBIN or PTX bytes.
    pub fn image(&self) -> Result<Vec<u8>> {
        let mut needed = 0usize;
        check(unsafe { sys::t4a_artifact_image(self.h, std::ptr::null_mut(), 0, &mut needed) })?;
        let mut v = vec![0u8; needed];
        check(unsafe {
            sys::t4a_artifact_image(self.h, v.as_mut_ptr().cast(), v.len(), &mut needed)
        })?;
        v.truncate(needed);
        Ok(v)
    }
    /// NVRTC's log.
    pub fn log(&self) -> Result<String> {
        read_string(|b, c, n| unsafe { sys::t4a_artifact_log(self.h, b, c, n) })
    }
    /// The lowered (mangled) name of name expression `index`.
    pub fn lowered_name(&self, index: u32) -> Result<String> {
        read_string(|b, c, n| unsafe { sys::t4a_artifact_lowered_name(self.h, index, b, c, n) })
    }
    /// The lowered name of the name expression `expression`, matched
    /// exactly, then with whitespace and a leading `&` ignored.
    pub fn lowered_name_of(&self, expression: &str) -> Result<String> {
        let c = CString::new(expression).map_err(|_| {
            Error::invalid(format!("expression {expression:?} contains a NUL byte"))
        })?;
        read_string(|b, n, needed| unsafe {
            sys::t4a_artifact_lowered_name_of(self.h, c.as_ptr(), b, n, needed)
        })
    }
    /// The identity key (hex SHA-256).
    pub fn key(&self) -> Result<String> {
        read_string(|b, c, n| unsafe { sys::t4a_artifact_key(self.h, b, c, n) })
    }
}

impl Module {
    /// The kernel named `name`: a name expression of the module's artifact
    /// (`"reduce<128, true>"`, whitespace and a leading `&` ignored), else
    /// its lowered or `extern "C"` name.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let c = CString::new(name)
            .map_err(|_| Error::invalid(format!("kernel name {name:?} contains a NUL byte")))?;
        let mut h = sys::t4a_kernel::NULL;
        check(unsafe { sys::t4a_kernel_get(self.h, c.as_ptr(), &mut h) })?;
        Ok(Kernel { h })
    }
    /// The `__device__` or `__constant__` variable `name` (a name
    /// expression such as `"&counter"`, or its name) as a buffer view: it
    /// keeps this module loaded and never frees its memory; upload,
    /// download, fill, copy and launch with it like any [`Buffer`].
    pub fn global(&self, name: &str) -> Result<Buffer> {
        let c = CString::new(name)
            .map_err(|_| Error::invalid(format!("global name {name:?} contains a NUL byte")))?;
        let mut h = sys::t4a_buffer::NULL;
        check(unsafe { sys::t4a_module_global(self.h, c.as_ptr(), &mut h) })?;
        let mut b = Buffer { h, bytes: 0 };
        b.bytes = b.info()?.bytes;
        Ok(b)
    }
}

impl Kernel {
    /// Registers, limits and parameter layout.
    pub fn info(&self) -> Result<sys::t4a_kernel_info> {
        let mut i = sys::t4a_kernel_info::init();
        check(unsafe { sys::t4a_kernel_info_get(self.h, &mut i) })?;
        Ok(i)
    }
    /// (offset, size) of parameter `index`.
    pub fn param(&self, index: u32) -> Result<(u64, u64)> {
        let (mut o, mut s) = (0, 0);
        check(unsafe { sys::t4a_kernel_param(self.h, index, &mut o, &mut s) })?;
        Ok((o, s))
    }
    /// A block size with the best occupancy (block_size, min_grid_size).
    pub fn suggest_block_size(&self, dynamic_shared: u64) -> Result<(i32, i32)> {
        let (mut b, mut g) = (0, 0);
        check(unsafe {
            sys::t4a_kernel_suggest_block_size(self.h, dynamic_shared, &mut b, &mut g)
        })?;
        Ok((b, g))
    }
    /// Experimental: the cluster occupancy of launching this kernel with
    /// `config` (`t4a_kernel_cluster_occupancy`): `max_active_clusters`,
    /// the clusters of its cluster shape (the config's, else the kernel's
    /// compiled `__cluster_dims__`, else single blocks) that fit on the
    /// device at once, and `max_cluster_size`, the largest cluster its
    /// block size and shared memory allow (above 8 only with
    /// [`LaunchConfig::non_portable_cluster`]). The shape and attributes
    /// are checked as a launch checks them, so a config this accepts
    /// launches. Compute capability 9.0 or newer, else `Unsupported`.
    pub fn cluster_occupancy(&self, config: &LaunchConfig) -> Result<ClusterOccupancy> {
        let mut d = sys::t4a_launch_desc::init();
        d.kernel = self.h;
        d.grid = config.grid.0;
        d.block = config.block.0;
        d.dynamic_shared_bytes = config.shared_bytes;
        let attrs = config.attrs();
        let a = attrs.as_ref().map_or(std::ptr::null(), |a| a as *const sys::t4a_launch_attrs);
        let mut out = ClusterOccupancy::init();
        check(unsafe { sys::t4a_kernel_cluster_occupancy(&d, a, &mut out) })?;
        Ok(out)
    }
}

impl Completion {
    /// True once the recorded work has completed (no wait).
    pub fn is_done(&self) -> Result<bool> {
        match unsafe { sys::t4a_completion_poll(self.h) } {
            sys::T4A_SUCCESS => Ok(true),
            sys::T4A_NOT_READY => Ok(false),
            st => Err(Error::last(st)),
        }
    }
    /// Waits on the host for the recorded work.
    pub fn wait(&self) -> Result<()> {
        check(unsafe { sys::t4a_completion_wait(self.h) })
    }
}

// --------------------------------------------------------------- Download

/// A pending asynchronous download of `T`s ([`Runtime::download_async`]).
/// Dropping it without waiting releases it (its snapshot is freed once the
/// copy completes).
pub struct Download<T: Pod> {
    h: sys::t4a_download,
    count: usize,
    _t: PhantomData<fn() -> T>,
}
// SAFETY: downloads may be waited on and released from any thread.
unsafe impl<T: Pod> Send for Download<T> {}
unsafe impl<T: Pod> Sync for Download<T> {}

impl<T: Pod> Download<T> {
    /// Elements it delivers.
    pub fn len(&self) -> usize {
        self.count
    }
    /// True for an empty download.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Waits for the copy and returns the data. Consumes the download: a
    /// download is delivered once.
    pub fn wait(self) -> Result<Vec<T>> {
        let mut v = vec_for::<T>(self.count)?;
        // SAFETY: T is Pod; the call writes count elements on success,
        // only then made visible by set_len.
        check(unsafe { sys::t4a_download_wait(self.h, v.as_mut_ptr().cast()) })?;
        unsafe { v.set_len(self.count) };
        Ok(v)
    }
    /// Waits and delivers into `out`, which must hold exactly `len()`
    /// elements (checked before anything is delivered).
    pub fn wait_into(self, out: &mut [T]) -> Result<()> {
        if out.len() != self.count {
            return Err(Error::invalid(format!(
                "Download::wait_into: the download has {} elements, the slice {}",
                self.count,
                out.len()
            )));
        }
        check(unsafe { sys::t4a_download_wait(self.h, out.as_mut_ptr().cast()) })
    }
}

impl<T: Pod> Drop for Download<T> {
    fn drop(&mut self) {
        // The status is dropped: releasing a live handle of ours cannot
        // fail, and Drop could not report it.
        unsafe { sys::t4a_download_release(self.h) };
    }
}

// ----------------------------------------------------------------- launch

/// Grid or block extents (x, y, z); 0 in y or z means 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3(pub [u32; 3]);
impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3([x, 1, 1])
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3([x, y, 1])
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3([x, y, z])
    }
}

/// Grid, block and dynamic shared memory of a launch, and its launch
/// attributes (experimental: thread block clusters and programmatic
/// dependent launch, compute capability 9.0 or newer). A config with a
/// cluster or an attribute flag is launched by `t4a_launch_ex`, else by
/// `t4a_launch`.
#[derive(Clone, Copy, Debug)]
pub struct LaunchConfig {
    pub grid: Dim3,
    pub block: Dim3,
    pub shared_bytes: u32,
    /// Experimental: blocks per cluster in x, y, z; each must divide the
    /// grid's extent (0 in y or z means 1). None: no cluster attribute (a
    /// kernel compiled with `__cluster_dims__` still runs in its
    /// clusters).
    pub cluster: Option<Dim3>,
    /// Experimental: programmatic dependent launch
    /// (`T4A_LAUNCH_ATTR_PROGRAMMATIC`): the kernel may start before the
    /// previous kernel on the stream has finished and must call
    /// `cudaGridDependencySynchronize()` before reading what it wrote.
    pub programmatic: bool,
    /// Experimental: allow a cluster above the portable 8 blocks
    /// (`T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE`), up to what the device
    /// reports for the shape (16 on an H100 or H200). Needs a cluster.
    pub non_portable_cluster: bool,
}
impl LaunchConfig {
    /// No dynamic shared memory, no launch attributes.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_bytes: 0,
            cluster: None,
            programmatic: false,
            non_portable_cluster: false,
        }
    }
    /// With `bytes` of dynamic shared memory per block.
    pub fn shared(mut self, bytes: u32) -> Self {
        self.shared_bytes = bytes;
        self
    }
    /// Experimental: launched in thread block clusters of `dims` blocks
    /// (`LaunchConfig::new(8, 128).cluster(2)`: clusters of 2 along x).
    pub fn cluster(mut self, dims: impl Into<Dim3>) -> Self {
        self.cluster = Some(dims.into());
        self
    }
    /// Experimental: a programmatic dependent launch, or not.
    pub fn programmatic(mut self, on: bool) -> Self {
        self.programmatic = on;
        self
    }
    /// Experimental: allow a non-portable cluster size (above 8 blocks),
    /// or not.
    pub fn non_portable_cluster(mut self, on: bool) -> Self {
        self.non_portable_cluster = on;
        self
    }
    /// The C launch attributes of this config, or None when it has none
    /// (no cluster, no flag): what [`Runtime::launch_with`] passes to
    /// `t4a_launch_ex`.
    pub fn attrs(&self) -> Option<sys::t4a_launch_attrs> {
        let mut flags = 0;
        if self.programmatic {
            flags |= sys::T4A_LAUNCH_ATTR_PROGRAMMATIC;
        }
        if self.non_portable_cluster {
            flags |= sys::T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE;
        }
        if flags == 0 && self.cluster.is_none() {
            return None;
        }
        let mut a = sys::t4a_launch_attrs::init();
        a.flags = flags;
        if let Some(c) = self.cluster {
            a.cluster = c.0;
        }
        Some(a)
    }
}

/// Experimental: what [`Kernel::cluster_occupancy`] reports (the C
/// struct): `max_active_clusters` and `max_cluster_size`.
pub type ClusterOccupancy = sys::t4a_cluster_occupancy;

/// A kernel argument: a buffer (its device address), a slice of one, or
/// a scalar passed by value with its size. The C layer checks each
/// scalar's size against the kernel's parameter.
///
/// # Safety
/// t4a_launch reads `size` bytes at a scalar's `value` on the host, so an
/// implementation must return, for `T4A_ARG_SCALAR`, a `value` valid for
/// reads of `size` bytes for as long as `&self` is borrowed (it points
/// into `self`); any other kind must carry a null `value`. (A safe trait
/// would let safe code make the library read any address.)
///
/// ```compile_fail
/// struct Forged;
/// impl t4acuda::KernelArg for Forged {
///     fn pack(&self) -> t4acuda_sys::t4a_arg {
///         let mut a = t4acuda_sys::t4a_arg::init();
///         a.kind = t4acuda_sys::T4A_ARG_SCALAR;
///         a.value = 16 as *const std::ffi::c_void; // read by t4a_launch
///         a.size = 8;
///         a
///     }
/// }
/// ```
pub unsafe trait KernelArg {
    /// The C argument. A scalar's `value` points at `self`, which the
    /// caller keeps alive during the launch.
    fn pack(&self) -> sys::t4a_arg;
}

// SAFETY: no host pointer (kind BUFFER).
unsafe impl KernelArg for Buffer {
    fn pack(&self) -> sys::t4a_arg {
        let mut a = sys::t4a_arg::init();
        a.kind = sys::T4A_ARG_BUFFER;
        a.buffer = self.h;
        a
    }
}
// SAFETY: no host pointer (kind BUFFER).
unsafe impl KernelArg for DeviceSlice<'_> {
    fn pack(&self) -> sys::t4a_arg {
        let mut a = self.buffer.pack();
        a.offset = self.range.start;
        a
    }
}
// SAFETY: forwards to T, whose pointers point into `**self`.
unsafe impl<T: KernelArg + ?Sized> KernelArg for &T {
    fn pack(&self) -> sys::t4a_arg {
        (**self).pack()
    }
}

macro_rules! scalar_arg {
    ($($t:ty),*) => {$(
        // SAFETY: `value` points at `*self`, size_of::<$t>() bytes.
        unsafe impl KernelArg for $t {
            fn pack(&self) -> sys::t4a_arg {
                let mut a = sys::t4a_arg::init();
                a.kind = sys::T4A_ARG_SCALAR;
                a.value = (self as *const $t).cast::<c_void>();
                a.size = std::mem::size_of::<$t>() as u64;
                a
            }
        }
    )*};
}
scalar_arg!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

/// A raw device address (`T4A_ARG_DEVICE_POINTER`), passed as is, e.g.
/// one from [`RawScope::device_pointer`] or a foreign allocation.
#[derive(Clone, Copy, Debug)]
pub struct DevicePointer(pub u64);
// SAFETY: no host pointer (kind DEVICE_POINTER).
unsafe impl KernelArg for DevicePointer {
    fn pack(&self) -> sys::t4a_arg {
        let mut a = sys::t4a_arg::init();
        a.kind = sys::T4A_ARG_DEVICE_POINTER;
        a.device_pointer = self.0;
        a
    }
}

// ---------------------------------------------------------------- compile

/// Starts a compile request for `source` (CUDA C++): add options and name
/// expressions, choose the target, then [`Compile::build`].
pub fn compile(source: &str) -> Compile<'_> {
    Compile {
        source: source.to_string(),
        program_name: None,
        options: Vec::new(),
        name_expressions: Vec::new(),
        headers: Vec::new(),
        output: sys::T4A_COMPILE_CUBIN,
        cc: (0, 0),
        flags: 0,
        runtime: None,
        cache_dir: None,
        toolkit_include: None,
    }
}

/// A compile request being built ([`compile`]).
#[derive(Clone, Debug)]
pub struct Compile<'rt> {
    source: String,
    program_name: Option<String>,
    options: Vec<String>,
    name_expressions: Vec<String>,
    headers: Vec<(String, String)>,
    output: u32,
    cc: (i32, i32),
    flags: u32,
    runtime: Option<&'rt Runtime>,
    cache_dir: Option<String>,
    toolkit_include: Option<String>,
}

impl<'rt> Compile<'rt> {
    /// An NVRTC option ("-std=c++17", "-DN=4").
    pub fn option(mut self, o: &str) -> Self {
        self.options.push(o.to_string());
        self
    }
    /// A name expression ("&scale<float>") whose lowered name is wanted
    /// ([`Artifact::lowered_name`], in the order added).
    pub fn name_expression(mut self, e: &str) -> Self {
        self.name_expressions.push(e.to_string());
        self
    }
    /// A header the source includes as `#include "name"`.
    pub fn header(mut self, name: &str, source: &str) -> Self {
        self.headers.push((name.to_string(), source.to_string()));
        self
    }
    /// The program name in diagnostics.
    pub fn program_name(mut self, n: &str) -> Self {
        self.program_name = Some(n.to_string());
        self
    }
    /// PTX instead of CUBIN.
    pub fn ptx(mut self) -> Self {
        self.output = sys::T4A_COMPILE_PTX;
        self
    }
    /// Target this compute capability (without a runtime).
    pub fn cc(mut self, major: i32, minor: i32) -> Self {
        self.cc = (major, minor);
        self
    }
    /// Target this runtime's device.
    pub fn for_runtime(mut self, rt: &'rt Runtime) -> Self {
        self.runtime = Some(rt);
        self
    }
    /// `T4A_COMPILE_NO_MEMORY_CACHE` / `T4A_COMPILE_NO_DISK_CACHE` bits.
    pub fn flags(mut self, flags: u32) -> Self {
        self.flags = flags;
        self
    }
    /// The disk cache directory ("" turns the disk cache off).
    pub fn cache_dir(mut self, dir: &str) -> Self {
        self.cache_dir = Some(dir.to_string());
        self
    }
    /// The CUDA toolkit include directory added after the options (by
    /// default found automatically; `T4A_COMPILE_NO_TOOLKIT_HEADERS` in
    /// [`Compile::flags`] adds none).
    pub fn toolkit_include(mut self, dir: &str) -> Self {
        self.toolkit_include = Some(dir.to_string());
        self
    }

    /// Compiles (or finds the result in a cache). A compile error is
    /// `Status::Compile` with the log's first lines in the message (the
    /// whole log: [`last_compile_log`]).
    pub fn build(&self) -> Result<Artifact> {
        fn c(s: &str, what: &str) -> Result<CString> {
            CString::new(s)
                .map_err(|_| Error::invalid(format!("compile: {what} {s:?} contains a NUL byte")))
        }
        let source = c(&self.source, "source")?;
        let name = self.program_name.as_deref().map(|n| c(n, "program name")).transpose()?;
        let cache_dir = self.cache_dir.as_deref().map(|n| c(n, "cache dir")).transpose()?;
        let toolkit =
            self.toolkit_include.as_deref().map(|n| c(n, "toolkit include")).transpose()?;
        let options = self.options.iter().map(|o| c(o, "option")).collect::<Result<Vec<_>>>()?;
        let exprs = self
            .name_expressions
            .iter()
            .map(|o| c(o, "name expression"))
            .collect::<Result<Vec<_>>>()?;
        let hnames =
            self.headers.iter().map(|h| c(&h.0, "header name")).collect::<Result<Vec<_>>>()?;
        let hsrcs = self.headers.iter().map(|h| c(&h.1, "header")).collect::<Result<Vec<_>>>()?;
        let ptrs = |v: &[CString]| v.iter().map(|s| s.as_ptr()).collect::<Vec<*const c_char>>();
        let (op, ep, hn, hs) = (ptrs(&options), ptrs(&exprs), ptrs(&hnames), ptrs(&hsrcs));
        let count = |n: usize| {
            u32::try_from(n).map_err(|_| Error::invalid(format!("compile: {n} entries")))
        };
        let mut r = sys::t4a_compile_request::init();
        r.output = self.output;
        r.source = source.as_ptr();
        r.program_name = name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr());
        r.header_names = if hn.is_empty() { std::ptr::null() } else { hn.as_ptr() };
        r.header_sources = if hs.is_empty() { std::ptr::null() } else { hs.as_ptr() };
        r.header_count = count(hn.len())?;
        r.options = if op.is_empty() { std::ptr::null() } else { op.as_ptr() };
        r.option_count = count(op.len())?;
        r.name_expressions = if ep.is_empty() { std::ptr::null() } else { ep.as_ptr() };
        r.name_expression_count = count(ep.len())?;
        r.cc_major = self.cc.0;
        r.cc_minor = self.cc.1;
        r.flags = self.flags;
        r.runtime = self.runtime.map_or(sys::t4a_runtime::NULL, |rt| rt.h);
        r.cache_dir = cache_dir.as_ref().map_or(std::ptr::null(), |d| d.as_ptr());
        r.toolkit_include = toolkit.as_ref().map_or(std::ptr::null(), |d| d.as_ptr());
        let mut h = sys::t4a_artifact::NULL;
        check(unsafe { sys::t4a_compile(&r, &mut h) })?;
        Ok(Artifact { h })
    }
}

/// The full NVRTC log of this thread's last failing compile.
pub fn last_compile_log() -> Result<String> {
    read_string(|b, c, n| unsafe { sys::t4a_last_compile_log(b, c, n) })
}

/// What the loaded CUDA driver lacks, one line per missing optional entry
/// point: "<entry point> (CUDA <major.minor>): <what is unavailable>"
/// (`t4a_driver_lacks`); empty when it has everything.
pub fn driver_lacks() -> Result<Vec<String>> {
    let text = read_string(|b, c, n| unsafe { sys::t4a_driver_lacks(b, c, n) })?;
    Ok(text.lines().map(str::to_owned).collect())
}

/// The CUDA toolkit headers a compile gets without options, one
/// "key value" fact per line (`t4a_toolkit_headers`): `nvrtc`, `include`
/// (each directory), `version`, `from`, `passed-over`.
pub fn toolkit_headers() -> Result<String> {
    read_string(|b, c, n| unsafe { sys::t4a_toolkit_headers(b, c, n) })
}

// --------------------------------------------------------------- raw seam

/// An open raw scope ([`Runtime::raw_scope`]): the runtime's context is
/// current on this thread and its stream is yours to enqueue on until the
/// guard is dropped. `!Send` and `!Sync`: a scope belongs to the thread
/// that began it. Scopes end in reverse order of beginning: a guard
/// dropped before a scope begun after it ends when that scope ends.
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// let rt = t4acuda::Runtime::new().unwrap();
/// needs_send(rt.raw_scope().unwrap()); // a scope cannot leave its thread
/// ```
pub struct RawScope<'rt> {
    h: sys::t4a_raw_scope,
    info: sys::t4a_raw_info,
    _rt: PhantomData<&'rt Runtime>,
    _not_send: PhantomData<*const ()>,
}

impl RawScope<'_> {
    /// The runtime's `CUcontext`.
    pub fn context(&self) -> *mut c_void {
        self.info.context
    }
    /// The runtime's `CUstream`: enqueue raw work here.
    pub fn stream(&self) -> *mut c_void {
        self.info.stream
    }
    /// The runtime's device ordinal.
    pub fn device_ordinal(&self) -> i32 {
        self.info.device_ordinal
    }
    /// The device address of `buffer` for raw work in this scope (the
    /// buffer is kept alive until the scope's work is done).
    pub fn device_pointer(&self, buffer: &Buffer) -> Result<u64> {
        let mut p = 0;
        check(unsafe { sys::t4a_raw_buffer(self.h, buffer.h, &mut p) })?;
        Ok(p)
    }
    /// Ends the scope and reports the status (`Drop` cannot). Out of
    /// order (a scope begun later on this thread is still open) it is
    /// `InvalidArgument`, and the scope ends once the later ones have.
    pub fn end(self) -> Result<()> {
        let h = self.h;
        std::mem::forget(self);
        raw_end(h)
    }
}

thread_local! {
    /// Scopes of this thread whose end the C layer refused because a scope
    /// begun later was still open (guards dropped or ended out of LIFO
    /// order, which safe code can do). Each is ended as soon as the scopes
    /// begun after it have ended, instead of staying open for good.
    static DEFERRED_ENDS: std::cell::RefCell<Vec<sys::t4a_raw_scope>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// t4a_raw_end with the out-of-order rule above. The error is read before
/// any deferred scope is retried (a refused retry records its own).
fn raw_end(h: sys::t4a_raw_scope) -> Result<()> {
    let st = unsafe { sys::t4a_raw_end(h) };
    let result = check(st);
    if st == sys::T4A_ERROR_INVALID_ARGUMENT {
        // Refused with nothing changed: the guard is !Send, so the reason
        // is a later scope of this thread still open.
        let _ = DEFERRED_ENDS.try_with(|d| d.borrow_mut().push(h));
        return result;
    }
    // This scope is over (whatever the status): retry the deferred ones,
    // innermost first, until none makes progress. Their statuses are
    // dropped: the guards that owned them are gone.
    let _ = DEFERRED_ENDS.try_with(|d| loop {
        let pending = std::mem::take(&mut *d.borrow_mut());
        let before = pending.len();
        let mut still = Vec::new();
        for &s in pending.iter().rev() {
            if unsafe { sys::t4a_raw_end(s) } == sys::T4A_ERROR_INVALID_ARGUMENT {
                still.push(s);
            }
        }
        still.reverse();
        let after = still.len();
        d.borrow_mut().extend(still);
        if after == 0 || after == before {
            break;
        }
    });
    result
}

impl fmt::Debug for RawScope<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RawScope({}, stream {:p})", self.h.id, self.info.stream)
    }
}

impl Drop for RawScope<'_> {
    fn drop(&mut self) {
        // The status is dropped: Drop cannot report it (RawScope::end
        // does). The guard is !Send, so this runs on the scope's thread;
        // out of order, the scope ends once the later scopes have.
        let _ = raw_end(self.h);
    }
}

/// The name of a status code ("T4A_ERROR_INVALID_ARGUMENT").
pub fn status_name(code: i32) -> &'static str {
    // SAFETY: returns a static NUL-terminated string for every value.
    let p = unsafe { sys::t4a_status_name(code) };
    if p.is_null() {
        return "?";
    }
    unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("?")
}
