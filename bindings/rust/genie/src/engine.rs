//! [`Engine`]: one model's lifecycle (background load, swap, unload, warm-up), health,
//! memory control and warm multi-turn conversations (docs/engine.md).
use std::fmt;
use std::ops::ControlFlow;
use std::os::raw::{c_float, c_int, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use genie_sys as sys;

use crate::chat::{run_chat, ChatRequest, ChatResponse, Piece, PieceFn};
use crate::error::{check, invalid, Error, Result};
use crate::model::Backend;
use crate::session::KvType;
use crate::stream::{Canceller, ChatStream};
use crate::util::{borrowed_str, c_path, c_string, millis_u32, to_i32};

/// Options of [`Engine::new`] (`genie_engine_options`), builder style.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EngineOptions {
    /// Backend of every load (default [`Backend::Auto`]).
    pub backend: Backend,
    /// Tokens per session; 0 (default) = min(training context, 4096).
    pub context_length: u32,
    /// CPU threads per session; 0 (default) = all hardware threads.
    pub threads: u32,
    /// Prompt tokens per forward pass (default 512).
    pub batch_size: u32,
    /// KV cache element type (default [`KvType::F16`]).
    pub kv_type: KvType,
    /// Conversations whose KV cache is kept (least recently used dropped first); default 4.
    pub max_conversations: u32,
    /// Requests run at once; 1 (default) = serialized by priority.
    pub max_concurrent: u32,
    /// No token for this long while running makes health DEGRADED ("stuck"); `None` = off;
    /// default 60 s (prompt evaluation counts).
    pub watchdog_timeout: Option<Duration>,
    /// Also cancel a stuck generation; default false.
    pub cancel_stuck: bool,
    /// Refuse a KV cache larger than the available memory (default true).
    pub check_available_memory: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            backend: Backend::Auto,
            context_length: 0,
            threads: 0,
            batch_size: 512,
            kv_type: KvType::F16,
            max_conversations: 4,
            max_concurrent: 1,
            watchdog_timeout: Some(Duration::from_secs(60)),
            cancel_stuck: false,
            check_available_memory: true,
        }
    }
}

impl EngineOptions {
    /// The C ABI's defaults.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets [`Self::backend`].
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
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
    /// Sets [`Self::max_conversations`].
    pub fn max_conversations(mut self, n: u32) -> Self {
        self.max_conversations = n;
        self
    }
    /// Sets [`Self::max_concurrent`].
    pub fn max_concurrent(mut self, n: u32) -> Self {
        self.max_concurrent = n;
        self
    }
    /// Sets [`Self::watchdog_timeout`].
    pub fn watchdog_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.watchdog_timeout = timeout;
        self
    }
    /// Sets [`Self::cancel_stuck`].
    pub fn cancel_stuck(mut self, on: bool) -> Self {
        self.cancel_stuck = on;
        self
    }
    /// Sets [`Self::check_available_memory`].
    pub fn check_available_memory(mut self, on: bool) -> Self {
        self.check_available_memory = on;
        self
    }
    /// The C struct; an error when a number exceeds the C type's range.
    pub fn to_raw(&self) -> Result<sys::genie_engine_options> {
        Ok(sys::genie_engine_options {
            backend: self.backend.raw(),
            context_length: to_i32("context_length", self.context_length as usize)?,
            threads: to_i32("threads", self.threads as usize)?,
            batch_size: to_i32("batch_size", self.batch_size as usize)?,
            kv_type: self.kv_type.raw(),
            max_conversations: to_i32("max_conversations", self.max_conversations as usize)?,
            max_concurrent: to_i32("max_concurrent", self.max_concurrent as usize)?,
            watchdog_timeout_ms: millis_u32("watchdog_timeout", self.watchdog_timeout)?,
            cancel_stuck: c_int::from(self.cancel_stuck),
            check_available_memory: c_int::from(self.check_available_memory),
            ..sys::GENIE_ENGINE_OPTIONS_INIT
        })
    }
}

