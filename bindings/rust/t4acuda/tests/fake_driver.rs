//! Host tests on the fake driver (tests/fake/fake_cuda.c): the library is
//! pointed at it through T4A_CUDA_DRIVER_PATH, set before the library's
//! first driver call in this process (its own test binary), as the C host
//! suites do (tests/support/fake_driver.h). The fake's path comes from
//! T4A_FAKE_CUDA_PATH (ctest rust_cargo_test sets it; run-tests derives it
//! from T4ACUDA_LIB_DIR); without one the tests say so and skip. Its test
//! controls are reached through dlopen of the same path, which gives the
//! instance the library loaded.
//!
//! The fake reports compute capability 9.0 (clusters supported), 4
//! multiprocessors and stream priorities from 0 down to -5; a module image
//! of any bytes loads and has a kernel "k" of no parameters.

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::{Mutex, MutexGuard, Once};
use t4acuda::{Kernel, LaunchConfig, Module, Runtime, RuntimeOptions, Status};

#[link(name = "dl")]
extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}
const RTLD_NOW: c_int = 2;
const RTLD_NOLOAD: c_int = 4;

fn fake_path() -> Option<String> {
    std::env::var("T4A_FAKE_CUDA_PATH").ok().filter(|p| !p.is_empty())
}

/// Points the library at the fake driver (once per process) and holds the
/// lock that runs these tests one at a time (the fake's counters and
/// kernel attributes are process-wide). None, with a line, without a fake.
fn fake(test: &str) -> Option<MutexGuard<'static, ()>> {
    static ONCE: Once = Once::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let Some(path) = fake_path() else {
        eprintln!("{test}: SKIPPED (T4A_FAKE_CUDA_PATH is not set)");
        return None;
    };
    assert!(
        std::path::Path::new(&path).exists(),
        "T4A_FAKE_CUDA_PATH={path} does not exist (build the t4a_fake_cuda target)"
    );
    ONCE.call_once(|| std::env::set_var("T4A_CUDA_DRIVER_PATH", &path));
    Some(LOCK.lock().unwrap_or_else(|e| e.into_inner()))
}

/// `name` in the fake driver the library loaded.
fn fake_symbol(name: &str) -> *mut c_void {
    let path = CString::new(fake_path().unwrap()).unwrap();
    let lib = unsafe { dlopen(path.as_ptr(), RTLD_NOW | RTLD_NOLOAD) };
    assert!(!lib.is_null(), "the fake driver is not loaded");
    let c = CString::new(name).unwrap();
    let sym = unsafe { dlsym(lib, c.as_ptr()) };
    assert!(!sym.is_null(), "the fake driver has no {name}");
    sym
}

/// The last cuLaunchKernelEx (attribute count, cluster x y z,
/// programmatic) and the cuLaunchKernelEx launches so far.
fn last_launch_ex() -> ([u32; 5], u64) {
    let f: unsafe extern "C" fn(*mut u32) -> std::ffi::c_ulong =
        unsafe { std::mem::transmute(fake_symbol("fake_cuda_last_launch_ex")) };
    let mut out = [0u32; 5];
    let n = unsafe { f(out.as_mut_ptr()) };
    (out, n as u64)
}

/// cuLaunchKernel launches so far.
fn plain_launches() -> u64 {
    let f: unsafe extern "C" fn(c_int) -> std::ffi::c_ulong =
        unsafe { std::mem::transmute(fake_symbol("fake_cuda_launch_count")) };
    unsafe { f(0) as u64 }
}

/// Whether the kernel's non-portable cluster attribute was set.
fn non_portable_set() -> bool {
    let f: unsafe extern "C" fn() -> c_int =
        unsafe { std::mem::transmute(fake_symbol("fake_cuda_non_portable")) };
    unsafe { f() != 0 }
}

/// Clears the kernel attributes a test may have set (cluster dimensions,
/// the non-portable attribute).
fn reset_kernel_attributes() {
    let f: unsafe extern "C" fn(c_int, c_int, c_int, c_int) =
        unsafe { std::mem::transmute(fake_symbol("fake_cuda_set_cluster_dims")) };
    unsafe { f(0, 0, 0, 0) };
}

fn kernel(rt: &Runtime) -> (Module, Kernel) {
    let m = rt.load_data(&[7u8; 16]).unwrap_or_else(|e| panic!("{e}"));
    let k = m.kernel("k").unwrap_or_else(|e| panic!("{e}"));
    (m, k)
}

