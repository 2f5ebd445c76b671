// libgenie: choosing the next token from the logits.
#pragma once

#include <genie/export.h>
#include <genie/tokenizer.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace genie {

/// Options of a Sampler. The stages run in llama.cpp's default chain order
/// (common/sampling.cpp): penalties -> top-k -> typical -> top-p -> min-p -> temperature
/// -> a seeded draw, and give the token llama.cpp's chain gives for the same logits,
/// options and seed (the draw is llama.cpp's dist sampler: std::mt19937 seeded with
/// `seed`, one uniform double in [0,1) per draw, the first token whose running sum of
/// unnormalised probabilities reaches that fraction of the total).
///
/// temperature <= 0 means greedy: after the penalties, the highest logit (on a tie the
/// lowest id, as llama.cpp's greedy sampler); no random number is drawn.
/// Defaults are llama.cpp's common_params_sampling defaults, except temperature (0 here,
/// 0.8 there) and seed: LLAMA_DEFAULT_SEED (0xFFFFFFFF) means "random" in llama.cpp, while
/// here every seed, 0xFFFFFFFF included, is used as given, so runs are reproducible.
struct SamplerOptions {
    float temperature = 0.0f;  ///< <= 0: greedy
    int32_t top_k = 40;        ///< <= 0: off
    float top_p = 0.95f;       ///< >= 1: off
    float min_p = 0.05f;       ///< <= 0: off
    uint32_t seed = 42;        ///< seed of the random draw: the same seed gives the same draws
    float typical_p = 1.0f;    ///< locally typical sampling; >= 1: off
    /// Penalties over the last `penalty_last_n` accepted tokens (see Sampler::accept);
    /// off when penalty_last_n <= 0 or repeat == 1, frequency == 0 and presence == 0.
    /// A token seen c times there: logit /= repeat_penalty (logit *= it when logit <= 0),
    /// then logit -= c * frequency_penalty + presence_penalty.
    int32_t penalty_last_n = 64;
    float repeat_penalty = 1.0f;     ///< 1: off
    float frequency_penalty = 0.0f;  ///< 0: off
    float presence_penalty = 0.0f;   ///< 0: off
    /// Added to the logits of these tokens before every other stage (llama.cpp's
    /// logit_bias, first in its chain); -INFINITY bans a token.
    std::vector<std::pair<TokenId, float>> logit_bias;
};

/// A user-defined stage of the sampler chain (llama.cpp's sampler vtable, reduced to what
/// a caller needs): it sees the logits after logit_bias and before the built-in stages,
/// may change them (e.g. set -INFINITY to forbid a token), and is told which token was
/// accepted. Stages run in the order they were added. A stage is shared between copies
/// of a Sampler; make it stateless or reset it in reset().
class GENIE_API SamplerStage {
public:
    virtual ~SamplerStage() = default;
    /// Changes `logits` (one float per vocabulary entry) in place.
    virtual void apply(std::span<float> logits) = 0;
    /// Called for every token passed to Sampler::accept.
    virtual void accept(TokenId /*token*/) {}
    /// Called by Sampler::reset.
    virtual void reset() {}
};

/// One token's probability in a Sampler's final distribution (Sampler::distribution).
struct TokenProbability {
    TokenId token = kNoToken;
    double p = 0.0;
};

/// Picks tokens from logits. Deterministic for given options and inputs. One Sampler
/// is used by one generation at a time (not thread-safe); copies are independent.
class GENIE_API Sampler {
public:
    explicit Sampler(const SamplerOptions& options = {});
    Sampler(const Sampler&);
    Sampler& operator=(const Sampler&);
    Sampler(Sampler&&) noexcept;
    Sampler& operator=(Sampler&&) noexcept;
    ~Sampler();

    const SamplerOptions& options() const noexcept;
    /// Chooses a token from `logits` (one float per vocabulary entry).
    TokenId sample(std::span<const float> logits);
    /// The distribution sample() draws from for `logits`: after logit_bias, the user stages,
    /// the penalties, top-k, typical, top-p, min-p and temperature, as (token, probability)
    /// pairs with probability > 0 that sum to 1, in the chain's candidate order. Greedy
    /// (temperature <= 0): the token sample() returns, with probability 1. Draws no random
    /// number and changes no state but the scratch candidates. Speculative decoding's
    /// rejection rule compares two of these (docs/speculative.md).
    void distribution(std::span<const float> logits, std::vector<TokenProbability>& out);
    /// The next uniform double in [0, 1) from the sampler's seeded RNG (the draw's source).
    double uniform();
    /// Tells the sampler a token was accepted (the penalties remember the last
    /// penalty_last_n accepted tokens). Prompt tokens may be accepted too, as llama.cpp's
    /// common_sampler does.
    void accept(TokenId token);
    /// Restores the initial state: the RNG restarts from the seed and the penalty window
    /// is emptied; every added stage's reset() is called.
    void reset();
    /// Appends a user stage (see SamplerStage). Throws InvalidArgument for a null stage.
    void add_stage(std::shared_ptr<SamplerStage> stage);

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace genie
