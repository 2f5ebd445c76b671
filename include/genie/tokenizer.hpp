// libgenie: the tokenizer. Turns text into token ids and back, exactly as
// llama.cpp does for the same GGUF vocabulary (byte-level BPE with the model's
// pre-tokenizer, or SentencePiece), plus a streaming detokenizer that never emits
// a broken UTF-8 sequence.
#pragma once

#include <genie/export.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace genie {

/// A token id: an index into the vocabulary, 0 <= id < Tokenizer::vocab_size().
using TokenId = int32_t;

/// "No such token" (llama.cpp's LLAMA_TOKEN_NULL), returned by the special-id queries.
inline constexpr TokenId kNoToken = -1;

/// Kind of a vocabulary entry. The values are GGUF's `tokenizer.ggml.token_type`
/// numbers (llama.cpp's llama_token_type), so a value from a file converts directly.
enum class TokenType : int32_t {
    Undefined = 0,    ///< no type (missing or unknown type number)
    Normal = 1,       ///< ordinary text piece
    Unknown = 2,      ///< the <unk> token
    Control = 3,      ///< control token (BOS, EOS, <|im_start|> ...): empty text unless rendered
    UserDefined = 4,  ///< added token matched verbatim in text (e.g. Qwen's <think>)
    Unused = 5,       ///< reserved slot
    Byte = 6,         ///< SentencePiece byte-fallback token <0xXX>
};

/// Which tokenization algorithm a vocabulary uses (`tokenizer.ggml.model`).
enum class VocabKind {
    SentencePiece,  ///< "llama": BPE by piece score with byte fallback, leading "▁"
    BytePairEncoding,  ///< "gpt2": byte-level BPE by merge rank after a regex pre-tokenizer
};

/// Options of Tokenizer::tokenize. Defaults: plain text, nothing added, special-token
/// text tokenized as ordinary text.
struct TokenizeOptions {
    /// Add BOS/EOS where the vocabulary asks for them (`tokenizer.ggml.add_bos_token`,
    /// `add_eos_token`, or the per-model defaults llama.cpp applies): llama.cpp's `add_special`.
    bool add_special = false;
    /// Overrides the vocabulary's add-BOS flag when set (true adds BOS even if the vocab
    /// does not; throws genie::Error NotFound when the vocab has no BOS token).
    std::optional<bool> add_bos;
    /// Overrides the vocabulary's add-EOS flag when set (same rules as add_bos).
    std::optional<bool> add_eos;
    /// Recognise control tokens written as text (e.g. "<|im_start|>") and emit their ids.
    /// User-defined tokens are always recognised, as in llama.cpp and Hugging Face.
    bool parse_special = false;
};

/// Options of Tokenizer::detokenize (llama.cpp's llama_detokenize).
struct DetokenizeOptions {
    /// Drop a leading BOS / trailing EOS when the vocabulary adds them (llama.cpp's remove_special).
    bool remove_special = false;
    /// Render control/unknown tokens as their text (llama.cpp's unparse_special); otherwise
    /// they contribute nothing.
    bool render_special = false;
    /// Replace invalid or incomplete UTF-8 in the result with U+FFFD. Off by default, so the
    /// bytes are exactly llama.cpp's (which may end in a partial character).
    bool replace_invalid_utf8 = false;
};

/// A tokenizer loaded from a GGUF file's `tokenizer.ggml.*` metadata.
///
/// Ownership: the tokenizer owns its vocabulary; copies share one immutable vocabulary
/// (copying is cheap, a reference count). Thread-safety: every member function is const
/// and may be called from any number of threads at once.
/// Errors: loading throws genie::Error (NotFound for a missing file or key, Format for
/// malformed metadata, Unsupported for a tokenizer model or pre-tokenizer this build does
/// not implement). Tokenizing never throws on any byte string, valid UTF-8 or not.
class GENIE_API Tokenizer {
public:
    /// Loads the vocabulary of the GGUF file at `gguf_path` (a model or a vocab-only file).
    static Tokenizer load(const std::filesystem::path& gguf_path);

    Tokenizer(const Tokenizer&) = default;
    Tokenizer(Tokenizer&&) noexcept = default;
    Tokenizer& operator=(const Tokenizer&) = default;
    Tokenizer& operator=(Tokenizer&&) noexcept = default;
    ~Tokenizer();

    /// Token ids of `text` (any bytes). Invalid UTF-8 is handled as llama.cpp does: in a
    /// byte-level BPE vocab each invalid byte becomes U+FFFD; SentencePiece falls back to
    /// byte tokens.
    std::vector<TokenId> tokenize(std::string_view text, const TokenizeOptions& options = {}) const;

    /// The text of `tokens`, as llama.cpp's llama_detokenize gives it (including its
    /// SentencePiece leading-space removal and the BPE clean-up of " ." " ," " 's" ...
    /// where the vocabulary enables it). Throws InvalidArgument for an id out of range.
    std::string detokenize(std::span<const TokenId> tokens, const DetokenizeOptions& options = {}) const;

