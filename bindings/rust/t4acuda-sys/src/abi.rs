//! What the declarations of this crate say about themselves, for the layout
//! test (`tests/layouts.rs` compares it with `abi/layouts.json`): every
//! struct's size, alignment and field offsets (`std::mem::offset_of!`),
//! every function's parameter kinds and every constant's value. The
//! records are made by the same macros that declare the items, from the
//! declared Rust types, so they cannot drift from the declarations.

use std::ffi::{c_char, c_void};

/// The binding kind of a Rust type as `abi/layouts.json` spells it
/// (`i32`, `u64`, `usize`, `ptr`, `cstr`, `handle`, `struct`, `array`,
/// `fnptr`, `void`), and its C type for pointers and handles.
pub trait CType {
    /// The kind.
    const KIND: &'static str;
    /// True for `c_char` only (a `*const c_char` is a `cstr`).
    const IS_CHAR: bool = false;
    /// The C spelling (`int32_t`, `t4a_buffer`, `const char *`, ...).
    fn c_type() -> String;
}

macro_rules! scalar_ctype {
    ($($t:ty => $kind:literal, $c:literal, $is_char:literal;)*) => {
        $(impl CType for $t {
            const KIND: &'static str = $kind;
            const IS_CHAR: bool = $is_char;
            fn c_type() -> String { $c.to_string() }
        })*
    };
}

scalar_ctype! {
    i8 => "i8", "char", true;
    u8 => "u8", "uint8_t", false;
    u16 => "u16", "uint16_t", false;
    i32 => "i32", "int32_t", false;
    u32 => "u32", "uint32_t", false;
    i64 => "i64", "int64_t", false;
    u64 => "u64", "uint64_t", false;
    usize => "usize", "size_t", false;
    c_void => "void", "void", false;
    () => "void", "void", false;
}

// c_char is i8 on x86_64 Linux (the platform of the library); a `const
// char *` is a `cstr` there.
const _: () = assert!(std::mem::size_of::<c_char>() == 1);

impl<T: CType> CType for *mut T {
    const KIND: &'static str = "ptr";
    fn c_type() -> String {
        format!("{} *", T::c_type())
    }
}

impl<T: CType> CType for *const T {
    const KIND: &'static str = if T::IS_CHAR { "cstr" } else { "ptr" };
    fn c_type() -> String {
        if T::KIND == "ptr" || T::KIND == "cstr" {
            format!("{} const *", T::c_type())
        } else {
            format!("const {} *", T::c_type())
        }
    }
}

impl<T: CType, const N: usize> CType for [T; N] {
    const KIND: &'static str = "array";
    fn c_type() -> String {
        format!("{}[{}]", T::c_type(), N)
    }
}

macro_rules! fnptr_ctype {
    ($($a:ident),*) => {
        impl<R $(, $a)*> CType for Option<unsafe extern "C" fn($($a),*) -> R> {
            const KIND: &'static str = "fnptr";
            fn c_type() -> String { "fnptr".to_string() }
        }
    };
}
fnptr_ctype!(A);
fnptr_ctype!(A, B, C);

/// One field of a declared struct.
#[derive(Debug, Clone)]
pub struct FieldLayout {
    pub name: &'static str,
    pub offset: usize,
    pub size: usize,
    pub kind: &'static str,
    pub c_type: String,
}

/// One declared struct.
#[derive(Debug, Clone)]
pub struct StructLayout {
    pub name: &'static str,
    pub size: usize,
    pub align: usize,
    pub fields: Vec<FieldLayout>,
}

/// One parameter or return type of a declared function.
#[derive(Debug, Clone)]
pub struct ParamSig {
    pub name: &'static str,
    pub kind: &'static str,
    pub c_type: String,
}

/// One declared function.
#[derive(Debug, Clone)]
pub struct FnSig {
    pub name: &'static str,
    pub params: Vec<ParamSig>,
    pub returns: ParamSig,
}

/// A declared constant's value.
#[derive(Debug, Clone, PartialEq)]
pub enum ConstValue {
    Int(i128),
    Str(&'static str),
}

macro_rules! const_from {
    ($($t:ty),*) => {$(
        impl From<$t> for ConstValue {
            fn from(v: $t) -> Self { ConstValue::Int(v as i128) }
        }
    )*};
}
const_from!(i32, u32, u64, u8, i64);
impl From<&'static str> for ConstValue {
    fn from(v: &'static str) -> Self {
        ConstValue::Str(v)
    }
}

/// One declared constant.
#[derive(Debug, Clone)]
pub struct Constant {
    pub name: &'static str,
    pub value: ConstValue,
}
