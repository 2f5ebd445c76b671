//! [`Model`]: a loaded GGUF model, its options and facts, tokenizer and chat template.
use std::path::Path;
use std::ptr::{self, NonNull};
use std::time::Duration;

use genie_sys as sys;

use crate::error::{check, invalid, Result};
use crate::util::{borrowed_str, c_path, c_string, ms_duration};
use crate::Token;

/// The compute backend (`genie_backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// CUDA when a device is present and the build has it, else the CPU (the default).
    #[default]
    Auto,
    /// The CPU, always available.
    Cpu,
    /// CUDA; loading fails with [`Error::Unsupported`](crate::Error::Unsupported) or
    /// [`Error::Device`](crate::Error::Device) when it is unavailable.
    Cuda,
}

impl Backend {
    pub(crate) fn raw(self) -> sys::genie_backend {
        match self {
            Backend::Auto => sys::GENIE_BACKEND_AUTO,
            Backend::Cpu => sys::GENIE_BACKEND_CPU,
            Backend::Cuda => sys::GENIE_BACKEND_CUDA,
        }
    }
}

/// Options of [`Model::load`] (`genie_model_options`), builder style.
///
/// ```
/// let opts = genie::ModelOptions::new().backend(genie::Backend::Cpu).use_mmap(false);
/// assert_eq!(opts.backend, genie::Backend::Cpu);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelOptions {
    /// The compute backend (default [`Backend::Auto`]).
    pub backend: Backend,
    /// `true` (default): weights used in place from a read-only mmap of the file (it must
    /// not be rewritten while loaded); `false`: read into memory at load.
    pub use_mmap: bool,
    /// Bytes the model and a session may use; 0 (default) = what is free now.
    pub memory_budget_bytes: u64,
}

impl Default for ModelOptions {
    fn default() -> Self {
        ModelOptions { backend: Backend::Auto, use_mmap: true, memory_budget_bytes: 0 }
    }
}

impl ModelOptions {
    /// The defaults: [`Backend::Auto`], weights used in place from a memory map, budget = what
    /// is free.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets [`Self::backend`].
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }
    /// Sets [`Self::use_mmap`].
    pub fn use_mmap(mut self, use_mmap: bool) -> Self {
        self.use_mmap = use_mmap;
        self
    }
    /// Sets [`Self::memory_budget_bytes`]. Over budget, loading fails with
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory).
    pub fn memory_budget_bytes(mut self, bytes: u64) -> Self {
        self.memory_budget_bytes = bytes;
        self
    }
    /// The C struct (`genie_model_options`).
    pub fn to_raw(&self) -> sys::genie_model_options {
        sys::genie_model_options {
            backend: self.backend.raw(),
            use_mmap: i32::from(self.use_mmap),
            memory_budget_bytes: self.memory_budget_bytes,
            ..sys::GENIE_MODEL_OPTIONS_INIT
        }
    }
}

/// Facts about a loaded model, read from its GGUF metadata (`genie_model_info`).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// `"llama"`, `"qwen2"`, `"qwen3"`.
    pub architecture: String,
    /// `general.name`, or `""`.
    pub name: String,
    /// Number of parameters.
    pub parameter_count: u64,
    /// Bytes of the file.
    pub file_size: u64,
    /// Bytes of tensor data.
    pub weight_bytes: u64,
    /// Bytes of tensor data one decoded token reads.
    pub decode_bytes: u64,
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
    /// Size of one head.
    pub head_dim: i32,
    /// Feed-forward width.
    pub n_ff: i32,
    /// Beginning-of-sequence token, if the vocabulary has one.
    pub bos: Option<Token>,
    /// End-of-sequence token, if the vocabulary has one.
    pub eos: Option<Token>,
    /// How long the load took.
    pub load_time: Duration,
}

/// One message of [`Model::apply_chat_template`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateMessage {
    /// `"system"`, `"user"`, `"assistant"`, `"tool"`.
    pub role: String,
    /// The text; `None` = no content (the template sees None).
    pub content: Option<String>,
}

/// Flags of [`Model::tokenize`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenizeFlags {
    /// Add BOS/EOS as the vocabulary asks.
    pub add_special: bool,
    /// Recognise control tokens written as text (`"<|im_start|>"`).
    pub parse_special: bool,
}

