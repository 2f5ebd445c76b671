//! The types, constants and `_INIT` values of genie.h, in the header's order.
use std::os::raw::{c_char, c_double, c_float, c_int, c_uint, c_void};
use std::ptr;

/// `GENIE_ABI_VERSION`: bumped when a function signature or struct layout changes
/// incompatibly. These declarations are for this version; [`genie_abi_version`] gives
/// the linked library's.
pub const GENIE_ABI_VERSION: c_int = 2;

// ---- status -------------------------------------------------------------------------

/// Result of every fallible function (`genie_status`); same values as `genie::ErrorCode`.
pub type genie_status = c_int;
/// Success.
pub const GENIE_OK: genie_status = 0;
/// A bad argument, option or request.
pub const GENIE_INVALID_ARGUMENT: genie_status = -1;
/// A file or folder does not exist.
pub const GENIE_NOT_FOUND: genie_status = -2;
/// A corrupt or unexpected file (GGUF, KV state, chat template).
pub const GENIE_FORMAT: genie_status = -3;
/// An architecture, quant type or feature this build lacks.
pub const GENIE_UNSUPPORTED: genie_status = -4;
/// The model, a KV cache or scratch does not fit.
pub const GENIE_OUT_OF_MEMORY: genie_status = -5;
/// The conversation does not fit the context.
pub const GENIE_CONTEXT_OVERFLOW: genie_status = -6;
/// A load was cancelled.
pub const GENIE_CANCELLED: genie_status = -7;
/// Another call runs on the object (or a load/swap already runs).
pub const GENIE_BUSY: genie_status = -8;
/// The engine has no model.
pub const GENIE_NOT_LOADED: genie_status = -9;
/// The accelerator failed or is unavailable.
pub const GENIE_DEVICE: genie_status = -10;
/// A bug in libgenie.
pub const GENIE_INTERNAL: genie_status = -11;
/// Reading or writing a file failed.
pub const GENIE_IO: genie_status = -12;

/// A token id: `0 <= id < n_vocab`.
pub type genie_token = i32;
/// "No token" (e.g. the piece that flushes held-back bytes at the end of a generation).
pub const GENIE_NO_TOKEN: genie_token = -1;

/// Opaque handle: a loaded GGUF model (immutable, thread-safe).
#[repr(C)]
pub struct genie_model {
    _private: [u8; 0],
}
/// Opaque handle: one conversation (KV cache + generate loop).
#[repr(C)]
pub struct genie_session {
    _private: [u8; 0],
}
/// Opaque handle: picks the next token from logits.
#[repr(C)]
pub struct genie_sampler {
    _private: [u8; 0],
}
/// Opaque handle: an in-process engine (one model's lifecycle, health, conversations).
#[repr(C)]
pub struct genie_engine {
    _private: [u8; 0],
}

// ---- library ------------------------------------------------------------------------

/// `genie_log_level`: severity of a log message.
pub type genie_log_level = c_int;
/// A failed call.
pub const GENIE_LOG_ERROR: genie_log_level = 0;
/// A warning.
pub const GENIE_LOG_WARN: genie_log_level = 1;
/// Model loads, session creation.
pub const GENIE_LOG_INFO: genie_log_level = 2;
/// Details.
pub const GENIE_LOG_DEBUG: genie_log_level = 3;

/// Receives log messages; `message` is borrowed for the call. Any thread.
pub type genie_log_callback =
    Option<unsafe extern "C" fn(user: *mut c_void, level: genie_log_level, message: *const c_char)>;

// ---- model --------------------------------------------------------------------------

/// `genie_backend`: compute backend.
pub type genie_backend = c_int;
/// CUDA when a device is present and the build has it, else CPU.
pub const GENIE_BACKEND_AUTO: genie_backend = 0;
/// Always available.
pub const GENIE_BACKEND_CPU: genie_backend = 1;
/// GENIE_UNSUPPORTED / GENIE_DEVICE when unavailable.
pub const GENIE_BACKEND_CUDA: genie_backend = 2;

/// The version of the struct this header declares (its `version` field).
pub const GENIE_MODEL_OPTIONS_VERSION: c_uint = 2;
/// Options of `genie_model_load`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct genie_model_options {
    /// GENIE_MODEL_OPTIONS_VERSION.
    pub version: c_uint,
    /// Compute backend; default GENIE_BACKEND_AUTO.
    pub backend: genie_backend,
    /// 1 (default): weights used in place from a read-only mmap of the file (the file must not be truncated or rewritten while loaded: calls then fail with GENIE_IO); 0: read into memory at load, immune to changes of the file, more resident memory (docs/reliability.md)
    pub use_mmap: c_int,
    /// Bytes the model and a session may use; 0 (default) = what is free now (MemAvailable / cudaMemGetInfo). Over budget: GENIE_OUT_OF_MEMORY naming the plan.
    pub memory_budget_bytes: u64,
}
/// The `GENIE_MODEL_OPTIONS_INIT` macro: the defaults (equal to what the `_init()` function writes), or the initial value of an output struct.
pub const GENIE_MODEL_OPTIONS_INIT: genie_model_options = genie_model_options {
    version: GENIE_MODEL_OPTIONS_VERSION,
    backend: GENIE_BACKEND_AUTO,
    use_mmap: 1,
    memory_budget_bytes: 0,
};

