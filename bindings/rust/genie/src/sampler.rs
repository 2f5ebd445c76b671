//! [`Sampler`] and [`SamplerOptions`]: picking the next token from logits.
use std::ptr::{self, NonNull};

use genie_sys as sys;

use crate::error::{check, invalid, Result};
use crate::Token;

/// Sampling settings (`genie_sampler_options`), builder style. llama.cpp's chain order:
/// logit bias → penalties → top-k → typical → top-p → min-p → temperature → seeded draw.
/// The defaults are the C ABI's: greedy (temperature 0), top-k 40, top-p 0.95, min-p 0.05,
/// seed 42.
///
/// ```
/// let s = genie::SamplerOptions::new().temperature(0.7).top_p(0.9).seed(7);
/// assert_eq!(s.to_raw().seed, 7);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SamplerOptions {
    raw: sys::genie_sampler_options,
    logit_bias: Vec<(Token, f32)>,
}

// The raw struct's logit-bias pointers are always NULL here (they are set only in the
// RawSamplerOptions made by `to_raw_with_bias`), so the options hold no borrowed memory.
// SAFETY: no pointer in `raw` is ever non-NULL.
unsafe impl Send for SamplerOptions {}
// SAFETY: as above.
unsafe impl Sync for SamplerOptions {}

impl Default for SamplerOptions {
    fn default() -> Self {
        SamplerOptions { raw: sys::GENIE_SAMPLER_OPTIONS_INIT, logit_bias: Vec::new() }
    }
}

impl SamplerOptions {
    /// The C ABI's defaults (greedy).
    pub fn new() -> Self {
        Self::default()
    }
    /// Greedy: always the most likely token (temperature 0).
    pub fn greedy() -> Self {
        Self::default()
    }
    /// `<= 0`: greedy (default 0).
    pub fn temperature(mut self, t: f32) -> Self {
        self.raw.temperature = t;
        self
    }
    /// `<= 0`: off (default 40).
    pub fn top_k(mut self, k: i32) -> Self {
        self.raw.top_k = k;
        self
    }
    /// `>= 1`: off (default 0.95).
    pub fn top_p(mut self, p: f32) -> Self {
        self.raw.top_p = p;
        self
    }
    /// `<= 0`: off (default 0.05).
    pub fn min_p(mut self, p: f32) -> Self {
        self.raw.min_p = p;
        self
    }
    /// Seed of the random draw; same seed, same draws (default 42).
    pub fn seed(mut self, seed: u32) -> Self {
        self.raw.seed = seed;
        self
    }
    /// `>= 1`: off (default 1).
    pub fn typical_p(mut self, p: f32) -> Self {
        self.raw.typical_p = p;
        self
    }
    /// Accepted tokens the penalties look at; `<= 0`: off (default 64).
    pub fn penalty_last_n(mut self, n: i32) -> Self {
        self.raw.penalty_last_n = n;
        self
    }
    /// 1: off (default 1).
    pub fn repeat_penalty(mut self, p: f32) -> Self {
        self.raw.repeat_penalty = p;
        self
    }
    /// 0: off (default 0).
    pub fn frequency_penalty(mut self, p: f32) -> Self {
        self.raw.frequency_penalty = p;
        self
    }
    /// 0: off (default 0).
    pub fn presence_penalty(mut self, p: f32) -> Self {
        self.raw.presence_penalty = p;
        self
    }
    /// Adds `bias` to the logit of `token` (first in the chain); `f32::NEG_INFINITY` bans it.
    pub fn logit_bias(mut self, token: Token, bias: f32) -> Self {
        self.logit_bias.push((token, bias));
        self
    }
    /// The logit biases set.
    pub fn get_logit_bias(&self) -> &[(Token, f32)] {
        &self.logit_bias
    }
    /// The C struct without the logit bias (its pointers are NULL); see [`Self::get_logit_bias`].
    pub fn to_raw(&self) -> sys::genie_sampler_options {
        self.raw
    }

    /// The complete C struct with its logit-bias arrays, which the returned value owns.
    pub(crate) fn to_raw_with_bias(&self) -> RawSamplerOptions {
        let tokens: Vec<Token> = self.logit_bias.iter().map(|b| b.0).collect();
        let values: Vec<f32> = self.logit_bias.iter().map(|b| b.1).collect();
        let mut raw = self.raw;
        if !tokens.is_empty() {
            // The vectors' heap buffers do not move when the RawSamplerOptions does.
            raw.logit_bias_tokens = tokens.as_ptr();
            raw.logit_bias_values = values.as_ptr();
            raw.n_logit_bias = tokens.len();
        }
        RawSamplerOptions { raw, _tokens: tokens, _values: values }
    }
}

/// A `genie_sampler_options` and the logit-bias arrays it points into.
pub(crate) struct RawSamplerOptions {
    pub(crate) raw: sys::genie_sampler_options,
    _tokens: Vec<Token>,
    _values: Vec<f32>,
}

/// A token sampler (`genie_sampler`): the chain of [`SamplerOptions`] with its RNG and
/// penalty window.
///
/// **Threads:** `Send`, not `Sync`. The C ABI lets one call at a time use a sampler (a
/// second concurrent one fails with BUSY); here every call takes `&mut self`, so that
/// rule holds at compile time. Move it to another thread freely.
#[derive(Debug)]
pub struct Sampler {
    ptr: NonNull<sys::genie_sampler>,
}

// SAFETY: a sampler has no thread affinity; genie.h only forbids concurrent calls, which
// `&mut self` rules out.
unsafe impl Send for Sampler {}

impl Drop for Sampler {
    fn drop(&mut self) {
        // SAFETY: created by genie_sampler_create; `&mut self` proves no call runs.
        unsafe { sys::genie_sampler_free(self.ptr.as_ptr()) }
    }
}

impl Sampler {
    /// Creates a sampler. [`Error::InvalidArgument`](crate::Error::InvalidArgument) for bad
    /// options.
    pub fn new(options: &SamplerOptions) -> Result<Sampler> {
        let mut out = ptr::null_mut();
        // SAFETY: options and their bias arrays (copied by the library) live during the call.
        let raw = options.to_raw_with_bias();
        check(unsafe { sys::genie_sampler_create(&mut out, &raw.raw) })?;
        NonNull::new(out).map(|ptr| Sampler { ptr }).ok_or_else(|| invalid("genie_sampler_create gave no sampler"))
    }

    /// The raw handle, for calls this crate does not wrap. Borrowed: valid while `self` lives.
    pub fn as_ptr(&mut self) -> *mut sys::genie_sampler {
        self.ptr.as_ptr()
    }

    /// Restores the initial state (RNG from the seed, empty penalty window).
    pub fn reset(&mut self) -> Result<()> {
        // SAFETY: the sampler is alive and not in use (`&mut self`).
        check(unsafe { sys::genie_sampler_reset(self.ptr.as_ptr()) })
    }

    /// The token chosen from `logits` (one per vocabulary entry).
    pub fn sample(&mut self, logits: &[f32]) -> Result<Token> {
        let mut out = 0;
        // SAFETY: logits valid for logits.len() floats; out-pointer valid.
        check(unsafe { sys::genie_sampler_sample(&mut out, self.ptr.as_ptr(), logits.as_ptr(), logits.len()) })?;
        Ok(out)
    }

    /// Tells the sampler `token` was accepted (feeds the penalty window).
    pub fn accept(&mut self, token: Token) -> Result<()> {
        // SAFETY: the sampler is alive and not in use.
        check(unsafe { sys::genie_sampler_accept(self.ptr.as_ptr(), token) })
    }
}
