//! Model, Session and Sampler on the test models: loading errors, blocking and streamed
//! chat, cancellation from another thread, deadline and idle timeout, panics in callbacks.
#[macro_use]
mod common;

use std::ops::ControlFlow;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use genie::{
    Backend, ChatRequest, ChatResponse, Error, FinishReason, GenerateOptions, Model, ModelOptions, PieceKind, Sampler,
    SamplerOptions, Session, SessionOptions, TokenizeFlags, ToolChoice,
};

fn load(path: &std::path::Path) -> Model {
    Model::load(path, &ModelOptions::new().backend(Backend::Cpu)).expect("loading the test model")
}

fn session(model: &Model) -> Session {
    Session::new(model, &SessionOptions::new().context_length(512).threads(1)).expect("creating a session")
}

fn story_request(max_tokens: u32) -> ChatRequest {
    ChatRequest::new().system("You tell short stories.").user("Once upon a time").max_tokens(max_tokens)
}

/// The C ABI's message of the last failed call on this thread.
fn c_last_error() -> String {
    // SAFETY: never NULL, NUL-terminated, copied at once.
    unsafe { std::ffi::CStr::from_ptr(genie::sys::genie_last_error()) }.to_string_lossy().into_owned()
}

#[test]
fn a_missing_model_file_is_not_found_with_the_c_message() {
    let path = common::temp_file("missing.gguf");
    let err = Model::load(&path, &ModelOptions::new()).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    assert_eq!(err.message(), c_last_error());
    assert!(err.message().contains("missing.gguf"), "{}", err.message());
    assert_eq!(err.code(), genie::sys::GENIE_NOT_FOUND);
}

#[test]
fn a_corrupt_model_file_is_a_format_error_with_the_c_message() {
    let path = common::temp_file("corrupt.gguf");
    std::fs::write(&path, b"not a gguf file at all").unwrap();
    let err = Model::load(&path, &ModelOptions::new()).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(err, Error::Format(_)), "{err:?}");
    assert_eq!(err.message(), c_last_error());
    assert!(err.to_string().starts_with("FORMAT: "), "{err}");
}

#[test]
fn a_path_with_a_nul_byte_is_an_invalid_argument() {
    let err = Model::load("bad\0path.gguf", &ModelOptions::new()).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    assert!(err.message().contains("NUL"), "{err}");
}

#[test]
fn model_facts_and_tokenizer() {
    let path = or_skip!(common::stories());
    let model = load(&path);
    let info = model.info().unwrap();
    assert_eq!(info.architecture, "llama");
    assert!(info.n_vocab > 0 && info.n_layer > 0);
    let tokens =
        model.tokenize(b"Once upon a time", TokenizeFlags { add_special: true, parse_special: false }).unwrap();
    assert_eq!(Some(tokens[0]), info.bos);
    let text =
        model.detokenize(&tokens, genie::DetokenizeFlags { remove_special: true, render_special: false }).unwrap();
    assert_eq!(text.trim_start(), "Once upon a time");
    if let Some(eos) = info.eos {
        assert!(model.token_is_eog(eos).unwrap());
    }
    let err = model.detokenize(&[info.n_vocab + 5], Default::default()).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
}

