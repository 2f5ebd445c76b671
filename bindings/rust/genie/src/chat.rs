//! Chat requests and responses ([`ChatRequest`], [`ChatResponse`], [`Piece`]) and their
//! translation to and from the C ABI's `genie_chat_request` / `genie_chat_result`.
use std::any::Any;
use std::ffi::CString;
use std::ops::ControlFlow;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use genie_sys as sys;

use crate::error::{check, invalid, Result};
use crate::sampler::{RawSamplerOptions, SamplerOptions};
use crate::tools::{
    message_extras, to_tool_call, tool_call_slice, tool_calls_json, RejectedToolCall, ToolCall, ToolChoice,
};
use crate::util::{borrowed_str, bytes_str, c_string, millis_u32, ms_duration, to_i32};

/// Who speaks a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Instructions (several are allowed; the template decides what it does with them).
    System,
    /// The person.
    User,
    /// The model's earlier answers.
    Assistant,
    /// A tool's result.
    Tool,
}

impl Role {
    /// The name the chat template sees (`"system"`, `"user"`, `"assistant"`, `"tool"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
    fn c_name(self) -> &'static [u8] {
        match self {
            Role::System => b"system\0",
            Role::User => b"user\0",
            Role::Assistant => b"assistant\0",
            Role::Tool => b"tool\0",
        }
    }
}

/// One message of a conversation. Besides role and content, the fields that carry tool
/// calls and their results back into the conversation (`genie_chat_turn_extra`); a field
/// that is `None` is absent from the message the template sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said (UTF-8).
    pub content: String,
    /// An assistant message: the calls it made, a JSON array in the OpenAI shape
    /// (`[{"id", "type": "function", "function": {"name", "arguments"}}]`);
    /// [`tool_calls_json`](crate::tool_calls_json) writes it from [`ToolCall`]s.
    pub tool_calls_json: Option<String>,
    /// A tool message: the id of the call it answers.
    pub tool_call_id: Option<String>,
    /// The tool's (or participant's) name.
    pub name: Option<String>,
}

impl Message {
    /// A message of `role` without tool fields.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message { role, content: content.into(), tool_calls_json: None, tool_call_id: None, name: None }
    }
    /// An assistant message that made these tool calls (`content` may be empty).
    pub fn assistant_tool_calls(content: impl Into<String>, calls: &[ToolCall]) -> Self {
        Message::new(Role::Assistant, content).with_tool_calls_json(tool_calls_json(calls))
    }
    /// A tool message: the result `content` of the call `tool_call_id` of the tool `name`.
    pub fn tool_result(tool_call_id: impl Into<String>, name: impl Into<String>, content: impl Into<String>) -> Self {
        Message::new(Role::Tool, content).with_tool_call_id(tool_call_id).with_name(name)
    }
    /// Sets [`Self::tool_calls_json`] (a JSON array text, OpenAI shape).
    pub fn with_tool_calls_json(mut self, json: impl Into<String>) -> Self {
        self.tool_calls_json = Some(json.into());
        self
    }
    /// Sets [`Self::tool_call_id`].
    pub fn with_tool_call_id(mut self, id: impl Into<String>) -> Self {
        self.tool_call_id = Some(id.into());
        self
    }
    /// Sets [`Self::name`].
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    pub(crate) fn has_extras(&self) -> bool {
        self.tool_calls_json.is_some() || self.tool_call_id.is_some() || self.name.is_some()
    }
}

/// What the answer must look like (`genie_response_format`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ResponseFormat {
    /// Free text (the default).
    #[default]
    Text,
    /// Any JSON object.
    JsonObject,
    /// A JSON value following this JSON schema (its text; docs/constraints.md says which
    /// keywords are supported: an unsupported schema fails with `InvalidArgument`).
    JsonSchema(String),
    /// Text that this GBNF grammar (llama.cpp's format, start rule `root`) derives; a
    /// grammar that does not parse fails with `InvalidArgument`.
    Grammar(String),
}

/// Qwen3-style thinking switch (`genie_think`, the template's `enable_thinking`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Think {
    /// The template's default; off with a JSON response format.
    #[default]
    Default,
    /// Think before answering (reasoning pieces come first).
    On,
    /// Answer directly.
    Off,
}

