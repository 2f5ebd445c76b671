#include "convert.hpp"

#include "guard.hpp"

#include <cstdlib>
#include <string>

namespace genie::capi {

genie::BackendKind backend_from_c(int backend) {
    switch (backend) {
        case GENIE_BACKEND_AUTO: return genie::BackendKind::Auto;
        case GENIE_BACKEND_CPU: return genie::BackendKind::Cpu;
        case GENIE_BACKEND_CUDA: return genie::BackendKind::Cuda;
    }
    invalid_arg("unknown backend " + std::to_string(backend));
}

genie::KvType kv_type_from_c(int kv_type) {
    switch (kv_type) {
        case GENIE_KV_F16: return genie::KvType::F16;
        case GENIE_KV_F32: return genie::KvType::F32;
        case GENIE_KV_Q8_0: return genie::KvType::Q8_0;
    }
    invalid_arg("unknown kv_type " + std::to_string(kv_type));
}

genie::SamplerOptions sampler_options_from_c(const genie_sampler_options& o) {
    genie::SamplerOptions s;
    s.temperature = o.temperature;
    s.top_k = o.top_k;
    s.top_p = o.top_p;
    s.min_p = o.min_p;
    s.seed = o.seed;
    s.typical_p = o.typical_p;
    s.penalty_last_n = o.penalty_last_n;
    s.repeat_penalty = o.repeat_penalty;
    s.frequency_penalty = o.frequency_penalty;
    s.presence_penalty = o.presence_penalty;
    if (o.n_logit_bias != 0 && (!o.logit_bias_tokens || !o.logit_bias_values))
        invalid_arg("logit_bias_tokens / logit_bias_values are NULL but n_logit_bias is not 0");
    for (size_t i = 0; i < o.n_logit_bias; ++i) s.logit_bias.emplace_back(o.logit_bias_tokens[i], o.logit_bias_values[i]);
    return s;
}

genie::GenerateOptions generate_options_from_c(const genie_generate_options* opts) {
    genie_generate_options o = GENIE_GENERATE_OPTIONS_INIT;
    if (opts) {
        check_version(opts->version, GENIE_GENERATE_OPTIONS_VERSION, "genie_generate_options");
        o = *opts;
    }
    genie::GenerateOptions g;
    g.max_tokens = o.max_tokens;
    g.stop_on_eog = o.stop_on_eog != 0;
    g.add_special = o.add_special != 0;
    g.parse_special = o.parse_special != 0;
    if (o.n_stop != 0 && !o.stop) invalid_arg("stop is NULL but n_stop is not 0");
    for (size_t i = 0; i < o.n_stop; ++i) {
        if (!o.stop[i]) invalid_arg("stop[" + std::to_string(i) + "] is NULL");
        g.stop.emplace_back(o.stop[i]);
    }
    return g;
}

genie_finish_reason finish_reason_to_c(genie::FinishReason reason) noexcept {
    switch (reason) {
        case genie::FinishReason::Stop: return GENIE_FINISH_STOP;
        case genie::FinishReason::Length: return GENIE_FINISH_LENGTH;
        case genie::FinishReason::Cancelled: return GENIE_FINISH_CANCELLED;
        case genie::FinishReason::Timeout: return GENIE_FINISH_TIMEOUT;
    }
    return GENIE_FINISH_ERROR;
}

genie_engine_state engine_state_to_c(genie::EngineState s) noexcept {
    switch (s) {
        case genie::EngineState::Unloaded: return GENIE_ENGINE_UNLOADED;
        case genie::EngineState::Loading: return GENIE_ENGINE_LOADING;
        case genie::EngineState::Ready: return GENIE_ENGINE_READY;
        case genie::EngineState::Busy: return GENIE_ENGINE_BUSY;
        case genie::EngineState::Failed: return GENIE_ENGINE_FAILED;
    }
    return GENIE_ENGINE_FAILED;
}

genie_engine_health engine_health_to_c(genie::EngineHealth h) noexcept {
    switch (h) {
        case genie::EngineHealth::Ok: return GENIE_HEALTH_OK;
        case genie::EngineHealth::Degraded: return GENIE_HEALTH_DEGRADED;
        case genie::EngineHealth::Failed: return GENIE_HEALTH_FAILED;
    }
    return GENIE_HEALTH_FAILED;
}

void begin_generate_result(genie_generate_result* out) {
    if (!out) return;
    check_version(out->version, GENIE_GENERATE_RESULT_VERSION, "genie_generate_result");
    genie_generate_result_clear(out);
    out->finish_reason = GENIE_FINISH_ERROR;
}

void fill_generate_result(genie_generate_result* out, const genie::GenerateResult& r) {
    char* text = copy_string(r.text);
    genie_token* tokens = nullptr;
    try {
        tokens = copy_tokens(r.tokens);
    } catch (...) {
        std::free(text);
        throw;
    }
    out->text = text;
    out->text_len = r.text.size();
    out->tokens = tokens;
    out->n_tokens = r.tokens.size();
    out->finish_reason = finish_reason_to_c(r.finish_reason);
    out->prompt_tokens = r.prompt_tokens;
    out->reused_prompt_tokens = r.reused_prompt_tokens;
    out->completion_tokens = r.completion_tokens;
    out->load_ms = r.timings.load_ms;
    out->prompt_eval_ms = r.timings.prompt_eval_ms;
    out->time_to_first_token_ms = r.timings.time_to_first_token_ms;
    out->decode_ms = r.timings.decode_ms;
    out->prompt_tokens_per_s = r.timings.prompt_tokens_per_s;
    out->decode_tokens_per_s = r.timings.decode_tokens_per_s;
}

}  // namespace genie::capi