/// The version of the struct this header declares (its `version` field).
pub const GENIE_MODEL_INFO_VERSION: c_uint = 2;
/// Facts about a loaded model; strings borrowed, live as long as the model.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct genie_model_info {
    /// Set by the caller: GENIE_MODEL_INFO_VERSION.
    pub version: c_uint,
    /// "llama", "qwen2", "qwen3"; borrowed, lives as long as the model.
    pub architecture: *const c_char,
    /// `general.name` or ""; borrowed, lives as long as the model.
    pub name: *const c_char,
    /// Number of parameters.
    pub parameter_count: u64,
    /// Bytes of the file.
    pub file_size: u64,
    /// Bytes of tensor data.
    pub weight_bytes: u64,
    /// Vocabulary size.
    pub n_vocab: i32,
    /// Context length the model was trained with.
    pub n_ctx_train: i32,
    /// Embedding width.
    pub n_embd: i32,
    /// Layers.
    pub n_layer: i32,
    /// Attention heads.
    pub n_head: i32,
    /// Key/value heads.
    pub n_head_kv: i32,
    /// Size of one attention head.
    pub head_dim: i32,
    /// Feed-forward width.
    pub n_ff: i32,
    /// Beginning-of-sequence token; GENIE_NO_TOKEN when the vocabulary has none.
    pub bos: genie_token,
    /// End-of-sequence token; GENIE_NO_TOKEN when the vocabulary has none.
    pub eos: genie_token,
    /// How long genie_model_load took.
    pub load_time_ms: c_double,
    /// Bytes of tensor data one decoded token reads (all but the unread rows of an untied token-embedding table): decode's roofline is memory bandwidth / decode_bytes tokens/s.
    pub decode_bytes: u64,
}
/// The `GENIE_MODEL_INFO_INIT` macro: the defaults (equal to what the `_init()` function writes), or the initial value of an output struct.
pub const GENIE_MODEL_INFO_INIT: genie_model_info = genie_model_info {
    version: GENIE_MODEL_INFO_VERSION,
    architecture: ptr::null(),
    name: ptr::null(),
    parameter_count: 0,
    file_size: 0,
    weight_bytes: 0,
    n_vocab: 0,
    n_ctx_train: 0,
    n_embd: 0,
    n_layer: 0,
    n_head: 0,
    n_head_kv: 0,
    head_dim: 0,
    n_ff: 0,
    bos: -1,
    eos: -1,
    load_time_ms: 0.0,
    decode_bytes: 0,
};

/// Flags of `genie_model_tokenize`.
pub const GENIE_TOKENIZE_ADD_SPECIAL: c_uint = 1;
/// Recognise control tokens written as text ("<|im_start|>").
pub const GENIE_TOKENIZE_PARSE_SPECIAL: c_uint = 2;
/// Flags of `genie_model_detokenize`.
pub const GENIE_DETOKENIZE_REMOVE_SPECIAL: c_uint = 1;
/// Render control tokens as their text.
pub const GENIE_DETOKENIZE_RENDER_SPECIAL: c_uint = 2;

// ---- sampler ------------------------------------------------------------------------

