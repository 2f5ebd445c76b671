//! [`Session`]: one conversation's KV cache and generate loop; chat, generation, logits,
//! KV-state files.
use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use genie_sys as sys;

use crate::chat::{run_chat, ChatRequest, ChatResponse, FinishReason, Piece, PieceFn};
use crate::error::{check, invalid, Result};
use crate::model::Model;
use crate::sampler::Sampler;
use crate::stream::{Canceller, ChatStream};
use crate::util::{bytes_str, c_path, c_string, ms_duration, to_i32};
use crate::Token;

/// Element type of the KV cache (`genie_kv_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KvType {
    /// 16-bit floats (llama.cpp's default).
    #[default]
    F16,
    /// 32-bit floats.
    F32,
    /// INT8 with a scale per 32 values (ggml Q8_0); head size a multiple of 32.
    Q8_0,
}

impl KvType {
    pub(crate) fn raw(self) -> sys::genie_kv_type {
        match self {
            KvType::F16 => sys::GENIE_KV_F16,
            KvType::F32 => sys::GENIE_KV_F32,
            KvType::Q8_0 => sys::GENIE_KV_Q8_0,
        }
    }
}

/// Options of [`Session::new`] (`genie_session_options`), builder style.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionOptions {
    /// Tokens the KV cache holds; 0 (default) = min(training context, 4096).
    pub context_length: u32,
    /// CPU threads; 0 (default) = all hardware threads.
    pub threads: u32,
    /// Prompt tokens per forward pass (default 512).
    pub batch_size: u32,
    /// KV cache element type (default [`KvType::F16`]).
    pub kv_type: KvType,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions { context_length: 0, threads: 0, batch_size: 512, kv_type: KvType::F16 }
    }
}

impl SessionOptions {
    /// The C ABI's defaults.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets [`Self::context_length`].
    pub fn context_length(mut self, n: u32) -> Self {
        self.context_length = n;
        self
    }
    /// Sets [`Self::threads`].
    pub fn threads(mut self, n: u32) -> Self {
        self.threads = n;
        self
    }
    /// Sets [`Self::batch_size`].
    pub fn batch_size(mut self, n: u32) -> Self {
        self.batch_size = n;
        self
    }
    /// Sets [`Self::kv_type`].
    pub fn kv_type(mut self, kv_type: KvType) -> Self {
        self.kv_type = kv_type;
        self
    }
    /// The C struct; an error when a number exceeds `i32::MAX`.
    pub fn to_raw(&self) -> Result<sys::genie_session_options> {
        Ok(sys::genie_session_options {
            context_length: to_i32("context_length", self.context_length as usize)?,
            threads: to_i32("threads", self.threads as usize)?,
            batch_size: to_i32("batch_size", self.batch_size as usize)?,
            kv_type: self.kv_type.raw(),
            ..sys::GENIE_SESSION_OPTIONS_INIT
        })
    }
}

/// Options of one [`Session::generate`] call (`genie_generate_options`), builder style.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GenerateOptions {
    /// Stop after this many new tokens ([`FinishReason::Length`]); default 256.
    pub max_tokens: u32,
    /// Stop at an end-of-generation token (not in the text); default true.
    pub stop_on_eog: bool,
    /// Text prompt: add BOS/EOS as the vocabulary asks; default true.
    pub add_special: bool,
    /// Text prompt: recognise control tokens written as text; default true.
    pub parse_special: bool,
    /// Stop strings: generation ends when the output contains one (not part of the text).
    pub stop: Vec<String>,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions { max_tokens: 256, stop_on_eog: true, add_special: true, parse_special: true, stop: Vec::new() }
    }
}

impl GenerateOptions {
    /// The C ABI's defaults.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets [`Self::max_tokens`].
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = n;
        self
    }
    /// Sets [`Self::stop_on_eog`].
    pub fn stop_on_eog(mut self, on: bool) -> Self {
        self.stop_on_eog = on;
        self
    }
    /// Sets [`Self::add_special`].
    pub fn add_special(mut self, on: bool) -> Self {
        self.add_special = on;
        self
    }
    /// Sets [`Self::parse_special`].
    pub fn parse_special(mut self, on: bool) -> Self {
        self.parse_special = on;
        self
    }
    /// Adds a stop string.
    pub fn stop(mut self, stop: impl Into<String>) -> Self {
        self.stop.push(stop.into());
        self
    }
}

