//! The Rust declarations agree with the C header: every struct's size, alignment, field
//! offsets and field sizes equal the C compiler's (printed by `layout_probe.c`, which CMake builds;
//! its path in `GENIE_LAYOUT_PROBE`), and every `_INIT` constant equals what the linked
//! library's `_init()` function writes.
use std::collections::BTreeMap;
use std::mem::{align_of, size_of, MaybeUninit};
use std::process::Command;
use std::ptr::addr_of;

use genie_sys::*;

/// The size of what `_field` points to (without reading it).
fn pointee_size<T>(_field: *const T) -> usize {
    size_of::<T>()
}

/// "SIZE name", "ALIGN name", "OFFSET name.field" and "FIELDSIZE name.field" of the Rust
/// declarations.
fn rust_layout() -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    macro_rules! layout {
        ($($t:ident: [$($f:ident),* $(,)?]),* $(,)?) => {$(
            out.insert(format!("SIZE {}", stringify!($t)), size_of::<$t>());
            out.insert(format!("ALIGN {}", stringify!($t)), align_of::<$t>());
            $(
                let value = MaybeUninit::<$t>::uninit();
                let base = value.as_ptr();
                // SAFETY: addr_of! on a field of an uninitialised value reads nothing.
                let field = unsafe { addr_of!((*base).$f) };
                out.insert(format!("OFFSET {}.{}", stringify!($t), stringify!($f)), field as usize - base as usize);
                out.insert(format!("FIELDSIZE {}.{}", stringify!($t), stringify!($f)), pointee_size(field));
            )*
        )*};
    }
    layout! {
        genie_model_options: [version, backend, use_mmap, memory_budget_bytes],
        genie_model_info: [version, architecture, name, parameter_count, file_size, weight_bytes, n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, bos, eos, load_time_ms, decode_bytes],
        genie_sampler_options: [version, temperature, top_k, top_p, min_p, seed, typical_p, penalty_last_n, repeat_penalty, frequency_penalty, presence_penalty, logit_bias_tokens, logit_bias_values, n_logit_bias],
        genie_session_options: [version, context_length, threads, batch_size, kv_type],
        genie_generate_options: [version, max_tokens, stop_on_eog, add_special, parse_special, stop, n_stop],
        genie_generate_result: [version, text, text_len, tokens, n_tokens, finish_reason, prompt_tokens, reused_prompt_tokens, completion_tokens, load_ms, prompt_eval_ms, time_to_first_token_ms, decode_ms, prompt_tokens_per_s, decode_tokens_per_s],
        genie_chat_message: [role, content],
        genie_chat_turn: [role, content, content_len],
        genie_chat_request: [version, messages, n_messages, max_tokens, sampler, response_format, json_schema, json_schema_len, think, stop, n_stop, idle_timeout_ms, deadline_ms, tools_json, tools_json_len, message_extras, tool_choice, tool_choice_function, parallel_tool_calls, grammar, grammar_len],
        genie_chat_result: [version, text, text_len, reasoning, reasoning_len, n_tool_calls, tool_name, tool_arguments, finish_reason, prompt_tokens, reused_prefix_tokens, completion_tokens, time_to_first_token_ms, prefill_ms, prefill_tokens_per_s, decode_ms, decode_tokens_per_s, total_ms, tool_calls, n_rejected_tool_calls, rejected_tool_calls],
        genie_chat_turn_extra: [tool_calls_json, tool_call_id, name],
        genie_tool_call: [id, name, arguments, error],
        genie_engine_options: [version, backend, context_length, threads, batch_size, kv_type, max_conversations, max_concurrent, watchdog_timeout_ms, cancel_stuck, check_available_memory],
        genie_engine_status_info: [version, state, health, health_reason, loading, load_progress, model_path, model_name, architecture, backend, context_length, n_ctx_train, weights_bytes, kv_bytes, scratch_bytes, device_bytes, process_rss_bytes, last_error_status, last_error, requests, failures, cancelled, prompt_tokens, reused_tokens, generated_tokens, stuck_events, out_of_memory, loads, load_failures, active_requests, queued_requests, conversations, seconds_since_token],
        genie_engine_chat_options: [version, conversation_id, priority],
    }
    out
}