/// The version of the struct this header declares (its `version` field).
pub const GENIE_SAMPLER_OPTIONS_VERSION: c_uint = 1;
/// Options of a sampler (llama.cpp's chain order). The logit-bias arrays are copied by
/// `genie_sampler_create`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct genie_sampler_options {
    /// GENIE_SAMPLER_OPTIONS_VERSION.
    pub version: c_uint,
    /// <= 0: greedy (default 0)
    pub temperature: c_float,
    /// <= 0: off (default 40)
    pub top_k: i32,
    /// >= 1: off (default 0.95)
    pub top_p: c_float,
    /// <= 0: off (default 0.05)
    pub min_p: c_float,
    /// Seed of the random draw; same seed, same draws (default 42)
    pub seed: u32,
    /// >= 1: off (default 1)
    pub typical_p: c_float,
    /// Accepted tokens the penalties look at; <= 0: off (default 64)
    pub penalty_last_n: i32,
    /// 1: off (default 1)
    pub repeat_penalty: c_float,
    /// 0: off (default 0)
    pub frequency_penalty: c_float,
    /// 0: off (default 0)
    pub presence_penalty: c_float,
    /// Logit bias: the tokens (n_logit_bias of them; copied by genie_sampler_create).
    pub logit_bias_tokens: *const genie_token,
    /// Logit bias: the value added to each token's logit (-INFINITY bans it).
    pub logit_bias_values: *const c_float,
    /// Entries of the logit-bias arrays.
    pub n_logit_bias: usize,
}
/// The `GENIE_SAMPLER_OPTIONS_INIT` macro: the defaults (equal to what the `_init()` function writes), or the initial value of an output struct.
pub const GENIE_SAMPLER_OPTIONS_INIT: genie_sampler_options = genie_sampler_options {
    version: GENIE_SAMPLER_OPTIONS_VERSION,
    temperature: 0.0,
    top_k: 40,
    top_p: 0.95,
    min_p: 0.05,
    seed: 42,
    typical_p: 1.0,
    penalty_last_n: 64,
    repeat_penalty: 1.0,
    frequency_penalty: 0.0,
    presence_penalty: 0.0,
    logit_bias_tokens: ptr::null(),
    logit_bias_values: ptr::null(),
    n_logit_bias: 0,
};

// ---- session ------------------------------------------------------------------------

/// `genie_kv_type`: element type of the KV cache.
pub type genie_kv_type = c_int;
/// Llama.cpp's default.
pub const GENIE_KV_F16: genie_kv_type = 0;
/// 32-bit floats.
pub const GENIE_KV_F32: genie_kv_type = 1;
/// INT8 with a scale per 32 values (ggml Q8_0); head size a multiple of 32, else UNSUPPORTED.
pub const GENIE_KV_Q8_0: genie_kv_type = 2;

/// The version of the struct this header declares (its `version` field).
pub const GENIE_SESSION_OPTIONS_VERSION: c_uint = 1;
/// Options of `genie_session_create`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct genie_session_options {
    /// GENIE_SESSION_OPTIONS_VERSION.
    pub version: c_uint,
    /// Tokens the KV cache holds; 0 = min(training context, 4096)
    pub context_length: i32,
    /// CPU threads; 0 = all hardware threads.
    pub threads: i32,
    /// Prompt tokens per forward pass (default 512)
    pub batch_size: i32,
    /// Default GENIE_KV_F16.
    pub kv_type: genie_kv_type,
}
/// The `GENIE_SESSION_OPTIONS_INIT` macro: the defaults (equal to what the `_init()` function writes), or the initial value of an output struct.
pub const GENIE_SESSION_OPTIONS_INIT: genie_session_options = genie_session_options {
    version: GENIE_SESSION_OPTIONS_VERSION,
    context_length: 0,
    threads: 0,
    batch_size: 512,
    kv_type: GENIE_KV_F16,
};

/// The version of the struct this header declares (its `version` field).
pub const GENIE_GENERATE_OPTIONS_VERSION: c_uint = 1;
/// Options of one generation (`stop`: `n_stop` NUL-terminated strings, read during the call).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct genie_generate_options {
    /// GENIE_GENERATE_OPTIONS_VERSION.
    pub version: c_uint,
    /// Stop after this many new tokens (GENIE_FINISH_LENGTH); default 256.
    pub max_tokens: i32,
    /// Stop at an end-of-generation token (not in the text); default 1.
    pub stop_on_eog: c_int,
    /// Text prompt: add BOS/EOS as the vocabulary asks; default 1.
    pub add_special: c_int,
    /// Text prompt: recognise control tokens written as text; default 1.
    pub parse_special: c_int,
    /// Stop strings: n_stop NUL-terminated UTF-8 strings, read during the call.
    pub stop: *const *const c_char,
    /// Number of stop strings.
    pub n_stop: usize,
}
/// The `GENIE_GENERATE_OPTIONS_INIT` macro: the defaults (equal to what the `_init()` function writes), or the initial value of an output struct.
pub const GENIE_GENERATE_OPTIONS_INIT: genie_generate_options = genie_generate_options {
    version: GENIE_GENERATE_OPTIONS_VERSION,
    max_tokens: 256,
    stop_on_eog: 1,
    add_special: 1,
    parse_special: 1,
    stop: ptr::null(),
    n_stop: 0,
};

