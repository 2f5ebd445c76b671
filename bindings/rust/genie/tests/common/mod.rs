//! Where the integration tests find their models.
//!
//! `GENIE_TEST_MODEL` (default `../shared/testdata/models/stories260K.gguf` beside the
//! repository) and `GENIE_FIXTURE_DIR` (the generated fixtures, default `build/fixtures`;
//! scripts/make-fixtures writes them). A missing model skips the test with its reason,
//! unless `GENIE_REQUIRE_TEST_MODELS` is set (ctest sets it): then it fails.
#![allow(dead_code)]

/// The model path, or return from the test (the skip reason is already printed).
macro_rules! or_skip {
    ($e:expr) => {
        match $e {
            Some(path) => path,
            None => return,
        }
    };
}
use std::path::PathBuf;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

fn require(path: PathBuf, what: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let reason = format!("{what} {} does not exist", path.display());
    if std::env::var_os("GENIE_REQUIRE_TEST_MODELS").is_some() {
        panic!("{reason} (GENIE_REQUIRE_TEST_MODELS is set)");
    }
    eprintln!("skipped: {reason}");
    None
}

/// stories260K (a real llama model with a SentencePiece vocabulary and no chat template).
pub fn stories() -> Option<PathBuf> {
    let path = std::env::var_os("GENIE_TEST_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/models/stories260K.gguf"));
    require(path, "test model")
}

/// A generated fixture model, e.g. `qwen3-tiny-q4_0`.
pub fn fixture(name: &str) -> Option<PathBuf> {
    let dir =
        std::env::var_os("GENIE_FIXTURE_DIR").map(PathBuf::from).unwrap_or_else(|| repo_root().join("build/fixtures"));
    require(dir.join(format!("{name}.gguf")), "fixture model")
}

/// A file in the system's temporary folder, unique to this process.
pub fn temp_file(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("genie-rust-{}-{name}", std::process::id()))
}
