// libgenie: constrained output. A JSON value (any object, or one that follows a JSON
// schema) or a text that a GBNF grammar accepts, enforced token by token while a Session
// generates.
#pragma once

#include <genie/export.h>
#include <genie/tokenizer.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace genie {

/// Options of a JsonConstraint.
struct JsonConstraintOptions {
    /// Whitespace policy: each gap between two JSON tokens (after '{', '[', ',' and ':',
    /// before ':', ',', '}' and ']', and before the value) admits at most this many
    /// whitespace bytes (space, \n, \r, \t). Nothing may follow the complete value. This
    /// bounds the whitespace so a model cannot loop on spaces; 0 gives compact JSON.
    /// Range 0..64.
    int32_t max_whitespace = 2;
    /// Untyped values (`any_object`, `{}` or missing `items` / `additionalProperties`
    /// schemas) nest objects/arrays at most this deep; deeper, only scalars are allowed.
    /// Range 1..16.
    int32_t max_nesting = 8;
    /// When > 0: strings without a maxLength (values, and keys of additional properties)
    /// hold at most this many characters, so a model that never closes a string still
    /// finishes. 0 = unlimited.
    uint32_t max_string_length = 0;
    /// Length budget: once the output has at least this many bytes, the constraint steers
    /// to the end of the value: no optional property is started, no array item beyond
    /// minItems, no string character beyond minLength (keys excepted); what the schema
    /// requires is still written. 0 = off.
    uint32_t close_after_bytes = 0;
    /// Masks are cached per matcher state (shared by every generation using the
    /// constraint); at most this many are kept (each is vocab_size bits).
    size_t mask_cache_entries = 512;
};

/// A compiled constraint bound to one vocabulary: the set of byte strings it accepts (a
/// JSON value, or the language of a GBNF grammar), and a byte trie over every token's
/// text used to compute which tokens may come next. Immutable after construction and
/// thread-safe (the mask cache is locked); share it between generations with
/// std::shared_ptr. (`genie::Constraint` names the same class.)
///
/// Schema keywords (draft 2020-12, docs/constraints.md has the details): `type` (a name
/// or a list: object, array, string, number, integer, boolean, null), `enum`, `const`
/// (any JSON value), `properties`, `required`, `additionalProperties` (true, false or a
/// schema), `items`, `prefixItems` (and the older tuple `items` / `additionalItems`),
/// `minItems`, `maxItems`, `minLength`, `maxLength`, `pattern`, `format` (date, time,
/// date-time, uuid enforced; others are annotations), `minimum`, `maximum`,
/// `exclusiveMinimum`, `exclusiveMaximum`, `anyOf`, `oneOf` (read as anyOf), `allOf`,
/// `$ref` to `#...` (`$defs`, `definitions`; recursive references allowed). Annotations
/// (`title`, `description`, `$schema`, `$id`, `$comment`, `default`, `examples` ...) are
/// ignored. Any other keyword (`not`, `if`, `multipleOf`, `uniqueItems` ...) is rejected
/// with genie::Error InvalidArgument naming its path ("#/properties/x/not"), as is a
/// schema no value can satisfy (e.g. a required property that additionalProperties false
/// forbids, minItems > maxItems, an empty enum, bounds with no number between them).
///
/// What the output looks like: property keys are written exactly as in the schema
/// (JSON-escaped as nlohmann::json::dump does); properties may come in any order, each at
/// most once; enum/const values are written in compact form (no whitespace inside);
/// numbers have at most 15 integer digits, 15 fraction digits and 2 exponent digits (so
/// every number fits a double);
/// strings must be valid UTF-8 with valid escapes (surrogates paired).
class GENIE_API JsonConstraint {
public:
    /// Any JSON object.
    static std::shared_ptr<const JsonConstraint> any_object(const Tokenizer& tokenizer,
                                                            const JsonConstraintOptions& options = {});
    /// Any JSON value.
    static std::shared_ptr<const JsonConstraint> any_value(const Tokenizer& tokenizer,
                                                           const JsonConstraintOptions& options = {});
    /// A value following the JSON schema `schema_json`. Throws genie::Error
    /// InvalidArgument naming the problem (bad JSON, unsupported keyword, unsatisfiable
    /// schema, options out of range), e.g. "JSON schema: /properties/age: unsupported
    /// keyword 'minimum'".
    static std::shared_ptr<const JsonConstraint> from_schema(std::string_view schema_json, const Tokenizer& tokenizer,
                                                             const JsonConstraintOptions& options = {});
    /// A text that the GBNF grammar `gbnf` (llama.cpp's format: `name ::= ...` rules,
    /// alternatives `|`, groups, `* + ?`, `{m}` `{m,}` `{m,n}`, string literals, character
    /// classes with ranges and negation, `.`, escapes, `#` comments) derives from the rule
    /// `root_rule`. Throws genie::Error InvalidArgument with the line and column of a syntax
    /// error, or naming an undefined, left-recursive or unproductive rule. Of `options`
    /// only mask_cache_entries applies (whitespace is what the grammar says).
    static std::shared_ptr<const JsonConstraint> from_grammar(std::string_view gbnf, const Tokenizer& tokenizer,
                                                              const JsonConstraintOptions& options = {},
                                                              std::string_view root_rule = "root");

