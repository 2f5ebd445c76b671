#include "model/forward.hpp"

#include "quant/quant.hpp"

#include <algorithm>
#include <cmath>

namespace genie::model {

Forward::Forward(const Model::Impl& model, backend::Backend& backend, backend::KvCache& cache)
    : model_(model), backend_(backend), cache_(cache), workspace_(backend.create_workspace()) {
    const HParams& hp = model.hparams;
    rope_.mode = hp.recipe.rope_mode == RopeMode::Neox ? backend::RopeMode::Neox : backend::RopeMode::Normal;
    rope_.n_rot = hp.n_rot;
    rope_.freq_base = hp.rope_freq_base;
    rope_.freq_scale = hp.rope_freq_scale;
    rope_.ext_factor = hp.yarn_ext_factor;
    rope_.beta_fast = hp.yarn_beta_fast;
    rope_.beta_slow = hp.yarn_beta_slow;
    rope_.n_ctx_orig = hp.rope_n_ctx_orig;
    // llama.cpp's attention factor for YaRN: get_mscale(factor) / (1 + 0.1 ln factor) times the
    // model's rope.scaling.attn_factor; ggml multiplies (1 + 0.1 ln factor) back in.
    rope_.attn_factor = 1.0f;
    if (hp.yarn_ext_factor != 0.0f) {
        const float factor = 1.0f / hp.rope_freq_scale;
        const float mscale = factor <= 1.0f ? 1.0f : 0.1f * std::log(factor) + 1.0f;
        rope_.attn_factor = mscale * (1.0f / (1.0f + 0.1f * std::log(factor)));
    }
    rope_.attn_factor *= hp.yarn_attn_factor;
    if (!model.weights.rope_freqs.empty()) {
        rope_freqs_.resize(static_cast<size_t>(model.weights.rope_freqs.n_in));
        quant::dequantize_row(model.weights.rope_freqs.type, model.weights.rope_freqs.data, rope_freqs_.data(),
                              model.weights.rope_freqs.n_in);
        rope_.freq_factors = rope_freqs_.data();
    }
    // Sliding-window layers (gemma3) rotate with their own base and scale.
    rope_swa_ = rope_;
    rope_swa_.freq_base = hp.rope_freq_base_swa;
    rope_swa_.freq_scale = hp.rope_freq_scale_swa;
}

void Forward::run(std::span<const int32_t> tokens, int32_t first_pos, float* logits, int64_t n_logits) {
    const HParams& hp = model_.hparams;
    const Weights& w = model_.weights;
    backend::Backend& be = backend_;
    backend::Workspace& ws = *workspace_;
    ws.reset();
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t hd = hp.head_dim_k, q_dim = hp.n_head * hd, kv_dim = hp.n_head_kv * hd;
    // llama, qwen: the attention scales its scores by 1 / sqrt(hd); gemma3 scales q in float
    // first (hp.attention_scale) and the scores by 1, as llama.cpp's graph.
    const float kq_scale = hp.q_scale_before_attention ? 1.0f : hp.attention_scale;

    backend::Tensor x = ws.allocate(n, hp.n_embd);  // the residual stream [n, n_embd]
    be.embed(w.token_embd, tokens, x);
    if (hp.recipe.scale_embeddings) be.scale(x, std::sqrt(static_cast<float>(hp.n_embd)));

    backend::Tensor cur = ws.allocate(n, hp.n_embd);
    // The attention's q, k, v, attn and the feed-forward's gate, up are never live at the
    // same time (attn is read by the output projection before gate and up are written, and
    // down reads gate before the next layer writes q): one region holds either set, as
    // ggml's graph allocator reuses them (0.6B pp512: 12 MiB less peak RSS).
    const int64_t attn_cols = 2 * q_dim + 2 * kv_dim, ffn_cols = 2 * hp.n_ff;
    const backend::Tensor region = ws.allocate(n, std::max(attn_cols, ffn_cols));
    float* at = region.data;
    auto carve = [&](int64_t cols) {
        const backend::Tensor t{at, n, cols};
        at += n * cols;
        return t;
    };
    backend::Tensor q = carve(q_dim), k = carve(kv_dim), v = carve(kv_dim), attn = carve(q_dim);
    at = region.data;
    backend::Tensor gate = carve(hp.n_ff), up = carve(hp.n_ff);
    for (int32_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights& l = w.layers[static_cast<size_t>(il)];
        // ---- attention
        be.rms_norm(x, l.attn_norm, hp.rms_eps, cur);
        {
            // q [n, n_head * hd], k and v [n, n_head_kv * hd]
            const backend::Backend::MatmulOut qkv[] = {{&l.wq, &q}, {&l.wk, &k}, {&l.wv, &v}};
            be.matmul_shared_input(cur, qkv);
        }
        if (hp.recipe.qkv_bias) {
            be.add_bias(q, l.bq);
            be.add_bias(k, l.bk);
            be.add_bias(v, l.bv);
        }
        if (hp.recipe.qk_norm) {  // per head: rows of hd
            backend::Tensor qh = q.reshaped(hd), kh = k.reshaped(hd);
            be.rms_norm(qh, l.q_norm, hp.rms_eps, qh);
            be.rms_norm(kh, l.k_norm, hp.rms_eps, kh);
        }
        const int32_t window = hp.window(il);  // 0: a global layer
        const backend::RopeParams& rope = window > 0 ? rope_swa_ : rope_;
        be.rope(q, hp.n_head, static_cast<int32_t>(hd), first_pos, rope);
        be.rope(k, hp.n_head_kv, static_cast<int32_t>(hd), first_pos, rope);
        if (hp.q_scale_before_attention) be.scale(q, hp.attention_scale);
        be.kv_store(cache_, il, k, v, first_pos);
        be.attention(q, cache_, il, first_pos, hp.n_head, kq_scale, window, attn);  // [n, n_head * hd]
        be.matmul(l.wo, attn, cur);                                                  // [n, n_embd]
        if (hp.recipe.post_norms) be.rms_norm(cur, l.attn_post_norm, hp.rms_eps, cur);
        be.add(x, cur);
        // ---- feed-forward (SwiGLU, or GeGLU for gemma3)
        be.rms_norm(x, l.ffn_norm, hp.rms_eps, cur);
        {
            const backend::Backend::MatmulOut gate_up[] = {{&l.ffn_gate, &gate}, {&l.ffn_up, &up}};  // [n, n_ff] each
            be.matmul_shared_input(cur, gate_up);
        }
        if (hp.recipe.ffn == FfnActivation::Geglu) be.geglu(gate, up, gate);
        else be.swiglu(gate, up, gate);
        be.matmul(l.ffn_down, gate, cur);  // [n, n_embd]
        if (hp.recipe.post_norms) be.rms_norm(cur, l.ffn_post_norm, hp.rms_eps, cur);
        be.add(x, cur);
    }
    // Only the last n_logits tokens' logits are needed.   [n_logits, n_embd] -> [n_logits, n_vocab]
    const int64_t m = std::clamp<int64_t>(n_logits, 1, n);
    backend::Tensor last{x.row(n - m), m, hp.n_embd};
    backend::Tensor normed = ws.allocate(m, hp.n_embd);
    be.rms_norm(last, w.output_norm, hp.rms_eps, normed);
    // In host memory the logits go straight to the caller (a 600 KB copy per token less at
    // a 152K vocabulary: 0.7 % of a 0.6B decode's samples).
    backend::Tensor out = be.host_tensors() ? backend::Tensor{logits, m, hp.n_vocab} : ws.allocate(m, hp.n_vocab);
    be.matmul(w.output, normed, out);
    if (out.data != logits)
        for (int64_t r = 0; r < m; ++r) be.read_row(out, r, logits + r * hp.n_vocab);
    if (const float cap = hp.final_logit_softcapping; cap > 0.0f) {
        // As ggml's graph: scale by 1 / cap, tanh, scale by cap (in host memory: n_vocab floats per row).
        const float inv = 1.0f / cap;
        for (int64_t i = 0; i < m * hp.n_vocab; ++i) logits[i] = std::tanh(logits[i] * inv) * cap;
    }
}

}  // namespace genie::model
