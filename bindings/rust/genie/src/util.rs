//! Conversions between Rust values and the C ABI's strings, numbers and durations.
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::path::Path;
use std::time::Duration;

use crate::error::{invalid, Result};

/// `text` as a NUL-terminated C string; an error naming `what` when it holds a NUL byte.
pub(crate) fn c_string(what: &str, text: &str) -> Result<CString> {
    CString::new(text).map_err(|_| invalid(format!("genie: {what} contains a NUL byte")))
}

/// A path as the C ABI takes it (NUL-terminated bytes; UTF-8 on non-Unix systems).
pub(crate) fn c_path(path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| invalid(format!("genie: path {} is not UTF-8", path.display())))?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| invalid(format!("genie: path {} contains a NUL byte", path.display())))
}

/// Copies a borrowed NUL-terminated string ("" for NULL).
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that lives during the call.
pub(crate) unsafe fn borrowed_str(ptr: *const c_char) -> String {
    if ptr.is_null() {
        String::new()
    } else {
        // SAFETY: the caller's contract.
        unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    }
}

/// Copies `len` bytes of UTF-8 at `ptr` ("" for NULL or 0).
///
/// # Safety
/// `ptr` is NULL or points to at least `len` readable bytes.
pub(crate) unsafe fn bytes_str(ptr: *const c_char, len: usize) -> String {
    if ptr.is_null() || len == 0 {
        String::new()
    } else {
        // SAFETY: the caller's contract.
        String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }).into_owned()
    }
}

/// A duration as the C ABI's milliseconds (`u32`, 0 = none); longer than `u32::MAX` ms
/// (49.7 days) is an error naming `what`. A non-zero duration under 1 ms rounds up to 1 ms,
/// so it never turns into "none".
pub(crate) fn millis_u32(what: &str, d: Option<Duration>) -> Result<u32> {
    match d {
        None => Ok(0),
        Some(d) => {
            let ms = d.as_millis() + u128::from(d.subsec_nanos() % 1_000_000 != 0);
            u32::try_from(ms).map_err(|_| invalid(format!("genie: {what} of {d:?} exceeds {} ms", u32::MAX)))
        }
    }
}

/// A count as an `i32` field; larger is an error naming `what`.
pub(crate) fn to_i32(what: &str, n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| invalid(format!("genie: {what} of {n} exceeds {}", i32::MAX)))
}

/// Milliseconds as a `Duration` (negative or NaN as zero).
pub(crate) fn ms_duration(ms: f64) -> Duration {
    if ms.is_finite() && ms > 0.0 {
        Duration::from_secs_f64(ms / 1000.0)
    } else {
        Duration::ZERO
    }
}