/// `genie_finish_reason`: why a generation ended.
pub type genie_finish_reason = c_int;
/// An end-of-generation token or a stop string (genie_session_generate: also the callback returning non-zero)
pub const GENIE_FINISH_STOP: genie_finish_reason = 0;
/// Max_tokens reached, or the context is full.
pub const GENIE_FINISH_LENGTH: genie_finish_reason = 1;
/// Genie_session_cancel was called (genie_session_chat: also the callback returning non-zero)
pub const GENIE_FINISH_CANCELLED: genie_finish_reason = 2;
/// The call failed: see its status and genie_last_error()
pub const GENIE_FINISH_ERROR: genie_finish_reason = 3;
/// Genie_session_chat: the idle timeout or the deadline passed.
pub const GENIE_FINISH_TIMEOUT: genie_finish_reason = 4;

/// The version of the struct this header declares (its `version` field).
pub const GENIE_GENERATE_RESULT_VERSION: c_uint = 1;
/// The outcome of a generation; owns `text` and `tokens` (release with
/// `genie_generate_result_clear`).
#[repr(C)]
#[derive(Debug)]
pub struct genie_generate_result {
    /// Set by the caller: GENIE_GENERATE_RESULT_VERSION.
    pub version: c_uint,
    /// Generated text, NUL-terminated, complete UTF-8; owned by the result.
    pub text: *mut c_char,
    /// Bytes of text.
    pub text_len: usize,
    /// Generated tokens (a stopping EOG excluded); owned by the result.
    pub tokens: *mut genie_token,
    /// Number of generated tokens.
    pub n_tokens: usize,
    /// Why the generation ended.
    pub finish_reason: genie_finish_reason,
    /// Tokens in the prompt.
    pub prompt_tokens: i32,
    /// Prompt tokens found in the KV cache (not evaluated)
    pub reused_prompt_tokens: i32,
    /// == n_tokens.
    pub completion_tokens: i32,
    /// The model's load time.
    pub load_ms: c_double,
    /// Evaluating the non-reused prompt tokens.
    pub prompt_eval_ms: c_double,
    /// From the call to the first generated token.
    pub time_to_first_token_ms: c_double,
    /// Generating the tokens after the first.
    pub decode_ms: c_double,
    /// Prompt tokens per second.
    pub prompt_tokens_per_s: c_double,
    /// Generated tokens per second.
    pub decode_tokens_per_s: c_double,
}
/// The `GENIE_GENERATE_RESULT_INIT` macro: the defaults (equal to what the `_init()` function writes), or the initial value of an output struct.
pub const GENIE_GENERATE_RESULT_INIT: genie_generate_result = genie_generate_result {
    version: GENIE_GENERATE_RESULT_VERSION,
    text: ptr::null_mut(),
    text_len: 0,
    tokens: ptr::null_mut(),
    n_tokens: 0,
    finish_reason: GENIE_FINISH_STOP,
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

/// Receives each generated piece of `genie_session_generate` (non-zero return: stop).
pub type genie_generate_callback =
    Option<unsafe extern "C" fn(user: *mut c_void, utf8: *const c_char, len: usize, token: genie_token) -> c_int>;

/// One message of `genie_model_apply_chat_template` (NUL-terminated strings).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct genie_chat_message {
    /// "system", "user", "assistant", "tool"; NUL-terminated.
    pub role: *const c_char,
    /// NUL-terminated UTF-8; NULL = no content (None)
    pub content: *const c_char,
}

// ---- chat ---------------------------------------------------------------------------

/// One message of a `genie_session_chat` request (`content_len` bytes, not NUL-terminated).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct genie_chat_turn {
    /// "system", "user", "assistant", "tool"; NUL-terminated; several "system" messages are allowed (the template decides what it does with them)
    pub role: *const c_char,
    /// Content_len bytes of UTF-8, not necessarily NUL-terminated; NULL with content_len 0 is the empty string.
    pub content: *const c_char,
    /// Bytes of content.
    pub content_len: usize,
}

/// `genie_response_format`: what the answer must look like.
pub type genie_response_format = c_int;
/// Free text.
pub const GENIE_RESPONSE_FORMAT_NONE: genie_response_format = 0;
/// Any JSON object (genie::JsonConstraint::any_object)
pub const GENIE_RESPONSE_FORMAT_JSON_OBJECT: genie_response_format = 1;
/// A JSON value following json_schema (genie::JsonConstraint::from_schema; docs/constraints.md)
pub const GENIE_RESPONSE_FORMAT_JSON_SCHEMA: genie_response_format = 2;
/// Text the GBNF grammar `grammar` derives from its rule "root" (genie::JsonConstraint::from_grammar; request version 2)
pub const GENIE_RESPONSE_FORMAT_GRAMMAR: genie_response_format = 3;

