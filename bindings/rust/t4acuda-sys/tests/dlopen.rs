//! Feature `dlopen`: t4acuda_sys::dl::Api::load resolves every symbol up
//! front, checks the major version and returns the loader's text as Err.
#![cfg(feature = "dlopen")]

use t4acuda_sys::dl::Api;

fn library() -> Option<String> {
    if let Ok(p) = std::env::var("T4ACUDA_LIBRARY") {
        return Some(p);
    }
    option_env!("T4ACUDA_SYS_LIB_DIR").map(|d| format!("{d}/libt4acuda.so"))
}

#[test]
fn loads_the_library_and_calls_it() {
    let Some(path) = library() else {
        eprintln!("no library path (set T4ACUDA_LIBRARY): skipped");
        return;
    };
    if !std::path::Path::new(&path).exists() {
        eprintln!("{path} not found: skipped");
        return;
    }
    let api = unsafe { Api::load(&path) }.unwrap_or_else(|e| panic!("{e}"));
    let v = unsafe { (api.t4a_version)() };
    assert_eq!(v as i32, t4acuda_sys::T4A_VERSION_NUMBER);
    let name = unsafe {
        std::ffi::CStr::from_ptr((api.t4a_status_name)(t4acuda_sys::T4A_ERROR_NO_DRIVER))
    };
    assert_eq!(name.to_str().unwrap(), "T4A_ERROR_NO_DRIVER");
    // Handles cross threads with the table.
    let api = std::sync::Arc::new(api);
    let a2 = api.clone();
    std::thread::spawn(move || assert_eq!(unsafe { (a2.t4a_version)() }, v)).join().unwrap();
}

#[test]
fn a_missing_file_is_an_error_with_the_loader_text() {
    let err =
        unsafe { Api::load("/nonexistent/libt4acuda.so") }.err().expect("loaded a missing file");
    assert!(err.0.contains("/nonexistent/libt4acuda.so"), "{err}");
    assert!(err.0.contains("No such file"), "no loader text in: {err}");
}

#[test]
fn a_library_without_the_symbols_is_an_error_naming_the_symbol() {
    let err = unsafe { Api::load("libm.so.6") }.err().expect("libm passed for t4acuda");
    assert!(err.0.contains("dlsym(\"t4a_version\")"), "{err}");
    assert!(err.0.contains("undefined symbol"), "no loader text in: {err}");
}

#[test]
fn a_nul_in_the_path_is_an_error() {
    let err = unsafe { Api::load("lib\0t4acuda.so") }.err().expect("accepted a NUL");
    assert!(err.0.contains("NUL"), "{err}");
}
