"""The library and its C declarations, generated from _layouts.json.

_layouts.json is a copy of abi/layouts.json (a test keeps them identical).
Every struct, constant, status and function signature below comes from it;
after building each ctypes struct, its size and every field offset are
compared with the file, and a mismatch fails the import. The DLPack
structures (published DLPack 1.x ABI) are declared by hand here, since
abi/layouts.json describes only t4acuda's own declarations; the
t4a_dlpack_desc struct and the four DLPack functions come from the file
when it lists them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
from typing import Any, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))

with open(os.path.join(_HERE, "_layouts.json"), encoding="utf-8") as _f:
    LAYOUTS: dict[str, Any] = json.load(_f)

_SCALARS: dict[str, type[ctypes._SimpleCData[Any]]] = {
    "u8": ctypes.c_uint8,
    "i8": ctypes.c_int8,
    "u16": ctypes.c_uint16,
    "i16": ctypes.c_int16,
    "u32": ctypes.c_uint32,
    "i32": ctypes.c_int32,
    "u64": ctypes.c_uint64,
    "i64": ctypes.c_int64,
    "usize": ctypes.c_size_t,
    "isize": ctypes.c_ssize_t,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    "char": ctypes.c_char,
    "cstr": ctypes.c_char_p,
    "ptr": ctypes.c_void_p,
    "fnptr": ctypes.c_void_p,
}


class LayoutError(ImportError):
    """The ctypes declarations disagree with _layouts.json."""


def _load_library() -> tuple[ctypes.CDLL, str]:
    """T4ACUDA_LIBRARY, else the copy bundled in this package, else the
    installed one. Returns (CDLL, path tried)."""
    tried: list[str] = []
    env = os.environ.get("T4ACUDA_LIBRARY")
    if env:
        try:
            return ctypes.CDLL(env), env
        except OSError as e:
            raise ImportError(
                f"t4acuda: T4ACUDA_LIBRARY={env!r} cannot be loaded: {e}") from e
    for name in ("libt4acuda.so.0", "libt4acuda.so"):
        path = os.path.join(_HERE, name)
        if os.path.exists(path):
            try:
                return ctypes.CDLL(path), path
            except OSError as e:
                raise ImportError(
                    f"t4acuda: the bundled library {path!r} cannot be loaded: {e}") from e
    candidates = [ctypes.util.find_library("t4acuda"), "libt4acuda.so.0"]
    for found in candidates:
        if not found:
            continue
        tried.append(found)
        try:
            return ctypes.CDLL(found), found
        except OSError:
            continue
    raise ImportError(
        "t4acuda: libt4acuda not found: set T4ACUDA_LIBRARY to its path, "
        "install the wheel that bundles it, or install the library "
        f"(tried the package folder {_HERE!r} and {tried})")


LIB, LIBRARY_PATH = _load_library()

# ---- DLPack 1.x (published ABI; written here, not generated) ----


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor)))]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))),
    ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

DLPACK_FLAG_BITMASK_READ_ONLY = 1 << 0
DLPACK_FLAG_BITMASK_IS_COPIED = 1 << 1
kDLCPU, kDLCUDA, kDLCUDAHost = 1, 2, 3
kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLComplex, kDLBool = 0, 1, 2, 4, 5, 6
DLPACK_STRUCTS = {
    "DLDevice": DLDevice, "DLDataType": DLDataType, "DLTensor": DLTensor,
    "DLPackVersion": DLPackVersion, "DLManagedTensor": DLManagedTensor,
    "DLManagedTensorVersioned": DLManagedTensorVersioned,
}

# ---- structs ----
STRUCTS: dict[str, type[ctypes.Structure]] = {}
_STRUCT_LAYOUTS = {s["name"]: s for s in LAYOUTS["structs"]}


def _field_type(field: dict[str, Any]) -> type[ctypes._CData]:
    kind = field["kind"]
    if kind == "handle" or (kind not in _SCALARS and field.get("type") in STRUCTS):
        return STRUCTS[field["type"]]
    if kind == "array":
        return _SCALARS[field["element_kind"]] * field["count"]
    if kind not in _SCALARS:
        raise LayoutError(f"t4acuda: field {field['name']!r} has kind {kind!r}, which "
                          "this package does not know (update bindings/python)")
    return _SCALARS[kind]


def _make_struct(layout: dict[str, Any]) -> type[ctypes.Structure]:
    fields = []
    for f in layout["fields"]:
        fields.append((f["name"], _field_type(f)))
    cls = type(layout["name"], (ctypes.Structure,), {"_fields_": fields})
    check_struct(cls, layout)
    return cls


def check_struct(cls: type[ctypes.Structure], layout: dict[str, Any]) -> None:
    """Fails (LayoutError) unless `cls` has the size, alignment and field
    offsets and sizes that `layout` records."""
    name = layout["name"]
    if ctypes.sizeof(cls) != layout["size"]:
        raise LayoutError(f"t4acuda: {name}: ctypes size {ctypes.sizeof(cls)}, "
                          f"layouts.json says {layout['size']}")
    if ctypes.alignment(cls) != layout["align"]:
        raise LayoutError(f"t4acuda: {name}: ctypes alignment {ctypes.alignment(cls)}, "
                          f"layouts.json says {layout['align']}")
    names = [f[0] for f in cls._fields_]
    if names != [f["name"] for f in layout["fields"]]:
        raise LayoutError(f"t4acuda: {name}: fields {names} differ from layouts.json")
    for f in layout["fields"]:
        desc = getattr(cls, f["name"])
        if desc.offset != f["offset"] or desc.size != f["size"]:
            raise LayoutError(
                f"t4acuda: {name}.{f['name']}: offset {desc.offset} size {desc.size}, "
                f"layouts.json says offset {f['offset']} size {f['size']}")


# Handles first (other structs embed them), then the rest in file order.
for _s in LAYOUTS["structs"]:
    if _s["handle"]:
        STRUCTS[_s["name"]] = _make_struct(_s)
STRUCTS.update(DLPACK_STRUCTS)  # hand-declared; checked below when listed
for _s in LAYOUTS["structs"]:
    if _s["name"] in DLPACK_STRUCTS:
        check_struct(DLPACK_STRUCTS[_s["name"]], _s)
    elif not _s["handle"]:
        STRUCTS[_s["name"]] = _make_struct(_s)


def new(name: str) -> ctypes.Structure:
    """A zero-filled `name` struct with struct_size set (all defaults)."""
    s = STRUCTS[name]()
    if "struct_size" in (f[0] for f in s._fields_):
        s.struct_size = ctypes.sizeof(s)
    return s


# ---- constants and statuses ----
CONSTANTS: dict[str, Any] = {c["name"]: c["value"] for c in LAYOUTS["constants"]}
STATUS: dict[str, int] = {}
for _e in LAYOUTS["enums"]:
    if _e["name"] == "t4a_status_code":
        STATUS = {v["name"]: v["value"] for v in _e["values"]}
for _e in LAYOUTS["enums"]:
    for _v in _e["values"]:
        CONSTANTS.setdefault(_v["name"], _v["value"])
STATUS_NAMES = {v: k for k, v in STATUS.items()}

# t4a_dlpack_desc: from the file when it lists it, else the declaration of
# t4acuda_dlpack.h (checked against the file by the layout test whenever
# the file has it).
if "t4a_dlpack_desc" not in STRUCTS:
    class t4a_dlpack_desc(ctypes.Structure):
        _fields_ = [("struct_size", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                    ("dtype_code", ctypes.c_uint8), ("dtype_bits", ctypes.c_uint8),
                    ("dtype_lanes", ctypes.c_uint16), ("ndim", ctypes.c_int32),
                    ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                    ("byte_offset", ctypes.c_uint64)]
    STRUCTS["t4a_dlpack_desc"] = t4a_dlpack_desc
CONSTANTS.setdefault("T4A_DLPACK_READ_ONLY", 1)

# ---- functions ----
FUNCTIONS: dict[str, dict[str, Any]] = {f["name"]: f for f in LAYOUTS["functions"]}


def _H(n: str) -> dict[str, str]:
    return {"kind": "handle", "type": n}


_P = {"kind": "ptr"}
_DLPACK_FUNCTIONS: dict[str, list[dict[str, str]]] = {
    "t4a_buffer_to_dlpack": [_H("t4a_runtime"), _H("t4a_buffer"), _P, {"kind": "i64"}, _P],
    "t4a_buffer_to_dlpack_legacy": [_H("t4a_runtime"), _H("t4a_buffer"), _P,
                                    {"kind": "i64"}, _P],
    "t4a_buffer_from_dlpack": [_H("t4a_runtime"), _P, _P],
    "t4a_buffer_from_dlpack_legacy": [_H("t4a_runtime"), _P, _P],
}
for _name, _params in _DLPACK_FUNCTIONS.items():
    FUNCTIONS.setdefault(_name, {
        "name": _name, "experimental": False, "returns": {"kind": "i32"},
        "params": [dict(p, name=f"a{i}") for i, p in enumerate(_params)],
        "declared_here": True})


def _param_type(p: dict[str, Any]) -> Optional[type[ctypes._CData]]:
    kind = p["kind"]
    if kind == "handle":
        return STRUCTS[p["type"]]
    if kind == "void":
        return None
    return _SCALARS[kind]


def _declare(fn: dict[str, Any]) -> Any:
    """Sets argtypes/restype of the library's function; None when the
    library does not export it."""
    try:
        cfn = getattr(LIB, fn["name"])
    except AttributeError:
        return None
    cfn.argtypes = [_param_type(p) for p in fn["params"]]
    cfn.restype = _param_type(fn["returns"])
    return cfn


DECLARED: dict[str, Any] = {}
for _fn in FUNCTIONS.values():
    _c = _declare(_fn)
    if _c is not None:
        DECLARED[_fn["name"]] = _c


class _Lib:
    """The declared functions as attributes (C.t4a_launch); a function the
    loaded library does not export raises Unsupported when called."""

    def __getattr__(self, name: str) -> Any:
        if name in DECLARED:
            fn = DECLARED[name]
            setattr(self, name, fn)
            return fn
        if name in FUNCTIONS:
            raise AttributeError(
                f"t4acuda: the loaded library {LIBRARY_PATH!r} does not export {name} "
                "(built without it: an older library?)")
        raise AttributeError(name)


C = _Lib()