/// `genie_tool_choice`: whether the answer must be a tool call (request version 2).
pub type genie_tool_choice = c_int;
/// The model decides; calls of tools that were not offered, or with arguments that do not follow the tool's schema, are not calls (the text stays the answer's content)
pub const GENIE_TOOL_CHOICE_AUTO: genie_tool_choice = 0;
/// No tool calls are parsed from the answer.
pub const GENIE_TOOL_CHOICE_NONE: genie_tool_choice = 1;
/// The answer is constrained to a call of one of the tools, each with its own parameters schema (genie::tool_call_schema)
pub const GENIE_TOOL_CHOICE_REQUIRED: genie_tool_choice = 2;
/// The answer is constrained to a call of tool_choice_function.
pub const GENIE_TOOL_CHOICE_FUNCTION: genie_tool_choice = 3;

/// The fields of a message beyond role and content (request version 2), in an array
/// parallel to `genie_chat_request::messages`, so that tool calls and their results can go
/// back into the conversation. Every field may be NULL (= absent).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct genie_chat_turn_extra {
    /// An assistant message: the calls it made, a JSON array in the OpenAI shape (`[{"id", "type": "function", "function": {"name", "arguments"}}]`); NUL-terminated.
    pub tool_calls_json: *const c_char,
    /// A "tool" message: the id of the call it answers.
    pub tool_call_id: *const c_char,
    /// The tool's (or participant's) name.
    pub name: *const c_char,
}

/// One tool call of a `genie_chat_result` (version 2). Owned by the result.
#[repr(C)]
#[derive(Debug)]
pub struct genie_tool_call {
    /// The id the model gave, else "call_<index>"; NUL-terminated.
    pub id: *mut c_char,
    /// The tool's name.
    pub name: *mut c_char,
    /// Its arguments as JSON text ("{}" when none)
    pub arguments: *mut c_char,
    /// Rejected calls: why they are not calls; NULL for accepted ones.
    pub error: *mut c_char,
}

/// `genie_think`: Qwen3-style thinking switch.
pub type genie_think = c_int;
/// The template's default; with a JSON response format: off.
pub const GENIE_THINK_DEFAULT: genie_think = 0;
/// Think before answering.
pub const GENIE_THINK_ON: genie_think = 1;
/// Answer directly.
pub const GENIE_THINK_OFF: genie_think = 2;

/// The version of the struct this header declares (its `version` field).
pub const GENIE_CHAT_REQUEST_VERSION: c_uint = 2;
/// A `genie_session_chat` / `genie_engine_chat` request; everything it points to is
/// read during the call only. Version 1 ends after `tools_json_len` (the library reads no
/// field past the version it was given).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct genie_chat_request {
    /// GENIE_CHAT_REQUEST_VERSION.
    pub version: c_uint,
    /// N_messages messages (at least one)
    pub messages: *const genie_chat_turn,
    /// Number of messages.
    pub n_messages: usize,
    /// New tokens at most, reasoning included (finish LENGTH); default 256.
    pub max_tokens: i32,
    /// NULL = GENIE_SAMPLER_OPTIONS_INIT (greedy); a fresh sampler is made from it for each call.
    pub sampler: *const genie_sampler_options,
    /// Default GENIE_RESPONSE_FORMAT_NONE.
    pub response_format: genie_response_format,
    /// GENIE_RESPONSE_FORMAT_JSON_SCHEMA: the schema's JSON text.
    pub json_schema: *const c_char,
    /// Bytes of json_schema.
    pub json_schema_len: usize,
    /// Default GENIE_THINK_DEFAULT.
    pub think: genie_think,
    /// Stop strings: n_stop NUL-terminated UTF-8 strings, read during the call.
    pub stop: *const *const c_char,
    /// Number of stop strings.
    pub n_stop: usize,
    /// Per-token idle timeout in ms (0 = none): the model's time between two pieces (for the first: since the call began).
    pub idle_timeout_ms: u32,
    /// Total deadline in ms from the call's start (0 = none).
    pub deadline_ms: u32,
    /// Optional JSON array of tool definitions (OpenAI shape) given to the template as `tools`; NULL with tools_json_len 0 = none.
    pub tools_json: *const c_char,
    /// Bytes of tools_json.
    pub tools_json_len: usize,
    /// Since version 2: NULL, or n_messages entries parallel to messages (tool_calls, tool_call_id, name)
    pub message_extras: *const genie_chat_turn_extra,
    /// Default GENIE_TOOL_CHOICE_AUTO; REQUIRED / FUNCTION need tools_json and override response_format.
    pub tool_choice: genie_tool_choice,
    /// GENIE_TOOL_CHOICE_FUNCTION: the tool's name (NUL-terminated)
    pub tool_choice_function: *const c_char,
    /// -1 (default): every call of an AUTO answer is returned, a forced answer is one call; 1: a forced answer may also be an array of calls; 0: only the first call is returned.
    pub parallel_tool_calls: c_int,
    /// GENIE_RESPONSE_FORMAT_GRAMMAR: a GBNF grammar (llama.cpp's format, start rule "root")
    pub grammar: *const c_char,
    /// Bytes of grammar.
    pub grammar_len: usize,
}
/// The `GENIE_CHAT_REQUEST_INIT` macro: the defaults (equal to what the `_init()` function writes), or the initial value of an output struct.
pub const GENIE_CHAT_REQUEST_INIT: genie_chat_request = genie_chat_request {
    version: GENIE_CHAT_REQUEST_VERSION,
    messages: ptr::null(),
    n_messages: 0,
    max_tokens: 256,
    sampler: ptr::null(),
    response_format: GENIE_RESPONSE_FORMAT_NONE,
    json_schema: ptr::null(),
    json_schema_len: 0,
    think: GENIE_THINK_DEFAULT,
    stop: ptr::null(),
    n_stop: 0,
    idle_timeout_ms: 0,
    deadline_ms: 0,
    tools_json: ptr::null(),
    tools_json_len: 0,
    message_extras: ptr::null(),
    tool_choice: GENIE_TOOL_CHOICE_AUTO,
    tool_choice_function: ptr::null(),
    parallel_tool_calls: -1,
    grammar: ptr::null(),
    grammar_len: 0,
};