#[test]
fn streaming_equals_the_blocking_result() {
    let path = or_skip!(common::stories());
    let model = load(&path);
    let req = story_request(48);
    let blocking = session(&model).chat(&req).unwrap();
    assert!(!blocking.content.is_empty());
    assert!(blocking.usage.completion_tokens > 0);

    let mut streamed = String::new();
    let mut pieces = 0;
    let response = session(&model)
        .chat_stream(&req, |piece| {
            assert_eq!(piece.kind, PieceKind::Content);
            assert!(!piece.text.is_empty());
            streamed.push_str(piece.text);
            pieces += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
    assert!(pieces > 1);
    assert_eq!(streamed, blocking.content);
    assert_eq!(response, ChatResponse { timings: response.timings, ..blocking.clone() });

    // The channel form, consumed on another thread.
    let stream = session(&model).into_chat_stream(req.clone());
    let consumer = thread::spawn(move || {
        let mut stream = stream;
        let text: String = stream.by_ref().map(|p| p.text).collect();
        let (_session, response) = stream.join();
        (text, response.unwrap())
    });
    let (text, response) = consumer.join().unwrap();
    assert_eq!(text, blocking.content);
    assert_eq!(response.content, blocking.content);
}

#[test]
fn break_stops_the_generation() {
    let path = or_skip!(common::stories());
    let model = load(&path);
    let mut seen = 0;
    let response = session(&model)
        .chat_stream(&story_request(100), |_| {
            seen += 1;
            if seen == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(seen, 3);
    assert_eq!(response.finish_reason, FinishReason::Cancelled);
}

#[test]
fn cancellation_from_another_thread() {
    let path = or_skip!(common::stories());
    let model = load(&path);
    let mut session = session(&model);
    let canceller = session.canceller();
    let (first_tx, first_rx) = mpsc::channel();
    let worker = thread::spawn(move || {
        let mut pieces = 0u32;
        let response = session.chat_stream(&story_request(400), |_| {
            pieces += 1;
            if pieces == 1 {
                first_tx.send(()).unwrap();
            }
            // Slow consumer: the generation is surely still running when the cancel comes.
            thread::sleep(Duration::from_millis(5));
            ControlFlow::Continue(())
        });
        (response, pieces)
    });
    first_rx.recv().unwrap();
    canceller.cancel();
    assert!(canceller.is_cancelled());
    let (response, pieces) = worker.join().unwrap();
    let response = response.unwrap();
    assert_eq!(response.finish_reason, FinishReason::Cancelled);
    assert!(pieces < 50, "{pieces} pieces after the cancel");
}

#[test]
fn a_chat_stream_is_cancellable_and_dropping_it_stops_the_thread() {
    let path = or_skip!(common::stories());
    let model = load(&path);
    let mut stream = session(&model).into_chat_stream(story_request(400));
    let canceller = stream.canceller();
    let first = stream.next().expect("a first piece");
    assert!(!first.text.is_empty());
    thread::spawn(move || canceller.cancel()).join().unwrap();
    let (mut session, response) = stream.join();
    assert_eq!(response.unwrap().finish_reason, FinishReason::Cancelled);
    // The session came back and still works.
    assert_eq!(session.chat(&story_request(4)).unwrap().usage.completion_tokens, 4);

    let stream = session.into_chat_stream(story_request(400));
    drop(stream); // cancels and joins; must not hang
}

#[test]
fn a_deadline_ends_with_timeout_and_a_slow_consumer_is_not_idle() {
    let path = or_skip!(common::stories());
    let model = load(&path);
    let mut session = session(&model);
    let slow = |_: genie::Piece<'_>| {
        thread::sleep(Duration::from_millis(20));
        ControlFlow::Continue(())
    };
    let req = story_request(400).deadline(Duration::from_millis(100));
    let response = session.chat_stream(&req, slow).unwrap();
    assert_eq!(response.finish_reason, FinishReason::Timeout);
    assert!(response.usage.completion_tokens < 100, "{}", response.usage.completion_tokens);

    // The idle timeout counts the model's time between pieces, not the consumer's
    // (genie.h), so a slow consumer alone does not trip it.
    let req = story_request(8).idle_timeout(Duration::from_millis(1000));
    let response = session.chat_stream(&req, slow).unwrap();
    assert_ne!(response.finish_reason, FinishReason::Timeout);
}

#[test]
fn max_tokens_and_stop_strings() {
    let path = or_skip!(common::stories());
    let model = load(&path);
    let mut session = session(&model);
    let response = session.chat(&story_request(5)).unwrap();
    assert_eq!(response.finish_reason, FinishReason::Length);
    assert_eq!(response.usage.completion_tokens, 5);

    let full = session.chat(&story_request(64)).unwrap().content;
    let word = full.split_whitespace().nth(3).expect("a few words").to_string();
    let cut = session.chat(&story_request(64).stop(word.clone())).unwrap();
    assert_eq!(cut.finish_reason, FinishReason::Stop);
    assert!(!cut.content.contains(&word), "{:?} still holds {word:?}", cut.content);
    assert!(full.starts_with(&cut.content));
}

#[test]
fn a_bad_request_is_an_invalid_argument() {
    let path = or_skip!(common::stories());
    let model = load(&path);
    let err = session(&model).chat(&ChatRequest::new()).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    assert!(err.message().contains("genie_session_chat"), "{err}");
    let err = session(&model).chat(&story_request(8).stop("a\0b")).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
}

#[test]
#[should_panic(expected = "boom in the callback")]
fn a_panic_in_the_callback_reaches_the_caller() {
    let path = match common::stories() {
        Some(path) => path,
        None => panic!("boom in the callback (skipped: no model)"),
    };
    let model = load(&path);
    let _ = session(&model).chat_stream(&story_request(16), |_| panic!("boom in the callback"));
}

#[test]
fn generate_with_a_sampler() {
    let path = or_skip!(common::stories());
    let model = load(&path);
    let mut session = session(&model);
    let mut sampler = Sampler::new(&SamplerOptions::greedy()).unwrap();
    let opts = GenerateOptions::new().max_tokens(12);
    let blocking = session.generate("Once upon a time", &mut sampler, &opts).unwrap();
    assert_eq!(blocking.tokens.len(), 12);
    assert_eq!(blocking.finish_reason, FinishReason::Length);
    let mut text = String::new();
    let streamed = session
        .generate_stream("Once upon a time", &mut sampler, &opts, |piece, _| {
            text.push_str(piece);
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(streamed.text, blocking.text);
    assert_eq!(text, blocking.text);
    assert!(streamed.reused_prompt_tokens > 0, "the cached prompt is reused");

    let logits = session.evaluate(&blocking.tokens[..3]).unwrap().to_vec();
    assert_eq!(logits.len(), model.info().unwrap().n_vocab as usize);
    let token = sampler.sample(&logits).unwrap();
    sampler.accept(token).unwrap();
    assert_eq!(session.cached_tokens().unwrap(), &blocking.tokens[..3]);
    assert_eq!(session.context_length().unwrap(), 512);
    session.reset().unwrap();
    assert!(session.cached_tokens().unwrap().is_empty());
}

#[test]
fn kv_state_round_trip() {
    let path = or_skip!(common::stories());
    let model = load(&path);
    let mut a = session(&model);
    a.chat(&story_request(8)).unwrap();
    let file = common::temp_file("state.kv");
    let bytes = a.save_state(&file).unwrap();
    assert!(bytes > 0);
    let mut b = session(&model);
    b.load_state(&file).unwrap();
    assert_eq!(b.cached_tokens().unwrap(), a.cached_tokens().unwrap());
    std::fs::remove_file(&file).unwrap();
    let err = b.load_state(&file).unwrap_err();
    assert!(matches!(err, Error::NotFound(_) | Error::Io(_)), "{err:?}");
}

const TOOLS: &str = r#"[{"type":"function","function":{"name":"set_light","parameters":{"type":"object",
    "properties":{"room":{"type":"string","maxLength":8},"level":{"type":"integer","minimum":0,"maximum":100}},
    "required":["room","level"],"additionalProperties":false}}},
    {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{},
    "additionalProperties":false}}}]"#;

