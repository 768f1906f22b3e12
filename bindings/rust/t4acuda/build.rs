// The tests and examples of this crate find libt4acuda where t4acuda-sys
// linked it (RUNPATH; LD_LIBRARY_PATH still wins, as on the GPU machine).
fn main() {
    if let Ok(dir) = std::env::var("DEP_T4ACUDA_LIB_DIR") {
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{dir}");
        println!("cargo:rustc-link-arg-examples=-Wl,-rpath,{dir}");
    }
}
