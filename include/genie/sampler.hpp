// libgenie: choosing the next token from the logits.
#pragma once

#include <genie/export.h>
#include <genie/tokenizer.hpp>

#include <cstdint>
#include <memory>
#include <span>

namespace genie {

/// Options of a Sampler. temperature <= 0 means greedy (the highest logit; on a tie the
/// lowest id, as llama.cpp's greedy sampler). Otherwise the chain is llama.cpp's default
/// order: top-k, top-p, min-p, temperature, then a seeded random draw.
struct SamplerOptions {
    float temperature = 0.0f;  ///< <= 0: greedy
    int32_t top_k = 40;        ///< <= 0: off
    float top_p = 0.95f;       ///< >= 1: off
    float min_p = 0.05f;       ///< <= 0: off
    uint32_t seed = 42;        ///< seed of the random draw: the same seed gives the same draws
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
    /// Tells the sampler a token was accepted (for stateful stages).
    void accept(TokenId token);
    /// Restores the initial state (the RNG restarts from the seed).
    void reset();

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace genie