#[test]
fn a_gbnf_grammar_constrains_the_answer() {
    let path = or_skip!(common::stories());
    let model = load(&path);
    let mut session = session(&model);
    let seeded = |seed| SamplerOptions::new().temperature(1.0).seed(seed);
    for seed in [1, 2, 3] {
        let req = ChatRequest::new()
            .user("Is it raining?")
            .max_tokens(16)
            .sampling(seeded(seed))
            .grammar(r#"root ::= "yes" | "no""#);
        let response = session.chat(&req).unwrap();
        assert_eq!(response.finish_reason, FinishReason::Stop);
        assert!(response.content == "yes" || response.content == "no", "{:?}", response.content);
    }
    let err = session.chat(&ChatRequest::new().user("x").grammar("root ::= undefined")).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    assert!(err.message().contains("'undefined'"), "{err}");
}

#[test]
fn a_forced_tool_call_goes_back_into_the_conversation() {
    let path = or_skip!(common::stories());
    let model = load(&path);
    let mut session = session(&model);
    let req =
        ChatRequest::new().user("What time is it?").max_tokens(96).tools_json(TOOLS).tool_choice_function("get_time");
    let response = session.chat(&req).unwrap();
    assert_eq!(response.finish_reason, FinishReason::Stop, "{response:?}");
    assert_eq!(response.tool_calls.len(), 1, "{response:?}");
    assert_eq!(response.tool_call_count, 1);
    let call = &response.tool_calls[0];
    assert_eq!(call.name, "get_time");
    assert!(!call.id.is_empty());
    assert_eq!(call.arguments.replace(char::is_whitespace, ""), "{}");
    assert!(response.rejected_tool_calls.is_empty());

    // The call and its result as messages: the template gets them and the answer is free text.
    let follow_up = req
        .clone()
        .tool_choice(ToolChoice::None)
        .assistant_tool_calls("", &response.tool_calls)
        .tool_result(call.id.clone(), call.name.clone(), "12:00")
        .max_tokens(8);
    let answer = session.chat(&follow_up).unwrap();
    assert!(answer.tool_calls.is_empty() && answer.rejected_tool_calls.is_empty(), "{answer:?}");
    assert!(answer.usage.prompt_tokens > response.usage.prompt_tokens);
    // The tool fields reach the library: malformed calls JSON is its error.
    let bad = ChatRequest::new()
        .user("u")
        .messages([genie::Message::new(genie::Role::Assistant, "").with_tool_calls_json("[not json")]);
    let err = session.chat(&bad).unwrap_err();
    assert!(matches!(err, Error::Format(_)) && err.message().contains("tool_calls_json"), "{err:?}");

    // Required: one or more calls of offered tools (or the token limit).
    let required = session.chat(&req.clone().require_tool_call().parallel_tool_calls(true)).unwrap();
    if required.finish_reason == FinishReason::Stop {
        assert!(!required.tool_calls.is_empty(), "{required:?}");
        for c in &required.tool_calls {
            assert!(c.name == "set_light" || c.name == "get_time", "{c:?}");
            assert!(c.arguments.trim_start().starts_with('{'), "{c:?}");
        }
    } else {
        assert_eq!(required.finish_reason, FinishReason::Length);
    }

    let err = session.chat(&req.clone().tool_choice_function("joke")).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)) && err.message().contains("not among the tools"), "{err}");
    let mut no_tools = req.require_tool_call();
    no_tools.tools_json = None;
    let err = session.chat(&no_tools).unwrap_err();
    assert!(err.message().contains("tools_json is empty"), "{err}");
}
