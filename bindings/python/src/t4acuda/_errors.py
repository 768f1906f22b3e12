"""t4acuda.Error and one subclass per status, named from the status names
of _layouts.json (T4A_ERROR_NO_DRIVER -> NoDriver)."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Optional

from . import _ffi


class Error(Exception):
    """A failed t4acuda call: the status and the calling thread's last
    error (driver result, compiler result, entry point, message)."""

    status: Optional[int] = None  # set on each subclass
    log: str  # set on the errors compile() raises: the compiler log ("" unless Compile)

    def __init__(self, message: str, status: Optional[int] = None, driver_result: int = 0,
                 compiler_result: int = 0, entry_point: Optional[str] = None) -> None:
        if status is None:
            status = type(self).status
        self.status = status
        name = _ffi.STATUS_NAMES.get(status) if status is not None else None
        self.status_name = name or f"status {status}"
        self.driver_result = driver_result
        self.compiler_result = compiler_result
        self.entry_point = entry_point
        self.message = message
        where = f"{entry_point}: " if entry_point and not message.startswith(
            entry_point) else ""
        super().__init__(f"{where}{message} [{self.status_name}]")


def _class_name(status_name: str) -> str:
    base = status_name[len("T4A_ERROR_"):] if status_name.startswith(
        "T4A_ERROR_") else status_name[len("T4A_"):]
    return "".join(part.capitalize() for part in base.split("_"))


ERRORS: dict[int, type[Error]] = {}  # status value -> class
for _name, _value in _ffi.STATUS.items():
    if _value == 0:
        continue
    _cls = type(_class_name(_name), (Error,), {
        "status": _value,
        "__doc__": f"{_name} ({_value}).",
        "__module__": "t4acuda",
    })
    ERRORS[_value] = _cls
    globals()[_cls.__name__] = _cls

Error.__module__ = "t4acuda"

if TYPE_CHECKING:
    # The classes the loop above makes, declared for type checkers (one per
    # status of _layouts.json; test_error_classes_declared_for_type_checkers
    # keeps the two lists the same).
    class NotReady(Error): ...
    class InvalidArgument(Error): ...
    class InvalidHandle(Error): ...
    class WrongRuntime(Error): ...
    class NoDriver(Error): ...
    class NoDevice(Error): ...
    class NoCompiler(Error): ...
    class OutOfMemory(Error): ...
    class OutOfHostMemory(Error): ...
    class Driver(Error): ...
    class Compile(Error): ...
    class UnknownEntryPoint(Error): ...
    class DeviceFault(Error): ...
    class Reentrant(Error): ...
    class Unsupported(Error): ...
    class VersionMismatch(Error): ...
    class Abandoned(Error): ...
    class Internal(Error): ...
    class Capturing(Error): ...

_MESSAGE_CAPACITY = 1024


def last_error() -> Error:
    """The calling thread's last error as an Error instance (not raised)."""
    info = _ffi.new("t4a_error_info")
    _ffi.C.t4a_last_error(ctypes.byref(info))
    buf = ctypes.create_string_buffer(_MESSAGE_CAPACITY)
    needed = ctypes.c_size_t(0)
    _ffi.C.t4a_last_error_message(buf, _MESSAGE_CAPACITY, ctypes.byref(needed))
    if needed.value > _MESSAGE_CAPACITY:
        buf = ctypes.create_string_buffer(needed.value)
        _ffi.C.t4a_last_error_message(buf, needed.value, ctypes.byref(needed))
    message = buf.value.decode("utf-8", "replace")
    entry = info.entry_point.decode() if info.entry_point else None
    cls = ERRORS.get(info.status, Error)
    return cls(message, status=info.status, driver_result=info.driver_result,
               compiler_result=info.compiler_result, entry_point=entry)


def error_for(status: int, entry: Optional[str] = None) -> Error:
    """The exception for a failed call that returned `status`: the thread's
    last error when it records that status, else a bare one."""
    err = last_error()
    if err.status != status:
        cls = ERRORS.get(status, Error)
        err = cls(f"failed with {_ffi.STATUS_NAMES.get(status, status)}", status=status,
                  entry_point=entry)
    return err


def check(status: int, entry: Optional[str] = None) -> None:
    if status != 0:
        raise error_for(status, entry)


def python_error(status_name: str, entry_point: str, message: str) -> Error:
    """An Error raised by the binding itself (argument checks done in Python
    before any call), with the status the library would use."""
    status = _ffi.STATUS[status_name]
    return ERRORS[status](message, status=status, entry_point=entry_point)
