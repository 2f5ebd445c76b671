//! [`Error`]: libgenie's status codes with their messages, and [`Result`].
use std::ffi::CStr;
use std::fmt;

use genie_sys as sys;

/// The result of every fallible call of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// A failed libgenie call: one variant per `genie_status` code, each with the message the
/// library gave (`genie_last_error()`, which names the function and what failed).
///
/// Errors raised on the Rust side before anything reaches the C ABI (a string holding a
/// NUL byte, a number out of the C type's range) are [`Error::InvalidArgument`] too,
/// with a message that names the argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// `GENIE_INVALID_ARGUMENT`: a bad argument, option or request.
    InvalidArgument(String),
    /// `GENIE_NOT_FOUND`: a file or folder does not exist.
    NotFound(String),
    /// `GENIE_FORMAT`: a corrupt or unexpected file (GGUF, KV state, chat template).
    Format(String),
    /// `GENIE_UNSUPPORTED`: an architecture, quantization or feature this build lacks.
    Unsupported(String),
    /// `GENIE_OUT_OF_MEMORY`: the model, a KV cache or scratch does not fit.
    OutOfMemory(String),
    /// `GENIE_CONTEXT_OVERFLOW`: the conversation does not fit the context.
    ContextOverflow(String),
    /// `GENIE_CANCELLED`: a load was cancelled.
    Cancelled(String),
    /// `GENIE_BUSY`: another call runs on the object (or a load/swap already runs).
    Busy(String),
    /// `GENIE_NOT_LOADED`: the engine has no model.
    NotLoaded(String),
    /// `GENIE_DEVICE`: the accelerator failed or is unavailable.
    Device(String),
    /// `GENIE_INTERNAL`: a bug in libgenie.
    Internal(String),
    /// `GENIE_IO`: reading or writing a file failed.
    Io(String),
    /// A status this crate does not know (a newer library).
    Unknown {
        /// The raw `genie_status` value.
        code: i32,
        /// The library's message.
        message: String,
    },
}

impl Error {
    /// The error for a `genie_status` code and its message; `None` for `GENIE_OK`.
    pub fn from_status(code: i32, message: impl Into<String>) -> Option<Error> {
        let m = message.into();
        Some(match code {
            sys::GENIE_OK => return None,
            sys::GENIE_INVALID_ARGUMENT => Error::InvalidArgument(m),
            sys::GENIE_NOT_FOUND => Error::NotFound(m),
            sys::GENIE_FORMAT => Error::Format(m),
            sys::GENIE_UNSUPPORTED => Error::Unsupported(m),
            sys::GENIE_OUT_OF_MEMORY => Error::OutOfMemory(m),
            sys::GENIE_CONTEXT_OVERFLOW => Error::ContextOverflow(m),
            sys::GENIE_CANCELLED => Error::Cancelled(m),
            sys::GENIE_BUSY => Error::Busy(m),
            sys::GENIE_NOT_LOADED => Error::NotLoaded(m),
            sys::GENIE_DEVICE => Error::Device(m),
            sys::GENIE_INTERNAL => Error::Internal(m),
            sys::GENIE_IO => Error::Io(m),
            code => Error::Unknown { code, message: m },
        })
    }

    /// The `genie_status` value (negative).
    pub fn code(&self) -> i32 {
        match self {
            Error::InvalidArgument(_) => sys::GENIE_INVALID_ARGUMENT,
            Error::NotFound(_) => sys::GENIE_NOT_FOUND,
            Error::Format(_) => sys::GENIE_FORMAT,
            Error::Unsupported(_) => sys::GENIE_UNSUPPORTED,
            Error::OutOfMemory(_) => sys::GENIE_OUT_OF_MEMORY,
            Error::ContextOverflow(_) => sys::GENIE_CONTEXT_OVERFLOW,
            Error::Cancelled(_) => sys::GENIE_CANCELLED,
            Error::Busy(_) => sys::GENIE_BUSY,
            Error::NotLoaded(_) => sys::GENIE_NOT_LOADED,
            Error::Device(_) => sys::GENIE_DEVICE,
            Error::Internal(_) => sys::GENIE_INTERNAL,
            Error::Io(_) => sys::GENIE_IO,
            Error::Unknown { code, .. } => *code,
        }
    }

    /// The stable upper-case name of the status, as `genie_status_name` spells it
    /// (`"FORMAT"`, `"NOT_FOUND"` ...; `"UNKNOWN"` for [`Error::Unknown`]).
    pub fn status_name(&self) -> &'static str {
        match self {
            Error::InvalidArgument(_) => "INVALID_ARGUMENT",
            Error::NotFound(_) => "NOT_FOUND",
            Error::Format(_) => "FORMAT",
            Error::Unsupported(_) => "UNSUPPORTED",
            Error::OutOfMemory(_) => "OUT_OF_MEMORY",
            Error::ContextOverflow(_) => "CONTEXT_OVERFLOW",
            Error::Cancelled(_) => "CANCELLED",
            Error::Busy(_) => "BUSY",
            Error::NotLoaded(_) => "NOT_LOADED",
            Error::Device(_) => "DEVICE",
            Error::Internal(_) => "INTERNAL",
            Error::Io(_) => "IO",
            Error::Unknown { .. } => "UNKNOWN",
        }
    }

    /// The library's message (for Rust-side argument errors, this crate's).
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidArgument(m)
            | Error::NotFound(m)
            | Error::Format(m)
            | Error::Unsupported(m)
            | Error::OutOfMemory(m)
            | Error::ContextOverflow(m)
            | Error::Cancelled(m)
            | Error::Busy(m)
            | Error::NotLoaded(m)
            | Error::Device(m)
            | Error::Internal(m)
            | Error::Io(m) => m,
            Error::Unknown { message, .. } => message,
        }
    }
}

impl fmt::Display for Error {
    /// `"FORMAT: genie_model_load: ..."`: the status name, then the message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unknown { code, message } => write!(f, "UNKNOWN ({code}): {message}"),
            e => write!(f, "{}: {}", e.status_name(), e.message()),
        }
    }
}

impl std::error::Error for Error {}

/// The calling thread's `genie_last_error()` as a `String`.
pub(crate) fn last_error_message() -> String {
    // SAFETY: genie_last_error never returns NULL; the text is NUL-terminated and lives
    // until the next failing call on this thread, and it is copied before that.
    unsafe { CStr::from_ptr(sys::genie_last_error()) }.to_string_lossy().into_owned()
}

/// `Ok(())` for `GENIE_OK`, else the error with this thread's last message. Call it right
/// after the C call, on the same thread, before any other libgenie call.
pub(crate) fn check(status: sys::genie_status) -> Result<()> {
    if status == sys::GENIE_OK {
        return Ok(());
    }
    match Error::from_status(status, last_error_message()) {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// A Rust-side argument error (never reached the C ABI).
pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidArgument(message.into())
}
