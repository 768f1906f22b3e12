//! Host tests without a driver: T4A_CUDA_DRIVER_PATH names a file that
//! does not exist (as the C host tests force NO_DRIVER), set before the
//! library's first driver call in this process (its own test binary).

use std::sync::Once;
use t4acuda::{Runtime, Status};

fn no_driver() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| std::env::set_var("T4A_CUDA_DRIVER_PATH", "/nonexistent/libcuda.so.1"));
}

#[test]
fn runtime_creation_is_no_driver_with_the_entry_point_and_message() {
    no_driver();
    let err = Runtime::new().expect_err("a runtime without a driver");
    assert_eq!(err.status, Status::NoDriver, "{err}");
    assert_eq!(err.entry_point, "t4a_runtime_create", "{err:?}");
    assert!(
        err.message.contains("/nonexistent/libcuda.so.1"),
        "message names the path tried: {err}"
    );
    let text = err.to_string();
    assert!(text.starts_with("T4A_ERROR_NO_DRIVER in t4a_runtime_create"), "{text}");
}

#[test]
fn device_queries_are_no_driver() {
    no_driver();
    assert_eq!(t4acuda::device_count().unwrap_err().status, Status::NoDriver);
    assert_eq!(t4acuda::driver_version().unwrap_err().status, Status::NoDriver);
    assert_eq!(t4acuda::device_info(0).unwrap_err().status, Status::NoDriver);
}

#[test]
fn errors_are_per_thread_and_cross_threads() {
    no_driver();
    // Each thread gets its own last error; Error values are Send.
    let errs: Vec<t4acuda::Error> = (0..4)
        .map(|_| std::thread::spawn(|| Runtime::new().unwrap_err()))
        .map(|h| h.join().unwrap())
        .collect();
    for e in errs {
        assert_eq!(e.status, Status::NoDriver);
        assert_eq!(e.entry_point, "t4a_runtime_create");
    }
}

#[test]
fn version_and_status_names_need_no_driver() {
    no_driver();
    assert_eq!(t4acuda::version() as i32, t4acuda_sys::T4A_VERSION_NUMBER);
    assert_eq!(Status::InvalidArgument.name(), "T4A_ERROR_INVALID_ARGUMENT");
    for code in 1..=18 {
        let s = Status::from_code(code).unwrap();
        assert_eq!(s.code(), code);
        assert!(!matches!(s, Status::Other(_)), "code {code} unknown to Status");
        assert_eq!(s.name(), t4acuda::status_name(code));
    }
    assert_eq!(Status::from_code(0), None);
    assert_eq!(Status::from_code(99), Some(Status::Other(99)));
}

#[test]
fn compile_with_an_explicit_target_needs_no_driver() {
    no_driver();
    let a = t4acuda::compile("extern \"C\" __global__ void k(int *p) { *p = 1; }")
        .cc(8, 0)
        .cache_dir("")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let info = a.info().unwrap();
    assert_eq!((info.cc_major, info.cc_minor), (8, 0));
    assert!(!a.image().unwrap().is_empty());
}
