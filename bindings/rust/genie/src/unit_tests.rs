//! Unit tests: error mapping, option builders against the C ABI's defaults, conversions.
use std::time::Duration;

use genie_sys as sys;

use crate::chat::RawRequest;
use crate::util::{millis_u32, to_i32};
use crate::*;

const ALL_STATUSES: [i32; 12] = [
    sys::GENIE_INVALID_ARGUMENT,
    sys::GENIE_NOT_FOUND,
    sys::GENIE_FORMAT,
    sys::GENIE_UNSUPPORTED,
    sys::GENIE_OUT_OF_MEMORY,
    sys::GENIE_CONTEXT_OVERFLOW,
    sys::GENIE_CANCELLED,
    sys::GENIE_BUSY,
    sys::GENIE_NOT_LOADED,
    sys::GENIE_DEVICE,
    sys::GENIE_INTERNAL,
    sys::GENIE_IO,
];

#[test]
fn every_status_maps_to_its_variant_and_back() {
    assert_eq!(Error::from_status(sys::GENIE_OK, "x"), None);
    for code in ALL_STATUSES {
        let e = Error::from_status(code, "the message").unwrap();
        assert_eq!(e.code(), code);
        assert_eq!(e.message(), "the message");
        // SAFETY: static storage, never NULL.
        let c_name = unsafe { std::ffi::CStr::from_ptr(sys::genie_status_name(code)) }.to_str().unwrap();
        assert_eq!(e.status_name(), c_name);
        assert_eq!(e.to_string(), format!("{c_name}: the message"));
        assert!(!matches!(e, Error::Unknown { .. }));
    }
    assert!(matches!(Error::from_status(sys::GENIE_IO, ""), Some(Error::Io(_))));
    assert!(matches!(Error::from_status(sys::GENIE_FORMAT, ""), Some(Error::Format(_))));
    let unknown = Error::from_status(-99, "new").unwrap();
    assert_eq!(unknown, Error::Unknown { code: -99, message: "new".into() });
    assert_eq!(unknown.code(), -99);
    assert_eq!(unknown.status_name(), "UNKNOWN");
}

#[test]
fn a_failed_c_call_becomes_its_error_with_the_threads_message() {
    // SAFETY: NULL options pointer with a NULL out-pointer: the library reports INVALID_ARGUMENT.
    let status = unsafe { sys::genie_model_options_init(std::ptr::null_mut(), sys::GENIE_MODEL_OPTIONS_VERSION) };
    let err = error::check(status).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    assert!(err.message().contains("genie_model_options_init"), "{err}");
    assert!(error::check(sys::GENIE_OK).is_ok());
}

#[test]
fn option_defaults_are_the_c_abis() {
    assert_eq!(ModelOptions::new().to_raw(), sys::GENIE_MODEL_OPTIONS_INIT);
    assert_eq!(SessionOptions::new().to_raw().unwrap(), sys::GENIE_SESSION_OPTIONS_INIT);
    assert_eq!(EngineOptions::new().to_raw().unwrap(), sys::GENIE_ENGINE_OPTIONS_INIT);
    assert_eq!(SamplerOptions::new().to_raw(), sys::GENIE_SAMPLER_OPTIONS_INIT);
    let raw = RawRequest::new(&ChatRequest::new()).unwrap();
    let c = raw.as_raw();
    let init = sys::GENIE_CHAT_REQUEST_INIT;
    assert_eq!(c.max_tokens, init.max_tokens);
    assert_eq!(c.response_format, init.response_format);
    assert_eq!(c.think, init.think);
    assert_eq!((c.n_messages, c.n_stop, c.idle_timeout_ms, c.deadline_ms), (0, 0, 0, 0));
    assert!(c.json_schema.is_null() && c.tools_json.is_null() && c.stop.is_null());
    // SAFETY: points into `raw`, alive here.
    assert_eq!(unsafe { *c.sampler }, sys::GENIE_SAMPLER_OPTIONS_INIT);
}

