//! [`ChatStream`]: a chat running on a background thread whose pieces arrive through a
//! channel, and [`Canceller`]: cancellation from any thread.
use std::ffi::CString;
use std::fmt;
use std::ops::ControlFlow;
use std::panic;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use genie_sys as sys;

use crate::chat::{ChatResponse, OwnedPiece, Piece};
use crate::engine::EngineHandle;
use crate::error::Result;
use crate::session::SessionHandle;

#[derive(Clone)]
enum Target {
    Session(Arc<SessionHandle>),
    Engine(Arc<EngineHandle>, Option<CString>),
}

/// Cancels a running generation from any thread.
///
/// From [`Session::canceller`](crate::Session::canceller): calls `genie_session_cancel`
/// (the generation stops within one token; a cancel while nothing runs is ignored).
/// From [`ChatStream::canceller`] or [`Engine::canceller`](crate::Engine::canceller):
/// also sets a flag that the stream's piece callback reads, so the generation stops at
/// its next piece even when the cancel came before it started.
///
/// **Threads:** `Send + Sync` and `Clone`: the C ABI allows `genie_session_cancel` and every
/// `genie_engine_*` call from any thread. It keeps the session's or engine's memory alive,
/// so it may outlive them safely.
#[derive(Clone)]
pub struct Canceller {
    flag: Arc<AtomicBool>,
    target: Target,
}

impl fmt::Debug for Canceller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Canceller").field("cancelled", &self.is_cancelled()).finish()
    }
}

impl Canceller {
    pub(crate) fn for_session(handle: Arc<SessionHandle>) -> Self {
        Canceller { flag: Arc::new(AtomicBool::new(false)), target: Target::Session(handle) }
    }

    pub(crate) fn for_engine(handle: Arc<EngineHandle>, conversation_id: Option<CString>) -> Self {
        Canceller { flag: Arc::new(AtomicBool::new(false)), target: Target::Engine(handle, conversation_id) }
    }

    /// Asks the generation to stop; it then ends with
    /// [`FinishReason::Cancelled`](crate::FinishReason::Cancelled) and the text so far.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Release);
        match &self.target {
            // SAFETY: genie_session_cancel is callable from any thread; the handle keeps
            // the session alive. Its status (OK, or INVALID_ARGUMENT for a bad handle,
            // impossible here) carries nothing to act on.
            Target::Session(h) => unsafe {
                sys::genie_session_cancel(h.ptr.as_ptr());
            },
            // SAFETY: genie_engine_* functions are thread-safe; the handle keeps the engine
            // alive; the id is NUL-terminated. A one-off request (no id) is stopped by the flag.
            Target::Engine(h, Some(id)) => unsafe {
                sys::genie_engine_cancel(h.ptr.as_ptr(), id.as_ptr());
            },
            Target::Engine(_, None) => {}
        }
    }

    /// Whether [`Self::cancel`] was called on this canceller or a clone of it.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    pub(crate) fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }
}

type Joined<T> = (T, Result<ChatResponse>);

/// A chat running on its own thread: iterate over it (or use [`Self::receiver`]) to get
/// the pieces as they are produced, from whichever thread holds the stream; then
/// [`Self::finish`] for the [`ChatResponse`].
///
/// Made by [`Session::into_chat_stream`](crate::Session::into_chat_stream) (`T` =
/// [`Session`](crate::Session), given back by [`Self::join`]) and
/// [`Engine::stream`](crate::Engine::stream) (`T` = `()`). The channel is unbounded, so
/// a slow consumer never stalls the generation.
///
/// Dropping the stream before it finished cancels the generation and waits for its thread.
///
/// **Threads:** `Send` (when `T` is): move it to the thread that consumes the pieces.
/// Cancel from anywhere with a [`Canceller`] from [`Self::canceller`].
pub struct ChatStream<T> {
    rx: Receiver<OwnedPiece>,
    thread: Option<JoinHandle<Joined<T>>>,
    canceller: Canceller,
}

impl<T> fmt::Debug for ChatStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatStream").field("canceller", &self.canceller).finish()
    }
}

impl<T: Send + 'static> ChatStream<T> {
    /// Runs `work` on a new thread. `work` gets the piece sink to pass to the chat call
    /// and the cancel flag its piece callback must read.
    pub(crate) fn spawn<W>(canceller: Canceller, work: W) -> Self
    where
        W: FnOnce(&mut dyn FnMut(Piece<'_>) -> ControlFlow<()>, &AtomicBool) -> Joined<T> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel::<OwnedPiece>();
        let flag = canceller.flag();
        let thread = thread::Builder::new()
            .name("genie-chat-stream".to_string())
            .spawn(move || {
                let mut sink = |piece: Piece<'_>| match tx.send(piece.to_owned_piece()) {
                    Ok(()) => ControlFlow::Continue(()),
                    // The stream was dropped: nobody listens, stop generating.
                    Err(_) => ControlFlow::Break(()),
                };
                work(&mut sink, &flag)
            })
            .expect("genie: spawning the chat stream's thread failed");
        ChatStream { rx, thread: Some(thread), canceller }
    }
}

impl<T> ChatStream<T> {
    /// A handle that cancels this stream's generation from any thread.
    pub fn canceller(&self) -> Canceller {
        self.canceller.clone()
    }

    /// Cancels the generation (as [`Canceller::cancel`]).
    pub fn cancel(&self) {
        self.canceller.cancel()
    }

    /// The channel of pieces, for `recv_timeout` / `try_recv`. It disconnects when the
    /// generation has ended.
    pub fn receiver(&self) -> &Receiver<OwnedPiece> {
        &self.rx
    }

    /// Waits for the generation to end and returns what the background thread owned (the
    /// session) with the response. Pieces not yet received are dropped (the response's
    /// text holds them all). A panic on the generation thread is resumed here.
    pub fn join(mut self) -> (T, Result<ChatResponse>) {
        let thread = self.thread.take().expect("genie: ChatStream joined twice");
        match thread.join() {
            Ok(joined) => joined,
            Err(payload) => panic::resume_unwind(payload),
        }
    }

    /// [`Self::join`] without the owner: the response.
    pub fn finish(self) -> Result<ChatResponse> {
        self.join().1
    }
}

impl<T> Iterator for ChatStream<T> {
    type Item = OwnedPiece;

    /// The next piece, blocking until it arrives; `None` once the generation has ended.
    fn next(&mut self) -> Option<OwnedPiece> {
        self.rx.recv().ok()
    }
}

impl<T> Drop for ChatStream<T> {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.canceller.cancel();
            // A panic on the generation thread is not resumed while dropping.
            let _ = thread.join();
        }
    }
}