/// `genie_piece_kind`: what a piece of chat output is.
pub type genie_piece_kind = c_int;
/// The answer.
pub const GENIE_PIECE_CONTENT: genie_piece_kind = 0;
/// Thinking inside <think>...</think> (tags removed)
pub const GENIE_PIECE_REASONING: genie_piece_kind = 1;

/// Receives each piece of a chat answer on the calling thread (non-zero return: cancel).
pub type genie_piece_callback =
    Option<unsafe extern "C" fn(user: *mut c_void, kind: genie_piece_kind, utf8: *const c_char, len: usize) -> c_int>;

/// The version of the struct this header declares (its `version` field).
pub const GENIE_CHAT_RESULT_VERSION: c_uint = 2;
/// The outcome of a chat call; owns its strings (release with `genie_chat_result_clear`).
/// Version 1 ends after `total_ms` (the library writes no field past the version the
/// caller set).
#[repr(C)]
#[derive(Debug)]
pub struct genie_chat_result {
    /// Set by the caller: GENIE_CHAT_RESULT_VERSION.
    pub version: c_uint,
    /// The answer (content pieces, reasoning excluded), NUL-terminated.
    pub text: *mut c_char,
    /// Bytes of text.
    pub text_len: usize,
    /// The reasoning text (trimmed), "" when none.
    pub reasoning: *mut c_char,
    /// Bytes of reasoning.
    pub reasoning_len: usize,
    /// Tool calls found in the answer.
    pub n_tool_calls: usize,
    /// The first tool call's name; NULL when n_tool_calls is 0.
    pub tool_name: *mut c_char,
    /// Its arguments as JSON text ("{}" when none); NULL when none.
    pub tool_arguments: *mut c_char,
    /// STOP, LENGTH, CANCELLED, TIMEOUT, or ERROR on failure.
    pub finish_reason: genie_finish_reason,
    /// Tokens of the rendered conversation.
    pub prompt_tokens: i32,
    /// Of those, found in the KV cache (not evaluated)
    pub reused_prefix_tokens: i32,
    /// Generated tokens, reasoning included.
    pub completion_tokens: i32,
    /// From the call to the first generated token.
    pub time_to_first_token_ms: c_double,
    /// Evaluating the non-reused prompt tokens.
    pub prefill_ms: c_double,
    /// Prompt tokens per second.
    pub prefill_tokens_per_s: c_double,
    /// Generating the tokens after the first.
    pub decode_ms: c_double,
    /// Generated tokens per second.
    pub decode_tokens_per_s: c_double,
    /// The whole call.
    pub total_ms: c_double,
    /// Since version 2: all n_tool_calls calls, in the order of the answer; NULL when none.
    pub tool_calls: *mut genie_tool_call,
    /// Calls found in the answer but not accepted (a tool that was not offered, arguments that do not follow its schema, or a second call with parallel_tool_calls 0); their text stays in the answer.
    pub n_rejected_tool_calls: usize,
    /// With `error` set; NULL when none.
    pub rejected_tool_calls: *mut genie_tool_call,
}
/// The `GENIE_CHAT_RESULT_INIT` macro: the defaults (equal to what the `_init()` function writes), or the initial value of an output struct.
pub const GENIE_CHAT_RESULT_INIT: genie_chat_result = genie_chat_result {
    version: GENIE_CHAT_RESULT_VERSION,
    text: ptr::null_mut(),
    text_len: 0,
    reasoning: ptr::null_mut(),
    reasoning_len: 0,
    n_tool_calls: 0,
    tool_name: ptr::null_mut(),
    tool_arguments: ptr::null_mut(),
    finish_reason: GENIE_FINISH_STOP,
    prompt_tokens: 0,
    reused_prefix_tokens: 0,
    completion_tokens: 0,
    time_to_first_token_ms: 0.0,
    prefill_ms: 0.0,
    prefill_tokens_per_s: 0.0,
    decode_ms: 0.0,
    decode_tokens_per_s: 0.0,
    total_ms: 0.0,
    tool_calls: ptr::null_mut(),
    n_rejected_tool_calls: 0,
    rejected_tool_calls: ptr::null_mut(),
};