/// One chat request: the conversation and how to answer it (`genie_chat_request`),
/// builder style. Used by [`Session::chat`](crate::Session::chat) and
/// [`Engine::chat`](crate::Engine::chat).
///
/// ```
/// use std::time::Duration;
/// let req = genie::ChatRequest::new()
///     .system("You are a voice assistant. Answer in one sentence.")
///     .user("Turn on the kitchen light")
///     .max_tokens(64)
///     .think(false)
///     .stop("\n\n")
///     .deadline(Duration::from_secs(10))
///     .idle_timeout(Duration::from_secs(2));
/// assert_eq!(req.messages.len(), 2);
/// assert_eq!(req.think, genie::Think::Off);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The conversation, oldest first (at least one message).
    pub messages: Vec<Message>,
    /// New tokens at most, reasoning included (finish [`FinishReason::Length`]); default 256.
    pub max_tokens: u32,
    /// The sampler settings; a fresh sampler is made from them for each call. Default greedy.
    pub sampling: SamplerOptions,
    /// What the answer must look like; default free text.
    pub response_format: ResponseFormat,
    /// Thinking on, off or the template's default.
    pub think: Think,
    /// Stop strings: the answer ends before the first one it contains (finish
    /// [`FinishReason::Stop`]); not part of the text.
    pub stop: Vec<String>,
    /// Longest wait between two pieces (for the first: since the call began, prompt
    /// evaluation included); then the call ends with [`FinishReason::Timeout`]. `None`: no limit.
    pub idle_timeout: Option<Duration>,
    /// Total time from the call's start; then the call ends with [`FinishReason::Timeout`].
    /// `None`: no limit. Checked each time a piece is produced (a running forward pass is
    /// not interrupted), so the call ends at the first piece after it.
    pub deadline: Option<Duration>,
    /// A JSON array of tool definitions (OpenAI shape) given to the template as `tools`.
    pub tools_json: Option<String>,
    /// Whether the answer must be a tool call; default [`ToolChoice::Auto`].
    pub tool_choice: ToolChoice,
    /// `None` (the default): every call of an automatic answer is returned, a forced
    /// answer is one call; `Some(true)`: a forced answer may also be an array of calls;
    /// `Some(false)`: only the first call is returned (later ones are rejected).
    pub parallel_tool_calls: Option<bool>,
}

impl Default for ChatRequest {
    fn default() -> Self {
        ChatRequest {
            messages: Vec::new(),
            max_tokens: 256,
            sampling: SamplerOptions::default(),
            response_format: ResponseFormat::Text,
            think: Think::Default,
            stop: Vec::new(),
            idle_timeout: None,
            deadline: None,
            tools_json: None,
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: None,
        }
    }
}

