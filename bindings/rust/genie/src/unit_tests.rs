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
