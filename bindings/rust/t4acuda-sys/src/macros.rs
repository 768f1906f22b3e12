// The declaring macros: each declares its items and records them for the
// layout test (crate::abi).

/// Declares `#[repr(C)]` structs and `struct_layouts()` (or, with a
/// leading `fn name;`, a layouts function of that name: the hand-written
/// experimental structs of lib.rs, which the generated structs.rs leaves
/// out).
macro_rules! c_structs {
    (fn $layouts:ident; $(
        $(#[$m:meta])*
        pub struct $name:ident $([$kind:literal])? { $( $(#[$fm:meta])* pub $f:ident : $t:ty ),* $(,)? }
    )*) => {
        $(
            $(#[$m])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug)]
            pub struct $name { $( $(#[$fm])* pub $f: $t ),* }

            impl $crate::abi::CType for $name {
                const KIND: &'static str = kind_or_struct!($($kind)?);
                fn c_type() -> String { stringify!($name).to_string() }
            }

            impl $name {
                /// All bytes zero (`struct_size` too, where there is one).
                pub const fn zeroed() -> Self {
                    // SAFETY: every field is an integer, an array of
                    // integers, a raw pointer, an Option of a function
                    // pointer or such a struct: all-zero is valid for each.
                    unsafe { std::mem::zeroed() }
                }
            }
        )*

        /// Size, alignment and field offsets of every struct declared here.
        pub fn $layouts() -> Vec<$crate::abi::StructLayout> {
            vec![$(
                $crate::abi::StructLayout {
                    name: stringify!($name),
                    size: std::mem::size_of::<$name>(),
                    align: std::mem::align_of::<$name>(),
                    fields: vec![$(
                        $crate::abi::FieldLayout {
                            name: stringify!($f),
                            offset: std::mem::offset_of!($name, $f),
                            size: std::mem::size_of::<$t>(),
                            kind: <$t as $crate::abi::CType>::KIND,
                            c_type: <$t as $crate::abi::CType>::c_type(),
                        }
                    ),*],
                }
            ),*]
        }
    };
    ($($body:tt)*) => {
        c_structs! { fn struct_layouts; $($body)* }
    };
}

/// `init()` for versioned structs: zero bytes and `struct_size` (what the
/// C `_INIT` macros give), and `struct_inits()` for the test (or, with a
/// leading `fn name;`, an inits function of that name).
macro_rules! versioned {
    (fn $inits:ident; $($name:ident),* $(,)? ; zero: $($zname:ident),* $(,)?) => {
        $(impl $name {
            /// The `_INIT` value: `struct_size` set, every other byte zero
            /// (all defaults).
            pub const fn init() -> Self {
                let mut s = Self::zeroed();
                s.struct_size = std::mem::size_of::<Self>() as u32;
                s
            }
        }
        impl Default for $name {
            fn default() -> Self { Self::init() }
        })*

        $(impl $zname {
            /// The `_INIT` value: every byte zero.
            pub const fn init() -> Self { Self::zeroed() }
        }
        impl Default for $zname {
            fn default() -> Self { Self::init() }
        })*

        /// Names and byte images of every `init()` (the `_INIT` macros).
        #[allow(clippy::vec_init_then_push)] // one push per listed struct
        pub fn $inits() -> Vec<(&'static str, Vec<u8>)> {
            fn image<T>(name: &'static str, v: &T) -> (&'static str, Vec<u8>) {
                // SAFETY: reads the bytes of a live value made by init(),
                // whose bytes (padding too) were all initialized by zeroed().
                let bytes = unsafe {
                    std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>())
                };
                (name, bytes.to_vec())
            }
            let mut out = Vec::new();
            $( out.push(image(stringify!($name), &$name::init())); )*
            $( out.push(image(stringify!($zname), &$zname::init())); )*
            out
        }
    };
    ($($body:tt)*) => {
        versioned! { fn struct_inits; $($body)* }
    };
}

/// Declares constants and `constants()`.
macro_rules! c_consts {
    ($( $(#[$m:meta])* pub const $n:ident : $t:ty = $v:expr; )*) => {
        $( $(#[$m])* pub const $n: $t = $v; )*

        /// Every constant declared here with its value.
        pub fn constants() -> Vec<$crate::abi::Constant> {
            vec![$( $crate::abi::Constant {
                name: stringify!($n),
                value: $crate::abi::ConstValue::from($n),
            } ),*]
        }
    };
}

macro_rules! kind_or_struct {
    () => {
        "struct"
    };
    ($k:literal) => {
        $k
    };
}

macro_rules! ret_ty {
    () => {
        ()
    };
    ($r:ty) => {
        $r
    };
}

/// Declares the functions: the `extern "C"` block (feature `link`), the
/// function-pointer table `dl::Api` (feature `dlopen`; the `optional`
/// ones are `Option`s there, None when the loaded library lacks them) and
/// `function_sigs()`.
macro_rules! c_functions {
    (
        required { $( fn $name:ident ( $( $p:ident : $t:ty ),* ) $( -> $r:ty )? ; )* }
        optional { $( fn $oname:ident ( $( $op:ident : $ot:ty ),* ) $( -> $or:ty )? ; )* }
    ) => {
        #[cfg(feature = "link")]
        #[link(name = "t4acuda")]
        extern "C" {
            $( pub fn $name( $( $p : $t ),* ) $( -> $r )?; )*
            $( pub fn $oname( $( $op : $ot ),* ) $( -> $or )?; )*
        }

        /// Parameter and return kinds of every function declared here.
        pub fn function_sigs() -> Vec<$crate::abi::FnSig> {
            vec![
                $( $crate::abi::FnSig {
                    name: stringify!($name),
                    params: vec![ $( $crate::abi::ParamSig {
                        name: stringify!($p),
                        kind: <$t as $crate::abi::CType>::KIND,
                        c_type: <$t as $crate::abi::CType>::c_type(),
                    } ),* ],
                    returns: $crate::abi::ParamSig {
                        name: "",
                        kind: <ret_ty!($($r)?) as $crate::abi::CType>::KIND,
                        c_type: <ret_ty!($($r)?) as $crate::abi::CType>::c_type(),
                    },
                }, )*
                $( $crate::abi::FnSig {
                    name: stringify!($oname),
                    params: vec![ $( $crate::abi::ParamSig {
                        name: stringify!($op),
                        kind: <$ot as $crate::abi::CType>::KIND,
                        c_type: <$ot as $crate::abi::CType>::c_type(),
                    } ),* ],
                    returns: $crate::abi::ParamSig {
                        name: "",
                        kind: <ret_ty!($($or)?) as $crate::abi::CType>::KIND,
                        c_type: <ret_ty!($($or)?) as $crate::abi::CType>::c_type(),
                    },
                }, )*
            ]
        }

        /// The `optional` functions (the DLPack entry points and the
        /// experimental section's): `None` in `dl::Api` when the loaded
        /// library lacks them.
        pub const OPTIONAL_FUNCTIONS: &[&str] = &[ $( stringify!($oname) ),* ];

        #[cfg(feature = "dlopen")]
        pub mod dl {
            //! Loading libt4acuda at run time (feature `dlopen`): libc's
            //! `dlopen`/`dlsym`/`dlerror`/`dlclose`, declared here with std
            //! only.
            #![allow(clippy::missing_safety_doc)]
            use super::*;
            use std::ffi::{c_int, CStr, CString};

            #[link(name = "dl")]
            extern "C" {
                fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
                fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
                fn dlerror() -> *mut c_char;
                fn dlclose(handle: *mut c_void) -> c_int;
            }
            const RTLD_NOW: c_int = 2;
            const RTLD_LOCAL: c_int = 0;

            /// Why loading failed: the loader's own text (dlerror) or the
            /// version check's.
            #[derive(Debug, Clone, PartialEq, Eq)]
            pub struct LoadError(pub String);

            impl std::fmt::Display for LoadError {
                fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str(&self.0)
                }
            }
            impl std::error::Error for LoadError {}

            /// Every function of libt4acuda, resolved when the library was
            /// loaded. The pointers are valid while the `Api` lives (Drop
            /// closes the library).
            pub struct Api {
                lib: *mut c_void,
                $( pub $name: unsafe extern "C" fn( $( $t ),* ) $( -> $r )?, )*
                $( pub $oname: Option<unsafe extern "C" fn( $( $ot ),* ) $( -> $or )?>, )*
            }

            // SAFETY: the library handle and function pointers are plain
            // addresses; every t4acuda function may be called from any
            // thread, and dlclose may be called from any thread.
            unsafe impl Send for Api {}
            unsafe impl Sync for Api {}

            fn loader_text(what: &str) -> LoadError {
                // SAFETY: dlerror returns NULL or a NUL-terminated string
                // valid until the next dl* call on this thread.
                let e = unsafe { dlerror() };
                let text = if e.is_null() {
                    "no message from the loader".to_string()
                } else {
                    unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
                };
                LoadError(format!("{what}: {text}"))
            }

            impl Api {
                /// Loads `path` (a file name searched as dlopen does, or a
                /// path), resolves every symbol and checks that the
                /// library's major version (t4a_version() / 10000) is the
                /// one these declarations were written for.
                /// Never panics: a missing file, a missing symbol or
                /// another major version is an `Err` with the text.
                ///
                /// # Safety
                /// Loading a library runs its initializers; `path` must
                /// name a genuine libt4acuda.
                pub unsafe fn load(path: &str) -> Result<Api, LoadError> {
                    let c_path = CString::new(path).map_err(|_| {
                        LoadError(format!("library path {path:?} contains a NUL byte"))
                    })?;
                    dlerror(); // clears a stale message
                    let lib = dlopen(c_path.as_ptr(), RTLD_NOW | RTLD_LOCAL);
                    if lib.is_null() {
                        return Err(loader_text(&format!("dlopen(\"{path}\")")));
                    }
                    // Closes the library when a later step fails.
                    struct Guard(*mut c_void);
                    impl Drop for Guard {
                        fn drop(&mut self) {
                            if !self.0.is_null() {
                                // The result is ignored: nothing can be
                                // done about a failing close of a library
                                // that is being given up anyway.
                                unsafe { dlclose(self.0) };
                            }
                        }
                    }
                    let mut guard = Guard(lib);
                    let api = Api {
                        lib,
                        $( $name: {
                            let sym = dlsym(lib, concat!(stringify!($name), "\0").as_ptr().cast());
                            if sym.is_null() {
                                return Err(loader_text(&format!(
                                    "dlsym(\"{}\") in {path}", stringify!($name))));
                            }
                            std::mem::transmute::<*mut c_void,
                                unsafe extern "C" fn( $( $t ),* ) $( -> $r )?>(sym)
                        }, )*
                        $( $oname: {
                            let sym = dlsym(lib, concat!(stringify!($oname), "\0").as_ptr().cast());
                            if sym.is_null() {
                                None
                            } else {
                                Some(std::mem::transmute::<*mut c_void,
                                    unsafe extern "C" fn( $( $ot ),* ) $( -> $or )?>(sym))
                            }
                        }, )*
                    };
                    guard.0 = std::ptr::null_mut(); // `api` closes it now
                    let found = (api.t4a_version)();
                    let want = super::T4A_VERSION_MAJOR as u32;
                    if found / 10000 != want {
                        return Err(LoadError(format!(
                            "{path} is t4acuda {}.{}.{} (t4a_version() = {found}); \
                             these declarations are for major version {want}",
                            found / 10000, found / 100 % 100, found % 100)));
                    }
                    Ok(api)
                }
            }

            impl Drop for Api {
                fn drop(&mut self) {
                    // The result is ignored: a failing dlclose leaves the
                    // library loaded, which is harmless.
                    unsafe { dlclose(self.lib) };
                }
            }
        }
    };
}

// The null handle of each handle type (structs.rs).
macro_rules! handle_consts {
    ($($h:ident),*) => {$(
        impl $h {
            /// The null handle (id #T4A_NULL_ID).
            pub const NULL: $h = $h { id: T4A_NULL_ID };
            /// True for the null handle.
            pub const fn is_null(self) -> bool { self.id == T4A_NULL_ID }
        }
    )*};
}