impl ChatRequest {
    /// An empty request with the C ABI's defaults (256 tokens, greedy, free text).
    pub fn new() -> Self {
        Self::default()
    }
    /// Appends a message.
    pub fn message(mut self, role: Role, content: impl Into<String>) -> Self {
        self.messages.push(Message::new(role, content));
        self
    }
    /// Appends messages.
    pub fn messages(mut self, messages: impl IntoIterator<Item = Message>) -> Self {
        self.messages.extend(messages);
        self
    }
    /// Appends a system message.
    pub fn system(self, content: impl Into<String>) -> Self {
        self.message(Role::System, content)
    }
    /// Appends a user message.
    pub fn user(self, content: impl Into<String>) -> Self {
        self.message(Role::User, content)
    }
    /// Appends an assistant message (an earlier answer).
    pub fn assistant(self, content: impl Into<String>) -> Self {
        self.message(Role::Assistant, content)
    }
    /// Appends a tool result (without a call id; [`Self::tool_result`] gives one).
    pub fn tool(self, content: impl Into<String>) -> Self {
        self.message(Role::Tool, content)
    }
    /// Appends an assistant message that made these tool calls (e.g. an earlier
    /// answer's [`ChatResponse::tool_calls`]); `content` may be empty.
    pub fn assistant_tool_calls(mut self, content: impl Into<String>, calls: &[ToolCall]) -> Self {
        self.messages.push(Message::assistant_tool_calls(content, calls));
        self
    }
    /// Appends a tool message: the result `content` of the call `tool_call_id` of the tool
    /// `name`.
    pub fn tool_result(
        mut self,
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        self.messages.push(Message::tool_result(tool_call_id, name, content));
        self
    }
    /// Sets [`Self::max_tokens`].
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = n;
        self
    }
    /// Sets [`Self::sampling`].
    pub fn sampling(mut self, sampling: SamplerOptions) -> Self {
        self.sampling = sampling;
        self
    }
    /// Sets [`Self::response_format`].
    pub fn response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = format;
        self
    }
    /// The answer is any JSON object.
    pub fn json_object(self) -> Self {
        self.response_format(ResponseFormat::JsonObject)
    }
    /// The answer follows this JSON schema (its text).
    pub fn json_schema(self, schema: impl Into<String>) -> Self {
        self.response_format(ResponseFormat::JsonSchema(schema.into()))
    }
    /// The answer is text this GBNF grammar derives from its rule `root`.
    pub fn grammar(self, gbnf: impl Into<String>) -> Self {
        self.response_format(ResponseFormat::Grammar(gbnf.into()))
    }
    /// Thinking on (`true`) or off (`false`); [`Self::think_mode`] for the template's default.
    pub fn think(self, on: bool) -> Self {
        self.think_mode(if on { Think::On } else { Think::Off })
    }
    /// Sets [`Self::think`].
    pub fn think_mode(mut self, think: Think) -> Self {
        self.think = think;
        self
    }
    /// Adds a stop string.
    pub fn stop(mut self, stop: impl Into<String>) -> Self {
        self.stop.push(stop.into());
        self
    }
    /// Sets [`Self::idle_timeout`].
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }
    /// Sets [`Self::deadline`].
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }
    /// Sets [`Self::tools_json`].
    pub fn tools_json(mut self, tools: impl Into<String>) -> Self {
        self.tools_json = Some(tools.into());
        self
    }
    /// Sets [`Self::tool_choice`].
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }
    /// The answer must be a call of one of the tools ([`ToolChoice::Required`]).
    pub fn require_tool_call(self) -> Self {
        self.tool_choice(ToolChoice::Required)
    }
    /// The answer must be a call of the tool `name` ([`ToolChoice::Function`]).
    pub fn tool_choice_function(self, name: impl Into<String>) -> Self {
        self.tool_choice(ToolChoice::Function(name.into()))
    }
    /// Sets [`Self::parallel_tool_calls`] to `Some(allow)`.
    pub fn parallel_tool_calls(mut self, allow: bool) -> Self {
        self.parallel_tool_calls = Some(allow);
        self
    }
}

/// A [`ChatRequest`] translated for the C ABI: owns every string and array the
/// `genie_chat_request` of [`RawRequest::as_raw`] points into.
pub(crate) struct RawRequest {
    turns: Vec<sys::genie_chat_turn>,
    _contents: Vec<String>,
    _stops: Vec<CString>,
    stop_ptrs: Vec<*const c_char>,
    /// Parallel to `turns` when any message has tool fields, else empty (NULL).
    extras: Vec<sys::genie_chat_turn_extra>,
    _extra_strings: Vec<CString>,
    sampler: RawSamplerOptions,
    schema: Option<String>,
    grammar: Option<String>,
    tools: Option<String>,
    tool_choice: sys::genie_tool_choice,
    tool_choice_function: Option<CString>,
    parallel_tool_calls: i32,
    max_tokens: i32,
    response_format: sys::genie_response_format,
    think: sys::genie_think,
    idle_timeout_ms: u32,
    deadline_ms: u32,
}