/// The outcome of [`Session::generate`] (`genie_generate_result`).
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The generated text (complete UTF-8).
    pub text: String,
    /// The generated tokens (a stopping end-of-generation token excluded).
    pub tokens: Vec<Token>,
    /// Why it ended ([`FinishReason::Stop`] also when the callback broke off).
    pub finish_reason: FinishReason,
    /// Tokens in the prompt.
    pub prompt_tokens: u32,
    /// Of those, found in the KV cache.
    pub reused_prompt_tokens: u32,
    /// Evaluating the non-reused prompt tokens.
    pub prompt_eval: Duration,
    /// From the call to the first generated token.
    pub time_to_first_token: Duration,
    /// Generating the tokens after the first.
    pub decode: Duration,
    /// Prompt tokens per second.
    pub prompt_tokens_per_s: f64,
    /// Generated tokens per second.
    pub decode_tokens_per_s: f64,
}

/// The handle shared by a [`Session`] and its [`Canceller`]s: freed when the last one goes.
#[derive(Debug)]
pub(crate) struct SessionHandle {
    pub(crate) ptr: NonNull<sys::genie_session>,
}

// SAFETY: only genie_session_cancel (allowed from any thread) is called through a shared
// handle; every other call goes through `&mut Session`.
unsafe impl Send for SessionHandle {}
// SAFETY: as above.
unsafe impl Sync for SessionHandle {}

impl Drop for SessionHandle {
    fn drop(&mut self) {
        // SAFETY: the last owner: no call on the session runs (a Canceller's call holds a
        // reference, and every other call borrows the Session).
        unsafe { sys::genie_session_free(self.ptr.as_ptr()) }
    }
}

/// One conversation (`genie_session`): a KV cache on a [`Model`] and the generate loop.
/// The longest cached prefix of each prompt is reused, so successive turns of one
/// conversation evaluate only their new tokens.
///
/// **Threads:** `Send`, not `Sync`. The C ABI runs one call at a time on a session (a
/// concurrent second call fails with BUSY); here every call takes `&mut self`, so that
/// holds at compile time. The one call allowed from any thread, cancellation, goes
/// through a [`Canceller`] ([`Session::canceller`]), which is `Send + Sync`.
#[derive(Debug)]
pub struct Session {
    handle: Arc<SessionHandle>,
    _not_sync: PhantomData<Cell<()>>,
}