/// Engine-specific options of one chat request (`genie_engine_chat_options`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct EngineChatOptions {
    /// Requests with the same id share a kept KV cache (warm turns); `None` = one-off.
    pub conversation_id: Option<String>,
    /// Waiting requests are admitted higher first; default 0.
    pub priority: i32,
}

impl EngineChatOptions {
    /// A one-off request at priority 0.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets [`Self::conversation_id`].
    pub fn conversation(mut self, id: impl Into<String>) -> Self {
        self.conversation_id = Some(id.into());
        self
    }
    /// Sets [`Self::priority`].
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }
}

/// Where the engine's model is in its life (`genie_engine_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineState {
    /// No model.
    Unloaded,
    /// A load runs and no model serves yet (a swap keeps `Ready`/`Busy`).
    Loading,
    /// A model serves, no request runs.
    Ready,
    /// A model serves, at least one request runs.
    Busy,
    /// The last load failed and no model serves.
    Failed,
    /// A state this crate does not know (a newer library).
    Unknown(i32),
}

impl EngineState {
    fn from_raw(raw: sys::genie_engine_state) -> Self {
        match raw {
            sys::GENIE_ENGINE_UNLOADED => EngineState::Unloaded,
            sys::GENIE_ENGINE_LOADING => EngineState::Loading,
            sys::GENIE_ENGINE_READY => EngineState::Ready,
            sys::GENIE_ENGINE_BUSY => EngineState::Busy,
            sys::GENIE_ENGINE_FAILED => EngineState::Failed,
            other => EngineState::Unknown(other),
        }
    }
    /// Whether a model serves requests (`Ready` or `Busy`).
    pub fn is_serving(self) -> bool {
        matches!(self, EngineState::Ready | EngineState::Busy)
    }
}

/// Whether the engine needs attention (`genie_engine_health`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HealthLevel {
    /// All well.
    Ok,
    /// Serving, but: stuck generation, out of memory, failed swap, device error.
    Degraded,
    /// Not serving: the last load failed.
    Failed,
    /// A level this crate does not know (a newer library).
    Unknown(i32),
}

/// The engine's health as a value the assistant's health check reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    /// OK, degraded or failed.
    pub level: HealthLevel,
    /// Why it is not OK (e.g. "stuck: conversation 'a' produced no token for 61.0 s"); `""` when OK.
    pub reason: String,
    /// Where the model is in its life.
    pub state: EngineState,
    /// The last failed load, swap or request, if any.
    pub last_error: Option<Error>,
}

impl Health {
    /// Whether the level is [`HealthLevel::Ok`].
    pub fn is_ok(&self) -> bool {
        self.level == HealthLevel::Ok
    }
}

/// A snapshot of the engine (`genie_engine_status_info`), owned.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineStatus {
    /// Health, state and last error.
    pub health: Health,
    /// Whether a load or swap runs.
    pub loading: bool,
    /// Progress of the running (or last) load, 0..1.
    pub load_progress: f32,
    /// The serving model's file (`""` when none).
    pub model_path: String,
    /// Its `general.name`.
    pub model_name: String,
    /// `"llama"`, `"qwen2"`, `"qwen3"`.
    pub architecture: String,
    /// `"cpu"`, `"cuda"`.
    pub backend: String,
    /// Tokens per session (the limit in force).
    pub context_length: u32,
    /// The model's training context.
    pub n_ctx_train: u32,
    /// The model's tensor data.
    pub weights_bytes: u64,
    /// KV caches of kept conversations and running requests.
    pub kv_bytes: u64,
    /// Their activation workspaces and logits.
    pub scratch_bytes: u64,
    /// Accelerator memory (0 on the CPU backend).
    pub device_bytes: u64,
    /// Resident set of the whole process; 0 if unknown.
    pub process_rss_bytes: u64,
    /// Chat requests admitted.
    pub requests: u64,
    /// Of those, ended with an error.
    pub failures: u64,
    /// Of those, cancelled.
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
    pub active_requests: u32,
    /// Requests waiting for a turn.
    pub queued_requests: u32,
    /// Conversations with a kept KV cache.
    pub conversations: u32,
    /// Longest wait for a token among running requests; zero when idle.
    pub since_last_token: Duration,
}