#[test]
fn builders_set_the_c_fields() {
    let m = ModelOptions::new().backend(Backend::Cuda).use_mmap(false).memory_budget_bytes(7).to_raw();
    assert_eq!((m.backend, m.use_mmap, m.memory_budget_bytes), (sys::GENIE_BACKEND_CUDA, 0, 7));
    let s = SessionOptions::new().context_length(1024).threads(3).batch_size(64).kv_type(KvType::Q8_0);
    let s = s.to_raw().unwrap();
    assert_eq!((s.context_length, s.threads, s.batch_size, s.kv_type), (1024, 3, 64, sys::GENIE_KV_Q8_0));
    let e = EngineOptions::new().max_concurrent(2).watchdog_timeout(None).cancel_stuck(true).to_raw().unwrap();
    assert_eq!((e.max_concurrent, e.watchdog_timeout_ms, e.cancel_stuck), (2, 0, 1));
    let p = SamplerOptions::new().temperature(0.7).top_k(5).seed(9).logit_bias(3, f32::NEG_INFINITY);
    assert_eq!(p.get_logit_bias(), &[(3, f32::NEG_INFINITY)]);

    let req = ChatRequest::new()
        .system("s")
        .user("u\0with a NUL is fine in content")
        .max_tokens(9)
        .sampling(p)
        .json_schema("{\"type\":\"object\"}")
        .think(false)
        .stop("END")
        .deadline(Duration::from_millis(1500))
        .idle_timeout(Duration::from_micros(1))
        .tools_json("[]");
    let raw = RawRequest::new(&req).unwrap();
    let c = raw.as_raw();
    assert_eq!(c.n_messages, 2);
    // SAFETY: the arrays point into `raw`, alive here.
    unsafe {
        let turn = *c.messages.add(1);
        assert_eq!(std::ffi::CStr::from_ptr(turn.role).to_str().unwrap(), "user");
        let content = std::slice::from_raw_parts(turn.content.cast::<u8>(), turn.content_len);
        assert_eq!(content, "u\0with a NUL is fine in content".as_bytes());
        assert_eq!(std::ffi::CStr::from_ptr(*c.stop).to_str().unwrap(), "END");
        let sampler = *c.sampler;
        assert_eq!((sampler.top_k, sampler.seed, sampler.n_logit_bias), (5, 9, 1));
        assert_eq!(*sampler.logit_bias_tokens, 3);
    }
    assert_eq!(c.max_tokens, 9);
    assert_eq!(c.response_format, sys::GENIE_RESPONSE_FORMAT_JSON_SCHEMA);
    assert_eq!(c.json_schema_len, "{\"type\":\"object\"}".len());
    assert_eq!(c.think, sys::GENIE_THINK_OFF);
    assert_eq!((c.n_stop, c.deadline_ms, c.idle_timeout_ms, c.tools_json_len), (1, 1500, 1, 2));
    assert_eq!(RawRequest::new(&ChatRequest::new().json_object()).unwrap().as_raw().response_format, 1);
    assert_eq!(RawRequest::new(&ChatRequest::new().think_mode(Think::On)).unwrap().as_raw().think, 1);
}

#[test]
fn values_the_c_abi_cannot_hold_are_invalid_arguments() {
    let err = RawRequest::new(&ChatRequest::new().stop("a\0b")).err().unwrap();
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("stop string 0")), "{err:?}");
    let err = RawRequest::new(&ChatRequest::new().max_tokens(u32::MAX)).err().unwrap();
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("max_tokens")), "{err:?}");
    let err = RawRequest::new(&ChatRequest::new().deadline(Duration::from_secs(60 * 24 * 3600))).err().unwrap();
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("deadline")), "{err:?}");
    assert!(SessionOptions::new().context_length(u32::MAX).to_raw().is_err());
}

#[test]
fn durations_round_up_to_whole_milliseconds() {
    assert_eq!(millis_u32("t", None).unwrap(), 0);
    assert_eq!(millis_u32("t", Some(Duration::ZERO)).unwrap(), 0);
    assert_eq!(millis_u32("t", Some(Duration::from_nanos(1))).unwrap(), 1);
    assert_eq!(millis_u32("t", Some(Duration::from_millis(250))).unwrap(), 250);
    assert_eq!(millis_u32("t", Some(Duration::from_micros(250_500))).unwrap(), 251);
    assert_eq!(to_i32("n", 5).unwrap(), 5);
    assert!(to_i32("n", i32::MAX as usize + 1).is_err());
}

