// libgenie: one conversation with a model — the KV cache and the generate loop.
#pragma once

#include <genie/export.h>
#include <genie/model.hpp>
#include <genie/sampler.hpp>
#include <genie/tokenizer.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace genie {

/// Element type of the KV cache.
enum class KvType {
    F16,  ///< half precision (llama.cpp's default)
    F32,  ///< full precision
};

/// Options of a Session.
struct SessionOptions {
    int32_t context_length = 0;  ///< tokens the KV cache holds; 0 = min(model's training context, 4096)
    int32_t threads = 0;         ///< CPU threads; 0 = all hardware threads
    int32_t batch_size = 512;    ///< prompt tokens evaluated per forward pass
    KvType kv_type = KvType::F16;
};

/// Options of one Session::generate call.
struct GenerateOptions {
    int32_t max_tokens = 256;  ///< stop after this many new tokens (finish reason Length)
    bool stop_on_eog = true;   ///< stop at an end-of-generation token (not included in the text)
    /// For a text prompt: add BOS/EOS as the vocabulary asks (llama.cpp's add_special).
    bool add_special = true;
    /// For a text prompt: recognise control tokens written as text ("<|im_start|>").
    bool parse_special = true;
};

/// One generated token and the text it completed. `text` is always complete UTF-8 (a
/// character split across tokens arrives with the token that completes it), never
/// special-token text.
struct Piece {
    TokenId token = kNoToken;
    std::string text;
};

enum class FinishReason {
    Stop,       ///< an end-of-generation token, or the callback returned false
    Length,     ///< max_tokens reached, or the context is full
    Cancelled,  ///< Session::cancel() was called
};

/// Milliseconds and rates of one generate call.
struct Timings {
    double load_ms = 0;            ///< the model's load time
    double prompt_eval_ms = 0;     ///< evaluating the (non-reused) prompt tokens
    double time_to_first_token_ms = 0;  ///< from the call to the first generated token
    double decode_ms = 0;          ///< generating the tokens after the first
    double prompt_tokens_per_s = 0;
    double decode_tokens_per_s = 0;
};

struct GenerateResult {
    std::string text;                ///< the generated text (complete UTF-8)
    std::vector<TokenId> tokens;     ///< the generated tokens (an EOG token that stopped it excluded)
    FinishReason finish_reason = FinishReason::Stop;
    int32_t prompt_tokens = 0;       ///< tokens in the prompt
    int32_t reused_prompt_tokens = 0;  ///< prompt tokens found in the KV cache (not evaluated)
    int32_t completion_tokens = 0;   ///< == tokens.size()
    Timings timings;
};

/// Called with each new piece; return false to stop (finish reason Stop).
using PieceCallback = std::function<bool(const Piece&)>;

/// One conversation: owns a KV cache and generates text. The cache persists between
/// generate calls: a prompt that starts with what the cache holds (previous prompt +
/// generated tokens) evaluates only the new suffix. Not thread-safe except cancel().
class GENIE_API Session {
public:
    /// Throws genie::Error: InvalidArgument (bad options), OutOfMemory (KV allocation).
    explicit Session(const Model& model, const SessionOptions& options = {});
    Session(Session&&) noexcept;
    Session& operator=(Session&&) noexcept;
    ~Session();

    /// Tokenizes `prompt` and generates. The callback runs on the calling thread.
    /// Throws ContextOverflow if the prompt does not fit the context (the cache is then
    /// left as it was), InvalidArgument for bad options.
    GenerateResult generate(std::string_view prompt, Sampler& sampler, const GenerateOptions& options = {},
                            const PieceCallback& on_piece = {});
    /// Same with prompt tokens (add_special / parse_special are ignored).
    GenerateResult generate(std::span<const TokenId> prompt, Sampler& sampler, const GenerateOptions& options = {},
                            const PieceCallback& on_piece = {});

    /// Evaluates `tokens` after what the cache holds (prefix reuse applies to the cache
    /// contents: pass the whole sequence) and returns the logits of the last token.
    std::span<const float> evaluate(std::span<const TokenId> tokens);

    /// Asks a running generate to stop; it returns within one token with finish reason
    /// Cancelled. Callable from any thread; a no-op when nothing runs.
    void cancel() noexcept;

    /// Logits of the last evaluated token (n_vocab floats); empty before any evaluation.
    std::span<const float> last_logits() const noexcept;
    /// The tokens the KV cache holds, in order.
    std::span<const TokenId> cached_tokens() const noexcept;
    /// Empties the KV cache.
    void reset() noexcept;

    int32_t context_length() const noexcept;
    const Model& model() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace genie
