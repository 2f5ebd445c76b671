//! genie-rust-example MODEL.gguf PROMPT [N_TOKENS]
//!
//! A Rust consumer of libgenie's raw C ABI (include/genie/genie.h) through the
//! `genie-sys` crate (bindings/rust/genie-sys: the declarations and the linking; std
//! only). Loads the model, streams a greedy generation to stdout through the piece
//! callback, prints a summary to stderr. The safe API over the same calls is the `genie`
//! crate (bindings/rust/genie).
use std::ffi::{CStr, CString};
use std::io::Write;
use std::os::raw::{c_char, c_int, c_void};
use std::process::ExitCode;
use std::ptr;

use genie_sys::*;

/// The message of a failed call, as a Rust string.
fn error(what: &str, status: genie_status) -> String {
    unsafe {
        let name = CStr::from_ptr(genie_status_name(status)).to_string_lossy();
        let message = CStr::from_ptr(genie_last_error()).to_string_lossy();
        format!("{what} failed: {name}: {message}")
    }
}

/// Called on this thread for every piece: complete UTF-8, not NUL-terminated.
unsafe extern "C" fn on_piece(
    user: *mut c_void,
    utf8: *const c_char,
    len: usize,
    _token: genie_token,
) -> c_int {
    let pieces = unsafe { &mut *(user as *mut usize) };
    *pieces += 1;
    let bytes = unsafe { std::slice::from_raw_parts(utf8 as *const u8, len) };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
    0 // continue
}

fn run(model_path: &str, prompt: &str, max_tokens: i32) -> Result<(), String> {
    let path =
        CString::new(model_path).map_err(|_| "the model path contains a NUL byte".to_string())?;
    let mut model: *mut genie_model = ptr::null_mut();
    let mut session: *mut genie_session = ptr::null_mut();
    let mut sampler: *mut genie_sampler = ptr::null_mut();
    let mut result = GENIE_GENERATE_RESULT_INIT;
    let mut pieces: usize = 0;
    let outcome = unsafe {
        (|| {
            let s = genie_model_load(&mut model, path.as_ptr(), ptr::null());
            if s != 0 {
                return Err(error("genie_model_load", s));
            }
            let s = genie_session_create(&mut session, model, ptr::null());
            if s != 0 {
                return Err(error("genie_session_create", s));
            }
            let s = genie_sampler_create(&mut sampler, ptr::null()); // NULL options: greedy
            if s != 0 {
                return Err(error("genie_sampler_create", s));
            }
            let mut opts = GENIE_GENERATE_OPTIONS_INIT;
            opts.max_tokens = max_tokens;
            let s = genie_session_generate(
                &mut result,
                session,
                prompt.as_ptr() as *const c_char,
                prompt.len(),
                sampler,
                &opts,
                Some(on_piece),
                &mut pieces as *mut usize as *mut c_void,
            );
            if s != 0 {
                return Err(error("genie_session_generate", s));
            }
            println!();
            eprintln!(
                "{} pieces, {} tokens generated, finish reason {}, first token {:.1} ms",
                pieces,
                result.completion_tokens,
                result.finish_reason,
                result.time_to_first_token_ms
            );
            Ok(())
        })()
    };
    unsafe {
        genie_generate_result_clear(&mut result);
        genie_sampler_free(sampler);
        genie_session_free(session);
        genie_model_free(model);
    }
    outcome
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 || args.len() > 4 {
        eprintln!("usage: {} MODEL.gguf PROMPT [N_TOKENS]", args[0]);
        return ExitCode::from(2);
    }
    if unsafe { genie_abi_version() } != GENIE_ABI_VERSION {
        eprintln!("libgenie ABI version mismatch: genie-sys declares ABI {GENIE_ABI_VERSION}");
        return ExitCode::from(1);
    }
    let max_tokens = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(32);
    match run(&args[1], &args[2], max_tokens) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("genie-rust-example: {message}");
            ExitCode::from(1)
        }
    }
}