impl Session {
    /// Creates a session on `model` (which it keeps alive: the model may be dropped first).
    /// Errors: [`Error::InvalidArgument`](crate::Error::InvalidArgument) (options),
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) (KV cache),
    /// [`Error::Unsupported`](crate::Error::Unsupported) (Q8_0 KV with an unfit head size).
    pub fn new(model: &Model, options: &SessionOptions) -> Result<Session> {
        let raw = options.to_raw()?;
        let mut out = ptr::null_mut();
        // SAFETY: the model is alive; options valid for the call.
        check(unsafe { sys::genie_session_create(&mut out, model.as_ptr(), &raw) })?;
        let ptr = NonNull::new(out).ok_or_else(|| invalid("genie_session_create gave no session"))?;
        Ok(Session { handle: Arc::new(SessionHandle { ptr }), _not_sync: PhantomData })
    }

    /// The raw handle, for calls this crate does not wrap. Borrowed: valid while `self` lives.
    pub fn as_ptr(&mut self) -> *mut sys::genie_session {
        self.handle.ptr.as_ptr()
    }

    fn raw(&self) -> *mut sys::genie_session {
        self.handle.ptr.as_ptr()
    }

    /// A handle that cancels this session's running generation from any thread (within
    /// one token; the call then returns [`FinishReason::Cancelled`]). As in the C ABI, a
    /// cancel that arrives while nothing runs is ignored. It keeps the session's memory
    /// alive, never its use.
    pub fn canceller(&self) -> Canceller {
        Canceller::for_session(self.handle.clone())
    }

    /// Renders `req` with the model's chat template and generates the answer.
    ///
    /// Errors: [`Error::InvalidArgument`](crate::Error::InvalidArgument) (bad request),
    /// [`Error::ContextOverflow`](crate::Error::ContextOverflow) (the conversation does not
    /// fit; the cache is left as it was), template errors. Cancellation and timeouts are
    /// not errors: see [`ChatResponse::finish_reason`].
    pub fn chat(&mut self, req: &ChatRequest) -> Result<ChatResponse> {
        self.chat_impl(req, None, None)
    }

    /// [`Self::chat`], streaming each piece to `on_piece` as it is produced, on this thread.
    /// `ControlFlow::Break(())` stops the generation (finish [`FinishReason::Cancelled`],
    /// the text so far kept). A panic in `on_piece` stops the generation and is resumed
    /// when the C call has returned.
    pub fn chat_stream<F>(&mut self, req: &ChatRequest, mut on_piece: F) -> Result<ChatResponse>
    where
        F: FnMut(Piece<'_>) -> ControlFlow<()>,
    {
        self.chat_impl(req, Some(&mut on_piece), None)
    }

    fn chat_impl<'f>(
        &mut self,
        req: &ChatRequest,
        on_piece: Option<&'f mut PieceFn<'f>>,
        cancel: Option<&AtomicBool>,
    ) -> Result<ChatResponse> {
        let session = self.raw();
        run_chat(req, on_piece, cancel, &mut |r, cb, user, out| {
            // SAFETY: the session is alive and not in use (`&mut self`); the request, the
            // sink and `out` live during the call.
            unsafe { sys::genie_session_chat(session, r, cb, user, out) }
        })
    }

    /// Moves the session to a background thread that runs `req`, and returns a
    /// [`ChatStream`] that yields the pieces as they arrive (usable from any thread) and
    /// gives the session back with the response at [`ChatStream::join`].
    ///
    /// # Panics
    /// When the operating system cannot start a thread.
    pub fn into_chat_stream(self, req: ChatRequest) -> ChatStream<Session> {
        let canceller = self.canceller();
        ChatStream::spawn(canceller, move |sink, flag| {
            let mut session = self;
            let result = session.chat_impl(&req, Some(sink), Some(flag));
            (session, result)
        })
    }

    /// Tokenizes `prompt` and generates after it with `sampler`, reusing the longest
    /// cached prefix. Errors: [`Error::ContextOverflow`](crate::Error::ContextOverflow),
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) (empty prompt, options).
    pub fn generate(&mut self, prompt: &str, sampler: &mut Sampler, options: &GenerateOptions) -> Result<Generation> {
        self.generate_impl(Prompt::Text(prompt), sampler, options, None)
    }

    /// [`Self::generate`], streaming each piece (`text`, and the token that completed it,
    /// `None` for the final flush) to `on_piece`; `ControlFlow::Break(())` stops
    /// (finish [`FinishReason::Stop`]).
    pub fn generate_stream<F>(
        &mut self,
        prompt: &str,
        sampler: &mut Sampler,
        options: &GenerateOptions,
        mut on_piece: F,
    ) -> Result<Generation>
    where
        F: FnMut(&str, Option<Token>) -> ControlFlow<()>,
    {
        self.generate_impl(Prompt::Text(prompt), sampler, options, Some(&mut on_piece))
    }

    /// [`Self::generate`] from prompt tokens (`add_special` / `parse_special` ignored).
    pub fn generate_tokens(
        &mut self,
        prompt: &[Token],
        sampler: &mut Sampler,
        options: &GenerateOptions,
    ) -> Result<Generation> {
        self.generate_impl(Prompt::Tokens(prompt), sampler, options, None)
    }

    fn generate_impl<'f>(
        &mut self,
        prompt: Prompt<'_>,
        sampler: &mut Sampler,
        options: &GenerateOptions,
        callback: Option<&'f mut GenerateFn<'f>>,
    ) -> Result<Generation> {
        let mut stops = Vec::with_capacity(options.stop.len());
        for (i, s) in options.stop.iter().enumerate() {
            stops.push(c_string(&format!("stop string {i}"), s)?);
        }
        let stop_ptrs: Vec<*const c_char> = stops.iter().map(|s| s.as_ptr()).collect();
        let raw_opts = sys::genie_generate_options {
            max_tokens: to_i32("max_tokens", options.max_tokens as usize)?,
            stop_on_eog: c_int::from(options.stop_on_eog),
            add_special: c_int::from(options.add_special),
            parse_special: c_int::from(options.parse_special),
            stop: if stop_ptrs.is_empty() { ptr::null() } else { stop_ptrs.as_ptr() },
            n_stop: stop_ptrs.len(),
            ..sys::GENIE_GENERATE_OPTIONS_INIT
        };
        let mut result = RawGenerateResult(sys::GENIE_GENERATE_RESULT_INIT);
        let has_callback = callback.is_some();
        let mut sink = GenerateSink { callback, panic: None };
        let cb: sys::genie_generate_callback = if has_callback { Some(on_generated) } else { None };
        let user = (&mut sink as *mut GenerateSink<'_>).cast::<c_void>();
        let sampler_ptr = sampler.as_ptr();
        // SAFETY: session and sampler alive and not in use (`&mut`); options, stop strings,
        // prompt and sink live during the call.
        let status = unsafe {
            match prompt {
                Prompt::Text(text) => sys::genie_session_generate(
                    &mut result.0,
                    self.raw(),
                    text.as_ptr().cast(),
                    text.len(),
                    sampler_ptr,
                    &raw_opts,
                    cb,
                    user,
                ),
                Prompt::Tokens(tokens) => sys::genie_session_generate_tokens(
                    &mut result.0,
                    self.raw(),
                    tokens.as_ptr(),
                    tokens.len(),
                    sampler_ptr,
                    &raw_opts,
                    cb,
                    user,
                ),
            }
        };
        let outcome = check(status);
        if let Some(payload) = sink.panic.take() {
            drop(result);
            panic::resume_unwind(payload);
        }
        outcome?;
        let r = &result.0;
        let finish_reason = match r.finish_reason {
            sys::GENIE_FINISH_LENGTH => FinishReason::Length,
            sys::GENIE_FINISH_CANCELLED => FinishReason::Cancelled,
            sys::GENIE_FINISH_TIMEOUT => FinishReason::Timeout,
            _ => FinishReason::Stop,
        };
        let tokens = if r.tokens.is_null() || r.n_tokens == 0 {
            Vec::new()
        } else {
            // SAFETY: n_tokens ids owned by the result.
            unsafe { std::slice::from_raw_parts(r.tokens, r.n_tokens) }.to_vec()
        };
        Ok(Generation {
            // SAFETY: text_len bytes owned by the result.
            text: unsafe { bytes_str(r.text, r.text_len) },
            tokens,
            finish_reason,
            prompt_tokens: u32::try_from(r.prompt_tokens).unwrap_or(0),
            reused_prompt_tokens: u32::try_from(r.reused_prompt_tokens).unwrap_or(0),
            prompt_eval: ms_duration(r.prompt_eval_ms),
            time_to_first_token: ms_duration(r.time_to_first_token_ms),
            decode: ms_duration(r.decode_ms),
            prompt_tokens_per_s: r.prompt_tokens_per_s,
            decode_tokens_per_s: r.decode_tokens_per_s,
        })
    }

    /// Evaluates `tokens` as the whole sequence (the cached prefix reused) and returns the
    /// logits of the last one (`n_vocab` floats), borrowed until the next call.
    pub fn evaluate(&mut self, tokens: &[Token]) -> Result<&[f32]> {
        let mut logits = ptr::null();
        let mut count = 0usize;
        // SAFETY: session alive and not in use; tokens valid; out-pointers valid.
        check(unsafe {
            sys::genie_session_evaluate(&mut logits, &mut count, self.raw(), tokens.as_ptr(), tokens.len())
        })?;
        // SAFETY: `count` floats borrowed until the next call on the session, which the
        // returned borrow of `self` rules out.
        Ok(unsafe { slice_or_empty(logits, count) })
    }

    /// The logits of the last evaluated token (empty before any evaluation).
    pub fn last_logits(&mut self) -> Result<&[f32]> {
        let mut logits = ptr::null();
        let mut count = 0usize;
        // SAFETY: as in `evaluate`.
        check(unsafe { sys::genie_session_last_logits(&mut logits, &mut count, self.raw()) })?;
        // SAFETY: as in `evaluate`.
        Ok(unsafe { slice_or_empty(logits, count) })
    }

    /// The tokens the KV cache holds, in order.
    pub fn cached_tokens(&mut self) -> Result<&[Token]> {
        let mut tokens = ptr::null();
        let mut count = 0usize;
        // SAFETY: as in `evaluate`.
        check(unsafe { sys::genie_session_cached_tokens(&mut tokens, &mut count, self.raw()) })?;
        // SAFETY: as in `evaluate`.
        Ok(unsafe { slice_or_empty(tokens, count) })
    }

    /// The number of tokens the KV cache holds at most.
    pub fn context_length(&mut self) -> Result<u32> {
        let mut out = 0;
        // SAFETY: session alive and not in use; out-pointer valid.
        check(unsafe { sys::genie_session_context_length(&mut out, self.raw()) })?;
        Ok(u32::try_from(out).unwrap_or(0))
    }

    /// Empties the KV cache.
    pub fn reset(&mut self) -> Result<()> {
        // SAFETY: session alive and not in use.
        check(unsafe { sys::genie_session_reset(self.raw()) })
    }

    /// Saves the KV cache to `path` atomically; returns the file's size in bytes.
    pub fn save_state(&mut self, path: impl AsRef<Path>) -> Result<u64> {
        let path = c_path(path.as_ref())?;
        let mut bytes = 0u64;
        // SAFETY: session alive and not in use; path NUL-terminated.
        check(unsafe { sys::genie_session_save_state(&mut bytes, self.raw(), path.as_ptr()) })?;
        Ok(bytes)
    }

    /// Replaces the KV cache with the state saved in `path` (same model, KV type and
    /// shape); on error the session is unchanged.
    pub fn load_state(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = c_path(path.as_ref())?;
        // SAFETY: session alive and not in use; path NUL-terminated.
        check(unsafe { sys::genie_session_load_state(self.raw(), path.as_ptr()) })
    }
}

