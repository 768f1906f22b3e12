// Finds libt4acuda for the `link` feature: T4ACUDA_LIB_DIR, else the
// pkg-config binary (run as a program: no crate), else a clear error.
// With only the `dlopen` feature nothing is linked.
use std::env;
use std::path::Path;
use std::process::Command;

fn pkg_config_libdir() -> Result<String, String> {
    let out = Command::new("pkg-config")
        .args(["--variable=libdir", "t4acuda"])
        .output()
        .map_err(|e| format!("could not run pkg-config: {e}"))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(format!(
            "pkg-config --variable=libdir t4acuda failed ({})",
            if why.is_empty() { "no t4acuda.pc on the pkg-config path".to_string() } else { why }
        ));
    }
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if dir.is_empty() {
        return Err("pkg-config t4acuda names no libdir".to_string());
    }
    Ok(dir)
}

fn main() {
    println!("cargo:rerun-if-env-changed=T4ACUDA_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if env::var_os("CARGO_FEATURE_LINK").is_none() {
        return;
    }
    let dir = match env::var("T4ACUDA_LIB_DIR") {
        Ok(d) if !d.is_empty() => {
            // Cargo runs this script in the crate's own folder, not where
            // cargo was invoked, so a relative path cannot be resolved the
            // way the user meant it.
            if Path::new(&d).is_relative() {
                panic!(
                    "T4ACUDA_LIB_DIR must be absolute (got {d}; cargo runs build \
                     scripts in the crate's folder, not where it was invoked): \
                     from the repository root, T4ACUDA_LIB_DIR=$PWD/build/default/src"
                );
            }
            if !Path::new(&d).join("libt4acuda.so").exists() {
                panic!(
                    "T4ACUDA_LIB_DIR={d} holds no libt4acuda.so (point it at the \
                     folder with the library, e.g. $PWD/build/default/src from the \
                     repository root)"
                );
            }
            d
        }
        _ => match pkg_config_libdir() {
            Ok(d) => d,
            Err(e) => panic!(
                "t4acuda-sys (feature `link`) cannot find libt4acuda: \
                 T4ACUDA_LIB_DIR is not set and {e}. Set T4ACUDA_LIB_DIR to \
                 the folder holding libt4acuda.so, install t4acuda where \
                 pkg-config finds t4acuda.pc, or build with \
                 --no-default-features --features dlopen."
            ),
        },
    };
    println!("cargo:rustc-link-search=native={dir}");
    println!("cargo:rustc-link-lib=dylib=t4acuda");
    // For dependents (links = "t4acuda"): DEP_T4ACUDA_LIB_DIR.
    println!("cargo:lib_dir={dir}");
    // Exported to this crate's tests (the export check runs nm on it).
    println!("cargo:rustc-env=T4ACUDA_SYS_LIB_DIR={dir}");
    // This crate's own test binaries find the library without
    // LD_LIBRARY_PATH (which still wins: RUNPATH is searched after it).
    println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{dir}");
}
