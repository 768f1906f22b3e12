//! Errors: the status of a failing call with the calling thread's last
//! error (t4a_last_error, t4a_last_error_message).

use std::ffi::CStr;
use std::fmt;
use t4acuda_sys as sys;

/// A t4acuda status other than success.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    NotReady,
    InvalidArgument,
    InvalidHandle,
    WrongRuntime,
    NoDriver,
    NoDevice,
    NoCompiler,
    OutOfMemory,
    OutOfHostMemory,
    Driver,
    Compile,
    UnknownEntryPoint,
    DeviceFault,
    Reentrant,
    Unsupported,
    VersionMismatch,
    Abandoned,
    Internal,
    /// The runtime is capturing a graph and the operation cannot be
    /// captured (or another thread's global capture refused it).
    Capturing,
    /// A code this crate does not know (a newer library).
    Other(i32),
}

impl Status {
    /// The status for a C code (None for T4A_SUCCESS).
    pub fn from_code(code: i32) -> Option<Status> {
        use Status::*;
        Some(match code {
            sys::T4A_SUCCESS => return None,
            sys::T4A_NOT_READY => NotReady,
            sys::T4A_ERROR_INVALID_ARGUMENT => InvalidArgument,
            sys::T4A_ERROR_INVALID_HANDLE => InvalidHandle,
            sys::T4A_ERROR_WRONG_RUNTIME => WrongRuntime,
            sys::T4A_ERROR_NO_DRIVER => NoDriver,
            sys::T4A_ERROR_NO_DEVICE => NoDevice,
            sys::T4A_ERROR_NO_COMPILER => NoCompiler,
            sys::T4A_ERROR_OUT_OF_MEMORY => OutOfMemory,
            sys::T4A_ERROR_OUT_OF_HOST_MEMORY => OutOfHostMemory,
            sys::T4A_ERROR_DRIVER => Driver,
            sys::T4A_ERROR_COMPILE => Compile,
            sys::T4A_ERROR_UNKNOWN_ENTRY_POINT => UnknownEntryPoint,
            sys::T4A_ERROR_DEVICE_FAULT => DeviceFault,
            sys::T4A_ERROR_REENTRANT => Reentrant,
            sys::T4A_ERROR_UNSUPPORTED => Unsupported,
            sys::T4A_ERROR_VERSION_MISMATCH => VersionMismatch,
            sys::T4A_ERROR_ABANDONED => Abandoned,
            sys::T4A_ERROR_INTERNAL => Internal,
            sys::T4A_ERROR_CAPTURING => Capturing,
            other => Other(other),
        })
    }

    /// The C code.
    pub fn code(self) -> i32 {
        use Status::*;
        match self {
            NotReady => sys::T4A_NOT_READY,
            InvalidArgument => sys::T4A_ERROR_INVALID_ARGUMENT,
            InvalidHandle => sys::T4A_ERROR_INVALID_HANDLE,
            WrongRuntime => sys::T4A_ERROR_WRONG_RUNTIME,
            NoDriver => sys::T4A_ERROR_NO_DRIVER,
            NoDevice => sys::T4A_ERROR_NO_DEVICE,
            NoCompiler => sys::T4A_ERROR_NO_COMPILER,
            OutOfMemory => sys::T4A_ERROR_OUT_OF_MEMORY,
            OutOfHostMemory => sys::T4A_ERROR_OUT_OF_HOST_MEMORY,
            Driver => sys::T4A_ERROR_DRIVER,
            Compile => sys::T4A_ERROR_COMPILE,
            UnknownEntryPoint => sys::T4A_ERROR_UNKNOWN_ENTRY_POINT,
            DeviceFault => sys::T4A_ERROR_DEVICE_FAULT,
            Reentrant => sys::T4A_ERROR_REENTRANT,
            Unsupported => sys::T4A_ERROR_UNSUPPORTED,
            VersionMismatch => sys::T4A_ERROR_VERSION_MISMATCH,
            Abandoned => sys::T4A_ERROR_ABANDONED,
            Internal => sys::T4A_ERROR_INTERNAL,
            Capturing => sys::T4A_ERROR_CAPTURING,
            Other(c) => c,
        }
    }

    /// The C name ("T4A_ERROR_INVALID_ARGUMENT").
    pub fn name(self) -> &'static str {
        crate::status_name(self.code())
    }
}

/// A failed call: the status and what the library recorded about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The status the call returned.
    pub status: Status,
    /// The driver's `CUresult` (0 when the driver was not the cause).
    pub driver_result: i32,
    /// NVRTC's `nvrtcResult` of a failed compile (0 otherwise).
    pub compiler_result: i32,
    /// The entry point that failed ("t4a_launch"); empty for errors this
    /// crate found before calling the library.
    pub entry_point: String,
    /// The library's message (names the argument and values).
    pub message: String,
}

impl Error {
    /// The error for `status`, with this thread's last error when it is
    /// the one the status came from.
    pub(crate) fn last(status: i32) -> Error {
        let st = Status::from_code(status).unwrap_or(Status::Internal);
        let mut info = sys::t4a_error_info::init();
        // SAFETY: info is a valid, versioned out-struct.
        let rc = unsafe { sys::t4a_last_error(&mut info) };
        if rc != sys::T4A_SUCCESS || info.status != status {
            // NOT_READY and statuses returned without recording an error.
            return Error::plain(st, String::new());
        }
        let entry = if info.entry_point.is_null() {
            String::new()
        } else {
            // SAFETY: a static NUL-terminated name.
            unsafe { CStr::from_ptr(info.entry_point) }.to_string_lossy().into_owned()
        };
        let mut needed = 0usize;
        let mut message = String::new();
        // SAFETY: query-then-copy into a buffer of the size asked for.
        if unsafe { sys::t4a_last_error_message(std::ptr::null_mut(), 0, &mut needed) }
            == sys::T4A_SUCCESS
        {
            let mut buf = vec![0u8; needed.max(1)];
            if unsafe {
                sys::t4a_last_error_message(buf.as_mut_ptr().cast(), buf.len(), &mut needed)
            } == sys::T4A_SUCCESS
            {
                let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
                message = String::from_utf8_lossy(&buf[..end]).into_owned();
            }
        }
        Error {
            status: st,
            driver_result: info.driver_result,
            compiler_result: info.compiler_result,
            entry_point: entry,
            message,
        }
    }

    fn plain(status: Status, message: String) -> Error {
        Error { status, driver_result: 0, compiler_result: 0, entry_point: String::new(), message }
    }

    /// An INVALID_ARGUMENT this crate found before calling the library.
    pub(crate) fn invalid(message: String) -> Error {
        Error::plain(Status::InvalidArgument, message)
    }

    /// Host memory for `bytes` bytes could not be reserved.
    pub(crate) fn host_oom(bytes: usize) -> Error {
        Error::plain(
            Status::OutOfHostMemory,
            format!("cannot reserve {bytes} bytes of host memory"),
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.status.name())?;
        if !self.entry_point.is_empty() {
            write!(f, " in {}", self.entry_point)?;
        }
        if self.driver_result != 0 {
            write!(f, " (CUresult {})", self.driver_result)?;
        }
        if self.compiler_result != 0 {
            write!(f, " (nvrtcResult {})", self.compiler_result)?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// `Result<T, t4acuda::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

/// Ok for T4A_SUCCESS, else the error with this thread's last error.
pub(crate) fn check(status: i32) -> Result<()> {
    if status == sys::T4A_SUCCESS {
        Ok(())
    } else {
        Err(Error::last(status))
    }
}
