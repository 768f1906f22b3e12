"""What a Python caller says about memory, checked before anything reaches
the C layer or a consumer: counts (sizes, offsets, extents), dtypes,
shapes and out= arrays, in Python integers, so nothing wraps at a fixed
width. Every refusal is InvalidArgument naming the method and the
argument. docs/python.md ("Validation") states the rules."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Optional, Sequence, SupportsIndex, Union

from ._errors import Error, python_error

try:
    import numpy as _np
except ImportError:  # dtypes, shapes of dtypes and out= arrays need NumPy
    _np = None  # type: ignore[assignment]

if TYPE_CHECKING:
    import numpy.typing as npt

    Shape = Union[SupportsIndex, Sequence[SupportsIndex]]

INT64_MAX = (1 << 63) - 1
MAX_NDIM = 32  # NumPy 1.x's and t4a_dlpack_desc's (T4A_DLPACK_MAX_NDIM)


def bad(entry: str, message: str) -> Error:
    return python_error("T4A_ERROR_INVALID_ARGUMENT", entry, message)


def count(entry: str, name: str, v: SupportsIndex, limit: int = INT64_MAX) -> int:
    """`v` (an int or an integer NumPy scalar; not a bool, float or str) as
    a Python int in [0, limit]."""
    if type(v) is not int:
        if isinstance(v, bool) or (_np is not None and isinstance(v, _np.bool_)):
            raise bad(entry, f"{name} must be a non-negative int, not the bool {v!r}")
        try:
            v = operator.index(v)
        except TypeError:
            raise bad(entry, f"{name} must be a non-negative int, not "
                             f"{type(v).__name__} {v!r}") from None
    if not 0 <= v <= limit:
        raise bad(entry, f"{name} is {v}; it must be between 0 and {limit}")
    return v


def dtype_ok(dt: _np.dtype[Any]) -> bool:
    """The element types a buffer may be described as: bool, int8..int64,
    uint8..uint64, float16/32/64, complex64/128, native byte order; what
    NumPy, DLPack and the CUDA Array Interface read alike from any bytes."""
    return dt.kind in "biufc" and dt.isnative and dt.char not in "gG"


# dtype()'s fast path: the allowed dtypes and their scalar types.
_ALLOWED = frozenset(x for c in "?bBhHiIlLqQefdFD" for d in [_np.dtype(c)]
                     for x in (d, d.type)) if _np is not None else frozenset()
_HASHABLE = (type, _np.dtype) if _np is not None else ()


def dtype(entry: str, dt: npt.DTypeLike, name: str = "dtype") -> _np.dtype[Any]:
    """np.dtype(dt), refused unless dtype_ok (object, structured, void,
    string, datetime, long double and byte-swapped dtypes are refused)."""
    if isinstance(dt, _HASHABLE) and dt in _ALLOWED:
        return _np.dtype(dt)
    if _np is None:
        raise ImportError(f"t4acuda: {entry} needs NumPy for {name} (pip install numpy)")
    try:
        d = _np.dtype(dt)
    except (TypeError, ValueError):
        raise bad(entry, f"{name} {dt!r} is not a NumPy dtype") from None
    if not dtype_ok(d):
        raise bad(entry, f"{name} {d} is refused: only bool, int8..int64, uint8..uint64, "
                         "float16/32/64 and complex64/128 in native byte order "
                         "describe memory")
    return d


def layout(entry: str, shape: Shape, dt: _np.dtype[Any], nbytes: Optional[int] = None,
           offset: int = 0, name: str = "shape") -> tuple[tuple[int, ...], int]:
    """(dims, bytes) of `shape` (an int or a sequence of at most MAX_NDIM
    ints) of dtype `dt`: every extent a non-negative int; the C-order byte
    strides (zero extents counted as 1) at most INT64_MAX; offset + bytes
    <= nbytes when nbytes is given."""
    if isinstance(shape, (str, bytes)):
        raise bad(entry, f"{name} must be an int or a sequence of ints, not {shape!r}")
    items: Any = shape  # an int, or any iterable of ints
    try:
        given = tuple(items)
    except TypeError:
        given = (items,)
    if len(given) > MAX_NDIM:
        raise bad(entry, f"{name} has {len(given)} dimensions; at most {MAX_NDIM}")
    dims = tuple(count(entry, f"{name}[{i}]", d) for i, d in enumerate(given))
    n, span = 1, dt.itemsize
    for d in dims:
        n *= d
        span *= d or 1
    if span > INT64_MAX:
        raise bad(entry, f"{name} {dims} of {dt}: its C-order strides overflow int64")
    need = n * dt.itemsize
    if nbytes is not None and offset + need > nbytes:
        at = f" from offset {offset}" if offset else ""
        raise bad(entry, f"{name} {dims} of {dt} needs {need} bytes{at}, the buffer "
                         f"has {nbytes}")
    return dims, need


def out_array(entry: str, out: object) -> npt.NDArray[Any]:
    """`out` as a destination for raw bytes: a writeable C-contiguous
    ndarray of an allowed dtype (the byte count is the caller's check)."""
    if _np is None or not isinstance(out, _np.ndarray):
        raise bad(entry, f"out must be a NumPy ndarray, not {type(out).__name__}")
    if not out.flags.writeable:
        raise bad(entry, "out is read-only (out.flags.writeable is False)")
    if not out.flags.c_contiguous:
        raise bad(entry, "out must be C-contiguous")
    dtype(entry, out.dtype, "out.dtype")
    return out
