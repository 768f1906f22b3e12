"""Handle classes over the C API: Runtime, Buffer, HostBuffer, Download,
Artifact, Module, Kernel, PreparedLaunch, Completion, RawScope, Graph,
Capture (and ClusterOccupancy, a result)."""

from __future__ import annotations

import builtins
import ctypes
import sys
import threading
from typing import (TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping, NamedTuple,
                    Optional, Sequence, SupportsFloat, SupportsIndex, SupportsInt, TypeVar,
                    Union)

from . import _checks, _dlpack, _ffi, _reuse
from ._errors import check, error_for, python_error, Error

C = _ffi.C
S = _ffi.STRUCTS
K = _ffi.CONSTANTS
_byref = ctypes.byref

try:
    import numpy as _np
except ImportError:  # numpy is needed only for the array helpers
    _np = None  # type: ignore[assignment]

if TYPE_CHECKING:
    import os

    import numpy.typing as npt

    from ._checks import Shape
    from ._dlpack import Producer

    Array = npt.NDArray[Any]
    DType = _np.dtype[Any]
    Desc = tuple[int, DType, tuple[int, ...]]  # a Buffer's (nbytes, dtype, shape)
    Dims = Union[int, Sequence[int]]  # grid and block: 1 to 3 extents
    # A thread block cluster (launch attributes): 1 to 3 positive extents.
    Cluster = Union[int, tuple[int], tuple[int, int], tuple[int, int, int]]
    Scalar = Union[ctypes._SimpleCData[Any], _np.generic]  # a typed kernel argument
    KernelArg = Union["Buffer", "DevicePointer", Scalar]
    PreparedArg = Union["Buffer", "DevicePointer", int, float, Scalar]
    ArgType = Union[str, type, Callable[..., ctypes._SimpleCData[Any]], DType]
    Path = Union[str, "os.PathLike[str]"]
    # A foreign stream: a CUstream int or another library's stream object.
    ForeignStream = Union[int, Any]

# Runtime(reuse_bytes=...)'s default: closed buffers kept for reuse, per
# runtime (docs/python.md, "Buffer reuse").
DEFAULT_REUSE_BYTES = 64 << 20
_OUT_OF_MEMORY = K["T4A_ERROR_OUT_OF_MEMORY"]
_new_buffer = object.__new__

_C = TypeVar("_C", bound="ctypes._SimpleCData[Any]")
_O = TypeVar("_O", bound="_Owned")


def _need_numpy(what: str) -> None:
    if _np is None:
        raise ImportError(f"t4acuda: {what} needs NumPy (pip install numpy)")


_BYTES = _np.dtype(_np.uint8) if _np is not None else "uint8"

# Buffer._take's lock for a Buffer whose runtime has no reuse (one made
# by hand, as the tests do); Runtime's buffers use their runtime's.
_NO_REUSE = _reuse.BufferReuse(0)


def _describe(entry: str, nbytes: SupportsIndex, dtype: npt.DTypeLike = None,
              shape: Optional[Shape] = None) -> Desc:
    """A Buffer's (nbytes, dtype, shape), checked by _checks: dtype None
    is bytes; shape None is as many elements as fit."""
    if type(nbytes) is not int or not 0 <= nbytes <= _checks.INT64_MAX:  # fast path
        nbytes = _checks.count(entry, "nbytes", nbytes)
    if dtype is None and shape is None:
        return nbytes, _BYTES, (nbytes,)
    dt = _checks.dtype(entry, "uint8" if dtype is None else dtype)
    if shape is None:
        shape = nbytes // dt.itemsize
    return nbytes, dt, _checks.layout(entry, shape, dt, nbytes)[0]


def _handle(type_name: str, id_: int) -> ctypes.Structure:
    h = S[type_name]()
    h.id = id_
    return h


def _get_string(fn: Callable[..., int], *args: Any) -> bytes:
    """Query-then-copy of a string or bytes out of `fn(*args, buf, cap, &needed)`."""
    needed = ctypes.c_size_t(0)
    check(fn(*args, None, 0, _byref(needed)))
    buf = ctypes.create_string_buffer(max(needed.value, 1))
    check(fn(*args, buf, needed.value, _byref(needed)))
    return buf.raw[:needed.value]


# ---------------------------------------------------------------- versions


def version() -> tuple[int, int, int]:
    """The loaded library's version as (major, minor, patch)."""
    v = C.t4a_version()
    return (v // 10000, (v // 100) % 100, v % 100)


def version_string() -> str:
    return C.t4a_version_string().decode()


def built_cuda_version() -> int:
    """The CUDA version the library was built against (e.g. 13000)."""
    return C.t4a_built_cuda_version()


def status_name(status: int) -> str:
    return C.t4a_status_name(status).decode()


def status_description(status: int) -> str:
    return C.t4a_status_description(status).decode()


def last_error_clear() -> None:
    C.t4a_last_error_clear()


def driver_version() -> int:
    v = ctypes.c_int32(0)
    check(C.t4a_driver_version(_byref(v)))
    return v.value


def driver_lacks() -> list[str]:
    """What the loaded CUDA driver lacks, one line per missing optional
    entry point: "<entry point> (CUDA <major.minor>): <what is unavailable>"
    (t4a_driver_lacks); an empty list when it has everything."""
    text = _get_string(C.t4a_driver_lacks).rstrip(b"\0").decode("utf-8", "replace")
    return text.splitlines()


def nvrtc_version() -> tuple[int, int]:
    major, minor = ctypes.c_int32(0), ctypes.c_int32(0)
    check(C.t4a_nvrtc_version(_byref(major), _byref(minor)))
    return (major.value, minor.value)


def device_count() -> int:
    n = ctypes.c_int32(0)
    check(C.t4a_device_count(_byref(n)))
    return n.value


def _struct_dict(s: ctypes.Structure) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, *_ in s._fields_:
        if name == "struct_size" or name.startswith("reserved"):
            continue
        v = getattr(s, name)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, ctypes.Array):
            v = bytes(v) if v._type_ is ctypes.c_uint8 else list(v)
        elif isinstance(v, ctypes.Structure) and hasattr(v, "id"):
            v = v.id
        out[name] = v
    return out


def device_info(ordinal: int = 0) -> dict[str, Any]:
    info = _ffi.new("t4a_device_info")
    check(C.t4a_device_info_get(ordinal, _byref(info)))
    return _struct_dict(info)


def device_can_access_peer(ordinal: int, peer: int) -> bool:
    v = ctypes.c_int32(0)
    check(C.t4a_device_can_access_peer(ordinal, peer, _byref(v)))
    return bool(v.value)


def compile_stats() -> dict[str, Any]:
    s = _ffi.new("t4a_compile_stats")
    check(C.t4a_compile_stats_get(_byref(s)))
    return _struct_dict(s)


def process_stats() -> dict[str, Any]:
    s = _ffi.new("t4a_process_stats")
    check(C.t4a_process_stats_get(_byref(s)))
    return _struct_dict(s)


def process_fault() -> Optional[dict[str, Any]]:
    """The process's first sticky device fault, or None."""
    s = _ffi.new("t4a_process_fault")
    check(C.t4a_process_fault_get(_byref(s)))
    return _struct_dict(s) if s.has_fault else None


_LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p)
_log_keep: list[Any] = [None]


def set_log_callback(fn: Optional[Callable[[int, str], object]],
                     max_level: Optional[int] = None) -> None:
    """Routes the library's log to `fn(level, message)` (None: back to the
    default stderr logger). The callback runs on whatever thread logs, with
    no library lock held; exceptions in it are printed and dropped."""
    if max_level is None:
        max_level = K["T4A_LOG_WARN"]
    if fn is None:
        check(C.t4a_set_log_callback(None, None, max_level))
        _log_keep[0] = None
        return

    def trampoline(_user: Optional[int], level: int, message: bytes) -> None:
        try:
            fn(level, message.decode("utf-8", "replace"))
        except Exception:  # never let an exception unwind into C
            import traceback
            traceback.print_exc()

    cb = _LOG_FN(trampoline)
    check(C.t4a_set_log_callback(ctypes.cast(cb, ctypes.c_void_p), None, max_level))
    _log_keep[0] = cb  # the library may call it until replaced


# ---------------------------------------------------------------- scalars

