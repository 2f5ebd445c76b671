#include "model/hparams.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <cmath>

namespace genie::model {

bool is_supported_architecture(const std::string& arch) {
    return arch == "llama" || arch == "qwen2" || arch == "qwen3" || arch == "gemma3";
}

namespace {

Recipe recipe_for(const std::string& arch) {
    Recipe r;
    if (arch == "qwen2") {
        r.rope_mode = RopeMode::Neox;
        r.qkv_bias = true;
    } else if (arch == "qwen3") {
        r.rope_mode = RopeMode::Neox;
        r.qk_norm = true;
    } else if (arch == "gemma3") {
        r.rope_mode = RopeMode::Neox;
        r.qk_norm = true;
        r.scale_embeddings = true;
        r.post_norms = true;
        r.ffn = FfnActivation::Geglu;
    }
    return r;
}

/// Gemma 3, as llama.cpp's loader reads it: with attention.sliding_window > 0, every
/// `pattern`-th layer (attention.sliding_window_pattern, default 6) global and the others a
/// sliding window of that many positions, rotating with base rope.freq_base_swa (10000
/// when absent) and scale 1; without it every layer global. q scaled by
/// 1 / sqrt(key_length) (the 62-layer 27B: 1 / sqrt(n_embd / n_head)) before the
/// attention, which scales by 1; final_logit_softcapping applied when present and non-zero.
void read_gemma3(const gguf::Reader& reader, const std::string& a, HParams& hp) {
    hp.q_scale_before_attention = true;
    hp.attention_scale = hp.n_layer == 62 ? 1.0f / std::sqrt(static_cast<float>(hp.n_embd / hp.n_head))
                                          : 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
    hp.final_logit_softcapping = reader.get_or<float>(a + "final_logit_softcapping", 0.0f);
    if (!(hp.final_logit_softcapping >= 0.0f))
        throw Error(ErrorCode::Format, fmt::format("'{}': final_logit_softcapping {} is out of range", reader.path(),
                                                   hp.final_logit_softcapping));
    const int64_t n_swa = reader.get_or<int64_t>(a + "attention.sliding_window", 0);
    if (n_swa <= 0) return;  // every layer global
    if (n_swa > (int64_t{1} << 30))
        throw Error(ErrorCode::Format, fmt::format("'{}': attention.sliding_window = {} is out of range", reader.path(), n_swa));
    hp.rope_freq_base_swa = reader.get_or<float>(a + "rope.freq_base_swa", 10000.0f);
    if (!(hp.rope_freq_base_swa > 0.0f))
        throw Error(ErrorCode::Format,
                    fmt::format("'{}': rope.freq_base_swa {} is out of range", reader.path(), hp.rope_freq_base_swa));
    hp.rope_freq_scale_swa = 1.0f;
    hp.n_swa = static_cast<int32_t>(n_swa);
    hp.is_swa.assign(static_cast<size_t>(hp.n_layer), false);
    const std::string pattern_key = a + "attention.sliding_window_pattern";
    const gguf::Value* per_layer = reader.find(pattern_key);
    if (per_layer && per_layer->is_array()) {  // one flag per layer (true: sliding window)
        const auto& items = per_layer->array()->items;
        if (items.size() != static_cast<size_t>(hp.n_layer))
            throw Error(ErrorCode::Format, fmt::format("'{}': {} has {} entries for {} layers", reader.path(), pattern_key,
                                                       items.size(), hp.n_layer));
        for (size_t il = 0; il < items.size(); ++il) {
            const auto flag = items[il].as<bool>();
            if (!flag) throw Error(ErrorCode::Format, fmt::format("'{}': {} must hold booleans", reader.path(), pattern_key));
            hp.is_swa[il] = *flag;
        }
        return;
    }
    const int64_t pattern = reader.get_or<int64_t>(pattern_key, 6);
    if (pattern < 0 || pattern > 1024)
        throw Error(ErrorCode::Format,
                    fmt::format("'{}': attention.sliding_window_pattern = {} is out of range", reader.path(), pattern));
    hp.swa_pattern = static_cast<int32_t>(pattern);
    // llama_hparams::set_swa_pattern: a pattern of 0 makes every layer a sliding-window one
    for (int32_t il = 0; il < hp.n_layer; ++il)
        hp.is_swa[static_cast<size_t>(il)] = pattern == 0 || il % pattern < pattern - 1;
}

}  // namespace

HParams read_hparams(const gguf::Reader& reader) {
    HParams hp;
    hp.architecture = reader.architecture();
    if (hp.architecture.empty())
        throw Error(ErrorCode::Format, fmt::format("'{}': general.architecture is missing", reader.path()));
    if (!is_supported_architecture(hp.architecture))
        throw Error(ErrorCode::Unsupported,
                    fmt::format("'{}': architecture '{}' is not supported (supported: llama, qwen2, qwen3, gemma3)",
                                reader.path(), hp.architecture));
    hp.recipe = recipe_for(hp.architecture);
    const std::string a = hp.architecture + ".";
    auto positive = [&](const std::string& key, int64_t value) {
        if (value <= 0 || value > (int64_t{1} << 30))
            throw Error(ErrorCode::Format, fmt::format("'{}': {} = {} is out of range", reader.path(), key, value));
        return static_cast<int32_t>(value);
    };
    hp.n_embd = positive(a + "embedding_length", reader.get<int64_t>(a + "embedding_length"));
    hp.n_layer = positive(a + "block_count", reader.get<int64_t>(a + "block_count"));
    hp.n_ff = positive(a + "feed_forward_length", reader.get<int64_t>(a + "feed_forward_length"));
    hp.n_head = positive(a + "attention.head_count", reader.get<int64_t>(a + "attention.head_count"));
    hp.n_head_kv = positive(a + "attention.head_count_kv",
                            reader.get_or<int64_t>(a + "attention.head_count_kv", hp.n_head));
    hp.n_ctx_train = positive(a + "context_length", reader.get_or<int64_t>(a + "context_length", 2048));
    if (hp.n_head % hp.n_head_kv != 0)
        throw Error(ErrorCode::Format, fmt::format("'{}': head_count {} is not a multiple of head_count_kv {}",
                                                   reader.path(), hp.n_head, hp.n_head_kv));
    const int64_t default_head_dim = hp.n_embd / hp.n_head;
    hp.head_dim_k = positive(a + "attention.key_length", reader.get_or<int64_t>(a + "attention.key_length", default_head_dim));
    hp.head_dim_v = positive(a + "attention.value_length", reader.get_or<int64_t>(a + "attention.value_length", default_head_dim));
    if (hp.head_dim_k != hp.head_dim_v)
        throw Error(ErrorCode::Unsupported, fmt::format("'{}': key_length {} != value_length {} is not supported",
                                                        reader.path(), hp.head_dim_k, hp.head_dim_v));
    hp.rms_eps = reader.get<float>(a + "attention.layer_norm_rms_epsilon");
    if (!(hp.rms_eps > 0.0f && hp.rms_eps < 1.0f))
        throw Error(ErrorCode::Format, fmt::format("'{}': layer_norm_rms_epsilon {} is out of range", reader.path(), hp.rms_eps));

    hp.n_rot = positive(a + "rope.dimension_count", reader.get_or<int64_t>(a + "rope.dimension_count", hp.head_dim_k));
    if (hp.n_rot > hp.head_dim_k || hp.n_rot % 2 != 0)
        throw Error(ErrorCode::Format, fmt::format("'{}': rope.dimension_count {} must be even and <= the head size {}",
                                                   reader.path(), hp.n_rot, hp.head_dim_k));
    hp.rope_freq_base = reader.get_or<float>(a + "rope.freq_base", 10000.0f);
    if (!(hp.rope_freq_base > 0.0f))
        throw Error(ErrorCode::Format, fmt::format("'{}': rope.freq_base {} is out of range", reader.path(), hp.rope_freq_base));

    // Rope scaling, as llama.cpp reads it: rope.scaling.type (or the older rope.scale_linear).
    const std::string scaling = reader.get_or<std::string>(a + "rope.scaling.type", "");
    float factor = reader.get_or<float>(a + "rope.scaling.factor", 0.0f);
    if (auto linear = reader.get_optional<float>(a + "rope.scale_linear")) factor = *linear;
    if (scaling.empty() || scaling == "none") {
        hp.rope_scaling = (scaling.empty() && factor != 0.0f && factor != 1.0f) ? RopeScaling::Linear : RopeScaling::None;
    } else if (scaling == "linear") {
        hp.rope_scaling = RopeScaling::Linear;
    } else if (scaling == "yarn") {
        hp.rope_scaling = RopeScaling::Yarn;
    } else {
        throw Error(ErrorCode::Unsupported,
                    fmt::format("'{}': rope scaling type '{}' is not supported (none, linear, yarn)", reader.path(), scaling));
    }
    if (hp.rope_scaling != RopeScaling::None) {
        if (!(factor > 0.0f))
            throw Error(ErrorCode::Format, fmt::format("'{}': rope scaling factor {} is out of range", reader.path(), factor));
        hp.rope_freq_scale = 1.0f / factor;
    }
    hp.rope_n_ctx_orig = static_cast<int32_t>(
        reader.get_or<int64_t>(a + "rope.scaling.original_context_length", hp.n_ctx_train));
    if (hp.rope_scaling == RopeScaling::Yarn) {
        hp.yarn_ext_factor = 1.0f;
        hp.yarn_attn_factor = reader.get_or<float>(a + "rope.scaling.attn_factor", 1.0f);
        hp.yarn_beta_fast = reader.get_or<float>(a + "rope.scaling.yarn_beta_fast", 32.0f);
        hp.yarn_beta_slow = reader.get_or<float>(a + "rope.scaling.yarn_beta_slow", 1.0f);
    }
    hp.attention_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
    if (hp.architecture == "gemma3") read_gemma3(reader, a, hp);
    return hp;
}

}  // namespace genie::model
