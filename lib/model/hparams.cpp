#include "model/hparams.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

namespace genie::model {

bool is_supported_architecture(const std::string& arch) {
    return arch == "llama" || arch == "qwen2" || arch == "qwen3";
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
    }
    return r;
}

}  // namespace

HParams read_hparams(const gguf::Reader& reader) {
    HParams hp;
    hp.architecture = reader.architecture();
    if (hp.architecture.empty())
        throw Error(ErrorCode::Format, fmt::format("'{}': general.architecture is missing", reader.path()));
    if (!is_supported_architecture(hp.architecture))
        throw Error(ErrorCode::Unsupported,
                    fmt::format("'{}': architecture '{}' is not supported (supported: llama, qwen2, qwen3)",
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
    return hp;
}

}  // namespace genie::model