impl RawRequest {
    /// Checks and copies `req`; a Rust-side [`Error::InvalidArgument`](crate::Error) names
    /// the field that cannot be expressed in C (a NUL byte in a stop string, a message's
    /// tool field or the tool choice's name, a duration over `u32::MAX` ms, `max_tokens`
    /// over `i32::MAX`).
    pub(crate) fn new(req: &ChatRequest) -> Result<RawRequest> {
        let contents: Vec<String> = req.messages.iter().map(|m| m.content.clone()).collect();
        let turns = req
            .messages
            .iter()
            .zip(&contents)
            .map(|(m, c)| sys::genie_chat_turn {
                role: m.role.c_name().as_ptr().cast(),
                content: c.as_ptr().cast(),
                content_len: c.len(),
            })
            .collect();
        let mut stops = Vec::with_capacity(req.stop.len());
        for (i, s) in req.stop.iter().enumerate() {
            stops.push(c_string(&format!("stop string {i}"), s)?);
        }
        let stop_ptrs = stops.iter().map(|s| s.as_ptr()).collect();
        let (extras, extra_strings) = message_extras(&req.messages)?;
        let (response_format, schema, grammar) = match &req.response_format {
            ResponseFormat::Text => (sys::GENIE_RESPONSE_FORMAT_NONE, None, None),
            ResponseFormat::JsonObject => (sys::GENIE_RESPONSE_FORMAT_JSON_OBJECT, None, None),
            ResponseFormat::JsonSchema(s) => (sys::GENIE_RESPONSE_FORMAT_JSON_SCHEMA, Some(s.clone()), None),
            ResponseFormat::Grammar(g) => (sys::GENIE_RESPONSE_FORMAT_GRAMMAR, None, Some(g.clone())),
        };
        let (tool_choice, tool_choice_function) = match &req.tool_choice {
            ToolChoice::Auto => (sys::GENIE_TOOL_CHOICE_AUTO, None),
            ToolChoice::None => (sys::GENIE_TOOL_CHOICE_NONE, None),
            ToolChoice::Required => (sys::GENIE_TOOL_CHOICE_REQUIRED, None),
            ToolChoice::Function(name) => {
                (sys::GENIE_TOOL_CHOICE_FUNCTION, Some(c_string("the tool choice's function name", name)?))
            }
        };
        let think = match req.think {
            Think::Default => sys::GENIE_THINK_DEFAULT,
            Think::On => sys::GENIE_THINK_ON,
            Think::Off => sys::GENIE_THINK_OFF,
        };
        Ok(RawRequest {
            turns,
            _contents: contents,
            _stops: stops,
            stop_ptrs,
            extras,
            _extra_strings: extra_strings,
            sampler: req.sampling.to_raw_with_bias(),
            schema,
            grammar,
            tools: req.tools_json.clone(),
            tool_choice,
            tool_choice_function,
            parallel_tool_calls: req.parallel_tool_calls.map_or(-1, i32::from),
            max_tokens: to_i32("max_tokens", req.max_tokens as usize)?,
            response_format,
            think,
            idle_timeout_ms: millis_u32("idle_timeout", req.idle_timeout)?,
            deadline_ms: millis_u32("deadline", req.deadline)?,
        })
    }

    /// The C request, pointing into `self` (valid while `self` is borrowed).
    pub(crate) fn as_raw(&self) -> sys::genie_chat_request {
        let (schema, schema_len) = self.schema.as_ref().map_or((ptr::null(), 0), |s| (s.as_ptr().cast(), s.len()));
        let (tools, tools_len) = self.tools.as_ref().map_or((ptr::null(), 0), |s| (s.as_ptr().cast(), s.len()));
        let (grammar, grammar_len) = self.grammar.as_ref().map_or((ptr::null(), 0), |s| (s.as_ptr().cast(), s.len()));
        sys::genie_chat_request {
            messages: self.turns.as_ptr(),
            n_messages: self.turns.len(),
            max_tokens: self.max_tokens,
            sampler: &self.sampler.raw,
            response_format: self.response_format,
            json_schema: schema,
            json_schema_len: schema_len,
            think: self.think,
            stop: if self.stop_ptrs.is_empty() { ptr::null() } else { self.stop_ptrs.as_ptr() },
            n_stop: self.stop_ptrs.len(),
            idle_timeout_ms: self.idle_timeout_ms,
            deadline_ms: self.deadline_ms,
            tools_json: tools,
            tools_json_len: tools_len,
            message_extras: if self.extras.is_empty() { ptr::null() } else { self.extras.as_ptr() },
            tool_choice: self.tool_choice,
            tool_choice_function: self.tool_choice_function.as_ref().map_or(ptr::null(), |s| s.as_ptr()),
            parallel_tool_calls: self.parallel_tool_calls,
            grammar,
            grammar_len,
            ..sys::GENIE_CHAT_REQUEST_INIT
        }
    }
}

/// What a piece of chat output is (`genie_piece_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PieceKind {
    /// The answer.
    Content,
    /// Thinking inside `<think>...</think>` (tags removed).
    Reasoning,
}

/// One streamed piece of an answer, borrowed for the callback: complete UTF-8 (a
/// character split across tokens arrives whole), never a control token's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece<'a> {
    /// Answer or reasoning.
    pub kind: PieceKind,
    /// The text (never empty).
    pub text: &'a str,
}