#[test]
fn library_version_and_abi() {
    assert_eq!(abi_version(), ABI_VERSION);
    check_abi().unwrap();
    assert!(!version().is_empty());
}

#[test]
fn tool_choice_grammar_and_parallel_calls_set_the_c_fields() {
    let c_req = |req: &ChatRequest| {
        let raw = RawRequest::new(req).unwrap();
        let c = raw.as_raw();
        let function = if c.tool_choice_function.is_null() {
            None
        } else {
            // SAFETY: points into `raw`, alive here.
            Some(unsafe { std::ffi::CStr::from_ptr(c.tool_choice_function) }.to_str().unwrap().to_string())
        };
        (c.tool_choice, function, c.parallel_tool_calls)
    };
    let init = sys::GENIE_CHAT_REQUEST_INIT;
    assert_eq!(c_req(&ChatRequest::new()), (init.tool_choice, None, init.parallel_tool_calls));
    assert_eq!(c_req(&ChatRequest::new().tool_choice(ToolChoice::None)), (sys::GENIE_TOOL_CHOICE_NONE, None, -1));
    assert_eq!(c_req(&ChatRequest::new().require_tool_call()), (sys::GENIE_TOOL_CHOICE_REQUIRED, None, -1));
    assert_eq!(
        c_req(&ChatRequest::new().tool_choice_function("get_time").parallel_tool_calls(true)),
        (sys::GENIE_TOOL_CHOICE_FUNCTION, Some("get_time".to_string()), 1)
    );
    assert_eq!(c_req(&ChatRequest::new().parallel_tool_calls(false)).2, 0);
    assert_eq!(ChatRequest::new().require_tool_call().tool_choice, ToolChoice::Required);

    let gbnf = "root ::= \"yes\" | \"no\"";
    let req = ChatRequest::new().grammar(gbnf);
    assert_eq!(req.response_format, ResponseFormat::Grammar(gbnf.to_string()));
    let raw = RawRequest::new(&req).unwrap();
    let c = raw.as_raw();
    assert_eq!(c.response_format, sys::GENIE_RESPONSE_FORMAT_GRAMMAR);
    assert!(c.json_schema.is_null());
    // SAFETY: points into `raw`, alive here.
    assert_eq!(unsafe { std::slice::from_raw_parts(c.grammar.cast::<u8>(), c.grammar_len) }, gbnf.as_bytes());
    let c = RawRequest::new(&ChatRequest::new().json_schema("{}")).unwrap().as_raw();
    assert!(c.grammar.is_null() && c.grammar_len == 0);

    let err = RawRequest::new(&ChatRequest::new().tool_choice_function("a\0b")).err().unwrap();
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("tool choice")), "{err:?}");
}