// ---- engine -------------------------------------------------------------------------

/// `genie_engine_state`: where the engine's model is in its life.
pub type genie_engine_state = c_int;
/// No model.
pub const GENIE_ENGINE_UNLOADED: genie_engine_state = 0;
/// A load runs and no model serves yet (a swap keeps READY/BUSY)
pub const GENIE_ENGINE_LOADING: genie_engine_state = 1;
/// A model serves, no request runs.
pub const GENIE_ENGINE_READY: genie_engine_state = 2;
/// A model serves, at least one request runs.
pub const GENIE_ENGINE_BUSY: genie_engine_state = 3;
/// The last load failed and no model serves.
pub const GENIE_ENGINE_FAILED: genie_engine_state = 4;

/// `genie_engine_health`: whether the engine needs attention.
pub type genie_engine_health = c_int;
/// All well.
pub const GENIE_HEALTH_OK: genie_engine_health = 0;
/// Serving, but: stuck generation, out of memory, failed swap, device error.
pub const GENIE_HEALTH_DEGRADED: genie_engine_health = 1;
/// Not serving: the last load failed.
pub const GENIE_HEALTH_FAILED: genie_engine_health = 2;

/// The version of the struct this header declares (its `version` field).
pub const GENIE_ENGINE_OPTIONS_VERSION: c_uint = 1;
/// Options of `genie_engine_create`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct genie_engine_options {
    /// GENIE_ENGINE_OPTIONS_VERSION.
    pub version: c_uint,
    /// Of every load; default GENIE_BACKEND_AUTO.
    pub backend: genie_backend,
    /// Tokens per session; 0 = min(training context, 4096)
    pub context_length: i32,
    /// CPU threads per session; 0 = all hardware threads.
    pub threads: i32,
    /// Prompt tokens per forward pass (default 512)
    pub batch_size: i32,
    /// Default GENIE_KV_F16.
    pub kv_type: genie_kv_type,
    /// Conversations whose KV cache is kept (LRU); default 4.
    pub max_conversations: i32,
    /// Requests run at once; 1 (default) = serialized by priority.
    pub max_concurrent: i32,
    /// No token for this long while running => DEGRADED "stuck"; 0 = off; default 60000 (prompt evaluation counts)
    pub watchdog_timeout_ms: u32,
    /// non-zero: also cancel a stuck generation; default 0.
    pub cancel_stuck: c_int,
    /// non-zero (default): refuse a KV cache larger than MemAvailable with GENIE_OUT_OF_MEMORY.
    pub check_available_memory: c_int,
}
/// The `GENIE_ENGINE_OPTIONS_INIT` macro: the defaults (equal to what the `_init()` function writes), or the initial value of an output struct.
pub const GENIE_ENGINE_OPTIONS_INIT: genie_engine_options = genie_engine_options {
    version: GENIE_ENGINE_OPTIONS_VERSION,
    backend: GENIE_BACKEND_AUTO,
    context_length: 0,
    threads: 0,
    batch_size: 512,
    kv_type: GENIE_KV_F16,
    max_conversations: 4,
    max_concurrent: 1,
    watchdog_timeout_ms: 60000,
    cancel_stuck: 0,
    check_available_memory: 1,
};

/// Receives the fraction (0..1) of a running load, on the loading thread (non-zero: cancel).
pub type genie_load_progress_callback = Option<unsafe extern "C" fn(user: *mut c_void, fraction: c_float) -> c_int>;