    ~JsonConstraint();
    JsonConstraint(const JsonConstraint&) = delete;
    JsonConstraint& operator=(const JsonConstraint&) = delete;

    /// The vocabulary size of the tokenizer it was bound to.
    size_t vocab_size() const noexcept;
    const Tokenizer& tokenizer() const noexcept;
    const JsonConstraintOptions& options() const noexcept;

    struct Impl;
    /// Internal: the implementation (used by libgenie's own layers, tests, benchmarks).
    const Impl& impl() const noexcept { return *impl_; }

private:
    explicit JsonConstraint(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// The state of one generation under a JsonConstraint: which bytes have been produced
/// and which tokens may come next. Cheap to copy; one instance per generation; not
/// thread-safe (separate instances are independent).
class GENIE_API JsonMatcher {
public:
    explicit JsonMatcher(std::shared_ptr<const JsonConstraint> constraint);
    JsonMatcher(const JsonMatcher&);
    JsonMatcher& operator=(const JsonMatcher&);
    JsonMatcher(JsonMatcher&&) noexcept;
    JsonMatcher& operator=(JsonMatcher&&) noexcept;
    ~JsonMatcher();

    /// Feeds raw bytes. Returns false (and leaves the state unchanged) when they cannot be
    /// part of an accepted value.
    bool accept_text(std::string_view bytes);
    /// Feeds one token's text. An end-of-generation token is accepted (changing nothing)
    /// only when the value is complete. Returns false (state unchanged) when not allowed,
    /// or for an id out of range.
    bool accept_token(TokenId id);
    /// True when the bytes so far form a complete accepted value (EOG tokens are allowed).
    bool is_complete() const noexcept;
    /// True when `id` may come next.
    bool allows(TokenId id);
    /// The tokens that may come next, as vocab_size() flags (1 = allowed). Every allowed
    /// token leads to a state from which the value can still be completed; EOG tokens are
    /// allowed exactly when is_complete(). Uses the constraint's mask cache.
    const std::vector<uint64_t>& mask_bits();
    /// Sets the logit of every token that may not come next to -infinity. Returns the
    /// number of tokens still allowed (0 only when the value is complete and the
    /// vocabulary has no EOG token: generation should stop).
    size_t apply(std::span<float> logits);
    /// The bytes accepted so far.
    const std::string& text() const noexcept;
    /// Back to the empty output.
    void reset();

    const JsonConstraint& constraint() const noexcept;

private:
    struct State;
    std::unique_ptr<State> state_;
};

/// The constraint of any kind (JSON or GBNF); the name JsonConstraint is kept for callers.
using Constraint = JsonConstraint;
/// The state of one generation under a Constraint.
using ConstraintMatcher = JsonMatcher;

/// True when `json_text` is a JSON value that follows `schema_json` (the same compiler and
/// automaton as JsonConstraint::from_schema, with no tokenizer: for validating tool-call
/// arguments and the like). Whitespace between JSON tokens is free. Throws genie::Error
/// InvalidArgument when the schema is not supported.
GENIE_API bool json_matches_schema(std::string_view schema_json, std::string_view json_text);

}  // namespace genie
