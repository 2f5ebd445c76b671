//! The process-wide log sink receives a failed call's message (its own test binary: the
//! logger is global).
use std::sync::{Arc, Mutex};

use genie::{LogLevel, Model, ModelOptions};

#[test]
fn a_failed_call_is_logged_as_an_error() {
    let seen: Arc<Mutex<Vec<(LogLevel, String)>>> = Arc::default();
    let sink = seen.clone();
    genie::set_logger(move |level, message| sink.lock().unwrap().push((level, message.to_string()))).unwrap();
    let err = Model::load("/nonexistent/logged-model.gguf", &ModelOptions::new()).unwrap_err();
    genie::clear_logger().unwrap();
    let count = {
        let seen = seen.lock().unwrap();
        assert!(
            seen.iter().any(|(level, m)| *level == LogLevel::Error && m == err.message()),
            "logged: {seen:?}, error: {err}"
        );
        seen.len()
    };
    // After clear_logger nothing more arrives.
    let _ = Model::load("/nonexistent/unlogged.gguf", &ModelOptions::new());
    assert_eq!(seen.lock().unwrap().len(), count);
}
