//! Raw FFI declarations of libgenie's C ABI (`include/genie/genie.h`, ABI version 2).
//!
//! Every function, struct, enum and constant of the header, by the header's own names,
//! written by hand (std only, no bindgen). Nothing here is safe to call without reading
//! the header's comments: ownership, borrowed pointers and the thread rules are the C
//! header's. The safe API is the `genie` crate (`bindings/rust/genie`).
//!
//! C enums are declared as `c_int` type aliases with one constant per value, so a value
//! the library adds later can never be an invalid Rust enum. `_INIT` macros are `const`
//! items with the same values; `tests/layout.rs` checks them against the library's
//! `_init()` functions and the struct layouts against the C compiler.
//!
//! Linking: `build.rs` finds libgenie through `GENIE_DIR` (a build or install folder) or
//! pkg-config (`genie.pc`), dynamically unless `GENIE_STATIC=1` or the `static` feature
//! (see `bindings/rust/README.md`).
#![allow(non_camel_case_types)]
#![warn(missing_docs)]
#![allow(clippy::upper_case_acronyms)]

mod functions;
mod types;

pub use functions::*;
pub use types::*;
