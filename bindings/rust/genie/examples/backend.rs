//! The assistant core's LLM backend abstraction, implemented over libgenie in-process.
//!
//! The core talks to its LLM through a trait with a blocking `chat`, a streaming
//! `chat_stream` and a `health` check, and picks the implementation with one
//! configuration key, so moving from the HTTP backend to libgenie (or back) is a
//! configuration change. This example is that trait and its libgenie implementation.
//!
//! ```text
//! cargo run --example backend -- MODEL.gguf ["user message"]
//! ```
//! `LLM_BACKEND` selects the backend (`genie`, the default here; `http` is the core's
//! existing client, not part of this crate). Prints the health, streams the answer to
//! stdout and a summary line to stderr.
use std::io::Write;
use std::ops::ControlFlow;
use std::time::Duration;

use genie::{ChatRequest, Engine, EngineChatOptions, EngineOptions, FinishReason, HealthLevel, Message, Role};

// ---- the core's abstraction (what its HTTP client implements today) ------------------

/// One chat turn as the core builds it.
#[derive(Debug, Clone)]
pub struct LlmRequest {
    /// Conversation so far: (role, text), oldest first.
    pub messages: Vec<(String, String)>,
    /// The conversation's id, so a backend may keep its state warm between turns.
    pub conversation: Option<String>,
    /// Longest answer in tokens.
    pub max_tokens: u32,
    /// Total time allowed.
    pub timeout: Duration,
}

/// The backend's answer.
#[derive(Debug, Clone)]
pub struct LlmReply {
    /// The answer text.
    pub text: String,
    /// Whether it was cut short (length, timeout, cancel).
    pub truncated: bool,
    /// Tokens generated.
    pub completion_tokens: u32,
    /// Time to the first token.
    pub first_token: Duration,
}

/// What a health endpoint reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LlmHealth {
    /// Serving normally.
    Ok,
    /// Serving, with the reason something needs attention.
    Degraded(String),
    /// Not serving, and why.
    Down(String),
}

/// The core's LLM backend: implemented by its HTTP client and by [`GenieBackend`].
pub trait LlmBackend: Send + Sync {
    /// The whole answer at once.
    fn chat(&self, req: &LlmRequest) -> Result<LlmReply, Box<dyn std::error::Error + Send + Sync>>;
    /// The answer piece by piece; `on_delta` returning `Break` stops the generation.
    fn chat_stream(
        &self,
        req: &LlmRequest,
        on_delta: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<LlmReply, Box<dyn std::error::Error + Send + Sync>>;
    /// The backend's health, as a value.
    fn health(&self) -> LlmHealth;
}

// ---- the libgenie implementation -------------------------------------------------------

/// [`LlmBackend`] over a libgenie [`Engine`] in this process: no HTTP hop.
pub struct GenieBackend {
    engine: Engine,
}

impl GenieBackend {
    /// Loads `model` into a new engine and warms it up.
    pub fn start(model: &str, options: &EngineOptions) -> genie::Result<GenieBackend> {
        genie::check_abi()?;
        let engine = Engine::new(options)?;
        engine.load(model)?;
        engine.wait(None)?;
        engine.warmup()?;
        Ok(GenieBackend { engine })
    }

    fn translate(req: &LlmRequest) -> (ChatRequest, EngineChatOptions) {
        let messages = req.messages.iter().map(|(role, text)| {
            let role = match role.as_str() {
                "system" => Role::System,
                "assistant" => Role::Assistant,
                "tool" => Role::Tool,
                _ => Role::User,
            };
            Message::new(role, text.clone())
        });
        let chat = ChatRequest::new().messages(messages).max_tokens(req.max_tokens).deadline(req.timeout);
        let mut options = EngineChatOptions::new();
        if let Some(id) = &req.conversation {
            options = options.conversation(id.clone());
        }
        (chat, options)
    }

    fn reply(response: genie::ChatResponse) -> LlmReply {
        LlmReply {
            text: response.content,
            truncated: response.finish_reason != FinishReason::Stop,
            completion_tokens: response.usage.completion_tokens,
            first_token: response.timings.time_to_first_token,
        }
    }
}

impl LlmBackend for GenieBackend {
    fn chat(&self, req: &LlmRequest) -> Result<LlmReply, Box<dyn std::error::Error + Send + Sync>> {
        let (chat, options) = Self::translate(req);
        Ok(Self::reply(self.engine.chat_with(&chat, &options)?))
    }

    fn chat_stream(
        &self,
        req: &LlmRequest,
        on_delta: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<LlmReply, Box<dyn std::error::Error + Send + Sync>> {
        let (chat, options) = Self::translate(req);
        let response = self.engine.chat_stream_with(&chat, &options, |piece| match piece.kind {
            genie::PieceKind::Content => on_delta(piece.text),
            genie::PieceKind::Reasoning => ControlFlow::Continue(()),
        })?;
        Ok(Self::reply(response))
    }

    fn health(&self) -> LlmHealth {
        match self.engine.health() {
            Err(e) => LlmHealth::Down(e.to_string()),
            Ok(h) => match h.level {
                HealthLevel::Ok => LlmHealth::Ok,
                HealthLevel::Degraded => LlmHealth::Degraded(h.reason),
                HealthLevel::Failed | HealthLevel::Unknown(_) => LlmHealth::Down(h.reason),
            },
        }
    }
}

/// The one configuration key: which backend the core uses.
fn backend_from_config(kind: &str, model: &str) -> Result<Box<dyn LlmBackend>, String> {
    match kind {
        "genie" => GenieBackend::start(model, &EngineOptions::new())
            .map(|b| Box::new(b) as Box<dyn LlmBackend>)
            .map_err(|e| format!("starting libgenie: {e}")),
        "http" => Err("the HTTP backend is the core's own client, not part of this example".to_string()),
        other => Err(format!("unknown LLM_BACKEND '{other}' (genie or http)")),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 || args.len() > 3 {
        eprintln!("usage: {} MODEL.gguf [\"user message\"]", args[0]);
        std::process::exit(2);
    }
    let kind = std::env::var("LLM_BACKEND").unwrap_or_else(|_| "genie".to_string());
    let backend = backend_from_config(&kind, &args[1]).unwrap_or_else(|e| {
        eprintln!("backend: {e}");
        std::process::exit(1);
    });
    println!("health: {:?}", backend.health());

    let user = args.get(2).cloned().unwrap_or_else(|| "Tell me a short story.".to_string());
    let req = LlmRequest {
        messages: vec![("system".into(), "You are a helpful voice assistant.".into()), ("user".into(), user)],
        conversation: Some("example".into()),
        max_tokens: 64,
        timeout: Duration::from_secs(30),
    };
    let mut stdout = std::io::stdout();
    let reply = backend
        .chat_stream(&req, &mut |delta| {
            let _ = stdout.write_all(delta.as_bytes());
            let _ = stdout.flush();
            ControlFlow::Continue(())
        })
        .unwrap_or_else(|e| {
            eprintln!("\nchat_stream: {e}");
            std::process::exit(1);
        });
    println!();
    let again = backend.chat(&req).expect("chat");
    assert_eq!(again.text, reply.text, "blocking and streamed answers differ");
    eprintln!(
        "streamed {} tokens (first after {:.1} ms, truncated: {}); blocking chat gave the same text; health: {:?}",
        reply.completion_tokens,
        reply.first_token.as_secs_f64() * 1000.0,
        reply.truncated,
        backend.health()
    );
}
