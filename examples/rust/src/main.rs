//! genie-rust-example MODEL.gguf PROMPT [N_TOKENS]
//!
//! A std-only Rust consumer of libgenie's C ABI (include/genie/genie.h): the functions
//! and structs are declared by hand below. Loads the model, streams a greedy generation
//! to stdout through the piece callback, prints a summary to stderr.
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::io::Write;
use std::process::ExitCode;
use std::ptr;

type Status = c_int; // genie_status: 0 = OK, negative = error
type Token = i32;

#[repr(C)]
struct Model {
    _private: [u8; 0],
}
#[repr(C)]
struct Session {
    _private: [u8; 0],
}
#[repr(C)]
struct Sampler {
    _private: [u8; 0],
}

#[repr(C)]
struct GenerateOptions {
    version: c_uint,
    max_tokens: i32,
    stop_on_eog: c_int,
    add_special: c_int,
    parse_special: c_int,
    stop: *const *const c_char,
    n_stop: usize,
}

#[repr(C)]
struct GenerateResult {
    version: c_uint,
    text: *mut c_char,
    text_len: usize,
    tokens: *mut Token,
    n_tokens: usize,
    finish_reason: c_int,
    prompt_tokens: i32,
    reused_prompt_tokens: i32,
    completion_tokens: i32,
    load_ms: f64,
    prompt_eval_ms: f64,
    time_to_first_token_ms: f64,
    decode_ms: f64,
    prompt_tokens_per_s: f64,
    decode_tokens_per_s: f64,
}

const GENIE_GENERATE_OPTIONS_VERSION: c_uint = 1;
const GENIE_GENERATE_RESULT_VERSION: c_uint = 1;

/// genie.h's genie_generate_callback (the callback of genie_session_generate).
type PieceCallback = extern "C" fn(user: *mut c_void, utf8: *const c_char, len: usize, token: Token) -> c_int;

extern "C" {
    fn genie_abi_version() -> c_int;
    fn genie_last_error() -> *const c_char;
    fn genie_status_name(status: Status) -> *const c_char;
    fn genie_model_load(out: *mut *mut Model, path: *const c_char, opts: *const c_void) -> Status;
    fn genie_model_free(model: *mut Model);
    fn genie_session_create(out: *mut *mut Session, model: *mut Model, opts: *const c_void) -> Status;
    fn genie_session_free(session: *mut Session);
    fn genie_sampler_create(out: *mut *mut Sampler, opts: *const c_void) -> Status;
    fn genie_sampler_free(sampler: *mut Sampler);
    fn genie_generate_options_init(opts: *mut GenerateOptions, version: c_uint) -> Status;
    fn genie_session_generate(
        out: *mut GenerateResult,
        session: *mut Session,
        prompt: *const c_char,
        prompt_len: usize,
        sampler: *mut Sampler,
        opts: *const GenerateOptions,
        callback: Option<PieceCallback>,
        user: *mut c_void,
    ) -> Status;
    fn genie_generate_result_clear(result: *mut GenerateResult);
}

/// The message of a failed call, as a Rust string.
fn error(what: &str, status: Status) -> String {
    unsafe {
        let name = CStr::from_ptr(genie_status_name(status)).to_string_lossy();
        let message = CStr::from_ptr(genie_last_error()).to_string_lossy();
        format!("{what} failed: {name}: {message}")
    }
}

/// Called on this thread for every piece: complete UTF-8, not NUL-terminated.
extern "C" fn on_piece(user: *mut c_void, utf8: *const c_char, len: usize, _token: Token) -> c_int {
    let pieces = unsafe { &mut *(user as *mut usize) };
    *pieces += 1;
    let bytes = unsafe { std::slice::from_raw_parts(utf8 as *const u8, len) };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
    0 // continue
}

fn run(model_path: &str, prompt: &str, max_tokens: i32) -> Result<(), String> {
    let path = CString::new(model_path).map_err(|_| "the model path contains a NUL byte".to_string())?;
    let mut model: *mut Model = ptr::null_mut();
    let mut session: *mut Session = ptr::null_mut();
    let mut sampler: *mut Sampler = ptr::null_mut();
    let mut result = GenerateResult {
        version: GENIE_GENERATE_RESULT_VERSION,
        text: ptr::null_mut(),
        text_len: 0,
        tokens: ptr::null_mut(),
        n_tokens: 0,
        finish_reason: 0,
        prompt_tokens: 0,
        reused_prompt_tokens: 0,
        completion_tokens: 0,
        load_ms: 0.0,
        prompt_eval_ms: 0.0,
        time_to_first_token_ms: 0.0,
        decode_ms: 0.0,
        prompt_tokens_per_s: 0.0,
        decode_tokens_per_s: 0.0,
    };
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
            let mut opts = std::mem::zeroed::<GenerateOptions>();
            let s = genie_generate_options_init(&mut opts, GENIE_GENERATE_OPTIONS_VERSION);
            if s != 0 {
                return Err(error("genie_generate_options_init", s));
            }
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
                pieces, result.completion_tokens, result.finish_reason, result.time_to_first_token_ms
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
    if unsafe { genie_abi_version() } != 2 {
        eprintln!("libgenie ABI version mismatch: this example was written for ABI 2");
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
