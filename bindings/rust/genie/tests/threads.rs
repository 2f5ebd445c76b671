//! The thread-safety bounds of the public types, checked at compile time: this file only
//! compiles when each type is `Send` / `Sync` as the C header's thread rules allow. The
//! negative cases (`Session`, `Sampler` and `ChatStream` are not `Sync`) are
//! `compile_fail` doctests in src/lib.rs.
use genie::{
    Canceller, ChatRequest, ChatResponse, ChatStream, Engine, EngineStatus, Error, Health, Model, ModelOptions,
    OwnedPiece, Sampler, SamplerOptions, Session,
};

fn send<T: Send>() {}
fn sync<T: Sync>() {}
fn clone<T: Clone>() {}

#[test]
fn model_and_engine_are_send_and_sync() {
    send::<Model>();
    sync::<Model>();
    send::<Engine>();
    sync::<Engine>();
    clone::<Engine>();
}

#[test]
fn session_and_sampler_are_send() {
    send::<Session>();
    send::<Sampler>();
}

#[test]
fn cancellers_go_anywhere() {
    send::<Canceller>();
    sync::<Canceller>();
    clone::<Canceller>();
}

#[test]
fn streams_move_to_the_consuming_thread() {
    send::<ChatStream<()>>();
    send::<ChatStream<Session>>();
    send::<OwnedPiece>();
}

#[test]
fn values_cross_threads() {
    send::<Error>();
    sync::<Error>();
    send::<ChatRequest>();
    sync::<ChatRequest>();
    send::<ChatResponse>();
    send::<SamplerOptions>();
    send::<ModelOptions>();
    send::<EngineStatus>();
    send::<Health>();
    // An Error is usable as a boxed std error across threads.
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(Error::Busy("x".into()));
    assert_eq!(boxed.to_string(), "BUSY: x");
}