    /// The raw bytes of one token (llama.cpp's llama_token_to_piece with lstrip 0): may be
    /// part of a UTF-8 character. Control and unknown tokens give "" unless `render_special`.
    /// Throws InvalidArgument for an id out of range.
    std::string token_to_piece(TokenId id, bool render_special = false) const;

    // ---- vocabulary queries -----------------------------------------------------------
    /// Number of tokens (ids are 0 .. vocab_size()-1).
    size_t vocab_size() const noexcept;
    VocabKind kind() const noexcept;
    /// `tokenizer.ggml.model` ("llama", "gpt2").
    const std::string& model_name() const noexcept;
    /// `tokenizer.ggml.pre` as stored ("qwen2", "llama-bpe" ...); "" when absent.
    const std::string& pre_tokenizer() const noexcept;

    TokenId bos() const noexcept;  ///< beginning of sequence, or kNoToken
    TokenId eos() const noexcept;  ///< end of sequence, or kNoToken
    TokenId eot() const noexcept;  ///< end of turn (metadata, else detected by text), or kNoToken
    TokenId eom() const noexcept;  ///< end of message (Llama 3.1 <|eom_id|>), or kNoToken
    TokenId unk() const noexcept;  ///< unknown, or kNoToken
    TokenId pad() const noexcept;  ///< padding, or kNoToken
    TokenId sep() const noexcept;  ///< separator, or kNoToken
    TokenId newline() const noexcept;  ///< the token of "\n", or kNoToken
    /// True when the vocabulary adds BOS / EOS with TokenizeOptions::add_special.
    bool adds_bos() const noexcept;
    bool adds_eos() const noexcept;

    /// True for an end-of-generation token (EOS, EOT, EOM, <|im_end|>, <|endoftext|> ...,
    /// the same set llama.cpp's llama_vocab_is_eog uses). False for ids out of range.
    bool is_eog(TokenId id) const noexcept;
    /// The end-of-generation ids in ascending order.
    const std::vector<TokenId>& eog_tokens() const noexcept;

    /// The token's stored text (byte-level BPE tokens are in their "Ġ"-encoded form).
    /// Valid as long as any copy of this Tokenizer lives. Throws InvalidArgument when out of range.
    std::string_view token_text(TokenId id) const;
    /// The token's kind (after llama.cpp's load-time fix-ups, e.g. EOG tokens become Control).
    TokenType token_type(TokenId id) const;
    /// SentencePiece score (0 for BPE vocabularies). Throws InvalidArgument when out of range.
    float token_score(TokenId id) const;
    /// The id whose stored text is exactly `text`, if any.
    std::optional<TokenId> find_token(std::string_view text) const;

    struct Impl;
    /// Internal: the implementation (used by libgenie's own layers).
    const Impl& impl() const noexcept { return *impl_; }
    /// Internal: wraps an implementation built by libgenie.
    explicit Tokenizer(std::shared_ptr<const Impl> impl) noexcept;

private:
    std::shared_ptr<const Impl> impl_;
};

/// Options of StreamingDetokenizer.
struct StreamingOptions {
    /// Render control/unknown tokens as their text.
    bool render_special = false;
    /// Drop one leading space from the first token's text when the vocabulary adds a
    /// SentencePiece space prefix (as detokenize does); use it when streaming a whole
    /// tokenized text, not a continuation.
    bool strip_leading_space = false;
};

/// Turns a stream of tokens into text as they arrive, emitting only complete UTF-8.
///
/// The text is the concatenation of each token's piece (Tokenizer::token_to_piece), the
/// way llama.cpp's generation loop streams it (no detokenize clean-up). A multi-byte
/// character split across tokens is held back until complete; bytes that can never form
/// a valid character are replaced by U+FFFD as soon as that is certain; flush() turns an
/// incomplete tail into U+FFFD. Every returned string is valid UTF-8.
///
/// Ownership: keeps a copy of the Tokenizer (shares its vocabulary). Thread-safety: one
/// instance must not be used from two threads at once; separate instances are independent.
class GENIE_API StreamingDetokenizer {
public:
    explicit StreamingDetokenizer(Tokenizer tokenizer, StreamingOptions options = {});

    /// Adds one token; returns the text that became complete (possibly ""). Throws
    /// InvalidArgument for an id out of range (the state is then unchanged).
    std::string push(TokenId id);
    /// Returns the held-back remainder (an incomplete sequence becomes U+FFFD) and resets
    /// the stream, so the next push starts a new text.
    std::string flush();
    /// Drops any held-back bytes and starts a new text.
    void reset() noexcept;
    /// Number of bytes held back waiting for the rest of a character (0..3).
    size_t pending_bytes() const noexcept { return pending_.size(); }

private:
    Tokenizer tokenizer_;
    StreamingOptions options_;
    std::string pending_;
    bool first_ = true;
};

/// Replaces every invalid or incomplete UTF-8 sequence in `bytes` with U+FFFD (one per
/// maximal invalid subpart, as Unicode recommends). Valid input is returned unchanged.
GENIE_API std::string sanitize_utf8(std::string_view bytes);

}  // namespace genie
