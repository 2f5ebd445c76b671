//! [`set_logger`]: the process-wide log sink (`genie_log_set`).
use std::ffi::CStr;
use std::os::raw::{c_char, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::Mutex;

use genie_sys as sys;

use crate::error::{check, Result};

/// Severity of a log message (`genie_log_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LogLevel {
    /// A failed call (the text of its error).
    Error,
    /// Something worth attention.
    Warn,
    /// Model loads, session creation.
    Info,
    /// Details.
    Debug,
}

type Logger = dyn Fn(LogLevel, &str) + Send + Sync;

/// The installed loggers. Each is leaked on purpose: another thread may be inside the
/// previous one while a new one is installed, and the C ABI does not say when that call
/// has ended, so a replaced logger is never freed (one small allocation per `set_logger`).
static INSTALL: Mutex<()> = Mutex::new(());

unsafe extern "C" fn on_log(user: *mut c_void, level: sys::genie_log_level, message: *const c_char) {
    // SAFETY: `user` is a leaked `Box<Box<Logger>>` from set_logger.
    let logger = unsafe { &*user.cast::<Box<Logger>>() };
    let level = match level {
        sys::GENIE_LOG_ERROR => LogLevel::Error,
        sys::GENIE_LOG_WARN => LogLevel::Warn,
        sys::GENIE_LOG_INFO => LogLevel::Info,
        _ => LogLevel::Debug,
    };
    // SAFETY: one NUL-terminated line borrowed for the call.
    let text =
        if message.is_null() { Default::default() } else { unsafe { CStr::from_ptr(message) }.to_string_lossy() };
    // A panicking logger must not unwind into C: the message is dropped instead.
    let _ = panic::catch_unwind(AssertUnwindSafe(|| logger(level, &text)));
}

/// Installs the process-wide log sink. It receives every failed call
/// ([`LogLevel::Error`], the text of the error) and model loads / session creation
/// ([`LogLevel::Info`]), from whichever thread runs the libgenie call. By default nothing
/// is logged. A replaced logger is leaked, never freed (see the source): install one for
/// the life of the process.
pub fn set_logger<F>(logger: F) -> Result<()>
where
    F: Fn(LogLevel, &str) + Send + Sync + 'static,
{
    let _guard = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let boxed: Box<Logger> = Box::new(logger);
    let user = Box::into_raw(Box::new(boxed)).cast::<c_void>();
    // SAFETY: `user` is never freed; on_log only reads it.
    check(unsafe { sys::genie_log_set(Some(on_log), user) })
}

/// Removes the log sink (nothing is logged afterwards).
pub fn clear_logger() -> Result<()> {
    let _guard = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: removing the callback takes no pointer.
    check(unsafe { sys::genie_log_set(None, ptr::null_mut()) })
}
