"""t4acuda from Python: ctypes over libt4acuda (see docs/python.md).

The library is found through T4ACUDA_LIBRARY, else the copy bundled in
this package, else the installed libt4acuda.so.0. Struct layouts,
constants and function signatures come from _layouts.json (a copy of the
repository's abi/layouts.json) and are checked at import.

The package is typed (py.typed; annotations inline, checked by mypy in
the tests): see docs/python.md, "Types".
"""

from typing import TYPE_CHECKING, Any

from . import _ffi
from ._errors import Error, ERRORS, last_error
from ._core import (
    Artifact, Buffer, Capture, ClusterOccupancy, Completion, DevicePointer, Download, Graph,
    HostBuffer, Kernel, Module, PreparedLaunch, RawScope, Runtime, built_cuda_version, compile,
    compile_stats, device_can_access_peer, device_count, device_info, driver_version, f32, f64, i8, i16,
    i32, i64, last_compile_log, last_error_clear, toolkit_headers, driver_lacks, nvrtc_version, process_fault,
    process_stats, set_log_callback, status_description, status_name, u8, u16, u32, u64,
    version, version_string, default_runtime, from_dlpack)

if TYPE_CHECKING:  # made from the status names below (see _errors)
    from ._errors import (
        Abandoned, Capturing, Compile, DeviceFault, Driver, Internal, InvalidArgument,
        InvalidHandle, NoCompiler, NoDevice, NoDriver, NotReady, OutOfHostMemory, OutOfMemory,
        Reentrant, UnknownEntryPoint, Unsupported, VersionMismatch, WrongRuntime)

LIBRARY_PATH: str = _ffi.LIBRARY_PATH
CONSTANTS: "dict[str, Any]" = dict(_ffi.CONSTANTS)
__version__ = "0.1.0"

for _cls in ERRORS.values():
    globals()[_cls.__name__] = _cls
del _cls

__all__ = [
    # objects
    "Artifact", "Buffer", "Capture", "ClusterOccupancy", "Completion", "DevicePointer",
    "Download", "Graph", "HostBuffer", "Kernel",
    "Module", "PreparedLaunch", "RawScope", "Runtime",
    # functions
    "built_cuda_version", "compile", "compile_stats", "default_runtime",
    "device_can_access_peer", "device_count", "device_info", "driver_lacks",
    "driver_version", "from_dlpack", "last_compile_log", "last_error", "last_error_clear",
    "nvrtc_version", "process_fault", "process_stats", "set_log_callback",
    "status_description", "status_name", "toolkit_headers", "version", "version_string",
    # typed kernel-argument scalars
    "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
    # errors: Error and one subclass per status
    "Error", "ERRORS", "Abandoned", "Capturing", "Compile", "DeviceFault", "Driver",
    "Internal", "InvalidArgument", "InvalidHandle", "NoCompiler", "NoDevice", "NoDriver",
    "NotReady", "OutOfHostMemory", "OutOfMemory", "Reentrant", "UnknownEntryPoint",
    "Unsupported", "VersionMismatch", "WrongRuntime",
    # the library
    "CONSTANTS", "LIBRARY_PATH",
]