impl Piece<'_> {
    /// An owned copy, e.g. to send to another thread.
    pub fn to_owned_piece(&self) -> OwnedPiece {
        OwnedPiece { kind: self.kind, text: self.text.to_string() }
    }
}

/// An owned [`Piece`], as a [`ChatStream`](crate::ChatStream) yields it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnedPiece {
    /// Answer or reasoning.
    pub kind: PieceKind,
    /// The text (never empty).
    pub text: String,
}

/// Why a chat ended successfully (`genie_finish_reason` other than ERROR: a failed call is
/// an [`Error`](crate::Error)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinishReason {
    /// An end-of-generation token, a stop string, or a JSON value complete.
    Stop,
    /// `max_tokens` reached, or the context is full.
    Length,
    /// Cancelled from another thread, or the callback returned `ControlFlow::Break`.
    Cancelled,
    /// The idle timeout or the deadline passed.
    Timeout,
}

/// Token counts of a chat call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Tokens of the rendered conversation.
    pub prompt_tokens: u32,
    /// Of those, found in the KV cache (not evaluated).
    pub reused_prefix_tokens: u32,
    /// Generated tokens, reasoning included.
    pub completion_tokens: u32,
}

/// Timings of a chat call.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timings {
    /// From the call to the first generated token.
    pub time_to_first_token: Duration,
    /// Evaluating the non-reused prompt tokens.
    pub prefill: Duration,
    /// Prompt tokens per second.
    pub prefill_tokens_per_s: f64,
    /// Generating the tokens after the first.
    pub decode: Duration,
    /// Generated tokens per second.
    pub decode_tokens_per_s: f64,
    /// The whole call.
    pub total: Duration,
}

/// The answer of a chat call (`genie_chat_result`).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The answer (content pieces; reasoning excluded).
    pub content: String,
    /// The reasoning text (trimmed), `""` when none.
    pub reasoning: String,
    /// Every tool call of the answer, in its order (empty with [`ToolChoice::None`]).
    pub tool_calls: Vec<ToolCall>,
    /// How many tool calls the answer had (`tool_calls.len()`).
    pub tool_call_count: usize,
    /// Calls found in the answer but not accepted, each with the reason.
    pub rejected_tool_calls: Vec<RejectedToolCall>,
    /// Why it ended.
    pub finish_reason: FinishReason,
    /// Token counts.
    pub usage: Usage,
    /// Timings.
    pub timings: Timings,
}

/// A `genie_chat_result` that is cleared when dropped.
pub(crate) struct RawResult(pub(crate) sys::genie_chat_result);

impl RawResult {
    pub(crate) fn new() -> Self {
        RawResult(sys::GENIE_CHAT_RESULT_INIT)
    }

    pub(crate) fn to_response(&self) -> Result<ChatResponse> {
        let r = &self.0;
        let finish_reason = match r.finish_reason {
            sys::GENIE_FINISH_STOP => FinishReason::Stop,
            sys::GENIE_FINISH_LENGTH => FinishReason::Length,
            sys::GENIE_FINISH_CANCELLED => FinishReason::Cancelled,
            sys::GENIE_FINISH_TIMEOUT => FinishReason::Timeout,
            other => return Err(invalid(format!("genie: a successful chat reported finish reason {other}"))),
        };
        let count = |n: i32| u32::try_from(n).unwrap_or(0);
        // SAFETY: version 2 results hold n_tool_calls / n_rejected_tool_calls entries there.
        let tool_calls = unsafe { tool_call_slice(r.tool_calls, r.n_tool_calls) };
        // SAFETY: as above.
        let rejected = unsafe { tool_call_slice(r.rejected_tool_calls, r.n_rejected_tool_calls) };
        Ok(ChatResponse {
            // SAFETY: text/reasoning hold *_len bytes owned by the result.
            content: unsafe { bytes_str(r.text, r.text_len) },
            // SAFETY: as above.
            reasoning: unsafe { bytes_str(r.reasoning, r.reasoning_len) },
            tool_calls: tool_calls.iter().map(to_tool_call).collect(),
            tool_call_count: r.n_tool_calls,
            rejected_tool_calls: rejected
                .iter()
                .map(|c| RejectedToolCall {
                    call: to_tool_call(c),
                    // SAFETY: NULL or a NUL-terminated string owned by the result.
                    error: unsafe { borrowed_str(c.error) },
                })
                .collect(),
            finish_reason,
            usage: Usage {
                prompt_tokens: count(r.prompt_tokens),
                reused_prefix_tokens: count(r.reused_prefix_tokens),
                completion_tokens: count(r.completion_tokens),
            },
            timings: Timings {
                time_to_first_token: ms_duration(r.time_to_first_token_ms),
                prefill: ms_duration(r.prefill_ms),
                prefill_tokens_per_s: r.prefill_tokens_per_s,
                decode: ms_duration(r.decode_ms),
                decode_tokens_per_s: r.decode_tokens_per_s,
                total: ms_duration(r.total_ms),
            },
        })
    }
}