type ProgressFn = dyn FnMut(f32) -> ControlFlow<()> + Send;

/// The progress closure of a running load: boxed so its address is stable while the
/// loading thread calls it.
struct ProgressSlot {
    callback: Box<ProgressFn>,
}

/// The engine handle shared by [`Engine`] clones and their [`Canceller`]s.
pub(crate) struct EngineHandle {
    pub(crate) ptr: NonNull<sys::genie_engine>,
    /// The closure of the last started load; replaced only once a new load has started
    /// (which means the old one ended: a load while one runs fails with BUSY).
    progress: Mutex<Option<Box<ProgressSlot>>>,
}

// SAFETY: genie.h: "Every genie_engine_* function is thread-safe". The progress closure is
// `Send` and called only by the loading thread.
unsafe impl Send for EngineHandle {}
// SAFETY: as above.
unsafe impl Sync for EngineHandle {}

impl Drop for EngineHandle {
    fn drop(&mut self) {
        // SAFETY: the last reference: no call on the engine runs or can start. Frees after
        // cancelling and waiting for a running load, so the progress closure (dropped with
        // `self.progress` afterwards) is no longer called.
        unsafe { sys::genie_engine_free(self.ptr.as_ptr()) }
    }
}

/// An in-process engine (`genie_engine`): one model's lifecycle (background load, swap,
/// unload, warm-up), health, memory control and warm multi-turn conversations.
///
/// **Threads:** `Send + Sync` and `Clone` (clones share one engine, freed with the last):
/// the C ABI makes every `genie_engine_*` function thread-safe, so any number of threads
/// may chat, load, swap or read the status at once. Calling `load`, `swap`, `unload`,
/// `wait` or `chat` from inside a piece callback of the same engine fails with
/// [`Error::Busy`] (it would deadlock).
#[derive(Clone)]
pub struct Engine {
    handle: Arc<EngineHandle>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine").field("ptr", &self.handle.ptr).finish()
    }
}

unsafe extern "C" fn on_progress(user: *mut c_void, fraction: c_float) -> c_int {
    // SAFETY: `user` is the ProgressSlot kept in EngineHandle::progress until this load has
    // ended; only the loading thread calls it.
    let slot = unsafe { &mut *user.cast::<ProgressSlot>() };
    match panic::catch_unwind(AssertUnwindSafe(|| (slot.callback)(fraction))) {
        Ok(ControlFlow::Continue(())) => 0,
        // A panic cancels the load rather than unwinding through C.
        Ok(ControlFlow::Break(())) | Err(_) => 1,
    }
}

impl Engine {
    /// Creates an engine with no model ([`EngineState::Unloaded`]).
    pub fn new(options: &EngineOptions) -> Result<Engine> {
        let raw = options.to_raw()?;
        let mut out = ptr::null_mut();
        // SAFETY: out-pointer and options valid for the call.
        check(unsafe { sys::genie_engine_create(&mut out, &raw) })?;
        let ptr = NonNull::new(out).ok_or_else(|| invalid("genie_engine_create gave no engine"))?;
        Ok(Engine { handle: Arc::new(EngineHandle { ptr, progress: Mutex::new(None) }) })
    }

    /// The raw handle, for calls this crate does not wrap. Borrowed: valid while `self` lives.
    pub fn as_ptr(&self) -> *mut sys::genie_engine {
        self.handle.ptr.as_ptr()
    }

    fn start(
        &self,
        path: &Path,
        progress: Option<Box<ProgressFn>>,
        call: unsafe extern "C" fn(
            *mut sys::genie_engine,
            *const std::os::raw::c_char,
            sys::genie_load_progress_callback,
            *mut c_void,
        ) -> sys::genie_status,
    ) -> Result<()> {
        let path = c_path(path)?;
        let mut slot = progress.map(|callback| Box::new(ProgressSlot { callback }));
        let (cb, user): (sys::genie_load_progress_callback, *mut c_void) = match slot.as_mut() {
            Some(s) => (Some(on_progress), (&mut **s as *mut ProgressSlot).cast()),
            None => (None, ptr::null_mut()),
        };
        // Held across the call so that two loads started at once cannot replace each
        // other's closure; the call returns at once.
        let mut kept = self.handle.progress.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: engine alive; path NUL-terminated; the slot lives in `kept` until the
        // next load has started.
        check(unsafe { call(self.as_ptr(), path.as_ptr(), cb, user) })?;
        *kept = slot;
        Ok(())
    }

