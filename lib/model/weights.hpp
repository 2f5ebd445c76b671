// Model weights bound to GGUF tensors, with every shape checked against the
// hyper-parameters. Weights point into the Reader's mapping (zero-copy).
#pragma once

#include "backend/backend.hpp"
#include "gguf/gguf_reader.hpp"
#include "model/hparams.hpp"

#include <vector>

namespace genie::model {

struct LayerWeights {
    backend::Weight attn_norm;   // [n_embd]
    backend::Weight wq;          // [n_embd] -> [n_head * head_dim]
    backend::Weight wk;          // [n_embd] -> [n_head_kv * head_dim]
    backend::Weight wv;          // [n_embd] -> [n_head_kv * head_dim]
    backend::Weight wo;          // [n_head * head_dim] -> [n_embd]
    backend::Weight bq, bk, bv;  // qwen2 biases (empty otherwise)
    backend::Weight q_norm, k_norm;  // qwen3, gemma3: [head_dim] (empty otherwise)
    backend::Weight attn_post_norm;  // gemma3: [n_embd] (empty otherwise)
    backend::Weight ffn_post_norm;   // gemma3: [n_embd] (empty otherwise)
    backend::Weight ffn_norm;    // [n_embd]
    backend::Weight ffn_gate;    // [n_embd] -> [n_ff]
    backend::Weight ffn_up;      // [n_embd] -> [n_ff]
    backend::Weight ffn_down;    // [n_ff] -> [n_embd]
};

struct Weights {
    backend::Weight token_embd;   // [n_embd] x n_vocab rows
    backend::Weight output_norm;  // [n_embd]
    backend::Weight output;       // [n_embd] -> [n_vocab] (token_embd when tied)
    backend::Weight rope_freqs;   // optional [n_rot / 2] frequency factors (Llama 3.1)
    std::vector<LayerWeights> layers;
};

/// Binds every tensor the architecture needs. Throws genie::Error: Format naming the
/// tensor for a missing tensor or a wrong shape, Unsupported for a tensor type this
/// build cannot compute with. Sets hp.n_vocab from token_embd.
Weights bind_weights(const gguf::Reader& reader, HParams& hp);

}  // namespace genie::model