_SCALAR_TYPES: dict[str, type[ctypes._SimpleCData[Any]]] = {
    "i8": ctypes.c_int8, "u8": ctypes.c_uint8, "i16": ctypes.c_int16,
    "u16": ctypes.c_uint16, "i32": ctypes.c_int32, "u32": ctypes.c_uint32,
    "i64": ctypes.c_int64, "u64": ctypes.c_uint64, "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}


def _scalar_ctor(ct: type[_C], name: str) -> Callable[[Any], _C]:
    def make(value: Any) -> _C:
        return ct(value)
    make.__name__ = name
    make.__doc__ = f"A kernel argument of C type {ct.__name__[2:]}."
    return make


i8: Callable[[SupportsIndex], ctypes.c_int8] = _scalar_ctor(ctypes.c_int8, "i8")
u8: Callable[[SupportsIndex], ctypes.c_uint8] = _scalar_ctor(ctypes.c_uint8, "u8")
i16: Callable[[SupportsIndex], ctypes.c_int16] = _scalar_ctor(ctypes.c_int16, "i16")
u16: Callable[[SupportsIndex], ctypes.c_uint16] = _scalar_ctor(ctypes.c_uint16, "u16")
i32: Callable[[SupportsIndex], ctypes.c_int32] = _scalar_ctor(ctypes.c_int32, "i32")
u32: Callable[[SupportsIndex], ctypes.c_uint32] = _scalar_ctor(ctypes.c_uint32, "u32")
i64: Callable[[SupportsIndex], ctypes.c_int64] = _scalar_ctor(ctypes.c_int64, "i64")
u64: Callable[[SupportsIndex], ctypes.c_uint64] = _scalar_ctor(ctypes.c_uint64, "u64")
f32: Callable[[SupportsFloat], ctypes.c_float] = _scalar_ctor(ctypes.c_float, "f32")
f64: Callable[[SupportsFloat], ctypes.c_double] = _scalar_ctor(ctypes.c_double, "f64")

_NP_CTYPES: dict[str, type[ctypes._SimpleCData[Any]]] = {
    "int8": ctypes.c_int8, "uint8": ctypes.c_uint8, "int16": ctypes.c_int16,
    "uint16": ctypes.c_uint16, "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
    "float64": ctypes.c_double, "bool": ctypes.c_bool,
}


class DevicePointer:
    """A raw device address passed as a kernel argument as is."""
    __slots__ = ("value",)

    def __init__(self, value: SupportsInt) -> None:
        self.value = int(value)

    def __repr__(self) -> str:
        return f"t4acuda.DevicePointer({self.value:#x})"


def _as_scalar(arg: object, index: int) -> ctypes._SimpleCData[Any]:
    """A ctypes scalar for a typed kernel argument; TypeError for a plain
    Python number (its C type would be a guess)."""
    if isinstance(arg, ctypes._SimpleCData):
        return arg
    if _np is not None and isinstance(arg, _np.generic):
        ct = _NP_CTYPES.get(arg.dtype.name)
        if ct is None:
            raise TypeError(f"kernel argument {index}: NumPy scalar of dtype "
                            f"{arg.dtype} is not a supported kernel argument")
        return ct(arg.item())
    if isinstance(arg, (bool, int, float)):
        raise TypeError(
            f"kernel argument {index}: a plain Python {type(arg).__name__} ({arg!r}) "
            "has no C type; say which: t4acuda.f32(x), t4acuda.f64(x), t4acuda.i32(x), "
            "t4acuda.u64(x), ... or a NumPy scalar such as numpy.float32(x)")
    raise TypeError(f"kernel argument {index}: {type(arg).__name__} is not a kernel "
                    "argument (Buffer, DevicePointer, t4acuda.f32(x)-style scalar or "
                    "NumPy scalar)")


# ---------------------------------------------------------------- objects


class _Owned:
    """An owned reference to one library handle; close() releases it once."""
    # Empty, so that Buffer's __slots__ leave it without a __dict__; the
    # other subclasses declare none and have one.
    __slots__ = ()
    _release = ""  # name of the C release function
    _type = ""     # name of the handle struct
    # The instance's own once _set (Buffer: a slot, always set). Default
    # None: closed, for an object whose __init__ stopped before _set.
    _h: Optional[ctypes.Structure] = None

    def _set(self, handle: ctypes.Structure) -> None:
        # mypy sees only _Owned's empty __slots__; every subclass has a
        # __dict__ or an _h slot.
        self._h = handle  # type: ignore[misc]

    @property
    def handle(self) -> ctypes.Structure:
        """The C handle (a ctypes struct with .id); 0 once closed."""
        return self._h if self._h is not None else S[self._type]()

    @property
    def closed(self) -> bool:
        """True once close() released this reference."""
        return self._h is None

    def _live(self) -> ctypes.Structure:
        h = self._h
        if h is None:
            raise python_error("T4A_ERROR_INVALID_HANDLE", type(self).__name__,
                               f"this {type(self).__name__} was closed")
        return h

    def _take(self) -> Optional[ctypes.Structure]:
        """The handle, taken from this object (None: closed already). One
        dict.pop, a single step: of two threads closing at once, exactly
        one gets the handle."""
        h: Optional[ctypes.Structure] = self.__dict__.pop("_h", None)
        return h

    def close(self) -> None:
        h = self._take()
        if h is not None and h.id:
            check(getattr(C, self._release)(h))

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        # copy.copy, copy.deepcopy and pickle would make a second owner of
        # the same handle (released twice, or kept for reuse twice).
        name = type(self).__name__
        more = f"; {name}.retain() gives another reference" if hasattr(self, "retain") else ""
        raise TypeError(f"a t4acuda.{name} cannot be copied or pickled: it owns a "
                        f"library handle{more}")

    def __enter__(self: _O) -> _O:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if self._h is None:
            return  # closed already: nothing to release
        if sys is None or sys.is_finalizing():
            return  # the library may be unloading; the process is ending anyway
        try:
            self.close()
        except Exception:  # nothing may escape __del__
            pass

    def _repr_fields(self) -> list[str]:
        """What __repr__ shows between the class name and "closed"."""
        return [f"id={self._h.id:#x}"] if self._h is not None else []

    def __repr__(self) -> str:
        # Never raises, open or closed: a failed query leaves its field out.
        try:
            fields = self._repr_fields()
        except Exception:
            fields = ["?"]
        if self._h is None:
            fields.append("closed")
        return " ".join([f"<t4acuda.{type(self).__name__}", *fields]) + ">"


class Completion(_Owned):
    """A point in a runtime's stream (Runtime.record())."""
    _release, _type = "t4a_completion_release", "t4a_completion"

    def __init__(self, handle: ctypes.Structure, device: Optional[int] = None) -> None:
        self._set(handle)
        self._device = device  # the recording runtime's device ordinal

    def _repr_fields(self) -> list[str]:
        out = [] if self._device is None else [f"device={self._device}"]
        if self._h is not None:
            # t4a_completion_poll only asks (the state a poll() would say).
            st = C.t4a_completion_poll(self._h)
            out.append("done" if st == 0 else "pending" if st == K["T4A_NOT_READY"]
                       else f"status={_ffi.STATUS_NAMES.get(st, st)}")
        return out

    def poll(self) -> bool:
        """True when the work before it is done; never waits."""
        st = C.t4a_completion_poll(self._live())
        if st == K["T4A_NOT_READY"]:
            return False
        check(st)
        return True

    def wait(self) -> None:
        check(C.t4a_completion_wait(self._live()))

    def retain(self) -> Completion:
        """Another owned reference to the same completion."""
        h = self._live()
        check(C.t4a_completion_retain(h))
        return Completion(_handle("t4a_completion", h.id), self._device)


class RawScope:
    """A raw scope (Runtime.raw()): the runtime's context is current and its
    stream (an int, a CUstream) may be used directly until end()."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._h: Optional[ctypes.Structure] = S["t4a_raw_scope"]()
        info = _ffi.new("t4a_raw_info")
        check(C.t4a_raw_begin(runtime._live(), _byref(self._h), _byref(info)))
        self.stream: int = info.stream or 0
        self.context: int = info.context or 0
        self.device_ordinal: int = info.device_ordinal

    def buffer_pointer(self, buffer: Buffer) -> int:
        """The buffer's CUdeviceptr (the buffer is never kept for reuse)."""
        buffer._share()
        p = ctypes.c_uint64(0)
        check(C.t4a_raw_buffer(self._h, buffer._live(), _byref(p)))
        return p.value

    def end(self) -> None:
        if self._h is not None:
            h, self._h = self._h, None
            check(C.t4a_raw_end(h))

    def __enter__(self) -> RawScope:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()

    def __repr__(self) -> str:
        state = "ended" if self._h is None else f"stream={self.stream:#x}"
        return f"<t4acuda.RawScope device={self.device_ordinal} {state}>"


CaptureMode = Literal["global", "thread_local", "relaxed"]
_CAPTURE_MODES: dict[str, str] = {"global": "T4A_CAPTURE_GLOBAL",
                                  "thread_local": "T4A_CAPTURE_THREAD_LOCAL",
                                  "relaxed": "T4A_CAPTURE_RELAXED"}


class Graph(_Owned):
    """A captured, instantiated CUDA graph of one runtime (Capture.graph;
    experimental). It keeps the buffers, modules and host buffers its work
    uses alive until closed and its last replay has completed; launch()
    replays it on its runtime's stream."""
    _release, _type = "t4a_graph_release", "t4a_graph"

    def __init__(self, runtime: Runtime, handle: ctypes.Structure) -> None:
        self._set(handle)
        self.runtime = runtime

    def _repr_fields(self) -> list[str]:
        out = [f"device={getattr(self.runtime, '_ordinal', '?')}"]
        if self._h is not None:
            out.append(f"nodes={self.info()['node_count']}")
        return out

    def info(self) -> dict[str, Any]:
        """node_count, kept_objects, launches (replays enqueued)."""
        i = _ffi.new("t4a_graph_info")
        check(C.t4a_graph_info_get(self._live(), _byref(i)))
        return _struct_dict(i)

    def launch(self) -> None:
        """Replays the graph on its runtime's stream (t4a_graph_launch)."""
        check(C.t4a_graph_launch(self.runtime._live(), self._live()))

    def retain(self) -> Graph:
        h = self._live()
        check(C.t4a_graph_retain(h))
        return Graph(self.runtime, _handle("t4a_graph", h.id))


class Capture:
    """A graph capture of a runtime's stream (Runtime.capture(); a context
    manager; experimental). Entering begins it (t4a_capture_begin); leaving
    ends it (t4a_capture_end) and makes .graph. If the block raises, the
    capture is ended, the graph released and the exception propagates."""

    def __init__(self, runtime: Runtime, mode: CaptureMode = "global") -> None:
        if mode not in _CAPTURE_MODES:
            raise python_error("T4A_ERROR_INVALID_ARGUMENT", "Runtime.capture",
                               f"mode must be one of {sorted(_CAPTURE_MODES)}, not {mode!r}")
        self.runtime = runtime
        self.mode = mode
        self._graph: Optional[Graph] = None
        self._state = "new"  # new, capturing, ended, failed

    @property
    def graph(self) -> Graph:
        """The captured graph, once the capture ended without an exception."""
        if self._graph is None:
            raise python_error("T4A_ERROR_CAPTURING", "Capture.graph",
                               f"no graph: the capture is {self._state}")
        return self._graph

    def __enter__(self) -> Capture:
        if self._state != "new":
            raise python_error("T4A_ERROR_CAPTURING", "Capture",
                               "a Capture is entered once; make another with "
                               "Runtime.capture()")
        opts = _ffi.new("t4a_capture_options")
        opts.mode = K[_CAPTURE_MODES[self.mode]]
        reuse = self.runtime._reuse
        reuse.capture_edge()  # odd: capturing (the kept buffers wait)
        try:
            check(C.t4a_capture_begin(self.runtime._live(), _byref(opts)))
        except BaseException:
            reuse.capture_edge()
            raise
        self._state = "capturing"
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], *exc: object) -> None:
        h = S["t4a_graph"]()
        try:
            st = C.t4a_capture_end(self.runtime._live(), _byref(h))
        finally:
            self.runtime._reuse.capture_edge()  # even again, a new epoch
        if exc_type is not None:  # discard the graph; the exception propagates
            self._state = "failed"
            if st == 0:
                # Not checked: the block's exception is what the caller
                # sees; a failed release of a graph never replayed leaves
                # its handle live, which the process counters show.
                C.t4a_graph_release(h)
            return
        if st != 0:
            self._state = "failed"
            check(st)
        self._state = "ended"
        self._graph = Graph(self.runtime, h)

    def __repr__(self) -> str:
        return (f"<t4acuda.Capture device={getattr(self.runtime, '_ordinal', '?')} "
                f"mode={self.mode} {self._state}>")


