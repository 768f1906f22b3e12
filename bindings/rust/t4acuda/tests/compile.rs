//! NVRTC through the safe API (no device: explicit compute capability).
//! T4A_NVRTC_PATH chooses the library as for the C tests.

use t4acuda::{compile, Status};

const SRC: &str = r#"
template <typename T> __global__ void scale(T *x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
"#;

#[test]
fn builder_passes_options_and_name_expressions() {
    let a = compile(SRC)
        .option("-std=c++17")
        .option("-DUNUSED=1")
        .name_expression("&scale<float>")
        .name_expression("&scale<double>")
        .program_name("scale.cu")
        .cc(9, 0)
        .cache_dir("")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let info = a.info().unwrap();
    assert_eq!(info.name_expression_count, 2);
    let f = a.lowered_name(0).unwrap();
    let d = a.lowered_name(1).unwrap();
    assert!(f.starts_with("_Z") && f.contains("scale"), "{f}");
    assert_ne!(f, d);
    assert_eq!(a.key().unwrap().len(), 64);
    // Index out of range: INVALID_ARGUMENT naming it.
    let e = a.lowered_name(2).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert_eq!(e.entry_point, "t4a_artifact_lowered_name");
}

#[test]
fn ptx_output_is_text() {
    let a = compile("extern \"C\" __global__ void k() {}")
        .ptx()
        .cc(8, 6)
        .cache_dir("")
        .build()
        .unwrap();
    let img = a.image().unwrap();
    let text = String::from_utf8_lossy(&img);
    assert!(text.contains(".entry k"), "{text}");
    assert_eq!(a.info().unwrap().output, t4acuda_sys::T4A_COMPILE_PTX);
}

#[test]
fn a_compile_error_carries_the_log_and_nvrtc_result() {
    let e = compile("__global__ void k() { this is not cuda; }")
        .program_name("broken.cu")
        .cc(9, 0)
        .cache_dir("")
        .build()
        .unwrap_err();
    assert_eq!(e.status, Status::Compile, "{e}");
    assert_ne!(e.compiler_result, 0);
    assert_eq!(e.entry_point, "t4a_compile");
    let log = t4acuda::last_compile_log().unwrap();
    assert!(log.contains("broken.cu"), "{log}");
}

#[test]
fn bad_requests_are_invalid_argument_naming_the_field() {
    // No target: null runtime and cc 0.
    let e = compile("__global__ void k() {}").cache_dir("").build().unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("cc_major"), "{e}");
    // A compute capability out of range.
    let e = compile("__global__ void k() {}").cc(100, 0).build().unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    // A NUL in an option is refused before the library is called.
    let e = compile("__global__ void k() {}").option("-DA\0B").cc(9, 0).build().unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("NUL"), "{e}");
}

#[test]
fn artifacts_are_send_sync_and_clone() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<t4acuda::Artifact>();
    assert_send_sync::<t4acuda::Runtime>();
    assert_send_sync::<t4acuda::Buffer>();
    assert_send_sync::<t4acuda::HostBuffer>();
    assert_send_sync::<t4acuda::Module>();
    assert_send_sync::<t4acuda::Kernel>();
    assert_send_sync::<t4acuda::Completion>();
    assert_send_sync::<t4acuda::Download<f32>>();
    assert_send_sync::<t4acuda::Error>();
    let a = compile("extern \"C\" __global__ void k() {}").cc(9, 0).cache_dir("").build().unwrap();
    let b = a.clone();
    let key = std::thread::spawn(move || b.key().unwrap()).join().unwrap();
    assert_eq!(key, a.key().unwrap());
}

#[test]
fn lowered_names_by_expression() {
    let a = compile(SRC)
        .name_expression("&scale<float>")
        .name_expression("scale<double>")
        .cc(9, 0)
        .cache_dir("")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let f = a.lowered_name(0).unwrap();
    // Exact, whitespace ignored, a leading '&' ignored either way.
    assert_eq!(a.lowered_name_of("&scale<float>").unwrap(), f);
    assert_eq!(a.lowered_name_of(" scale < float > ").unwrap(), f);
    assert_eq!(a.lowered_name_of("&scale<double>").unwrap(), a.lowered_name(1).unwrap());
    let e = a.lowered_name_of("scale<int>").unwrap_err();
    assert_eq!(e.status, Status::UnknownEntryPoint, "{e}");
    assert!(e.message.contains("'scale<int>'"), "{e}");
    assert!(a.lowered_name_of("a\0b").is_err());
}

#[test]
fn toolkit_headers_are_found_without_options() {
    let facts = t4acuda::toolkit_headers().unwrap_or_else(|e| panic!("{e}"));
    assert!(facts.starts_with("nvrtc "), "{facts}");
    assert!(facts.lines().any(|l| l.starts_with("include ")), "{facts}");
    let src = "#include <cuda_fp16.h>\nextern \"C\" __global__ void h(__half *p) { p[0] = __hadd(p[0], p[1]); }\n";
    let a = compile(src).cc(9, 0).cache_dir("").build().unwrap_or_else(|e| panic!("{e}"));
    let info = a.info().unwrap();
    assert!(
        info.origin == t4acuda_sys::T4A_ARTIFACT_FROM_NVRTC
            || info.origin == t4acuda_sys::T4A_ARTIFACT_FROM_MEMORY
    );
    let no = compile(src)
        .cc(9, 0)
        .cache_dir("")
        .flags(t4acuda_sys::T4A_COMPILE_NO_TOOLKIT_HEADERS)
        .build();
    assert_eq!(no.err().map(|e| e.status), Some(Status::Compile));
}