impl Drop for RawResult {
    fn drop(&mut self) {
        // SAFETY: initialised with GENIE_CHAT_RESULT_INIT; clear frees what it owns.
        unsafe { sys::genie_chat_result_clear(&mut self.0) }
    }
}

/// A piece callback as the chat entry points take it.
pub(crate) type PieceFn<'f> = dyn FnMut(Piece<'_>) -> ControlFlow<()> + 'f;

/// The state behind the `user` pointer of [`on_piece`].
pub(crate) struct PieceSink<'f, 'c> {
    callback: Option<&'f mut PieceFn<'f>>,
    cancel: Option<&'c AtomicBool>,
    panic: Option<Box<dyn Any + Send>>,
}

/// `genie_piece_callback`: hands each piece to the Rust closure; a set cancel flag, a
/// `ControlFlow::Break` or a panic (kept and resumed after the C call returns, never
/// unwound through C) returns non-zero, which cancels the generation.
unsafe extern "C" fn on_piece(
    user: *mut c_void,
    kind: sys::genie_piece_kind,
    utf8: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: `user` is the &mut PieceSink that run_chat passed, alive during the C call,
    // and the callback runs on the calling thread only (genie.h).
    let sink = unsafe { &mut *user.cast::<PieceSink<'_, '_>>() };
    if sink.panic.is_some() || sink.cancel.map_or(false, |c| c.load(Ordering::Acquire)) {
        return 1;
    }
    let callback = match sink.callback.as_mut() {
        Some(cb) => cb,
        None => return 0,
    };
    let bytes = if utf8.is_null() || len == 0 {
        &[][..]
    } else {
        // SAFETY: genie.h: `len` bytes of complete UTF-8 at `utf8`, valid during the call.
        unsafe { std::slice::from_raw_parts(utf8.cast::<u8>(), len) }
    };
    let text = String::from_utf8_lossy(bytes);
    let kind = if kind == sys::GENIE_PIECE_REASONING { PieceKind::Reasoning } else { PieceKind::Content };
    match panic::catch_unwind(AssertUnwindSafe(|| callback(Piece { kind, text: &text }))) {
        Ok(ControlFlow::Continue(())) => 0,
        Ok(ControlFlow::Break(())) => 1,
        Err(payload) => {
            sink.panic = Some(payload);
            1
        }
    }
}

/// The C signature every chat entry point shares once its handle and options are bound.
pub(crate) type ChatCall<'c> = &'c mut dyn FnMut(
    &sys::genie_chat_request,
    sys::genie_piece_callback,
    *mut c_void,
    *mut sys::genie_chat_result,
) -> sys::genie_status;

/// Runs one chat call: translates `req`, streams pieces to `callback` (none: no callback),
/// stops when `cancel` becomes true, and turns the result into a [`ChatResponse`]. A
/// panic in `callback` cancels the generation and is resumed here.
pub(crate) fn run_chat<'f>(
    req: &ChatRequest,
    callback: Option<&'f mut PieceFn<'f>>,
    cancel: Option<&AtomicBool>,
    call: ChatCall<'_>,
) -> Result<ChatResponse> {
    let raw_req = RawRequest::new(req)?;
    let c_req = raw_req.as_raw();
    let mut result = RawResult::new();
    let wants_pieces = callback.is_some() || cancel.is_some();
    let mut sink = PieceSink { callback, cancel, panic: None };
    let status = call(
        &c_req,
        if wants_pieces { Some(on_piece) } else { None },
        (&mut sink as *mut PieceSink<'_, '_>).cast(),
        &mut result.0,
    );
    let outcome = check(status);
    if let Some(payload) = sink.panic.take() {
        drop(result);
        panic::resume_unwind(payload);
    }
    outcome?;
    result.to_response()
}