def _foreign_stream(entry: str, s: object) -> int:
    """The CUstream of `s` as an int: an int itself (0 is the legacy
    default stream), or a stream object: the CUDA stream protocol
    (__cuda_stream__() -> (version, handle); cuda.core, recent PyTorch),
    .cuda_stream (torch.cuda.Stream) or .ptr (cupy.cuda.Stream). TypeError
    for anything else (a bool, a float, a str), InvalidArgument for a
    value outside [0, 2**64)."""
    v: object = s
    if not isinstance(s, int):
        proto = getattr(s, "__cuda_stream__", None)
        if callable(proto):
            got = proto()
            if not (isinstance(got, tuple) and len(got) == 2):
                raise TypeError(f"{entry}: {type(s).__name__}.__cuda_stream__() gave "
                                f"{got!r}, not (version, handle)")
            v = got[1]
        else:
            v = getattr(s, "cuda_stream", getattr(s, "ptr", None))
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{entry}: stream must be a CUstream int or a stream object "
                        f"(__cuda_stream__, .cuda_stream or .ptr), not "
                        f"{type(s).__name__} {s!r}")
    if not 0 <= v < 2**64:
        raise python_error("T4A_ERROR_INVALID_ARGUMENT", entry,
                           f"stream {v} is not a CUstream (0 to 2**64 - 1)")
    return int(v)