/// Flags of [`Model::detokenize`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DetokenizeFlags {
    /// Drop a leading BOS / trailing EOS the vocabulary adds.
    pub remove_special: bool,
    /// Render control tokens as their text.
    pub render_special: bool,
}

/// A loaded GGUF model (`genie_model`): immutable weights, tokenizer and chat template.
///
/// **Threads:** `Send + Sync`. The C ABI allows a model to be used from any number of
/// threads at once; share it with `Arc<Model>` (or `&Model` in scoped threads). Sessions
/// keep the model alive, so a `Model` may be dropped while its sessions live.
#[derive(Debug)]
pub struct Model {
    ptr: NonNull<sys::genie_model>,
}

// SAFETY: genie.h: "a genie_model may be used from any number of threads at once"; it is
// immutable after load and reference-counted by its sessions.
unsafe impl Send for Model {}
// SAFETY: as above; every function taking a `const genie_model*` is thread-safe.
unsafe impl Sync for Model {}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: ptr came from genie_model_load and is released once.
        unsafe { sys::genie_model_free(self.ptr.as_ptr()) }
    }
}

impl Model {
    /// Loads and validates the GGUF file at `path`.
    ///
    /// Errors: [`Error::NotFound`](crate::Error::NotFound) (no such file),
    /// [`Error::Format`](crate::Error::Format) (corrupt GGUF, missing or misshapen tensor),
    /// [`Error::Unsupported`](crate::Error::Unsupported) (architecture, quant type),
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory); the message is the library's.
    pub fn load(path: impl AsRef<Path>, options: &ModelOptions) -> Result<Model> {
        let path = c_path(path.as_ref())?;
        let raw = options.to_raw();
        let mut out = ptr::null_mut();
        // SAFETY: out-pointer, NUL-terminated path and options valid for the call.
        check(unsafe { sys::genie_model_load(&mut out, path.as_ptr(), &raw) })?;
        NonNull::new(out).map(|ptr| Model { ptr }).ok_or_else(|| invalid("genie_model_load gave no model"))
    }

    /// The raw handle, for calls this crate does not wrap. Borrowed: valid while `self` lives.
    pub fn as_ptr(&self) -> *mut sys::genie_model {
        self.ptr.as_ptr()
    }

    /// Facts about the model.
    pub fn info(&self) -> Result<ModelInfo> {
        let mut raw = sys::GENIE_MODEL_INFO_INIT;
        // SAFETY: raw is a versioned output struct; the model is alive.
        check(unsafe { sys::genie_model_get_info(&mut raw, self.ptr.as_ptr()) })?;
        let token = |t: Token| if t == sys::GENIE_NO_TOKEN { None } else { Some(t) };
        Ok(ModelInfo {
            // SAFETY: borrowed strings that live as long as the model; copied here.
            architecture: unsafe { borrowed_str(raw.architecture) },
            // SAFETY: as above.
            name: unsafe { borrowed_str(raw.name) },
            parameter_count: raw.parameter_count,
            file_size: raw.file_size,
            weight_bytes: raw.weight_bytes,
            decode_bytes: raw.decode_bytes,
            n_vocab: raw.n_vocab,
            n_ctx_train: raw.n_ctx_train,
            n_embd: raw.n_embd,
            n_layer: raw.n_layer,
            n_head: raw.n_head,
            n_head_kv: raw.n_head_kv,
            head_dim: raw.head_dim,
            n_ff: raw.n_ff,
            bos: token(raw.bos),
            eos: token(raw.eos),
            load_time: ms_duration(raw.load_time_ms),
        })
    }

    /// Whether `token` ends a generation (EOS, EOT, `<|im_end|>` ...); `false` for ids out
    /// of range.
    pub fn token_is_eog(&self, token: Token) -> Result<bool> {
        let mut out = 0;
        // SAFETY: out-pointer valid; the model is alive.
        check(unsafe { sys::genie_model_token_is_eog(&mut out, self.ptr.as_ptr(), token) })?;
        Ok(out != 0)
    }

    /// The GGUF's `tokenizer.chat_template`, or `""` when it has none.
    pub fn chat_template(&self) -> Result<String> {
        let mut out = ptr::null();
        // SAFETY: out-pointer valid; the result is borrowed from the model and copied.
        check(unsafe { sys::genie_model_chat_template(&mut out, self.ptr.as_ptr()) })?;
        // SAFETY: NUL-terminated, lives as long as the model.
        Ok(unsafe { borrowed_str(out) })
    }

    /// Tokenizes `text` (any bytes are accepted; invalid UTF-8 as llama.cpp handles it).
    pub fn tokenize(&self, text: &[u8], flags: TokenizeFlags) -> Result<Vec<Token>> {
        let mut bits = 0;
        if flags.add_special {
            bits |= sys::GENIE_TOKENIZE_ADD_SPECIAL;
        }
        if flags.parse_special {
            bits |= sys::GENIE_TOKENIZE_PARSE_SPECIAL;
        }
        let mut tokens = ptr::null_mut();
        let mut count = 0usize;
        // SAFETY: text valid for text.len() bytes; out-pointers valid.
        check(unsafe {
            sys::genie_model_tokenize(
                &mut tokens,
                &mut count,
                self.ptr.as_ptr(),
                text.as_ptr().cast(),
                text.len(),
                bits,
            )
        })?;
        let result = if tokens.is_null() || count == 0 {
            Vec::new()
        } else {
            // SAFETY: the library gave `count` tokens at `tokens`.
            unsafe { std::slice::from_raw_parts(tokens, count) }.to_vec()
        };
        // SAFETY: caller frees with genie_tokens_free (NULL is a no-op).
        unsafe { sys::genie_tokens_free(tokens) };
        Ok(result)
    }

    /// The text of `tokens` (invalid UTF-8 in the result replaced by U+FFFD).
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an id out of range.
    pub fn detokenize(&self, tokens: &[Token], flags: DetokenizeFlags) -> Result<String> {
        let mut bits = 0;
        if flags.remove_special {
            bits |= sys::GENIE_DETOKENIZE_REMOVE_SPECIAL;
        }
        if flags.render_special {
            bits |= sys::GENIE_DETOKENIZE_RENDER_SPECIAL;
        }
        let mut text = ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: tokens valid for tokens.len() ids; out-pointers valid.
        check(unsafe {
            sys::genie_model_detokenize(&mut text, &mut len, self.ptr.as_ptr(), tokens.as_ptr(), tokens.len(), bits)
        })?;
        // SAFETY: text holds len bytes (caller frees with genie_string_free).
        let result = unsafe { crate::util::bytes_str(text, len) };
        // SAFETY: as above.
        unsafe { sys::genie_string_free(text) };
        Ok(result)
    }

    /// Renders `messages` with the model's chat template (ChatML when it has none), adding
    /// the header of the assistant's turn when `add_generation_prompt`.
    pub fn apply_chat_template(&self, messages: &[TemplateMessage], add_generation_prompt: bool) -> Result<String> {
        let mut owned = Vec::with_capacity(messages.len());
        for (i, m) in messages.iter().enumerate() {
            let role = c_string(&format!("message {i}'s role"), &m.role)?;
            let content = match &m.content {
                Some(c) => Some(c_string(&format!("message {i}'s content"), c)?),
                None => None,
            };
            owned.push((role, content));
        }
        let raw: Vec<sys::genie_chat_message> = owned
            .iter()
            .map(|(role, content)| sys::genie_chat_message {
                role: role.as_ptr(),
                content: content.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
            })
            .collect();
        let mut text = ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: raw's strings live in `owned` during the call; out-pointers valid.
        check(unsafe {
            sys::genie_model_apply_chat_template(
                &mut text,
                &mut len,
                self.ptr.as_ptr(),
                raw.as_ptr(),
                raw.len(),
                i32::from(add_generation_prompt),
            )
        })?;
        // SAFETY: text holds len bytes; caller frees with genie_string_free.
        let result = unsafe { crate::util::bytes_str(text, len) };
        // SAFETY: as above.
        unsafe { sys::genie_string_free(text) };
        Ok(result)
    }
}