    /// Starts loading the GGUF at `path` in the background and returns at once; a model
    /// already loaded is unloaded first. Then [`Self::wait`] or poll [`Self::status`].
    /// Errors: [`Error::Busy`] (a load or swap runs).
    pub fn load(&self, path: impl AsRef<Path>) -> Result<()> {
        self.start(path.as_ref(), None, sys::genie_engine_load)
    }

    /// [`Self::load`] reporting progress (0..1, increasing, 1 at the end) to `progress`
    /// on the loading thread; `ControlFlow::Break(())` (or a panic) cancels the load
    /// (it then fails with [`Error::Cancelled`]). The engine keeps the closure until the
    /// next load starts, so a closure holding a clone of this engine keeps it alive.
    pub fn load_with_progress<F>(&self, path: impl AsRef<Path>, progress: F) -> Result<()>
    where
        F: FnMut(f32) -> ControlFlow<()> + Send + 'static,
    {
        self.start(path.as_ref(), Some(Box::new(progress)), sys::genie_engine_load)
    }

    /// Like [`Self::load`], but the current model keeps serving while the new one loads;
    /// on success the new one replaces it (running requests finish on the old one); on
    /// failure the old one keeps serving and health is DEGRADED ("swap failed").
    pub fn swap(&self, path: impl AsRef<Path>) -> Result<()> {
        self.start(path.as_ref(), None, sys::genie_engine_swap)
    }

    /// [`Self::swap`] with a progress closure (as [`Self::load_with_progress`]).
    pub fn swap_with_progress<F>(&self, path: impl AsRef<Path>, progress: F) -> Result<()>
    where
        F: FnMut(f32) -> ControlFlow<()> + Send + 'static,
    {
        self.start(path.as_ref(), Some(Box::new(progress)), sys::genie_engine_swap)
    }