#[test]
fn struct_layouts_equal_the_c_compilers() {
    let probe = match std::env::var_os("GENIE_LAYOUT_PROBE") {
        Some(p) => p,
        None => {
            if std::env::var_os("GENIE_REQUIRE_LAYOUT_PROBE").is_some() {
                panic!("GENIE_REQUIRE_LAYOUT_PROBE is set but GENIE_LAYOUT_PROBE is not");
            }
            eprintln!("skipped: GENIE_LAYOUT_PROBE (the layout_probe.c program CMake builds) is not set");
            return;
        }
    };
    let output = Command::new(&probe).output().expect("running the layout probe");
    assert!(output.status.success(), "the layout probe failed");
    let mut c = BTreeMap::new();
    for line in String::from_utf8(output.stdout).unwrap().lines() {
        let (key, value) = line.rsplit_once(' ').unwrap();
        c.insert(key.to_string(), value.parse::<usize>().unwrap());
    }
    let rust = rust_layout();
    assert!(c.len() > 100, "the probe printed {} entries", c.len());
    let differences: Vec<String> = c
        .keys()
        .chain(rust.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|k| c.get(*k) != rust.get(*k))
        .map(|k| format!("{k}: C {:?}, Rust {:?}", c.get(k), rust.get(k)))
        .collect();
    assert!(differences.is_empty(), "layouts differ:\n{}", differences.join("\n"));
}

#[test]
fn abi_version_matches_the_linked_library() {
    // SAFETY: no arguments.
    assert_eq!(unsafe { genie_abi_version() }, GENIE_ABI_VERSION);
}

/// Runs `init` on a struct filled with 0xA5 bytes and returns it.
fn filled<T>(init: unsafe extern "C" fn(*mut T, std::os::raw::c_uint) -> genie_status, version: u32) -> T {
    let mut value = MaybeUninit::<T>::uninit();
    // SAFETY: the bytes are overwritten by init; every field is plain data.
    unsafe {
        std::ptr::write_bytes(value.as_mut_ptr(), 0xA5, 1);
        assert_eq!(init(value.as_mut_ptr(), version), GENIE_OK);
        value.assume_init()
    }
}

#[test]
fn init_constants_equal_the_init_functions() {
    assert_eq!(filled(genie_model_options_init, GENIE_MODEL_OPTIONS_VERSION), GENIE_MODEL_OPTIONS_INIT);
    assert_eq!(filled(genie_sampler_options_init, GENIE_SAMPLER_OPTIONS_VERSION), GENIE_SAMPLER_OPTIONS_INIT);
    assert_eq!(filled(genie_session_options_init, GENIE_SESSION_OPTIONS_VERSION), GENIE_SESSION_OPTIONS_INIT);
    assert_eq!(filled(genie_generate_options_init, GENIE_GENERATE_OPTIONS_VERSION), GENIE_GENERATE_OPTIONS_INIT);
    assert_eq!(filled(genie_chat_request_init, GENIE_CHAT_REQUEST_VERSION), GENIE_CHAT_REQUEST_INIT);
    assert_eq!(filled(genie_engine_options_init, GENIE_ENGINE_OPTIONS_VERSION), GENIE_ENGINE_OPTIONS_INIT);
    assert_eq!(
        filled(genie_engine_chat_options_init, GENIE_ENGINE_CHAT_OPTIONS_VERSION),
        GENIE_ENGINE_CHAT_OPTIONS_INIT
    );
}

#[test]
fn init_functions_reject_an_unknown_version() {
    let mut opts = GENIE_MODEL_OPTIONS_INIT;
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { genie_model_options_init(&mut opts, 999) }, GENIE_INVALID_ARGUMENT);
}

#[test]
fn status_names_are_the_librarys() {
    let name = |s| {
        // SAFETY: static storage, never NULL.
        unsafe { std::ffi::CStr::from_ptr(genie_status_name(s)) }.to_str().unwrap().to_string()
    };
    assert_eq!(name(GENIE_FORMAT), "FORMAT");
    assert_eq!(name(GENIE_IO), "IO");
    assert_eq!(name(-100), "UNKNOWN");
}