#[test]
fn a_cluster_launch_goes_through_launch_ex() {
    let Some(_lock) = fake("a_cluster_launch_goes_through_launch_ex") else {
        return;
    };
    let rt = Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let (_m, k) = kernel(&rt);
    let (_, ex0) = last_launch_ex();
    let plain0 = plain_launches();
    rt.launch_with(&k, &LaunchConfig::new(8, 128).cluster(2), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let (got, ex1) = last_launch_ex();
    assert_eq!(ex1, ex0 + 1, "launched by cuLaunchKernelEx");
    assert_eq!(plain_launches(), plain0);
    assert_eq!(got, [1, 2, 1, 1, 0], "one attribute: a 2 x 1 x 1 cluster");
    // A 3-D cluster is passed as given; programmatic adds its attribute.
    let cfg = LaunchConfig::new((8, 4, 2), 128).cluster((2, 2, 2)).programmatic(true);
    rt.launch_with(&k, &cfg, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(last_launch_ex().0, [2, 2, 2, 2, 1]);
    // Programmatic alone.
    rt.launch_with(&k, &LaunchConfig::new(3, 128).programmatic(true), &[]).unwrap();
    assert_eq!(last_launch_ex().0, [1, 0, 0, 0, 1]);
    // No attributes: t4a_launch (cuLaunchKernel).
    let (_, ex2) = last_launch_ex();
    rt.launch_with(&k, &LaunchConfig::new(3, 128), &[]).unwrap();
    rt.launch(&k, 3, 128, &[]).unwrap();
    assert_eq!(last_launch_ex().1, ex2);
    assert_eq!(plain_launches(), plain0 + 2);
    assert_eq!(rt.stats().unwrap().launches, 5);
}

#[test]
fn an_invalid_cluster_is_refused_naming_the_grid() {
    let Some(_lock) = fake("an_invalid_cluster_is_refused_naming_the_grid") else {
        return;
    };
    let rt = Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let (_m, k) = kernel(&rt);
    let (_, ex0) = last_launch_ex();
    let plain0 = plain_launches();
    // Grid 3 in clusters of 2.
    let e = rt.launch_with(&k, &LaunchConfig::new(3, 128).cluster(2), &[]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert_eq!(e.entry_point, "t4a_launch_ex", "{e:?}");
    assert!(e.message.contains("grid[0] (x) is 3, not a multiple of 2"), "names the grid: {e}");
    // Above the portable 8 blocks without the opt-in.
    let e = rt.launch_with(&k, &LaunchConfig::new(16, 128).cluster(16), &[]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert!(e.message.contains("the portable maximum is 8"), "{e}");
    // The opt-in without a cluster.
    let e = rt
        .launch_with(&k, &LaunchConfig::new(16, 128).non_portable_cluster(true), &[])
        .unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert!(e.message.contains("no cluster"), "{e}");
    // Nothing was enqueued or counted.
    assert_eq!(last_launch_ex().1, ex0);
    assert_eq!(plain_launches(), plain0);
    assert_eq!(rt.stats().unwrap().launches, 0);
    // With the opt-in 16 blocks launch, and the kernel's attribute is set.
    let cfg = LaunchConfig::new(32, 128).cluster(16).non_portable_cluster(true);
    rt.launch_with(&k, &cfg, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert!(non_portable_set());
    assert_eq!(last_launch_ex().0[1], 16);
    reset_kernel_attributes();
}

#[test]
fn cluster_occupancy_of_a_config() {
    let Some(_lock) = fake("cluster_occupancy_of_a_config") else {
        return;
    };
    let rt = Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let (_m, k) = kernel(&rt);
    // The fake: 8 blocks of 256 threads per multiprocessor, 4 of them.
    let o = k.cluster_occupancy(&LaunchConfig::new(8, 256).cluster(2)).unwrap();
    assert_eq!((o.max_active_clusters, o.max_cluster_size), (16, 8));
    // No cluster: single-block clusters.
    let o = k.cluster_occupancy(&LaunchConfig::new(8, 256)).unwrap();
    assert_eq!(o.max_active_clusters, 32);
    // The non-portable opt-in raises the largest cluster.
    let o = k
        .cluster_occupancy(&LaunchConfig::new(16, 256).cluster(16).non_portable_cluster(true))
        .unwrap();
    assert_eq!((o.max_active_clusters, o.max_cluster_size), (2, 16));
    // Checked as a launch is.
    let e = k.cluster_occupancy(&LaunchConfig::new(16, 256).cluster(3)).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert_eq!(e.entry_point, "t4a_kernel_cluster_occupancy", "{e:?}");
    assert!(e.message.contains("not a multiple of 3"), "{e}");
    reset_kernel_attributes();
}

#[test]
fn stream_priority_is_reported_and_range_checked() {
    let Some(_lock) = fake("stream_priority_is_reported_and_range_checked") else {
        return;
    };
    let rt = Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rt.stream_priority().unwrap(), 0, "the default");
    drop(rt);
    let mut o = RuntimeOptions::init();
    o.stream_priority = -3;
    let rt = Runtime::with_options(&o).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rt.stream_priority().unwrap(), -3);
    assert_eq!(rt.info().unwrap().stream_priority, -3);
    rt.destroy().unwrap();
    // Outside the range (0 down to -5): refused, naming the range.
    for bad in [1, -6] {
        o.stream_priority = bad;
        let e = Runtime::with_options(&o).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument, "{e}");
        assert_eq!(e.entry_point, "t4a_runtime_create", "{e:?}");
        assert!(e.message.contains("allows 0 (the default, lowest) down to -5"), "{e}");
    }
}
