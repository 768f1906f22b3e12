"""DLPack both ways: Buffer.__dlpack__ (export) and from_dlpack (import),
below _core: it knows capsules and the C entry points, and takes the
Buffer and Runtime objects of _core by what they offer (no import of
_core, which calls into this module).

Capsules follow the Python DLPack protocol: "dltensor_versioned" holds a
DLManagedTensorVersioned (DLPack >= 1.0), "dltensor" a legacy
DLManagedTensor. A consumer renames the capsule "used_dltensor..." when it
takes the tensor; the capsule's destructor calls the deleter only while the
capsule still has its unused name.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, Optional, Protocol

from . import _checks, _ffi
from ._errors import check, python_error

try:
    import numpy as _np
except ImportError:  # the binding works without NumPy (dtypes as strings)
    _np = None  # type: ignore[assignment]


class Producer(Protocol):
    """What from_dlpack takes: a DLPack producer (a CUDA tensor of PyTorch,
    CuPy, JAX, ... or a t4acuda Buffer)."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...

    def __dlpack_device__(self) -> Any: ...


if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    # What this module uses of _core's objects (it does not import _core).
    class _Scope(Protocol):
        stream: int

    class _Runtime(Protocol):
        def _live(self) -> ctypes.Structure: ...

        def raw(self) -> AbstractContextManager[_Scope]: ...

    class _Buffer(Protocol):
        @property
        def shape(self) -> tuple[int, ...]: ...

        @property
        def dtype(self) -> _np.dtype[Any]: ...

        @property
        def readonly(self) -> bool: ...

        @property
        def runtime(self) -> _Runtime: ...

        def _live(self) -> ctypes.Structure: ...

        def __dlpack_device__(self) -> tuple[int, int]: ...

C = _ffi.C
_V_NAME = b"dltensor_versioned"
_V_USED = b"used_dltensor_versioned"
_L_NAME = b"dltensor"
_L_USED = b"used_dltensor"

# The C API functions taking a raw PyObject* (the capsule may be mid-
# destruction, so it is never wrapped as a Python object there).
_api = ctypes.pythonapi
_IsValid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_SetName = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", _api))
_New = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                         ctypes.c_void_p)(("PyCapsule_New", _api))
_IsValidObj = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_GetPointerObj = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))

_PV = ctypes.POINTER(_ffi.DLManagedTensorVersioned)
_PL = ctypes.POINTER(_ffi.DLManagedTensor)


def _destroy_capsule(capsule: Optional[int]) -> None:
    # Only an unconsumed capsule still owns its tensor.
    if _IsValid(capsule, _V_NAME):
        t: Any = ctypes.cast(_GetPointer(capsule, _V_NAME), _PV)
    elif _IsValid(capsule, _L_NAME):
        t = ctypes.cast(_GetPointer(capsule, _L_NAME), _PL)
    else:
        return
    if t and t.contents.deleter:
        t.contents.deleter(t)


_capsule_destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_destroy_capsule)
_DESTRUCTOR = ctypes.cast(_capsule_destructor, ctypes.c_void_p)

_DL_CODES = {"i": _ffi.kDLInt, "u": _ffi.kDLUInt, "f": _ffi.kDLFloat,
             "b": _ffi.kDLBool, "c": _ffi.kDLComplex}
_NP_KINDS = {v: k for k, v in _DL_CODES.items()}


def _have(name: str) -> None:
    if name not in _ffi.DECLARED:
        raise python_error("T4A_ERROR_UNSUPPORTED", name,
                           f"the loaded library ({_ffi.LIBRARY_PATH}) has no DLPack "
                           f"support ({name} is not exported)")


def export(buf: _Buffer, stream: Optional[int], max_version: Optional[tuple[int, int]],
           dl_device: Optional[tuple[int, int]], copy: Optional[bool]) -> Any:
    """Buffer.__dlpack__."""
    dev = buf.__dlpack_device__()
    if dl_device is not None and tuple(dl_device) != dev:
        raise BufferError(f"Buffer.__dlpack__: dl_device {tuple(dl_device)} asked, the "
                          f"buffer is on {dev}; t4acuda does not copy across devices")
    if copy:
        raise BufferError("Buffer.__dlpack__: copy=True is not supported (t4acuda "
                          "exports the buffer itself); copy it first with Buffer.copy_from")
    if stream is None:
        stream = 1  # CUDA: None means the legacy default stream
    versioned = max_version is not None and tuple(max_version) >= (1, 0)
    fn = "t4a_buffer_to_dlpack" if versioned else "t4a_buffer_to_dlpack_legacy"
    _have(fn)
    if not buf.shape:
        raise BufferError("Buffer.__dlpack__: a 0-d buffer is not exported (ndim 0 in "
                          "t4a_dlpack_desc means 1-D over the buffer); view it with shape (1,)")
    desc = _ffi.new("t4a_dlpack_desc")
    dt = buf.dtype
    code = _DL_CODES.get(dt.kind)
    if code is None:
        raise BufferError(f"Buffer.__dlpack__: dtype {dt} has no DLPack code")
    desc.dtype_code = code
    desc.dtype_bits = dt.itemsize * 8
    desc.dtype_lanes = 1
    shape = (ctypes.c_int64 * max(len(buf.shape), 1))(*buf.shape)
    desc.ndim = len(buf.shape)
    desc.shape = ctypes.addressof(shape)
    if buf.readonly:
        desc.flags = _ffi.CONSTANTS["T4A_DLPACK_READ_ONLY"]
    out = ctypes.c_void_p()
    check(getattr(C, fn)(buf.runtime._live(), buf._live(), ctypes.byref(desc), int(stream),
                         ctypes.byref(out)))
    return _New(out.value, _V_NAME if versioned else _L_NAME, _DESTRUCTOR.value)