/// The version of the struct this header declares (its `version` field).
pub const GENIE_ENGINE_STATUS_VERSION: c_uint = 1;
/// A snapshot of the engine; owns its strings (release with `genie_engine_status_clear`).
#[repr(C)]
#[derive(Debug)]
pub struct genie_engine_status_info {
    /// Set by the caller: GENIE_ENGINE_STATUS_VERSION.
    pub version: c_uint,
    /// Where the model is in its life.
    pub state: genie_engine_state,
    /// Whether the engine needs attention.
    pub health: genie_engine_health,
    /// Why health is not OK, e.g. "stuck: conversation 'a' produced no token for 61.0 s (watchdog 60.0 s)"; "" when OK.
    pub health_reason: *mut c_char,
    /// non-zero while a load or swap runs.
    pub loading: c_int,
    /// Of the running (or last) load, 0..1.
    pub load_progress: c_float,
    /// The serving model's file.
    pub model_path: *mut c_char,
    /// Its general.name.
    pub model_name: *mut c_char,
    /// "llama", "qwen2", "qwen3".
    pub architecture: *mut c_char,
    /// "cpu".
    pub backend: *mut c_char,
    /// Tokens per session (the limit in force)
    pub context_length: i32,
    /// Context length the model was trained with.
    pub n_ctx_train: i32,
    /// The model's tensor data.
    pub weights_bytes: u64,
    /// KV caches of kept conversations and running requests.
    pub kv_bytes: u64,
    /// Their activation workspaces and logits.
    pub scratch_bytes: u64,
    /// Accelerator memory (0 on the CPU backend)
    pub device_bytes: u64,
    /// Resident set of the whole process; 0 if unknown.
    pub process_rss_bytes: u64,
    /// Of the last failed load, swap or request; GENIE_OK if none.
    pub last_error_status: genie_status,
    /// Its message.
    pub last_error: *mut c_char,
    /// Chat requests admitted.
    pub requests: u64,
    /// Of those, ended with an error.
    pub failures: u64,
    /// Of those, ended GENIE_FINISH_CANCELLED.
    pub cancelled: u64,
    /// Prompt tokens of all requests.
    pub prompt_tokens: u64,
    /// Prompt tokens found in a kept KV cache.
    pub reused_tokens: u64,
    /// Generated tokens.
    pub generated_tokens: u64,
    /// Generations the watchdog found stuck.
    pub stuck_events: u64,
    /// Out-of-memory errors.
    pub out_of_memory: u64,
    /// Successful loads and swaps.
    pub loads: u64,
    /// Failed loads and swaps.
    pub load_failures: u64,
    /// Requests running now.
    pub active_requests: i32,
    /// Requests waiting for a turn.
    pub queued_requests: i32,
    /// Conversations with a kept KV cache.
    pub conversations: i32,
    /// Longest wait for a token among running requests; 0 when idle.
    pub seconds_since_token: c_double,
}
/// The `GENIE_ENGINE_STATUS_INIT` macro: the defaults (equal to what the `_init()` function writes), or the initial value of an output struct.
pub const GENIE_ENGINE_STATUS_INIT: genie_engine_status_info = genie_engine_status_info {
    version: GENIE_ENGINE_STATUS_VERSION,
    state: GENIE_ENGINE_UNLOADED,
    health: GENIE_HEALTH_OK,
    health_reason: ptr::null_mut(),
    loading: 0,
    load_progress: 0.0,
    model_path: ptr::null_mut(),
    model_name: ptr::null_mut(),
    architecture: ptr::null_mut(),
    backend: ptr::null_mut(),
    context_length: 0,
    n_ctx_train: 0,
    weights_bytes: 0,
    kv_bytes: 0,
    scratch_bytes: 0,
    device_bytes: 0,
    process_rss_bytes: 0,
    last_error_status: GENIE_OK,
    last_error: ptr::null_mut(),
    requests: 0,
    failures: 0,
    cancelled: 0,
    prompt_tokens: 0,
    reused_tokens: 0,
    generated_tokens: 0,
    stuck_events: 0,
    out_of_memory: 0,
    loads: 0,
    load_failures: 0,
    active_requests: 0,
    queued_requests: 0,
    conversations: 0,
    seconds_since_token: 0.0,
};

/// The version of the struct this header declares (its `version` field).
pub const GENIE_ENGINE_CHAT_OPTIONS_VERSION: c_uint = 1;
/// Engine-specific options of one chat request.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct genie_engine_chat_options {
    /// GENIE_ENGINE_CHAT_OPTIONS_VERSION.
    pub version: c_uint,
    /// NUL-terminated; requests with the same id share a kept KV cache (warm turns); NULL or "" = a one-off request.
    pub conversation_id: *const c_char,
    /// Waiting requests are admitted higher first; default 0.
    pub priority: i32,
}
/// The `GENIE_ENGINE_CHAT_OPTIONS_INIT` macro: the defaults (equal to what the `_init()` function writes), or the initial value of an output struct.
pub const GENIE_ENGINE_CHAT_OPTIONS_INIT: genie_engine_chat_options =
    genie_engine_chat_options { version: GENIE_ENGINE_CHAT_OPTIONS_VERSION, conversation_id: ptr::null(), priority: 0 };
