#include "model/weights.hpp"

#include "quant/quant.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

namespace genie::model {
namespace {

class Binder {
public:
    Binder(const gguf::Reader& reader) : reader_(reader) {}

    /// A tensor that must exist with exactly `shape` (ggml order).
    backend::Weight require(const std::string& name, std::vector<int64_t> shape) {
        const gguf::TensorInfo* t = reader_.find_tensor(name);
        if (!t) throw Error(ErrorCode::Format, fmt::format("'{}': tensor '{}' is missing", reader_.path(), name));
        return bind(*t, shape);
    }
    /// A tensor that may be absent (empty Weight then).
    backend::Weight optional(const std::string& name, std::vector<int64_t> shape) {
        const gguf::TensorInfo* t = reader_.find_tensor(name);
        return t ? bind(*t, shape) : backend::Weight{};
    }

private:
    backend::Weight bind(const gguf::TensorInfo& t, const std::vector<int64_t>& shape) {
        // ggml drops trailing 1-sized dims in files; compare with them stripped.
        auto strip = [](std::vector<int64_t> s) {
            while (s.size() > 1 && s.back() == 1) s.pop_back();
            return s;
        };
        if (strip(t.shape) != strip(shape))
            throw Error(ErrorCode::Format, fmt::format("'{}': tensor '{}' has shape [{}], expected [{}]", reader_.path(),
                                                       t.name, fmt::join(t.shape, ", "), fmt::join(shape, ", ")));
        if (!quant::can_dequantize(t.type))
            throw Error(ErrorCode::Unsupported, fmt::format("'{}': tensor '{}' has type {}, which this build cannot compute with",
                                                            reader_.path(), t.name, dtype_name(t.type)));
        backend::Weight w;
        w.name = t.name;
        w.type = t.type;
        w.n_in = shape.empty() ? 1 : shape[0];
        w.n_out = 1;
        for (size_t i = 1; i < shape.size(); ++i) w.n_out *= shape[i];
        w.data = t.data;
        w.row_bytes = quant::row_bytes(t.type, w.n_in);
        return w;
    }

    const gguf::Reader& reader_;
};

}  // namespace

Weights bind_weights(const gguf::Reader& reader, HParams& hp) {
    Binder b(reader);
    Weights w;
    const gguf::TensorInfo* embd = reader.find_tensor("token_embd.weight");
    if (!embd) throw Error(ErrorCode::Format, fmt::format("'{}': tensor 'token_embd.weight' is missing", reader.path()));
    if (embd->shape.size() != 2 || embd->shape[1] <= 0)
        throw Error(ErrorCode::Format, fmt::format("'{}': tensor 'token_embd.weight' must be 2-D, has shape {}",
                                                   reader.path(), embd->shape_string()));
    hp.n_vocab = static_cast<int32_t>(embd->shape[1]);
    const int64_t n_embd = hp.n_embd, n_vocab = hp.n_vocab, n_ff = hp.n_ff, hd = hp.head_dim_k;
    const int64_t q_dim = hp.n_head * hd, kv_dim = hp.n_head_kv * hd;

    w.token_embd = b.require("token_embd.weight", {n_embd, n_vocab});
    w.output_norm = b.require("output_norm.weight", {n_embd});
    w.output = b.optional("output.weight", {n_embd, n_vocab});
    if (!w.output.data) w.output = w.token_embd;  // tied embeddings
    w.rope_freqs = b.optional("rope_freqs.weight", {hp.n_rot / 2});

    w.layers.resize(static_cast<size_t>(hp.n_layer));
    for (int32_t i = 0; i < hp.n_layer; ++i) {
        LayerWeights& l = w.layers[static_cast<size_t>(i)];
        const std::string p = fmt::format("blk.{}.", i);
        l.attn_norm = b.require(p + "attn_norm.weight", {n_embd});
        l.wq = b.require(p + "attn_q.weight", {n_embd, q_dim});
        l.wk = b.require(p + "attn_k.weight", {n_embd, kv_dim});
        l.wv = b.require(p + "attn_v.weight", {n_embd, kv_dim});
        l.wo = b.require(p + "attn_output.weight", {q_dim, n_embd});
        if (hp.recipe.qkv_bias) {
            l.bq = b.require(p + "attn_q.bias", {q_dim});
            l.bk = b.require(p + "attn_k.bias", {kv_dim});
            l.bv = b.require(p + "attn_v.bias", {kv_dim});
        }
        if (hp.recipe.qk_norm) {
            l.q_norm = b.require(p + "attn_q_norm.weight", {hd});
            l.k_norm = b.require(p + "attn_k_norm.weight", {hd});
        }
        if (hp.recipe.post_norms) {  // llama.cpp's gemma names
            l.attn_post_norm = b.require(p + "post_attention_norm.weight", {n_embd});
            l.ffn_post_norm = b.require(p + "post_ffw_norm.weight", {n_embd});
        }
        l.ffn_norm = b.require(p + "ffn_norm.weight", {n_embd});
        l.ffn_gate = b.require(p + "ffn_gate.weight", {n_embd, n_ff});
        l.ffn_up = b.require(p + "ffn_up.weight", {n_embd, n_ff});
        l.ffn_down = b.require(p + "ffn_down.weight", {n_ff, n_embd});
    }
    return w;
}

}  // namespace genie::model
