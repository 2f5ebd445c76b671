// Hyper-parameters of a decoder-only transformer, read from GGUF metadata with
// llama.cpp's key names ("<arch>.block_count", ...), plus the per-architecture recipe.
#pragma once

#include "gguf/gguf_reader.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace genie::model {

/// How RoPE pairs the dimensions of a head (ggml's rope modes).
enum class RopeMode {
    Normal,  ///< pairs (2i, 2i+1): llama
    Neox,    ///< pairs (i, i + n_rot/2): qwen2, qwen3
};

enum class RopeScaling { None, Linear, Yarn };

/// The feed-forward's gated activation.
enum class FfnActivation {
    Swiglu,  ///< silu(gate) * up: llama, qwen2, qwen3
    Geglu,   ///< gelu_tanh(gate) * up: gemma3
};

/// Architecture switches: what the forward pass does differently per family.
struct Recipe {
    RopeMode rope_mode = RopeMode::Normal;
    bool qkv_bias = false;  ///< qwen2: q/k/v projections have a bias
    bool qk_norm = false;   ///< qwen3, gemma3: per-head RMSNorm of q and k before RoPE
    bool scale_embeddings = false;  ///< gemma3: token embeddings times sqrt(n_embd)
    bool post_norms = false;        ///< gemma3: RMSNorm of the attention and FFN outputs before the residual add
    FfnActivation ffn = FfnActivation::Swiglu;
};

struct HParams {
    std::string architecture;
    Recipe recipe;
    int32_t n_vocab = 0;
    int32_t n_ctx_train = 0;
    int32_t n_embd = 0;
    int32_t n_layer = 0;
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim_k = 0;  ///< attention.key_length (default n_embd / n_head)
    int32_t head_dim_v = 0;  ///< attention.value_length (default n_embd / n_head)
    int32_t n_ff = 0;
    float rms_eps = 1e-5f;
    // RoPE
    int32_t n_rot = 0;  ///< rope.dimension_count (default head_dim_k): dims rotated per head
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;  ///< 1 / scaling factor
    RopeScaling rope_scaling = RopeScaling::None;
    int32_t rope_n_ctx_orig = 0;   ///< original training context (YaRN)
    float yarn_ext_factor = 0.0f;  ///< 1 for YaRN, else 0 (llama.cpp's default)
    float yarn_attn_factor = 1.0f;
    float yarn_beta_fast = 32.0f;
    float yarn_beta_slow = 1.0f;
    // Attention
    /// Multiplies q after RoPE; the attention itself then scales its scores by 1 when
    /// q_scale_before_attention, else by this value (llama, qwen: 1 / sqrt(head_dim)).
    float attention_scale = 0.0f;
    bool q_scale_before_attention = false;  ///< gemma3: q scaled in float before attention, as llama.cpp
    // Sliding-window attention (gemma3): layers with is_swa[il] see the last n_swa positions
    // (a query at position p reads keys at p - n_swa + 1 .. p, llama.cpp's standard SWA)
    // and rotate with their own RoPE base and scale.
    int32_t n_swa = 0;            ///< attention.sliding_window; 0: every layer global
    int32_t swa_pattern = 0;      ///< every swa_pattern-th layer (il % pattern == pattern - 1) is global
    std::vector<bool> is_swa;     ///< [n_layer]
    float rope_freq_base_swa = 10000.0f;
    float rope_freq_scale_swa = 1.0f;
    /// gemma3: logits = cap * tanh(logits / cap) when > 0 (final_logit_softcapping).
    float final_logit_softcapping = 0.0f;
    /// Attention window of layer il: n_swa for a sliding-window layer, 0 (unlimited) otherwise.
    int32_t window(int32_t il) const noexcept { return !is_swa.empty() && is_swa[static_cast<size_t>(il)] ? n_swa : 0; }
};

/// The architectures this build runs.
bool is_supported_architecture(const std::string& arch);

/// Reads and validates the hyper-parameters of `reader`. Throws genie::Error:
/// Unsupported for an unknown architecture or rope scaling type, NotFound for a
/// missing required key, Format for values out of range (naming key and value).
HParams read_hparams(const gguf::Reader& reader);

}  // namespace genie::model
