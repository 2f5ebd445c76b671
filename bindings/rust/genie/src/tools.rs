//! Tool calls: [`ToolChoice`], the calls of an answer ([`ToolCall`], [`RejectedToolCall`])
//! and their translation to and from the C ABI (`genie_tool_call`, the request's
//! `message_extras`, the OpenAI-shape JSON of an assistant message's calls).
use std::ffi::CString;
use std::os::raw::c_char;
use std::ptr;

use genie_sys as sys;

use crate::chat::Message;
use crate::error::Result;
use crate::util::{borrowed_str, c_string};

/// Whether the answer must be a tool call (`genie_tool_choice`); the tools are
/// [`ChatRequest::tools_json`](crate::ChatRequest::tools_json).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum ToolChoice {
    /// The model decides (the default); calls of tools that were not offered, or with
    /// arguments that do not follow the tool's schema, are not calls but
    /// [`ChatResponse::rejected_tool_calls`](crate::ChatResponse::rejected_tool_calls), and their text stays the answer's content.
    #[default]
    Auto,
    /// No tool calls are parsed from the answer.
    None,
    /// The answer is constrained to a call of one of the tools, each with its own
    /// parameters schema (needs tools; overrides the response format).
    Required,
    /// The answer is constrained to a call of the tool of this name (needs tools; it must
    /// be among them).
    Function(String),
}

/// A tool call found in the answer (`genie_tool_call`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The id the model gave, else `"call_<index>"`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Its arguments as JSON text (`"{}"` when none).
    pub arguments: String,
}

impl ToolCall {
    /// A call of `name` with `arguments` (JSON text), e.g. to put an earlier call into a
    /// conversation.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
    }
}

/// A call found in the answer but not accepted: a tool that was not offered, arguments
/// that do not follow its schema, or a second call with `parallel_tool_calls(false)`. Its
/// text stays in the answer's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedToolCall {
    /// The call as the answer had it.
    pub call: ToolCall,
    /// Why it is not a call.
    pub error: String,
}

/// The OpenAI-shape JSON array of `calls`
/// (`[{"id":…,"type":"function","function":{"name":…,"arguments":"…"}}]`, `arguments` as a
/// JSON string holding the arguments' JSON text), as [`Message::tool_calls_json`](crate::Message::tool_calls_json) takes it.
pub fn tool_calls_json(calls: &[ToolCall]) -> String {
    let items: Vec<String> = calls
        .iter()
        .map(|c| {
            format!(
                r#"{{"id":{},"type":"function","function":{{"name":{},"arguments":{}}}}}"#,
                json_string(&c.id),
                json_string(&c.name),
                json_string(&c.arguments)
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// `text` as a JSON string literal (RFC 8259 escapes).
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The `message_extras` array of `messages` and the strings it points to: empty when no
/// message has tool fields (the C field stays NULL); a NUL byte in a field is an error
/// naming the message and the field.
pub(crate) fn message_extras(messages: &[Message]) -> Result<(Vec<sys::genie_chat_turn_extra>, Vec<CString>)> {
    if !messages.iter().any(Message::has_extras) {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut strings = Vec::new();
    let mut extras = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let mut field = |what: &str, value: &Option<String>| -> Result<*const c_char> {
            match value {
                None => Ok(ptr::null()),
                Some(v) => {
                    let c = c_string(&format!("message {i}'s {what}"), v)?;
                    // The CString's heap buffer does not move when the CString does.
                    let p = c.as_ptr();
                    strings.push(c);
                    Ok(p)
                }
            }
        };
        extras.push(sys::genie_chat_turn_extra {
            tool_calls_json: field("tool_calls_json", &m.tool_calls_json)?,
            tool_call_id: field("tool_call_id", &m.tool_call_id)?,
            name: field("name", &m.name)?,
        });
    }
    Ok((extras, strings))
}

/// The `n` calls at `calls` (empty for NULL).
///
/// # Safety
/// `calls` is NULL or points to `n` calls that live while the slice is used.
pub(crate) unsafe fn tool_call_slice<'a>(calls: *const sys::genie_tool_call, n: usize) -> &'a [sys::genie_tool_call] {
    if calls.is_null() || n == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(calls, n) }
    }
}

pub(crate) fn to_tool_call(c: &sys::genie_tool_call) -> ToolCall {
    // SAFETY: NULL or NUL-terminated strings owned by the result, alive while `c` is.
    unsafe { ToolCall { id: borrowed_str(c.id), name: borrowed_str(c.name), arguments: borrowed_str(c.arguments) } }
}
