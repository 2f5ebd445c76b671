//! The exported functions of genie.h.
use std::os::raw::{c_char, c_float, c_int, c_uint, c_void};

use crate::types::*;

// ---- functions ----------------------------------------------------------------------
// Every exported function of genie.h, in the header's order. The comments are the
// header's in short; read genie.h for the full contract.

extern "C" {
    // library
    /// The library's ABI version. Thread-safe.
    pub fn genie_abi_version() -> c_int;
    /// The library version ("0.1.0"); static storage.
    pub fn genie_version() -> *const c_char;
    /// Stable upper-case name of a status ("FORMAT"; "UNKNOWN" otherwise); static storage.
    pub fn genie_status_name(status: genie_status) -> *const c_char;
    /// The calling thread's last error message; borrowed until the next failing call.
    pub fn genie_last_error() -> *const c_char;
    /// Empties the calling thread's last-error message.
    pub fn genie_error_clear();
    /// Installs (or with `None` removes) the process-wide log callback.
    pub fn genie_log_set(callback: genie_log_callback, user: *mut c_void) -> genie_status;
    /// Frees a string returned by libgenie; NULL is a no-op.
    pub fn genie_string_free(text: *mut c_char);
    /// Frees a token array returned by libgenie; NULL is a no-op.
    pub fn genie_tokens_free(tokens: *mut genie_token);

    // model
    /// Sets `*opts` to the defaults of `version`.
    pub fn genie_model_options_init(opts: *mut genie_model_options, version: c_uint) -> genie_status;
    /// Loads a GGUF file; caller frees `*out` with `genie_model_free`.
    pub fn genie_model_load(
        out: *mut *mut genie_model,
        path: *const c_char,
        opts: *const genie_model_options,
    ) -> genie_status;
    /// Releases the caller's reference to a model; NULL is a no-op.
    pub fn genie_model_free(model: *mut genie_model);
    /// Fills `*out` (whose version the caller set).
    pub fn genie_model_get_info(out: *mut genie_model_info, model: *const genie_model) -> genie_status;
    /// `*out` = non-zero when `token` ends a generation.
    pub fn genie_model_token_is_eog(out: *mut c_int, model: *const genie_model, token: genie_token) -> genie_status;
    /// `*out` = the GGUF's chat template or ""; borrowed, lives as long as the model.
    pub fn genie_model_chat_template(out: *mut *const c_char, model: *const genie_model) -> genie_status;
    /// Tokenizes; caller frees `*out_tokens` with `genie_tokens_free`.
    pub fn genie_model_tokenize(
        out_tokens: *mut *mut genie_token,
        out_count: *mut usize,
        model: *const genie_model,
        text: *const c_char,
        text_len: usize,
        flags: c_uint,
    ) -> genie_status;
    /// Detokenizes; caller frees `*out_text` with `genie_string_free`.
    pub fn genie_model_detokenize(
        out_text: *mut *mut c_char,
        out_len: *mut usize,
        model: *const genie_model,
        tokens: *const genie_token,
        count: usize,
        flags: c_uint,
    ) -> genie_status;

    // sampler
    /// Sets `*opts` to the defaults.
    pub fn genie_sampler_options_init(opts: *mut genie_sampler_options, version: c_uint) -> genie_status;
    /// Creates a sampler; caller frees with `genie_sampler_free`.
    pub fn genie_sampler_create(out: *mut *mut genie_sampler, opts: *const genie_sampler_options) -> genie_status;
    /// Frees a sampler; NULL is a no-op; not while in use.
    pub fn genie_sampler_free(sampler: *mut genie_sampler);
    /// Restores the initial state.
    pub fn genie_sampler_reset(sampler: *mut genie_sampler) -> genie_status;
    /// `*out` = the token chosen from `count` logits.
    pub fn genie_sampler_sample(
        out: *mut genie_token,
        sampler: *mut genie_sampler,
        logits: *const c_float,
        count: usize,
    ) -> genie_status;
    /// Feeds the penalty window.
    pub fn genie_sampler_accept(sampler: *mut genie_sampler, token: genie_token) -> genie_status;

    // session
    /// Sets `*opts` to the defaults.
    pub fn genie_session_options_init(opts: *mut genie_session_options, version: c_uint) -> genie_status;
    /// Creates a session on `model` (kept alive); caller frees with `genie_session_free`.
    pub fn genie_session_create(
        out: *mut *mut genie_session,
        model: *mut genie_model,
        opts: *const genie_session_options,
    ) -> genie_status;
    /// Frees a session; NULL is a no-op; not while a call on it runs.
    pub fn genie_session_free(session: *mut genie_session);
    /// Sets `*opts` to the defaults.
    pub fn genie_generate_options_init(opts: *mut genie_generate_options, version: c_uint) -> genie_status;
    /// Frees the text and tokens of `*result`, zeroes the rest (version kept).
    pub fn genie_generate_result_clear(result: *mut genie_generate_result);
    /// Tokenizes `prompt` and generates after it.
    pub fn genie_session_generate(
        out: *mut genie_generate_result,
        session: *mut genie_session,
        prompt: *const c_char,
        prompt_len: usize,
        sampler: *mut genie_sampler,
        opts: *const genie_generate_options,
        callback: genie_generate_callback,
        user: *mut c_void,
    ) -> genie_status;
    /// Same with prompt tokens.
    pub fn genie_session_generate_tokens(
        out: *mut genie_generate_result,
        session: *mut genie_session,
        prompt: *const genie_token,
        prompt_count: usize,
        sampler: *mut genie_sampler,
        opts: *const genie_generate_options,
        callback: genie_generate_callback,
        user: *mut c_void,
    ) -> genie_status;
    /// Renders messages with the model's chat template; caller frees with `genie_string_free`.
    pub fn genie_model_apply_chat_template(
        out_text: *mut *mut c_char,
        out_len: *mut usize,
        model: *const genie_model,
        messages: *const genie_chat_message,
        count: usize,
        add_generation_prompt: c_int,
    ) -> genie_status;

    // chat
    /// Sets `*req` to the defaults of `version`.
    pub fn genie_chat_request_init(req: *mut genie_chat_request, version: c_uint) -> genie_status;
    /// Frees the strings of `*result`, zeroes the rest (version kept).
    pub fn genie_chat_result_clear(result: *mut genie_chat_result);
    /// Chat on a session: renders, generates, streams pieces (note: `out` last).
    pub fn genie_session_chat(
        session: *mut genie_session,
        request: *const genie_chat_request,
        callback: genie_piece_callback,
        user: *mut c_void,
        out: *mut genie_chat_result,
    ) -> genie_status;
    /// Asks a running generation to stop; any thread; the session must stay alive.
    pub fn genie_session_cancel(session: *mut genie_session) -> genie_status;
    /// Evaluates tokens; `*out_logits` borrowed until the next call on the session.
    pub fn genie_session_evaluate(
        out_logits: *mut *const c_float,
        out_count: *mut usize,
        session: *mut genie_session,
        tokens: *const genie_token,
        count: usize,
    ) -> genie_status;
    /// The logits of the last evaluated token; borrowed until the next call.
    pub fn genie_session_last_logits(
        out_logits: *mut *const c_float,
        out_count: *mut usize,
        session: *const genie_session,
    ) -> genie_status;
    /// The tokens the KV cache holds; borrowed until the next call.
    pub fn genie_session_cached_tokens(
        out_tokens: *mut *const genie_token,
        out_count: *mut usize,
        session: *const genie_session,
    ) -> genie_status;
    /// `*out` = the KV cache's capacity in tokens.
    pub fn genie_session_context_length(out: *mut i32, session: *const genie_session) -> genie_status;
    /// Empties the KV cache.
    pub fn genie_session_reset(session: *mut genie_session) -> genie_status;

    // session state
    /// Saves the KV cache to `path` atomically; `*out_bytes` = the file's size.
    pub fn genie_session_save_state(
        out_bytes: *mut u64,
        session: *mut genie_session,
        path: *const c_char,
    ) -> genie_status;
    /// Replaces the KV cache with the state in `path`.
    pub fn genie_session_load_state(session: *mut genie_session, path: *const c_char) -> genie_status;

    // engine
    /// Sets `*opts` to the defaults.
    pub fn genie_engine_options_init(opts: *mut genie_engine_options, version: c_uint) -> genie_status;
    /// Creates an engine with no model; caller frees with `genie_engine_free`.
    pub fn genie_engine_create(out: *mut *mut genie_engine, opts: *const genie_engine_options) -> genie_status;
    /// Cancels and waits for everything, frees the engine; no other call may run.
    pub fn genie_engine_free(engine: *mut genie_engine);
    /// Starts a background load (the current model is unloaded first).
    pub fn genie_engine_load(
        engine: *mut genie_engine,
        path: *const c_char,
        progress: genie_load_progress_callback,
        user: *mut c_void,
    ) -> genie_status;
    /// Starts a background load that replaces the serving model on success.
    pub fn genie_engine_swap(
        engine: *mut genie_engine,
        path: *const c_char,
        progress: genie_load_progress_callback,
        user: *mut c_void,
    ) -> genie_status;
    /// Waits for the running load/swap at most `timeout_ms` (< 0: no limit).
    pub fn genie_engine_wait(
        out_state: *mut genie_engine_state,
        engine: *mut genie_engine,
        timeout_ms: i64,
    ) -> genie_status;
    /// Cancels loads and requests, frees the model and caches.
    pub fn genie_engine_unload(engine: *mut genie_engine) -> genie_status;
    /// One tiny forward pass to pay lazy initialisation up front.
    pub fn genie_engine_warmup(engine: *mut genie_engine) -> genie_status;
    /// Tokens of context per session (0 = the default).
    pub fn genie_engine_set_context_limit(engine: *mut genie_engine, n_ctx: i32) -> genie_status;
    /// Frees idle kept conversations except the `keep_idle` most recent.
    pub fn genie_engine_trim(out_released: *mut u64, engine: *mut genie_engine, keep_idle: i32) -> genie_status;
    /// Forgets a conversation.
    pub fn genie_engine_forget(engine: *mut genie_engine, conversation_id: *const c_char) -> genie_status;
    /// Cancels the running request of a conversation (NULL: every running request).
    pub fn genie_engine_cancel(engine: *mut genie_engine, conversation_id: *const c_char) -> genie_status;
    /// Fills `*out` (version set by the caller); never blocks.
    pub fn genie_engine_status(out: *mut genie_engine_status_info, engine: *const genie_engine) -> genie_status;
    /// Frees the strings of `*out`, zeroes the rest (version kept).
    pub fn genie_engine_status_clear(out: *mut genie_engine_status_info);
    /// Sets `*opts` to the defaults.
    pub fn genie_engine_chat_options_init(opts: *mut genie_engine_chat_options, version: c_uint) -> genie_status;
    /// `genie_session_chat` on the engine (waits for a turn; pieces on the calling thread).
    pub fn genie_engine_chat(
        engine: *mut genie_engine,
        opts: *const genie_engine_chat_options,
        request: *const genie_chat_request,
        callback: genie_piece_callback,
        user: *mut c_void,
        out: *mut genie_chat_result,
    ) -> genie_status;
}