/// `count` items at `ptr` (empty for NULL or 0).
///
/// # Safety
/// `ptr` is NULL or valid for `count` items during `'a`.
unsafe fn slice_or_empty<'a, T>(ptr: *const T, count: usize) -> &'a [T] {
    if ptr.is_null() || count == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(ptr, count) }
    }
}

enum Prompt<'a> {
    Text(&'a str),
    Tokens(&'a [Token]),
}

/// A `genie_generate_result` cleared when dropped.
struct RawGenerateResult(sys::genie_generate_result);

impl Drop for RawGenerateResult {
    fn drop(&mut self) {
        // SAFETY: initialised with GENIE_GENERATE_RESULT_INIT.
        unsafe { sys::genie_generate_result_clear(&mut self.0) }
    }
}

/// A generate callback: the piece's text and the token that completed it.
type GenerateFn<'f> = dyn FnMut(&str, Option<Token>) -> ControlFlow<()> + 'f;

struct GenerateSink<'a> {
    callback: Option<&'a mut GenerateFn<'a>>,
    panic: Option<Box<dyn std::any::Any + Send>>,
}

/// `genie_generate_callback`: as chat's `on_piece`, for [`Session::generate_stream`].
unsafe extern "C" fn on_generated(user: *mut c_void, utf8: *const c_char, len: usize, token: Token) -> c_int {
    // SAFETY: `user` is the GenerateSink of generate_impl, alive during the C call, and
    // the callback runs on the calling thread.
    let sink = unsafe { &mut *user.cast::<GenerateSink<'_>>() };
    if sink.panic.is_some() {
        return 1;
    }
    let callback = match sink.callback.as_mut() {
        Some(cb) => cb,
        None => return 0,
    };
    let bytes = if utf8.is_null() || len == 0 {
        &[][..]
    } else {
        // SAFETY: `len` bytes of complete UTF-8, valid during the call.
        unsafe { std::slice::from_raw_parts(utf8.cast::<u8>(), len) }
    };
    let text = String::from_utf8_lossy(bytes);
    let token = if token == sys::GENIE_NO_TOKEN { None } else { Some(token) };
    match panic::catch_unwind(AssertUnwindSafe(|| callback(&text, token))) {
        Ok(ControlFlow::Continue(())) => 0,
        Ok(ControlFlow::Break(())) => 1,
        Err(payload) => {
            sink.panic = Some(payload);
            1
        }
    }
}