    /// Waits for the running load or swap, at most `timeout` (`None`: no limit), and
    /// returns the state afterwards ([`EngineState::Loading`] when the time ran out during
    /// a first load). A failed load gives its error ([`Error::NotFound`], [`Error::Format`],
    /// [`Error::Unsupported`], [`Error::OutOfMemory`], [`Error::Cancelled`] ...).
    pub fn wait(&self, timeout: Option<Duration>) -> Result<EngineState> {
        let ms = match timeout {
            None => -1,
            Some(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        };
        let mut state = sys::GENIE_ENGINE_UNLOADED;
        // SAFETY: engine alive; out-pointer valid.
        check(unsafe { sys::genie_engine_wait(&mut state, self.as_ptr(), ms) })?;
        Ok(EngineState::from_raw(state))
    }

    /// Cancels a running load and running requests (waiting ones fail with
    /// [`Error::NotLoaded`]), waits for them, frees the model and every cache.
    pub fn unload(&self) -> Result<()> {
        // SAFETY: engine alive.
        check(unsafe { sys::genie_engine_unload(self.as_ptr()) })
    }

    /// One tiny forward pass so the first request pays no lazy initialisation.
    /// Errors: [`Error::NotLoaded`].
    pub fn warmup(&self) -> Result<()> {
        // SAFETY: engine alive.
        check(unsafe { sys::genie_engine_warmup(self.as_ptr()) })
    }

    /// Tokens of context per session (0 = the default). Kept sessions of another size are
    /// freed (their conversations start cold).
    pub fn set_context_limit(&self, n_ctx: u32) -> Result<()> {
        let n = to_i32("context limit", n_ctx as usize)?;
        // SAFETY: engine alive.
        check(unsafe { sys::genie_engine_set_context_limit(self.as_ptr(), n) })
    }

    /// Frees the caches of idle kept conversations except the `keep_idle` most recently
    /// used; returns the bytes released.
    pub fn trim(&self, keep_idle: u32) -> Result<u64> {
        let keep = to_i32("keep_idle", keep_idle as usize)?;
        let mut released = 0u64;
        // SAFETY: engine alive; out-pointer valid.
        check(unsafe { sys::genie_engine_trim(&mut released, self.as_ptr(), keep) })?;
        Ok(released)
    }

    /// Forgets a conversation (no-op for an unknown id).
    pub fn forget(&self, conversation_id: &str) -> Result<()> {
        let id = c_string("conversation id", conversation_id)?;
        // SAFETY: engine alive; id NUL-terminated.
        check(unsafe { sys::genie_engine_forget(self.as_ptr(), id.as_ptr()) })
    }

    /// Cancels the running request of a conversation (`None`: every running request).
    pub fn cancel(&self, conversation_id: Option<&str>) -> Result<()> {
        let id = match conversation_id {
            Some(id) => Some(c_string("conversation id", id)?),
            None => None,
        };
        // SAFETY: engine alive; id NUL-terminated or NULL.
        check(unsafe { sys::genie_engine_cancel(self.as_ptr(), id.as_ref().map_or(ptr::null(), |s| s.as_ptr())) })
    }

    /// A [`Canceller`] for the running request of `conversation_id`, usable from any thread.
    pub fn canceller(&self, conversation_id: &str) -> Result<Canceller> {
        Ok(Canceller::for_engine(self.handle.clone(), Some(c_string("conversation id", conversation_id)?)))
    }

    /// A snapshot of the engine; never blocks on a running request or load.
    pub fn status(&self) -> Result<EngineStatus> {
        let mut raw = RawStatus(sys::GENIE_ENGINE_STATUS_INIT);
        // SAFETY: engine alive; a versioned output struct, cleared when `raw` drops.
        check(unsafe { sys::genie_engine_status(&mut raw.0, self.as_ptr()) })?;
        let s = &raw.0;
        let level = match s.health {
            sys::GENIE_HEALTH_OK => HealthLevel::Ok,
            sys::GENIE_HEALTH_DEGRADED => HealthLevel::Degraded,
            sys::GENIE_HEALTH_FAILED => HealthLevel::Failed,
            other => HealthLevel::Unknown(other),
        };
        // SAFETY: the strings are NUL-terminated (never NULL after success) and owned by `raw`.
        let text = |p: *mut std::os::raw::c_char| unsafe { borrowed_str(p) };
        let count = |n: i32| u32::try_from(n).unwrap_or(0);
        Ok(EngineStatus {
            health: Health {
                level,
                reason: text(s.health_reason),
                state: EngineState::from_raw(s.state),
                last_error: Error::from_status(s.last_error_status, text(s.last_error)),
            },
            loading: s.loading != 0,
            load_progress: s.load_progress,
            model_path: text(s.model_path),
            model_name: text(s.model_name),
            architecture: text(s.architecture),
            backend: text(s.backend),
            context_length: count(s.context_length),
            n_ctx_train: count(s.n_ctx_train),
            weights_bytes: s.weights_bytes,
            kv_bytes: s.kv_bytes,
            scratch_bytes: s.scratch_bytes,
            device_bytes: s.device_bytes,
            process_rss_bytes: s.process_rss_bytes,
            requests: s.requests,
            failures: s.failures,
            cancelled: s.cancelled,
            prompt_tokens: s.prompt_tokens,
            reused_tokens: s.reused_tokens,
            generated_tokens: s.generated_tokens,
            stuck_events: s.stuck_events,
            out_of_memory: s.out_of_memory,
            loads: s.loads,
            load_failures: s.load_failures,
            active_requests: count(s.active_requests),
            queued_requests: count(s.queued_requests),
            conversations: count(s.conversations),
            since_last_token: if s.seconds_since_token.is_finite() && s.seconds_since_token > 0.0 {
                Duration::from_secs_f64(s.seconds_since_token)
            } else {
                Duration::ZERO
            },
        })
    }

    /// The engine's health (from [`Self::status`]).
    pub fn health(&self) -> Result<Health> {
        Ok(self.status()?.health)
    }

    /// A one-off chat request: waits for a turn, runs `req` on a fresh session.
    /// Errors: [`Error::NotLoaded`], [`Error::OutOfMemory`] and those of
    /// [`Session::chat`](crate::Session::chat).
    pub fn chat(&self, req: &ChatRequest) -> Result<ChatResponse> {
        self.chat_impl(req, &EngineChatOptions::default(), None, None)
    }

    /// A chat request with engine options: a conversation id (its KV cache kept between
    /// turns, so only new tokens are evaluated) and a priority.
    pub fn chat_with(&self, req: &ChatRequest, options: &EngineChatOptions) -> Result<ChatResponse> {
        self.chat_impl(req, options, None, None)
    }

    /// [`Self::chat`], streaming each piece to `on_piece` on this thread;
    /// `ControlFlow::Break(())` stops the generation (finish `Cancelled`).
    pub fn chat_stream<F>(&self, req: &ChatRequest, mut on_piece: F) -> Result<ChatResponse>
    where
        F: FnMut(Piece<'_>) -> ControlFlow<()>,
    {
        self.chat_impl(req, &EngineChatOptions::default(), Some(&mut on_piece), None)
    }

    /// [`Self::chat_with`], streaming each piece to `on_piece` on this thread.
    pub fn chat_stream_with<F>(
        &self,
        req: &ChatRequest,
        options: &EngineChatOptions,
        mut on_piece: F,
    ) -> Result<ChatResponse>
    where
        F: FnMut(Piece<'_>) -> ControlFlow<()>,
    {
        self.chat_impl(req, options, Some(&mut on_piece), None)
    }

    /// Runs `req` on a background thread and returns a [`ChatStream`] of its pieces,
    /// consumable (and cancellable) from any thread. The stream's canceller stops a one-off
    /// request at its next piece (the C ABI cancels engine requests only by conversation
    /// id), and one with a conversation id at once through `genie_engine_cancel`.
    ///
    /// # Panics
    /// When the operating system cannot start a thread.
    pub fn stream(&self, req: ChatRequest, options: EngineChatOptions) -> Result<ChatStream<()>> {
        let id = match &options.conversation_id {
            Some(id) => Some(c_string("conversation id", id)?),
            None => None,
        };
        let canceller = Canceller::for_engine(self.handle.clone(), id);
        let engine = self.clone();
        Ok(ChatStream::spawn(canceller, move |sink, flag| {
            ((), engine.chat_impl(&req, &options, Some(sink), Some(flag)))
        }))
    }

    fn chat_impl<'f>(
        &self,
        req: &ChatRequest,
        options: &EngineChatOptions,
        on_piece: Option<&'f mut PieceFn<'f>>,
        cancel: Option<&AtomicBool>,
    ) -> Result<ChatResponse> {
        let id = match &options.conversation_id {
            Some(id) => Some(c_string("conversation id", id)?),
            None => None,
        };
        let raw_opts = sys::genie_engine_chat_options {
            conversation_id: id.as_ref().map_or(ptr::null(), |s| s.as_ptr()),
            priority: options.priority,
            ..sys::GENIE_ENGINE_CHAT_OPTIONS_INIT
        };
        let engine = self.as_ptr();
        run_chat(req, on_piece, cancel, &mut |r, cb, user, out| {
            // SAFETY: engine alive (thread-safe); options, request, sink and `out` live
            // during the call.
            unsafe { sys::genie_engine_chat(engine, &raw_opts, r, cb, user, out) }
        })
    }
}

/// A `genie_engine_status_info` cleared when dropped.
struct RawStatus(sys::genie_engine_status_info);

impl Drop for RawStatus {
    fn drop(&mut self) {
        // SAFETY: initialised with GENIE_ENGINE_STATUS_INIT.
        unsafe { sys::genie_engine_status_clear(&mut self.0) }
    }
}