#[test]
fn tool_messages_map_to_message_extras() {
    // No message with tool fields: message_extras stays NULL.
    let raw = RawRequest::new(&ChatRequest::new().user("u").tool("plain")).unwrap();
    assert!(raw.as_raw().message_extras.is_null());

    let call = ToolCall::new("call_7", "get_time", r#"{"zone":"UTC"}"#);
    let req = ChatRequest::new()
        .user("What time is it?")
        .assistant_tool_calls("", std::slice::from_ref(&call))
        .tool_result("call_7", "get_time", "12:00")
        .message(Role::User, "thanks");
    assert_eq!(req.messages[2], Message::new(Role::Tool, "12:00").with_tool_call_id("call_7").with_name("get_time"));
    let raw = RawRequest::new(&req).unwrap();
    let c = raw.as_raw();
    assert_eq!(c.n_messages, 4);
    let text = |p: *const std::os::raw::c_char| {
        // SAFETY: NULL or a string owned by `raw`, alive here.
        (!p.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap().to_string())
    };
    // SAFETY: message_extras holds n_messages entries owned by `raw`.
    let extras = unsafe { std::slice::from_raw_parts(c.message_extras, c.n_messages) };
    assert_eq!(
        (text(extras[0].tool_calls_json), text(extras[0].tool_call_id), text(extras[0].name)),
        (None, None, None)
    );
    assert_eq!(
        text(extras[1].tool_calls_json).unwrap(),
        r#"[{"id":"call_7","type":"function","function":{"name":"get_time","arguments":"{\"zone\":\"UTC\"}"}}]"#
    );
    assert_eq!((text(extras[1].tool_call_id), text(extras[1].name)), (None, None));
    assert_eq!(text(extras[2].tool_calls_json), None);
    assert_eq!(
        (text(extras[2].tool_call_id).unwrap(), text(extras[2].name).unwrap()),
        ("call_7".into(), "get_time".into())
    );
    assert_eq!(text(extras[3].name), None);

    let err = RawRequest::new(&ChatRequest::new().user("u").tool_result("id\0", "t", "r")).err().unwrap();
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("message 1's tool_call_id")), "{err:?}");
}

#[test]
fn tool_calls_json_escapes_strings() {
    assert_eq!(tool_calls_json(&[]), "[]");
    let calls = [ToolCall::new("a\"b", "t\\n", "{\"s\":\"x\ny\"}\u{1}"), ToolCall::new("c2", "u", "{}")];
    assert_eq!(
        tool_calls_json(&calls),
        concat!(
            r#"[{"id":"a\"b","type":"function","function":{"name":"t\\n","arguments":"{\"s\":\"x\ny\"}\u0001"}},"#,
            r#"{"id":"c2","type":"function","function":{"name":"u","arguments":"{}"}}]"#
        )
    );
}

#[test]
fn every_tool_call_and_rejected_call_of_a_result_is_read() {
    let s = |t: &str| std::ffi::CString::new(t).unwrap();
    let strings = [s("call_0"), s("get_time"), s("{}"), s("c1"), s("set_light"), s("{\"room\":\"hall\"}")];
    let rejected_strings = [s("call_2"), s("joke"), s("{}"), s("tool 'joke' was not offered")];
    let p = |i: usize, set: &[std::ffi::CString]| set[i].as_ptr().cast_mut();
    let mut calls = [
        sys::genie_tool_call {
            id: p(0, &strings),
            name: p(1, &strings),
            arguments: p(2, &strings),
            error: std::ptr::null_mut(),
        },
        sys::genie_tool_call {
            id: p(3, &strings),
            name: p(4, &strings),
            arguments: p(5, &strings),
            error: std::ptr::null_mut(),
        },
    ];
    let mut rejected = [sys::genie_tool_call {
        id: p(0, &rejected_strings),
        name: p(1, &rejected_strings),
        arguments: p(2, &rejected_strings),
        error: p(3, &rejected_strings),
    }];
    let mut raw = sys::GENIE_CHAT_RESULT_INIT;
    raw.n_tool_calls = 2;
    raw.tool_calls = calls.as_mut_ptr();
    raw.n_rejected_tool_calls = 1;
    raw.rejected_tool_calls = rejected.as_mut_ptr();
    let result = chat::RawResult(raw);
    let response = result.to_response();
    // Not the library's memory: forget the result instead of clearing it.
    std::mem::forget(result);
    let response = response.unwrap();
    assert_eq!(
        response.tool_calls,
        vec![ToolCall::new("call_0", "get_time", "{}"), ToolCall::new("c1", "set_light", "{\"room\":\"hall\"}")]
    );
    assert_eq!(response.tool_call_count, 2);
    assert_eq!(
        response.rejected_tool_calls,
        vec![RejectedToolCall {
            call: ToolCall::new("call_2", "joke", "{}"),
            error: "tool 'joke' was not offered".to_string()
        }]
    );
    let none = chat::RawResult::new().to_response().unwrap();
    assert!(none.tool_calls.is_empty() && none.rejected_tool_calls.is_empty());
}