def _stream_priority(v: object) -> int:
    """Runtime's `stream_priority` as a Python int of int32 range (the range
    of the device is the library's check): a bool, float or str is
    TypeError, a value that would wrap in int32 InvalidArgument."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"Runtime: stream_priority must be an int, not "
                        f"{type(v).__name__} {v!r}")
    if not -2**31 <= v < 2**31:
        raise python_error("T4A_ERROR_INVALID_ARGUMENT", "Runtime",
                           f"stream_priority is {v}; it must be an int32 within the "
                           "device's priority range (0 the default, lower runs first)")
    return int(v)


class Runtime(_Owned):
    """One device, one stream, one memory pool (t4a_runtime_create).

    close() (or leaving a `with` block) destroys it: that waits until its
    stream has drained. __del__ destroys it too, except at interpreter
    shutdown; objects made from it stay valid handles after it is destroyed
    (see t4a_runtime_destroy), so close order does not matter.
    """
    _release, _type = "t4a_runtime_destroy", "t4a_runtime"

    def __init__(self, device: int = 0, *, stream_priority: int = 0,
                 reuse_bytes: int = DEFAULT_REUSE_BYTES, **options: int) -> None:
        """`options` are the fields of t4a_runtime_options by name
        (pool_release_threshold=..., staging_bytes=..., ...).
        `stream_priority`: the priority of the runtime's stream, 0 (the
        default) or within the device's range (lower runs first; on Hopper
        0 down to -5); outside it InvalidArgument naming the range.
        Runtime.stream_priority reports the priority in force.
        `reuse_bytes`: at most this many bytes of closed buffers are kept
        for later allocations of the same size (docs/python.md, "Buffer
        reuse"; 0 keeps none; reuse_stats() counts it)."""
        keep = _checks.count("Runtime", "reuse_bytes", reuse_bytes)
        opts = _ffi.new("t4a_runtime_options")
        opts.device_ordinal = device
        names = {f[0] for f in opts._fields_}
        for k, v in options.items():
            if k not in names or k == "struct_size" or k.startswith("reserved"):
                raise TypeError(f"Runtime: unknown option {k!r} (options: "
                                f"{sorted(n for n in names if n != 'struct_size' and not n.startswith('reserved'))})")
            setattr(opts, k, v)
        opts.stream_priority = _stream_priority(stream_priority)
        h = S["t4a_runtime"]()
        check(C.t4a_runtime_create(_byref(opts), _byref(h)))
        self._set(h)
        self._stream: Optional[int] = None
        self._ordinal: int = opts.device_ordinal  # for repr; .device asks the library
        self._name: Optional[str] = None
        self._reuse = _reuse.BufferReuse(keep)

    @property
    def handle(self) -> ctypes.Structure:
        """The C handle. Code that has it may capture this runtime's stream
        into a graph behind Python's back, so from now on closed buffers
        of this runtime are released, never kept for reuse."""
        self._release_kept(close=True)
        return super().handle

    def _release_kept(self, close: bool = False) -> int:
        """Releases the buffers kept for reuse (all of them, even after a
        failure, which is raised afterwards); with `close` keeps none from
        now on. Returns how many were released."""
        reuse = self.__dict__.get("_reuse")
        if reuse is None:  # __init__ stopped early
            return 0
        handles = reuse.drain(close)
        failed = 0
        for h in handles:
            failed = C.t4a_buffer_release(h) or failed
        check(failed)
        return len(handles)

    def close(self) -> None:
        try:
            self._release_kept(close=True)
        finally:
            super().close()

    def reuse_stats(self) -> dict[str, int]:
        """Buffer reuse (docs/python.md, "Buffer reuse"): limit_bytes, kept
        and kept_bytes now; hits (allocations served), misses (allocations
        of a size that could be kept but was not), returned (closes that
        kept their buffer), refused (closes over the limit), released
        (kept buffers given back to the library by trim, close or an
        allocation that ran out of memory)."""
        return self._reuse.stats()

    def _repr_fields(self) -> list[str]:
        if self._name is None:
            try:  # once, and only for repr
                self._name = str(device_info(self._ordinal)["name"])
            except Exception:
                self._name = ""
        return [f"device={self._ordinal}"] + ([f"name={self._name!r}"] if self._name else [])

    def synchronize(self) -> None:
        check(C.t4a_runtime_synchronize(self._live()))

    def trim(self) -> None:
        """Releases the buffers kept for reuse, then t4a_runtime_trim."""
        self._release_kept()
        check(C.t4a_runtime_trim(self._live()))

    def info(self) -> dict[str, Any]:
        info = _ffi.new("t4a_runtime_info")
        check(C.t4a_runtime_info_get(self._live(), _byref(info)))
        return _struct_dict(info)

    @property
    def stream(self) -> int:
        """The runtime's CUstream as an int."""
        if self._stream is None:
            self._stream = self.info()["stream"] or 0
        return self._stream

    @property
    def device(self) -> int:
        """The device ordinal."""
        return self.info()["device_ordinal"]

    @property
    def stream_priority(self) -> int:
        """The priority of the runtime's stream as the driver reports it
        (t4a_runtime_info::stream_priority; Runtime(stream_priority=...))."""
        p: int = self.info()["stream_priority"]
        return p

    def stats(self) -> dict[str, Any]:
        s = _ffi.new("t4a_runtime_stats")
        check(C.t4a_runtime_stats_get(self._live(), _byref(s)))
        return _struct_dict(s)

    def enable_peer(self, peer: Runtime) -> None:
        check(C.t4a_runtime_enable_peer(self._live(), peer._live()))

    # -- memory
    def alloc(self, nbytes: SupportsIndex, zero: bool = False, dtype: npt.DTypeLike = None,
              shape: Optional[Shape] = None) -> Buffer:
        """A device buffer of `nbytes` bytes (zero-filled in stream order if
        `zero`); dtype/shape describe it for download() and DLPack."""
        reuse = self._reuse
        epoch = reuse.epoch
        if (type(nbytes) is int and 0 < nbytes <= reuse.limit and dtype is None
                and shape is None and not zero and not epoch & 1):
            # The hot path: plain bytes of a size that may be kept. The
            # description is _describe's, inline (reuse.limit <= INT64_MAX).
            desc: Desc = (nbytes, _BYTES, (nbytes,))
            kept = reuse.take(nbytes)
            if kept is not None:  # Buffer._of, inline
                b = _new_buffer(Buffer)
                b._h, b.runtime, b._desc, b._readonly, b._reuse_epoch = \
                    kept, self, desc, False, epoch
                return b
            n = nbytes
        else:
            desc = _describe("Runtime.alloc", nbytes, dtype, shape)
            n = desc[0]
            if not zero and not epoch & 1 and 0 < n <= reuse.limit:
                kept = reuse.take(n)
                if kept is not None:
                    return Buffer._of(self, kept, desc, False, epoch)
        h = S["t4a_buffer"]()
        flags = K["T4A_BUFFER_ZERO"] if zero else 0
        st = C.t4a_buffer_alloc(self._live(), n, flags, _byref(h))
        if st == _OUT_OF_MEMORY and self._release_kept():
            st = C.t4a_buffer_alloc(self._live(), n, flags, _byref(h))  # once more
        check(st)
        return Buffer._of(self, h, desc, False, epoch)

    def empty(self, shape: Shape, dtype: npt.DTypeLike = "float32",
              zero: bool = False) -> Buffer:
        dt = _checks.dtype("Runtime.empty", dtype)
        dims, n = _checks.layout("Runtime.empty", shape, dt)
        return self.alloc(n, zero=zero, dtype=dt, shape=dims)

    def upload(self, array: npt.ArrayLike) -> Buffer:
        """A new buffer holding a copy of `array` (any C-contiguous buffer)."""
        _need_numpy("Runtime.upload")
        a = _np.ascontiguousarray(array)
        _checks.dtype("Runtime.upload", a.dtype, "array.dtype")
        buf = self.alloc(a.nbytes, dtype=a.dtype, shape=a.shape)
        buf.upload(a)
        return buf

    def host_alloc(self, nbytes: SupportsIndex) -> HostBuffer:
        """Pinned host memory (t4a_host_buffer_alloc)."""
        n = _checks.count("Runtime.host_alloc", "nbytes", nbytes)
        h = S["t4a_host_buffer"]()
        check(C.t4a_host_buffer_alloc(self._live(), n, _byref(h)))
        return HostBuffer(h)

    # -- modules, completions
    def load(self, artifact: Artifact) -> Module:
        h = S["t4a_module"]()
        check(C.t4a_module_load(self._live(), artifact._live(), _byref(h)))
        return Module(self, h, artifact.name)

    def load_data(self, image: Union[bytes, bytearray, memoryview]) -> Module:
        """A module from a cubin/PTX/fatbin image (bytes)."""
        data = bytes(image)
        h = S["t4a_module"]()
        check(C.t4a_module_load_data(self._live(), data, len(data), _byref(h)))
        return Module(self, h)

    def record(self) -> Completion:
        h = S["t4a_completion"]()
        check(C.t4a_runtime_record(self._live(), _byref(h)))
        return Completion(h, self._ordinal)

    def wait(self, completion: Completion) -> None:
        """This runtime's stream waits for `completion` (no host wait)."""
        check(C.t4a_runtime_wait(self._live(), completion._live()))

    def wait_stream(self, stream: ForeignStream) -> None:
        """This runtime's stream waits for the work enqueued so far on a
        foreign stream: a CUstream as an int, or a stream object of another
        library (torch.cuda.Stream, cupy.cuda.Stream, cuda.core's Stream:
        anything with __cuda_stream__, .cuda_stream or .ptr). No host wait."""
        h = _foreign_stream("Runtime.wait_stream", stream)
        check(C.t4a_runtime_wait_stream(self._live(), ctypes.c_void_p(h or None)))

    def signal_stream(self, stream: ForeignStream) -> None:
        """A foreign stream (as for wait_stream) waits for this runtime's
        work so far. No host wait."""
        h = _foreign_stream("Runtime.signal_stream", stream)
        check(C.t4a_runtime_signal_stream(self._live(), ctypes.c_void_p(h or None)))

    def raw(self) -> RawScope:
        """A raw scope (context manager): .stream, .context, .buffer_pointer()."""
        return RawScope(self)

    def from_dlpack(self, obj: Producer) -> Buffer:
        return from_dlpack(obj, runtime=self)

    # -- graphs (experimental)
    def capture(self, mode: CaptureMode = "global") -> Capture:
        """A graph capture (context manager): launches, fills, copies
        between this runtime's buffers and host-buffer transfers in the
        `with` block are captured, not run; other enqueuing or waiting
        calls raise Capturing. After the block, .graph is the Graph."""
        return Capture(self, mode)

    def replay(self, graph: Graph) -> None:
        """Replays `graph` (captured on this runtime) on its stream."""
        check(C.t4a_graph_launch(self._live(), graph._live()))


class Buffer(_Owned):
    """Device memory of one runtime. dtype and shape are a description used
    by download(), DLPack and __cuda_array_interface__ (default: bytes),
    checked against nbytes when the Buffer is made (docs/python.md,
    "Validation"); nbytes, dtype, shape and readonly are read-only."""
    _release, _type = "t4a_buffer_release", "t4a_buffer"
    # Slots: smaller and faster on the reuse path. _h is read and cleared
    # under the runtime's reuse lock (close), which makes that one step.
    __slots__ = ("_h", "runtime", "_desc", "_readonly", "_reuse_epoch", "__weakref__")

    runtime: Runtime
    _desc: Desc
    _readonly: bool
    # The reuse epoch of its allocation (Runtime.alloc); None: never kept
    # for reuse (made otherwise, or shared: see _share).
    _reuse_epoch: Optional[int]

    def __init__(self, runtime: Runtime, handle: ctypes.Structure, nbytes: SupportsIndex,
                 dtype: npt.DTypeLike = None, shape: Optional[Shape] = None,
                 readonly: bool = False) -> None:
        self._h = None  # closed, should the description be refused
        self._reuse_epoch = None
        self.runtime = runtime
        desc = _describe("Buffer", nbytes, dtype, shape)
        self._desc, self._readonly = desc, bool(readonly)
        self._set(handle)

    @classmethod
    def _of(cls, runtime: Runtime, handle: ctypes.Structure, desc: Desc,
            readonly: bool = False, reuse_epoch: Optional[int] = None) -> Buffer:
        """A Buffer owning `handle`, with a description from _describe
        (`reuse_epoch`: Runtime.alloc's, see _reuse_epoch)."""
        b = cls.__new__(cls)
        b._h, b.runtime, b._desc, b._readonly, b._reuse_epoch = \
            handle, runtime, desc, bool(readonly), reuse_epoch
        return b

    def _share(self) -> None:
        """Something other than this object may now hold the memory or its
        address: never keep it for reuse (docs/python.md, "Buffer reuse")."""
        self._reuse_epoch = None

    def close(self) -> None:
        """Releases this reference. A buffer of Runtime.alloc that nothing
        else can hold is kept for the runtime's next allocation of its size
        instead, up to Runtime(reuse_bytes=...) (docs/python.md, "Buffer
        reuse")."""
        if self._reuse_epoch is not None:  # takes _h under the reuse lock
            h = self.runtime._reuse.keep(self)  # None: kept, or closed already
        else:
            h = self._take()
        if h is not None and h.id:
            check(C.t4a_buffer_release(h))

    def _take(self) -> Optional[ctypes.Structure]:
        """The handle, taken from this object (None: closed already), in
        one step under its runtime's reuse lock, the lock keep() takes it
        under: of two threads closing at once, exactly one gets it."""
        try:
            reuse = self.runtime._reuse
        except AttributeError:  # a Buffer made by hand, of no Runtime
            reuse = _NO_REUSE
        h: Optional[ctypes.Structure] = reuse.swap(self)
        return h

    def __del__(self) -> None:
        # Another thread may still reach this object (a weak reference
        # resolves until the finalizer ends), so the handle is taken under
        # the reuse lock as close() takes it. A finalizer that runs inside
        # a locked step of this same thread (the garbage collector) does not
        # wait: keep() and _take() find the lock their own and release the
        # buffer instead of keeping it (_reuse.BufferReuse._enter).
        try:
            h = self._h
        except AttributeError:  # its slots were never set
            return
        if h is None or sys is None or sys.is_finalizing():
            return  # closed already, or the library may be unloading
        try:
            if self._reuse_epoch is not None:
                h = self.runtime._reuse.keep(self)
                if h is None:
                    return
            else:
                h = self._take()
            if h is not None and h.id:
                C.t4a_buffer_release(h)  # nothing may escape __del__
        except Exception:
            pass

    @property
    def handle(self) -> ctypes.Structure:
        """The C handle (a ctypes struct with .id; 0 once closed). Code that
        has it may retain it, so the buffer is never kept for reuse."""
        self._share()
        return super().handle

    @property
    def nbytes(self) -> int:
        """Size in bytes."""
        return self._desc[0]

    @property
    def dtype(self) -> DType:
        """Element type (a NumPy dtype)."""
        return self._desc[1]

    @property
    def shape(self) -> tuple[int, ...]:
        """Extents (a tuple of ints)."""
        return self._desc[2]

    @property
    def readonly(self) -> bool:
        """A read-only DLPack import."""
        return self._readonly

    def _repr_fields(self) -> list[str]:
        n, dt, shape = self._desc
        out = [f"device={getattr(self.runtime, '_ordinal', '?')}", f"nbytes={n}",
               f"dtype={dt}", f"shape={shape}"]
        return out + ["readonly"] if self._readonly else out

    @property
    def device_pointer(self) -> int:
        return self.info()["device_pointer"]

    @property
    def is_view(self) -> bool:
        """True for a view of a module global (Module.get_global)."""
        return bool(self.info()["flags"] & _ffi.CONSTANTS["T4A_BUFFER_INFO_VIEW"])

    def info(self) -> dict[str, Any]:
        """t4a_buffer_info: bytes, device_pointer, ... (the address is out:
        the buffer is never kept for reuse)."""
        self._share()
        info = _ffi.new("t4a_buffer_info")
        check(C.t4a_buffer_info_get(self._live(), _byref(info)))
        return _struct_dict(info)

    def _retained(self, desc: Desc) -> Buffer:
        # Shared first: a close racing this releases the handle (and this
        # fails naming the closed buffer) instead of keeping it for reuse.
        self._share()
        h = self._live()
        check(C.t4a_buffer_retain(h))
        return Buffer._of(self.runtime, _handle("t4a_buffer", h.id), desc, self._readonly)

    def retain(self) -> Buffer:
        """Another owned reference to the same device memory."""
        return self._retained(self._desc)

    def view(self, dtype: npt.DTypeLike, shape: Optional[Shape] = None) -> Buffer:
        """The same memory (another reference) described as dtype/shape
        (default shape: as many elements as fit)."""
        return self._retained(_describe("Buffer.view", self.nbytes, dtype, shape))

    def _offset(self, entry: str, offset: SupportsIndex, name: str = "offset") -> int:
        return _checks.count(entry, name, offset, self.nbytes)

    def fill(self, value: SupportsIndex, offset: SupportsIndex = 0,
             nbytes: Optional[SupportsIndex] = None) -> None:
        """Sets bytes to `value` (0..255), in stream order."""
        v = _checks.count("Buffer.fill", "value", value, 255)
        off = self._offset("Buffer.fill", offset)
        n = self.nbytes - off if nbytes is None else _checks.count(
            "Buffer.fill", "nbytes", nbytes)
        check(C.t4a_buffer_fill(self.runtime._live(), self._live(), off, n, v))

    def copy_from(self, src: Buffer, nbytes: Optional[SupportsIndex] = None,
                  dst_offset: SupportsIndex = 0, src_offset: SupportsIndex = 0) -> None:
        dst = self._offset("Buffer.copy_from", dst_offset, "dst_offset")
        so = src._offset("Buffer.copy_from", src_offset, "src_offset")
        n = min(self.nbytes - dst, src.nbytes - so) if nbytes is None \
            else _checks.count("Buffer.copy_from", "nbytes", nbytes)
        check(C.t4a_buffer_copy(self.runtime._live(), self._live(), dst,
                                src._live(), so, n))

    def upload(self, src: Union[HostBuffer, npt.ArrayLike],
               offset: SupportsIndex = 0) -> None:
        """Copies host data (ndarray, bytes, HostBuffer) into the buffer.
        Returns once `src` may be reused (the library stages it)."""
        off = self._offset("Buffer.upload", offset)
        if isinstance(src, HostBuffer):
            check(C.t4a_buffer_upload_host(self.runtime._live(), self._live(), off,
                                           src._live(), 0, src.nbytes))
            return
        _need_numpy("Buffer.upload")
        a = _np.ascontiguousarray(src) if not isinstance(src, (bytes, bytearray)) \
            else _np.frombuffer(src, _np.uint8)
        _checks.dtype("Buffer.upload", a.dtype, "src.dtype")
        check(C.t4a_buffer_upload(self.runtime._live(), self._live(), off,
                                  a.ctypes.data_as(ctypes.c_void_p), a.nbytes))

    def download(self, dtype: npt.DTypeLike = None, shape: Optional[Shape] = None,
                 offset: SupportsIndex = 0, out: Optional[Array] = None) -> Array:
        """A new ndarray (default: the buffer's dtype and shape; with dtype
        or offset given, as many elements as fit after offset) or `out` (a
        writeable C-contiguous ndarray, filled with its nbytes from offset)
        with the buffer's bytes, after the work before it on the stream."""
        _need_numpy("Buffer.download")
        e = "Buffer.download"
        off = self._offset(e, offset)
        if out is None:
            dt = self.dtype if dtype is None else _checks.dtype(e, dtype)
            if shape is None:
                shape = self.shape if dtype is None and off == 0 else (
                    (self.nbytes - off) // dt.itemsize)
            out = _np.empty(_checks.layout(e, shape, dt, self.nbytes, off)[0], dt)
        elif _checks.out_array(e, out).nbytes > self.nbytes - off:
            raise _checks.bad(e, f"out has {out.nbytes} bytes; the buffer has "
                                 f"{self.nbytes - off} from offset {off}")
        check(C.t4a_buffer_download_sync(self.runtime._live(), self._live(), off,
                                         out.ctypes.data_as(ctypes.c_void_p), out.nbytes))
        return out

    def download_async(self, nbytes: Optional[SupportsIndex] = None,
                       offset: SupportsIndex = 0) -> Download:
        """A Download: the copy is enqueued now; poll()/wait() deliver it."""
        off = self._offset("Buffer.download_async", offset)
        n = self.nbytes - off if nbytes is None else _checks.count(
            "Buffer.download_async", "nbytes", nbytes)
        h = S["t4a_download"]()
        check(C.t4a_buffer_download(self.runtime._live(), self._live(), off, n,
                                    _byref(h)))
        return Download(h, n)

    def download_host(self, host: HostBuffer, nbytes: Optional[SupportsIndex] = None,
                      src_offset: SupportsIndex = 0, dst_offset: SupportsIndex = 0) -> None:
        """Into pinned memory, stream-ordered (no host wait)."""
        e = "Buffer.download_host"
        so = self._offset(e, src_offset, "src_offset")
        do = _checks.count(e, "dst_offset", dst_offset, host.nbytes)
        n = min(self.nbytes - so, host.nbytes - do) if nbytes is None \
            else _checks.count(e, "nbytes", nbytes)
        check(C.t4a_buffer_download_host(self.runtime._live(), self._live(), so,
                                         host._live(), do, n))

    def upload_host(self, host: HostBuffer, nbytes: Optional[SupportsIndex] = None,
                    dst_offset: SupportsIndex = 0, src_offset: SupportsIndex = 0) -> None:
        """From pinned memory, stream-ordered (no host wait)."""
        e = "Buffer.upload_host"
        do = self._offset(e, dst_offset, "dst_offset")
        so = _checks.count(e, "src_offset", src_offset, host.nbytes)
        n = min(self.nbytes - do, host.nbytes - so) if nbytes is None \
            else _checks.count(e, "nbytes", nbytes)
        check(C.t4a_buffer_upload_host(self.runtime._live(), self._live(), do,
                                       host._live(), so, n))

    # -- interop
    def __dlpack__(self, stream: Optional[int] = None,
                   max_version: Optional[tuple[int, int]] = None,
                   dl_device: Optional[tuple[int, int]] = None,
                   copy: Optional[bool] = None) -> Any:
        """A DLPack capsule of the buffer (no copy; see from_dlpack)."""
        self._share()
        return _dlpack.export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_ffi.kDLCUDA, self.info()["device_ordinal"])

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """CUDA Array Interface v3. "stream" is the runtime's stream: the
        consumer orders its use after the work enqueued on it so far."""
        return {
            "shape": tuple(self.shape),
            "typestr": self.dtype.str,
            "data": (self.device_pointer, bool(self.readonly)),
            "version": 3,
            "strides": None,
            "stream": self.runtime.stream or None,
        }


def _owning(runtime: Runtime, handle: ctypes.Structure, entry: str, nbytes: int,
            dtype: npt.DTypeLike, shape: Optional[Shape], readonly: bool = False) -> Buffer:
    """A Buffer of a handle the library gave; released if its description
    is refused."""
    try:
        desc = _describe(entry, nbytes, dtype, shape)
    except Exception:
        C.t4a_buffer_release(handle)
        raise
    return Buffer._of(runtime, handle, desc, readonly)


class Download(_Owned):
    """An enqueued device-to-host copy into library staging (t4a_buffer_download)."""
    _release, _type = "t4a_download_release", "t4a_download"

    def __init__(self, handle: ctypes.Structure, nbytes: Optional[int] = None) -> None:
        self._set(handle)
        self._nbytes = nbytes  # None: asked of the library on first use
        self._delivered = False

    @property
    def nbytes(self) -> int:
        if self._nbytes is None:
            n = ctypes.c_uint64(0)
            check(C.t4a_download_size(self._live(), _byref(n)))
            self._nbytes = n.value
        return self._nbytes

    def _repr_fields(self) -> list[str]:
        out = [] if self._nbytes is None and self._h is None else [f"nbytes={self.nbytes}"]
        return out + (["delivered" if self._delivered else "pending"]
                      if self._h is not None else [])

    def _dst(self, out: Optional[Array]) -> Array:
        _need_numpy("Download")
        if out is None:
            return _np.empty(self.nbytes, _np.uint8)
        if _checks.out_array("Download", out).nbytes < self.nbytes:
            raise _checks.bad("Download", f"out has {out.nbytes} bytes, the download "
                                          f"{self.nbytes}")
        return out

    def poll(self, out: Optional[Array] = None) -> Optional[Array]:
        """The data (into `out`, a writeable C-contiguous ndarray of at
        least nbytes, or a new uint8 array) when done, else None."""
        out = self._dst(out)
        st = C.t4a_download_poll(self._live(), out.ctypes.data_as(ctypes.c_void_p))
        if st == K["T4A_NOT_READY"]:
            return None
        check(st)
        self._delivered = True
        return out

    def wait(self, out: Optional[Array] = None) -> Array:
        """The data (into `out`, as for poll()) once the copy is done."""
        out = self._dst(out)
        check(C.t4a_download_wait(self._live(), out.ctypes.data_as(ctypes.c_void_p)))
        self._delivered = True
        return out


class HostBuffer(_Owned):
    """Pinned host memory. .array(dtype, shape) is a NumPy view (no copy)
    holding its own reference (t4a_host_buffer_retain): the memory is freed
    once close() (or __del__) released this handle and every view is gone."""
    _release, _type = "t4a_host_buffer_release", "t4a_host_buffer"

    def __init__(self, handle: ctypes.Structure) -> None:
        self._set(handle)
        p = ctypes.c_void_p(0)
        n = ctypes.c_uint64(0)
        check(C.t4a_host_buffer_pointer(handle, _byref(p), _byref(n)))
        self.pointer: int = p.value or 0
        self.nbytes: int = n.value

    def _repr_fields(self) -> list[str]:
        return [f"nbytes={self.nbytes}"]

    def retain(self) -> HostBuffer:
        h = self._live()
        check(C.t4a_host_buffer_retain(h))
        return HostBuffer(_handle("t4a_host_buffer", h.id))

    def array(self, dtype: npt.DTypeLike = "uint8", shape: Optional[Shape] = None) -> Array:
        """A view of the first bytes as dtype/shape (default shape: as many
        elements as fit), checked against nbytes."""
        _need_numpy("HostBuffer.array")
        dt = _checks.dtype("HostBuffer.array", dtype)
        dims, n = _checks.layout("HostBuffer.array",
                                 self.nbytes // dt.itemsize if shape is None else shape,
                                 dt, self.nbytes)
        owner = self.retain()  # the view's own reference: close() cannot free it
        raw: Any = (ctypes.c_uint8 * self.nbytes).from_address(self.pointer)
        raw._t4a_owner = owner
        return _np.frombuffer(raw, dtype=dt, count=n // dt.itemsize).reshape(dims)

    @property
    def numpy(self) -> Array:
        return self.array()


class Artifact(_Owned):
    """A compiled image (compile())."""
    _release, _type = "t4a_artifact_release", "t4a_artifact"

    def __init__(self, handle: ctypes.Structure, name: Optional[str] = None) -> None:
        self._set(handle)
        self.name = name  # compile()'s program_name
        self._about: Optional[list[str]] = None

    def _repr_fields(self) -> list[str]:
        if self._about is None and self._h is not None:
            i = self.info()  # once, and only for repr
            self._about = ["ptx" if i["output"] == K["T4A_COMPILE_PTX"] else "cubin",
                           f"cc={i['cc_major']}.{i['cc_minor']}",
                           f"image_bytes={i['image_bytes']}"]
        return ([f"name={self.name!r}"] if self.name else []) + (self._about or [])

    def info(self) -> dict[str, Any]:
        i = _ffi.new("t4a_artifact_info")
        check(C.t4a_artifact_info_get(self._live(), _byref(i)))
        return _struct_dict(i)

    @property
    def image(self) -> bytes:
        return _get_string(C.t4a_artifact_image, self._live())

    @property
    def log(self) -> str:
        return _get_string(C.t4a_artifact_log, self._live()).rstrip(b"\0").decode(
            "utf-8", "replace")

    @property
    def key(self) -> str:
        return _get_string(C.t4a_artifact_key, self._live()).rstrip(b"\0").decode()

    def lowered_name(self, index: int) -> str:
        return _get_string(C.t4a_artifact_lowered_name, self._live(), index).rstrip(
            b"\0").decode()

    def lowered_name_of(self, expression: str) -> str:
        """The lowered name of the request's name expression `expression`
        (matched exactly, then with whitespace and a leading '&' ignored)."""
        return _get_string(C.t4a_artifact_lowered_name_of, self._live(),
                           expression.encode()).rstrip(b"\0").decode()

    def retain(self) -> Artifact:
        h = self._live()
        check(C.t4a_artifact_retain(h))
        return Artifact(_handle("t4a_artifact", h.id), self.name)


def _cstr_array(items: Iterable[Union[str, bytes]]) -> tuple[ctypes.Array[ctypes.c_char_p],
                                                             list[bytes]]:
    encoded = [s.encode() if isinstance(s, str) else bytes(s) for s in items]
    arr = (ctypes.c_char_p * max(len(encoded), 1))(*encoded)
    return arr, encoded


def last_compile_log() -> str:
    return _get_string(C.t4a_last_compile_log).rstrip(b"\0").decode("utf-8", "replace")


def toolkit_headers() -> dict[str, Any]:
    """The CUDA toolkit headers a compile gets without options, as a dict:
    'nvrtc', 'include' (a list of directories, empty when none was found),
    'version', 'from', 'passed-over' (t4a_toolkit_headers)."""
    text = _get_string(C.t4a_toolkit_headers).rstrip(b"\0").decode("utf-8", "replace")
    out: dict[str, Any] = {"include": []}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "include":
            out["include"].append(value)
        else:
            out[key] = value
    return out


def compile(source: Union[str, bytes], options: Sequence[Union[str, bytes]] = (),
            name_expressions: Sequence[Union[str, bytes]] = (),
            headers: Optional[Mapping[Union[str, bytes], Union[str, bytes]]] = None,
            program_name: Optional[str] = None, output: Literal["cubin", "ptx"] = "cubin",
            runtime: Optional[Runtime] = None, cc: Optional[tuple[int, int]] = None,
            flags: int = 0, cache_dir: Optional[Path] = None, disk_cache_max_bytes: int = 0,
            toolkit_include: Optional[Path] = None) -> Artifact:
    """Compiles CUDA C++ with NVRTC (through both caches) into an Artifact.
    The CUDA toolkit's headers (cuda_fp16.h, cooperative_groups.h, CCCL) are
    found without options; `toolkit_include` names the include directory,
    flags T4A_COMPILE_NO_TOOLKIT_HEADERS opts out. A failed compile raises
    t4acuda.Compile with .log holding the full log. Artifact.info()
    ['origin'] says where it came from (1 NVRTC, 2 memory, 3 disk)."""
    req = _ffi.new("t4a_compile_request")
    keep: list[object] = []
    req.source = source.encode() if isinstance(source, str) else source
    keep.append(req.source)
    if output not in ("cubin", "ptx"):
        raise ValueError(f"compile: output must be 'cubin' or 'ptx', not {output!r}")
    req.output = K["T4A_COMPILE_PTX"] if output == "ptx" else K["T4A_COMPILE_CUBIN"]
    if program_name:
        req.program_name = program_name.encode()
    if options:
        arr, k = _cstr_array(options)
        keep += [arr, k]
        req.options = ctypes.cast(arr, ctypes.c_void_p)
        req.option_count = len(k)
    if name_expressions:
        arr, k = _cstr_array(name_expressions)
        keep += [arr, k]
        req.name_expressions = ctypes.cast(arr, ctypes.c_void_p)
        req.name_expression_count = len(k)
    if headers:
        names, k1 = _cstr_array(list(headers.keys()))
        srcs, k2 = _cstr_array(list(headers.values()))
        keep += [names, srcs, k1, k2]
        req.header_names = ctypes.cast(names, ctypes.c_void_p)
        req.header_sources = ctypes.cast(srcs, ctypes.c_void_p)
        req.header_count = len(k1)
    if cc is not None:
        req.cc_major, req.cc_minor = cc
    if runtime is not None:
        req.runtime = runtime._live()
    req.flags = flags
    req.disk_cache_max_bytes = disk_cache_max_bytes
    if cache_dir is not None:
        req.cache_dir = str(cache_dir).encode()
    if toolkit_include is not None:
        req.toolkit_include = str(toolkit_include).encode()
    h = S["t4a_artifact"]()
    st = C.t4a_compile(_byref(req), _byref(h))
    if st != 0:
        err = error_for(st, "t4a_compile")
        err.log = last_compile_log() if st == _ffi.STATUS["T4A_ERROR_COMPILE"] else ""
        raise err
    return Artifact(h, program_name)


class Module(_Owned):
    """A module loaded into a runtime (Runtime.load, Runtime.load_data)."""
    _release, _type = "t4a_module_release", "t4a_module"

    def __init__(self, runtime: Runtime, handle: ctypes.Structure,
                 name: Optional[str] = None) -> None:
        self._set(handle)
        self.runtime = runtime
        self.name = name  # the artifact's program_name; None for load_data

    def _repr_fields(self) -> list[str]:
        return ([f"name={self.name!r}"] if self.name else []) + [
            f"device={getattr(self.runtime, '_ordinal', '?')}"]

    def kernel(self, name: str) -> Kernel:
        """A kernel by name expression of the module's artifact
        ("reduce<128, true>"; whitespace and a leading '&' ignored) or by its
        lowered or extern "C" name."""
        h = S["t4a_kernel"]()
        check(C.t4a_kernel_get(self._live(), name.encode(), _byref(h)))
        return Kernel(self, h, name)

    __getitem__ = kernel

    def get_global(self, name: str, dtype: npt.DTypeLike = None,
                   shape: Optional[Shape] = None) -> Buffer:
        """A __device__ or __constant__ variable (a name expression such as
        "&counter", or its name) as a Buffer view of its memory: it keeps
        this module loaded, never frees the memory, and is used like any
        Buffer (upload, download, fill, copy, launch argument). dtype and
        shape describe it, as for Runtime.alloc (default: bytes; shape:
        as many elements as fit)."""
        dt = None if dtype is None else _checks.dtype("Module.get_global", dtype)
        h = S["t4a_buffer"]()
        check(C.t4a_module_global(self._live(), name.encode(), _byref(h)))
        info = _ffi.new("t4a_buffer_info")
        s = C.t4a_buffer_info_get(h, _byref(info))
        if s != 0:
            C.t4a_buffer_release(h)
            check(s)
        return _owning(self.runtime, h, "Module.get_global", info.bytes, dt, shape)

    def retain(self) -> Module:
        h = self._live()
        check(C.t4a_module_retain(h))
        return Module(self.runtime, _handle("t4a_module", h.id), self.name)


# Shapes launch() keeps per kernel before it starts over.
_MAX_PLANS = 64
_get_ident = threading.get_ident
_ZERO = 0  # launch()'s default `shared`, compared by identity on its fast path


def _dims(v: Dims, what: str) -> tuple[int, ...]:
    given: Any = v  # anything: checked below
    try:
        t: tuple[Any, ...] = (given,) if isinstance(given, int) else tuple(given)
    except TypeError:  # neither an int nor a sequence
        t = (given,)
    if not 1 <= len(t) <= 3 or not all(
            isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**32 for x in t):
        raise python_error("T4A_ERROR_INVALID_ARGUMENT", "Kernel.launch",
                           f"{what} must be 1 to 3 ints in [0, 2**32), not {t!r}")
    return t + (1,) * (3 - len(t))


# Marks launch()'s plan keys of launches with attributes (never a type, so
# never equal to an argument type where a plain key has one).
_WITH_ATTRS = object()


def _cluster(entry: str, v: object) -> tuple[int, int, int]:
    """A launch's `cluster` as three extents, checked in Python integers
    before anything reaches C: an int or a tuple (or list) of 1 to 3 ints,
    each positive and below 2**32 (missing axes are 1). A value that is not
    an int is TypeError; an extent out of range, or more than 3 or no
    extents, ValueError; each naming the value."""
    if isinstance(v, (tuple, list)):
        t: tuple[object, ...] = tuple(v)
        if not 1 <= len(t) <= 3:
            raise ValueError(f"{entry}: cluster must be an int or 1 to 3 ints, not {v!r} "
                             f"({len(t)} extents)")
    else:
        t = (v,)
    out: list[int] = []
    for x in t:
        if isinstance(x, bool) or not isinstance(x, int):
            raise TypeError(f"{entry}: cluster extents must be ints, not "
                            f"{type(x).__name__} {x!r} (cluster={v!r})")
        if not 0 < x < 2**32:
            raise ValueError(f"{entry}: cluster extent {x} is out of range: each must be "
                             f"a positive int below 2**32 (cluster={v!r})")
        out.append(int(x))
    out += [1] * (3 - len(out))
    return out[0], out[1], out[2]


def _launch_attrs(entry: str, cluster: Optional[Cluster], programmatic: bool,
                  non_portable_cluster: bool) -> Optional[ctypes.Structure]:
    """The t4a_launch_attrs of these options, or None when they name no
    attribute (t4a_launch then, exactly as without them)."""
    dims = (0, 0, 0) if cluster is None else _cluster(entry, cluster)
    flags = ((K["T4A_LAUNCH_ATTR_PROGRAMMATIC"] if programmatic else 0)
             | (K["T4A_LAUNCH_ATTR_CLUSTER_NON_PORTABLE"] if non_portable_cluster else 0))
    if cluster is None and not flags:
        return None
    attrs = _ffi.new("t4a_launch_attrs")
    attrs.flags = flags
    attrs.cluster[:] = dims
    return attrs


class ClusterOccupancy(NamedTuple):
    """Kernel.cluster_occupancy() (t4a_cluster_occupancy; experimental)."""
    max_active_clusters: int  # clusters of the shape resident at once (0: none fits)
    max_cluster_size: int  # the largest cluster (blocks) of the block size and shared


class Kernel(_Owned):
    """A kernel of a loaded module. launch() checks argument count and
    sizes against the kernel's parameters before calling t4a_launch."""
    _release, _type = "t4a_kernel_release", "t4a_kernel"

    def __init__(self, module: Module, handle: ctypes.Structure, name: str = "") -> None:
        self._set(handle)
        self.module = module
        self.runtime = module.runtime
        self.name = name
        self._params: Union[tuple[int, ...], Literal[False], None] = None
        # launch()'s prepared shapes, by (thread, grid, block, shared,
        # argument types): one per thread, since a PreparedLaunch's
        # argument storage is written before each call.
        self._plans: dict[tuple[Any, ...], PreparedLaunch] = {}
        # The same plans' calls for int grid and block without options
        # (shared 0), keyed by (thread, grid, block, argument types), or by
        # (grid, block) alone without arguments.
        self._fast_plans: dict[tuple[Any, ...], Callable[..., None]] = {}

    def close(self) -> None:
        plans = self.__dict__.get("_plans")  # absent if __init__ stopped early
        if plans:
            plans.clear()  # a closed kernel launches nothing, as before
            self._fast_plans.clear()
        super().close()

    def _repr_fields(self) -> list[str]:
        out = [f"name={self.name!r}"]
        if self.module.name:
            out.append(f"module={self.module.name!r}")
        return out + [f"device={getattr(self.runtime, '_ordinal', '?')}"]

    def info(self) -> dict[str, Any]:
        i = _ffi.new("t4a_kernel_info")
        check(C.t4a_kernel_info_get(self._live(), _byref(i)))
        return _struct_dict(i)

    def param(self, index: int) -> tuple[int, int]:
        """(offset, size) of parameter `index`."""
        off, size = ctypes.c_uint64(0), ctypes.c_uint64(0)
        check(C.t4a_kernel_param(self._live(), index, _byref(off), _byref(size)))
        return off.value, size.value

    @property
    def param_sizes(self) -> Optional[tuple[int, ...]]:
        """Sizes of the parameters, or None when the driver cannot tell."""
        if self._params is None:
            n = self.info()["param_count"]
            self._params = False if n == K["T4A_PARAMS_UNKNOWN"] else tuple(
                self.param(i)[1] for i in range(n))
        return self._params if self._params is not False else None

    def occupancy(self, block_size: int, dynamic_shared: int = 0) -> int:
        n = ctypes.c_int32(0)
        check(C.t4a_kernel_occupancy(self._live(), block_size, dynamic_shared, _byref(n)))
        return n.value

    def suggest_block_size(self, dynamic_shared: int = 0) -> tuple[int, int]:
        """(block_size, min_grid_size)."""
        b, g = ctypes.c_int32(0), ctypes.c_int32(0)
        check(C.t4a_kernel_suggest_block_size(self._live(), dynamic_shared, _byref(b),
                                              _byref(g)))
        return b.value, g.value

    def retain(self) -> Kernel:
        h = self._live()
        check(C.t4a_kernel_retain(h))
        return Kernel(self.module, _handle("t4a_kernel", h.id), self.name)

    def _check_sizes(self, sizes: Sequence[Optional[int]]) -> None:
        expected = self.param_sizes
        if expected is None:
            return
        if len(sizes) != len(expected):
            raise python_error(
                "T4A_ERROR_INVALID_ARGUMENT", "Kernel.launch",
                f"kernel {self.name!r} takes {len(expected)} arguments, {len(sizes)} given")
        for i, (got, want) in enumerate(zip(sizes, expected)):
            if got is not None and got != want:
                raise python_error(
                    "T4A_ERROR_INVALID_ARGUMENT", "Kernel.launch",
                    f"kernel {self.name!r} argument {i}: {got} bytes given, the parameter "
                    f"has {want} (a float parameter takes t4acuda.f32, not f64)")

    def max_cooperative_blocks(self, block_size: int, dynamic_shared: int = 0) -> int:
        """The most blocks a cooperative launch may have at this block size
        and dynamic shared bytes (t4a_kernel_max_cooperative_blocks;
        experimental)."""
        n = ctypes.c_int32(0)
        check(C.t4a_kernel_max_cooperative_blocks(self._live(), block_size, dynamic_shared,
                                                  _byref(n)))
        return n.value

    def declare_barrier(self, global_name: str, width: int = 4, reset: int = 0,
                        expected: int = 0, per_block: bool = False,
                        at_most: bool = False) -> int:
        """Declares a grid-barrier counter of this kernel: the `__device__`
        global `global_name` of its module (`width` 4 or 8 bytes). Every
        later launch resets it to `reset` on the stream before the kernel
        and audits it afterwards against `expected` (times the block count
        with `per_block`; a counter at or below it passes with `at_most`);
        barrier_audit() reports. Returns the barrier's index
        (t4a_kernel_declare_barrier; experimental)."""
        e = "Kernel.declare_barrier"
        if not isinstance(global_name, str) or not global_name:
            raise TypeError(f"{e}: global_name must be a non-empty str, not {global_name!r}")
        if isinstance(width, bool) or width not in (4, 8):
            raise python_error("T4A_ERROR_INVALID_ARGUMENT", e,
                               f"width is {width!r}; a counter has 4 or 8 bytes")
        top = 2 ** (8 * width) - 1
        d = _ffi.new("t4a_barrier_desc")
        name = global_name.encode()
        d.global_name = name
        d.width = width
        d.reset_value = _checks.count(e, "reset", reset, top)
        d.expected_value = _checks.count(e, "expected", expected, top)
        d.flags = ((K["T4A_BARRIER_EXPECT_PER_BLOCK"] if per_block else 0)
                   | (K["T4A_BARRIER_EXPECT_AT_MOST"] if at_most else 0))
        index = ctypes.c_uint32(0)
        check(C.t4a_kernel_declare_barrier(self._live(), _byref(d), _byref(index)))
        return index.value

    def barrier_audit(self, index: int = 0) -> dict[str, Any]:
        """What the audits of barrier `index` found (launches, audited,
        pending, failures, last_bad_value, last_bad_expected,
        last_bad_launch); never waits: synchronize the runtime first to
        have every launch audited (t4a_kernel_barrier_audit;
        experimental)."""
        i = _checks.count("Kernel.barrier_audit", "index", index, 2**32 - 1)
        a = _ffi.new("t4a_barrier_audit")
        check(C.t4a_kernel_barrier_audit(self._live(), i, _byref(a)))
        return _struct_dict(a)

    def launch(self, grid: Dims, block: Dims, *args: KernelArg, shared: int = 0,
               cooperative: bool = False, cluster: Optional[Cluster] = None,
               programmatic: bool = False, non_portable_cluster: bool = False) -> None:
        """Enqueues the kernel on its runtime's stream. Arguments: Buffer
        (its device address), DevicePointer, t4acuda.f32(x)-style or NumPy
        scalars; a plain Python int or float is refused. `cooperative`:
        a cooperative launch (T4A_LAUNCH_COOPERATIVE, experimental): all
        blocks resident at once; a grid above max_cooperative_blocks() is
        InvalidArgument, a device without it Unsupported.

        Launch attributes (t4a_launch_ex, experimental; compute capability
        9.0): `cluster`, blocks per thread block cluster (an int or 1 to 3
        ints, each positive and below 2**32, else ValueError, or TypeError
        for a non-int; every grid axis must be a multiple of the cluster's,
        at most 8 blocks unless `non_portable_cluster`); `programmatic`,
        programmatic dependent launch (the kernel may start before the
        previous one on the stream has finished; it must call
        cudaGridDependencySynchronize() before reading what that one
        wrote). Without any of them the launch is t4a_launch's; with one,
        t4a_launch_ex's (the library's refusals raise as usual:
        InvalidArgument, Unsupported below 9.0). A kernel compiled with
        __cluster_dims__ needs no `cluster`.

        The first launch of a shape (grid, block, shared, cooperative, the
        attributes and the argument types) on a thread checks it and keeps
        a PreparedLaunch for it; later ones of that shape store the values
        and call t4a_launch (or t4a_launch_ex)."""
        # The types are in the key too: 1.0 == 1 and True == 1, but only
        # what the checks accept may reuse a plan. The common shape (int
        # grid and block, no options) has its own, shorter key.
        # (`shared is _ZERO`: the int 0 itself, never 0.0 or False; the
        # option flags only by truth, as the general path reads them.)
        if (shared is _ZERO and cluster is None
                and not (cooperative or programmatic or non_portable_cluster)
                and type(grid) is int and type(block) is int):
            # Without arguments a plan stores nothing, so all threads may
            # share it: no thread in its key.
            fast = self._fast_plans.get(
                (_get_ident(), grid, block, *map(type, args)) if args else (grid, block))
            if fast is not None:
                fast(*args)
                return
        gt = tuple(map(type, grid)) if type(grid) is tuple else type(grid)
        bt = tuple(map(type, block)) if type(block) is tuple else type(block)
        key: Optional[tuple[Any, ...]]
        try:
            if cluster is None and not programmatic and not non_portable_cluster:
                key = (threading.get_ident(), grid, block, shared, cooperative, gt, bt,
                       type(shared), *map(type, args))
            else:
                ct = tuple(map(type, cluster)) if type(cluster) is tuple else type(cluster)
                key = (threading.get_ident(), grid, block, shared, cooperative, gt, bt,
                       type(shared), _WITH_ATTRS, cluster, ct, bool(programmatic),
                       bool(non_portable_cluster), *map(type, args))
            plan = self._plans.get(key)
        except TypeError:  # an unhashable grid, block or cluster (a list): not kept
            key, plan = None, None
        if plan is None:
            plan = self._plan(key, grid, block, args, shared, cooperative, cluster,
                              programmatic, non_portable_cluster)
        plan._call(*args)

    def cluster_occupancy(self, grid: Dims, block: Dims, shared: int = 0,
                          cluster: Optional[Cluster] = None,
                          non_portable_cluster: bool = False) -> ClusterOccupancy:
        """How many clusters of a launch shape fit on the device at once,
        and the largest cluster its block size and shared bytes allow
        (t4a_kernel_cluster_occupancy; experimental, compute capability
        9.0). The shape is checked as launch() checks it (`cluster` as
        there; None: the kernel's __cluster_dims__, or single blocks)."""
        attrs = _launch_attrs("Kernel.cluster_occupancy", cluster, False,
                              non_portable_cluster)
        shared = _checks.count("Kernel.cluster_occupancy", "shared", shared, 2**32 - 1)
        desc = _ffi.new("t4a_launch_desc")
        desc.kernel = self._live()
        desc.grid[:] = _dims(grid, "grid")
        desc.block[:] = _dims(block, "block")
        desc.dynamic_shared_bytes = shared
        out = _ffi.new("t4a_cluster_occupancy")
        check(C.t4a_kernel_cluster_occupancy(
            _byref(desc), None if attrs is None else _byref(attrs), _byref(out)))
        return ClusterOccupancy(out.max_active_clusters, out.max_cluster_size)

    def _plan(self, key: Optional[tuple[Any, ...]], grid: Dims, block: Dims,
              args: Sequence[KernelArg], shared: int,
              cooperative: bool = False, cluster: Optional[Cluster] = None,
              programmatic: bool = False,
              non_portable_cluster: bool = False) -> PreparedLaunch:
        """The PreparedLaunch of a launch() shape, checked as launch()
        checks; kept under `key` (at most _MAX_PLANS per kernel)."""
        types: list[ArgType] = []
        for i, a in enumerate(args):
            if isinstance(a, Buffer):
                types.append("buffer")
            elif isinstance(a, DevicePointer):
                types.append("pointer")
            else:
                types.append(type(_as_scalar(a, i)))
        plan = PreparedLaunch(self, grid, block, types, shared, cooperative,
                              cluster=cluster, programmatic=programmatic,
                              non_portable_cluster=non_portable_cluster,
                              given=[type(a) for a in args])
        if key is not None:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
                self._fast_plans.clear()
            self._plans[key] = plan
            if (shared is _ZERO and cluster is None
                    and not (cooperative or programmatic or non_portable_cluster)
                    and type(grid) is int and type(block) is int):
                self._fast_plans[(key[0], grid, block, *map(type, args)) if args
                                 else (grid, block)] = plan._call
        return plan

    def prepare(self, grid: Dims, block: Dims, *argtypes: ArgType,
                shared: int = 0, cooperative: bool = False,
                cluster: Optional[Cluster] = None, programmatic: bool = False,
                non_portable_cluster: bool = False) -> PreparedLaunch:
        """A PreparedLaunch: argtypes are "buffer", "pointer" or a scalar
        type (t4acuda.f32, "f32", numpy.float32, ...); `cooperative`,
        `cluster`, `programmatic` and `non_portable_cluster` as for
        launch()."""
        return PreparedLaunch(self, grid, block, argtypes, shared, cooperative,
                              cluster=cluster, programmatic=programmatic,
                              non_portable_cluster=non_portable_cluster)


def _argtype(t: ArgType, i: int) -> Union[str, type[ctypes._SimpleCData[Any]]]:
    if t in ("buffer", Buffer):
        return "buffer"
    if t in ("pointer", DevicePointer):
        return "pointer"
    if isinstance(t, str) and t in _SCALAR_TYPES:
        return _SCALAR_TYPES[t]
    if callable(t) and getattr(t, "__name__", None) in _SCALAR_TYPES and \
            getattr(t, "__module__", "") == __name__:
        return _SCALAR_TYPES[t.__name__]
    if isinstance(t, type) and issubclass(t, ctypes._SimpleCData):
        return t
    if _np is not None:
        spec: Any = t  # NumPy says whether it names a dtype
        try:
            ct = _NP_CTYPES.get(_np.dtype(spec).name)
        except TypeError:
            ct = None
        if ct is not None and t not in (float, int, bool):
            return ct
    raise TypeError(f"prepare: argument type {i} ({t!r}) is not 'buffer', 'pointer', "
                    "or an explicit scalar type (t4acuda.f32, 'i32', numpy.float32, ...)")


class PreparedLaunch:
    """A launch whose descriptor and argument array are built once; calling
    it only stores the values (types were fixed at prepare()) and calls
    t4a_launch (t4a_launch_ex with launch attributes: cluster=,
    programmatic=, non_portable_cluster=). Not thread-safe: one per
    thread."""

    # The call, as a method (p.launch(...) is p(...)).
    launch: Callable[..., None]

    def __init__(self, kernel: Kernel, grid: Dims, block: Dims, argtypes: Sequence[ArgType],
                 shared: int, cooperative: bool = False, *,
                 cluster: Optional[Cluster] = None, programmatic: bool = False,
                 non_portable_cluster: bool = False,
                 given: Optional[Sequence[type]] = None) -> None:
        # `given`: launch()'s argument types (its plan's key), so that the
        # stores read a ctypes scalar's .value directly.
        # The attributes first: a bad cluster is refused before any call.
        attrs = _launch_attrs("Kernel.launch", cluster, programmatic, non_portable_cluster)
        self.kernel = kernel
        n = len(argtypes)
        self._types = [_argtype(t, i) for i, t in enumerate(argtypes)]
        self._args = (S["t4a_arg"] * max(n, 1))()
        self._vals: list[Optional[ctypes._SimpleCData[Any]]] = []
        sizes: list[Optional[int]] = []
        for i, t in enumerate(self._types):
            slot = self._args[i]
            if isinstance(t, str):  # "buffer" or "pointer"
                slot.kind = K["T4A_ARG_BUFFER"] if t == "buffer" else K["T4A_ARG_DEVICE_POINTER"]
                self._vals.append(None)
                sizes.append(8)
            else:
                v = t()
                slot.kind = K["T4A_ARG_SCALAR"]
                slot.value = ctypes.addressof(v)
                slot.size = ctypes.sizeof(v)
                self._vals.append(v)
                sizes.append(ctypes.sizeof(v))
        kernel._check_sizes(sizes)
        shared = _checks.count("Kernel.launch", "shared", shared, 2**32 - 1)
        self._desc = _ffi.new("t4a_launch_desc")
        self._desc.kernel = kernel._live()
        self.cooperative = bool(cooperative)
        self._desc.flags = K["T4A_LAUNCH_COOPERATIVE"] if cooperative else 0
        self._desc.grid[:] = _dims(grid, "grid")
        self._desc.block[:] = _dims(block, "block")
        self._desc.dynamic_shared_bytes = shared
        self._desc.arg_count = n
        self._desc.args = ctypes.addressof(self._args)
        self._desc_ref = _byref(self._desc)
        self._rt = kernel.runtime._live()
        # The attributes as given (cluster: its three extents; None: none).
        self.cluster: Optional[tuple[int, int, int]] = (
            None if attrs is None or cluster is None else
            (attrs.cluster[0], attrs.cluster[1], attrs.cluster[2]))
        self.programmatic = bool(programmatic)
        self.non_portable_cluster = bool(non_portable_cluster)
        self._attrs = attrs  # kept alive: the library reads it on each call
        if attrs is None:
            self._launch = C.t4a_launch
        else:
            launch_ex, attrs_ref = C.t4a_launch_ex, _byref(attrs)
            self._launch = lambda rt, desc: launch_ex(rt, desc, attrs_ref)
        self._n = n
        self._slots = [self._args[i] for i in range(n)]
        self._call = _launcher(self, given)
        self.launch = self._call
        # Calling the object runs the launcher itself, with no method in
        # between: the call goes through the type, so each prepared launch
        # gets a subclass of its own whose __call__ is its launcher.
        self.__class__ = type("PreparedLaunch", (PreparedLaunch,),
                              {"__call__": staticmethod(self._call),
                               "__module__": __name__,
                               "__doc__": PreparedLaunch.__doc__})

    def __call__(self, *args: PreparedArg) -> None:
        """Launches with these values, one per argtype of prepare(): a Buffer,
        a DevicePointer or int address, or a number (of the fixed type)."""
        self._call(*args)

    def _store(self, args: Sequence[Any]) -> None:
        """Stores one call's values with every check (the launcher's way
        when its unchecked stores raised: the clear error is raised here)."""
        if len(args) != self._n:
            raise TypeError(f"prepared launch takes {self._n} arguments, {len(args)} given")
        values: Sequence[Any] = args  # each of the type prepare() fixed for its slot
        for i, a in enumerate(values):
            v = self._vals[i]
            if v is not None:
                v.value = a.value if isinstance(a, ctypes._SimpleCData) else a
            elif self._types[i] == "buffer":
                # Only the handle is stored: the library keeps the memory
                # alive for the launch (a buffer released later is freed
                # after it, in stream order), so nothing holds the Buffer.
                self._slots[i].buffer.id = a._live().id
            else:
                self._slots[i].device_pointer = a.value if isinstance(a, DevicePointer) else a


_ARG_BUFFER_ID = S["t4a_arg"].buffer.offset + S["t4a_buffer"].id.offset
_ARG_DEVICE_POINTER = S["t4a_arg"].device_pointer.offset


def _launcher(p: PreparedLaunch, given: Optional[Sequence[type]]) -> Callable[..., None]:
    """PreparedLaunch's call: a function made for its argument types that
    stores each value with one assignment into the argument array (no loop,
    no per-argument type test) and calls t4a_launch. Any store that raises
    (a closed Buffer, a value of another type, a wrong argument count)
    starts over through PreparedLaunch._store, whose checks raise the clear
    error. `given` (launch()'s plan) names the argument types seen: a
    ctypes scalar is then read through its .value."""
    cells: dict[str, Any] = {}
    lines = []
    base = ctypes.addressof(p._args)
    stride = ctypes.sizeof(S["t4a_arg"])
    for i, t in enumerate(p._types):
        if t == "buffer":  # the slot's t4a_buffer id, as a c_uint64
            cells[f"c{i}"] = ctypes.c_uint64.from_address(base + i * stride + _ARG_BUFFER_ID)
            lines.append(f"c{i}.value = a{i}._h.id")
        elif t == "pointer":
            cells[f"c{i}"] = ctypes.c_uint64.from_address(
                base + i * stride + _ARG_DEVICE_POINTER)
            lines.append(f"c{i}.value = a{i}.value if type(a{i}) is DP else a{i}")
        else:
            cells[f"c{i}"] = p._vals[i]
            ctype = given is not None and issubclass(given[i], ctypes._SimpleCData)
            lines.append(f"c{i}.value = a{i}.value" if ctype else f"c{i}.value = a{i}")
    n = p._n
    unpack = (", ".join(f"a{i}" for i in range(n)) + ", = args") if n else \
        "if args: raise TypeError"
    body = "\n        ".join([unpack] + lines)
    src = (f"def launch(*args):\n"
           f"    try:\n"
           f"        {body}\n"
           f"    except (AttributeError, TypeError, ValueError):\n"
           f"        store(args)\n"
           f"    st = fn(rt, desc)\n"
           f"    if st:\n"
           f"        check(st)\n")
    # The namespace holds the argument array the cells point into, so the
    # function stays safe to call even if it outlives its PreparedLaunch.
    ns: dict[str, Any] = dict(cells, DP=DevicePointer, store=p._store, fn=p._launch,
                              rt=p._rt, desc=p._desc_ref, check=check, keep=p._args)
    exec(builtins.compile(src, f"<t4acuda launch of {p.kernel.name or 'kernel'}>", "exec"), ns)
    fn: Callable[..., None] = ns["launch"]
    fn.__doc__ = PreparedLaunch.__call__.__doc__
    return fn


# ---- DLPack import (the capsule work is in _dlpack)

_defaults: dict[int, Runtime] = {}
_defaults_lock = threading.Lock()


def default_runtime(device: int = 0) -> Runtime:
    """The process's shared runtime of `device` (made on first use; used by
    from_dlpack when no runtime is given). Never destroyed before exit."""
    with _defaults_lock:
        rt = _defaults.get(device)
        if rt is None:
            rt = _defaults[device] = Runtime(device)
        return rt


def from_dlpack(obj: Producer, runtime: Optional[Runtime] = None) -> Buffer:
    """A Buffer over a CUDA tensor of another library (no copy), on
    `runtime` (default: default_runtime of the tensor's device). The
    producer's pending work is ordered before the runtime's stream (no host
    wait); the tensor's deleter runs exactly once, after the buffer's last
    use. Legacy capsules import read-only."""
    device = _dlpack.cuda_device_of(obj)
    if runtime is None:
        runtime = default_runtime(device)
    same = isinstance(obj, Buffer) and obj.runtime is runtime
    handle, nbytes, dtype, shape, readonly = _dlpack.take(obj, runtime, same)
    return _owning(runtime, handle, "from_dlpack", nbytes, dtype, shape, readonly)