def _np_dtype(dt: Any) -> Optional[_np.dtype[Any]]:
    """The NumPy dtype of a DLPack one, None when no allowed dtype
    (_checks.dtype_ok) has its code and bits (the import is then bytes)."""
    kind = _NP_KINDS.get(dt.code)
    if _np is None or kind is None or dt.lanes != 1 or dt.bits % 8:
        return None
    try:
        d = _np.dtype(f"{kind}{dt.bits // 8}" if kind != "b" else "bool")
    except TypeError:
        return None
    return d if d.itemsize * 8 == dt.bits and _checks.dtype_ok(d) else None


def _compact(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether element strides are C-contiguous for shape (extent-1
    dimensions may have any stride; an empty tensor is compact)."""
    if 0 in shape:
        return True
    step = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != step:
            return False
        step *= n
    return True


def cuda_device_of(obj: object) -> int:
    """The CUDA device ordinal of a DLPack producer; TypeError or
    InvalidArgument for anything else."""
    if not hasattr(obj, "__dlpack__") or not hasattr(obj, "__dlpack_device__"):
        raise TypeError(f"from_dlpack: {type(obj).__name__} has no __dlpack__/"
                        "__dlpack_device__")
    dev_type, dev_id = obj.__dlpack_device__()
    if int(dev_type) != _ffi.kDLCUDA:
        raise python_error("T4A_ERROR_INVALID_ARGUMENT", "from_dlpack",
                           f"the tensor is on DLPack device type {int(dev_type)}, not "
                           f"CUDA ({_ffi.kDLCUDA})")
    return int(dev_id)


def take(obj: Producer, runtime: _Runtime, same_runtime: bool) -> tuple[
        ctypes.Structure, int, Optional[_np.dtype[Any]], Optional[tuple[int, ...]], bool]:
    """from_dlpack's work: the producer's capsule taken by the library.
    Returns (t4a_buffer, nbytes, dtype, shape, readonly) for a Buffer
    (dtype and shape None: bytes); the caller checks the description.

    Inside a raw scope of the runtime, the producer is asked for the tensor
    with the runtime's stream as the consumer stream (so its pending work is
    ordered before the runtime's stream, no host wait); the scope ends, and
    t4a_buffer_from_dlpack takes the tensor (its deleter runs exactly once,
    after the buffer's last use). `same_runtime`: obj is a Buffer of
    `runtime` (one stream: no ordering, and its export cannot run inside
    that runtime's raw scope, REENTRANT)."""
    if same_runtime:
        cap = obj.__dlpack__(stream=-1, max_version=(1, 0))
    else:
        with runtime.raw() as scope:
            stream = scope.stream
            try:
                cap = obj.__dlpack__(stream=stream, max_version=(1, 0))
            except TypeError:  # a producer older than DLPack 1.0's protocol
                cap = obj.__dlpack__(stream=stream)
    out = _ffi.STRUCTS["t4a_buffer"]()
    if _IsValidObj(cap, _V_NAME):
        _have("t4a_buffer_from_dlpack")
        ptr = _GetPointerObj(cap, _V_NAME)
        t = ctypes.cast(ptr, _PV).contents
        readonly = bool(t.flags & _ffi.DLPACK_FLAG_BITMASK_READ_ONLY)
        tensor = t.dl_tensor
        used, fn = _V_USED, C.t4a_buffer_from_dlpack
    elif _IsValidObj(cap, _L_NAME):
        _have("t4a_buffer_from_dlpack_legacy")
        ptr = _GetPointerObj(cap, _L_NAME)
        tensor = ctypes.cast(ptr, _PL).contents.dl_tensor
        readonly = True
        used, fn = _L_USED, C.t4a_buffer_from_dlpack_legacy
    else:
        raise BufferError("from_dlpack: __dlpack__ did not return an unconsumed "
                          "'dltensor_versioned' or 'dltensor' capsule")
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if tensor.strides:
        strides = tuple(tensor.strides[i] for i in range(tensor.ndim))
        if not _compact(shape, strides):
            # A Buffer has no strides: read as C-order it would misplace
            # elements. Refused before the capsule is consumed.
            raise BufferError(f"from_dlpack: the tensor's strides {strides} (in elements) "
                              f"are not C-contiguous for shape {shape}; make it "
                              "contiguous first (e.g. .contiguous() or ascontiguousarray)")
    dtype = _np_dtype(tensor.dtype)
    # Consumed from here on: the library owns the tensor in every case.
    if _SetName(cap, used) != 0:
        raise BufferError("from_dlpack: could not mark the capsule consumed")
    check(fn(runtime._live(), ptr, ctypes.byref(out)))
    info = _ffi.new("t4a_buffer_info")
    check(C.t4a_buffer_info_get(out, ctypes.byref(info)))
    # dtype None: bytes (and no shape)
    return out, info.bytes, dtype, shape if dtype is not None else None, readonly
