// The forward pass of a decoder-only transformer (llama / qwen2 / qwen3 / gemma3), written
// once against the Backend interface.
#pragma once

#include "backend/backend.hpp"
#include "model/model_impl.hpp"

#include <span>

namespace genie::model {

class Forward {
public:
    Forward(const Model::Impl& model, backend::Backend& backend, backend::KvCache& cache);

    /// Runs `tokens` at positions [first_pos, first_pos + n), writing their K/V into the
    /// cache, and copies the logits of the last `n_logits` tokens to `logits`
    /// ([n_logits, n_vocab] floats, in token order; 1 <= n_logits <= n). Speculative
    /// verification asks for every position at once.
    void run(std::span<const int32_t> tokens, int32_t first_pos, float* logits, int64_t n_logits = 1);
    /// Bytes of the activation workspace (engine status).
    size_t workspace_bytes() const noexcept { return workspace_->bytes(); }

private:
    const Model::Impl& model_;
    backend::Backend& backend_;
    backend::KvCache& cache_;
    std::unique_ptr<backend::Workspace> workspace_;
    backend::RopeParams rope_;      // global layers
    backend::RopeParams rope_swa_;  // sliding-window layers (gemma3)
    std::vector<float> rope_freqs_;
};

}  // namespace genie::model
