//! Safe Rust API over libgenie, the embeddable LLM inference library, through its C ABI
//! (`include/genie/genie.h`; raw declarations in the `genie-sys` crate).
//!
//! - [`Model`]: a loaded GGUF model; [`Session`]: one conversation's KV cache and generate
//!   loop; [`Sampler`]: token sampling; [`Engine`]: a model's lifecycle (background load,
//!   swap, unload, warm-up, context limit), health and warm conversations.
//! - Chat: a [`ChatRequest`] (messages with tool calls and tool results, max tokens,
//!   sampling, JSON schema or GBNF grammar, tools and tool choice, thinking, stop strings,
//!   deadline, idle timeout) gives a [`ChatResponse`] (content, reasoning, every tool call
//!   and the rejected ones, finish reason, usage, timings), blocking (`chat`), streamed to a closure
//!   (`chat_stream`, whose `ControlFlow::Break` stops the generation), or streamed through
//!   a channel from a background thread ([`ChatStream`], cancellable from any thread with
//!   a [`Canceller`]).
//! - Errors: [`Error`] has one variant per `genie_status` code with the library's message.
//!
//! ```no_run
//! use std::ops::ControlFlow;
//! use genie::{ChatRequest, Model, ModelOptions, Session, SessionOptions};
//!
//! let model = Model::load("model.gguf", &ModelOptions::new())?;
//! let mut session = Session::new(&model, &SessionOptions::new())?;
//! let req = ChatRequest::new().system("Answer briefly.").user("Turn on the kitchen light").max_tokens(64);
//! let response = session.chat_stream(&req, |piece| {
//!     print!("{}", piece.text);
//!     ControlFlow::Continue(())
//! })?;
//! println!("\n{:?}, {} tokens", response.finish_reason, response.usage.completion_tokens);
//! # Ok::<(), genie::Error>(())
//! ```
//!
//! # Threads
//!
//! The C header's rules (its preamble and the engine section), and what they become here:
//!
//! | Type | `Send` | `Sync` | Why |
//! |---|---|---|---|
//! | [`Model`] | yes | yes | "a genie_model may be used from any number of threads at once" |
//! | [`Session`] | yes | no | "used by one call at a time" (a concurrent call gets BUSY): every call takes `&mut self` |
//! | [`Sampler`] | yes | no | as a session |
//! | [`Engine`] | yes | yes | "Every genie_engine_* function is thread-safe"; `Clone` shares it |
//! | [`Canceller`] | yes | yes | `genie_session_cancel` is callable from any thread |
//! | [`ChatStream`] | if `T` is | no | a channel's receiving end |
//!
//! `tests/threads.rs` checks the positive bounds at compile time; these fail to compile:
//!
//! ```compile_fail,E0277
//! fn sync<T: Sync>() {}
//! sync::<genie::Session>();
//! ```
//! ```compile_fail,E0277
//! fn sync<T: Sync>() {}
//! sync::<genie::Sampler>();
//! ```
//! ```compile_fail,E0277
//! fn sync<T: Sync>() {}
//! sync::<genie::ChatStream<()>>();
//! ```
//! ```compile_fail,E0277
//! // A session cannot be shared between threads (it is not Sync) ...
//! fn share(session: &genie::Session) {
//!     std::thread::scope(|s| {
//!         s.spawn(|| drop(session));
//!     });
//! }
//! ```
//! ```compile_fail,E0500
//! // ... and a second call cannot start while a streaming call borrows it.
//! fn reenter(session: &mut genie::Session, req: &genie::ChatRequest) {
//!     let _ = session.chat_stream(req, |_| {
//!         let _ = session.chat(req);
//!         std::ops::ControlFlow::Continue(())
//!     });
//! }
//! ```
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod chat;
mod engine;
mod error;
mod log;
mod model;
mod sampler;
mod session;
mod stream;
mod tools;
mod util;

#[cfg(test)]
mod unit_tests;

pub use chat::{
    ChatRequest, ChatResponse, FinishReason, Message, OwnedPiece, Piece, PieceKind, ResponseFormat, Role, Think,
    Timings, Usage,
};
pub use engine::{Engine, EngineChatOptions, EngineOptions, EngineState, EngineStatus, Health, HealthLevel};
pub use error::{Error, Result};
pub use log::{clear_logger, set_logger, LogLevel};
pub use model::{Backend, DetokenizeFlags, Model, ModelInfo, ModelOptions, TemplateMessage, TokenizeFlags};
pub use sampler::{Sampler, SamplerOptions};
pub use session::{GenerateOptions, Generation, KvType, Session, SessionOptions};
pub use stream::{Canceller, ChatStream};
pub use tools::{tool_calls_json, RejectedToolCall, ToolCall, ToolChoice};

/// The raw C ABI (`genie-sys`), for what this crate does not wrap.
pub use genie_sys as sys;

/// A token id: `0 <= id < n_vocab`.
pub type Token = i32;

/// The C ABI version these bindings were written for (`GENIE_ABI_VERSION`).
pub const ABI_VERSION: i32 = sys::GENIE_ABI_VERSION;

/// The linked library's ABI version; differs from [`ABI_VERSION`] when the crate is run
/// against a libgenie with another C ABI (then calls may misbehave: check at start-up).
pub fn abi_version() -> i32 {
    // SAFETY: no arguments; thread-safe.
    unsafe { sys::genie_abi_version() }
}

/// The linked library's version, e.g. `"0.1.0"`.
pub fn version() -> String {
    // SAFETY: static storage, never NULL.
    unsafe { std::ffi::CStr::from_ptr(sys::genie_version()) }.to_string_lossy().into_owned()
}

/// Fails with [`Error::Unsupported`] when the linked library's ABI differs from the one
/// these bindings declare.
pub fn check_abi() -> Result<()> {
    let linked = abi_version();
    if linked == ABI_VERSION {
        Ok(())
    } else {
        Err(Error::Unsupported(format!(
            "genie: the linked libgenie has C ABI version {linked}, these bindings declare {ABI_VERSION}"
        )))
    }
}
