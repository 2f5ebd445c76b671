// The C ABI of genie::Engine (include/genie/genie.h, "engine" section). Every body runs
// inside guarded() (capi/guard.hpp), so no exception crosses into C.
#include "chat_convert.hpp"
#include "convert.hpp"
#include "guard.hpp"
#include "handles.hpp"

#include <genie/engine.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

using namespace genie::capi;

genie::ModelOptions model_options(const genie_engine* e, genie_load_progress_callback progress, void* user) {
    genie::ModelOptions o;
    o.backend = e->backend;
    if (progress) o.progress = [progress, user](float f) { return progress(user, f) == 0; };
    return o;
}

}  // namespace

extern "C" {

genie_status genie_engine_options_init(genie_engine_options* opts, unsigned int version) {
    return guarded(__func__, [&] {
        require_not_null(opts, "opts");
        check_version(version, GENIE_ENGINE_OPTIONS_VERSION, "genie_engine_options");
        *opts = genie_engine_options GENIE_ENGINE_OPTIONS_INIT;
    });
}

genie_status genie_engine_create(genie_engine** out, const genie_engine_options* opts) {
    return guarded(__func__, [&] {
        require_not_null(out, "out");
        *out = nullptr;
        genie_engine_options o = GENIE_ENGINE_OPTIONS_INIT;
        if (opts) {
            check_version(opts->version, GENIE_ENGINE_OPTIONS_VERSION, "genie_engine_options");
            o = *opts;
        }
        genie::EngineOptions eo;
        eo.session.context_length = o.context_length;
        eo.session.threads = o.threads;
        eo.session.batch_size = o.batch_size;
        eo.session.kv_type = kv_type_from_c(enum_field(o.kv_type));
        eo.max_conversations = o.max_conversations;
        eo.max_concurrent = o.max_concurrent;
        eo.watchdog_timeout_s = o.watchdog_timeout_ms / 1000.0;
        eo.cancel_stuck = o.cancel_stuck != 0;
        eo.check_available_memory = o.check_available_memory != 0;
        const genie::BackendKind backend = backend_from_c(enum_field(o.backend));
        auto engine = std::make_unique<genie_engine>(eo);  // InvalidArgument for bad options
        engine->backend = backend;
        *out = engine.release();
        log_message(GENIE_LOG_INFO, "engine created");
    });
}

void genie_engine_free(genie_engine* engine) { destroy(engine); }

genie_status genie_engine_load(genie_engine* engine, const char* path, genie_load_progress_callback progress,
                               void* user) {
    return guarded(__func__, [&] {
        genie_engine* e = check(engine);
        require_not_null(path, "path");
        e->engine.load(path, model_options(e, progress, user));
    });
}

genie_status genie_engine_swap(genie_engine* engine, const char* path, genie_load_progress_callback progress,
                               void* user) {
    return guarded(__func__, [&] {
        genie_engine* e = check(engine);
        require_not_null(path, "path");
        e->engine.swap(path, model_options(e, progress, user));
    });
}

genie_status genie_engine_wait(genie_engine_state* out_state, genie_engine* engine, int64_t timeout_ms) {
    if (out_state) *out_state = GENIE_ENGINE_UNLOADED;
    const genie_status status = guarded(__func__, [&] {
        genie_engine* e = check(engine);
        if (timeout_ms < 0)
            e->engine.wait();
        else
            (void)e->engine.wait_for(std::chrono::milliseconds(timeout_ms));
    });
    if (out_state && engine && engine->tag == genie_engine::kTag) {
        // The state is reported even when the load failed (FAILED, or READY after a failed swap).
        try {
            *out_state = engine_state_to_c(engine->engine.status().state);
        } catch (...) {
        }
    }
    return status;
}

genie_status genie_engine_unload(genie_engine* engine) {
    return guarded(__func__, [&] { check(engine)->engine.unload(); });
}

genie_status genie_engine_warmup(genie_engine* engine) {
    return guarded(__func__, [&] { check(engine)->engine.warmup(); });
}

genie_status genie_engine_set_context_limit(genie_engine* engine, int32_t n_ctx) {
    return guarded(__func__, [&] { check(engine)->engine.set_context_limit(n_ctx); });
}

genie_status genie_engine_trim(uint64_t* out_released, genie_engine* engine, int32_t keep_idle) {
    if (out_released) *out_released = 0;
    return guarded(__func__, [&] {
        const uint64_t released = check(engine)->engine.trim(keep_idle);
        if (out_released) *out_released = released;
    });
}

genie_status genie_engine_forget(genie_engine* engine, const char* conversation_id) {
    return guarded(__func__, [&] {
        genie_engine* e = check(engine);
        require_not_null(conversation_id, "conversation_id");
        e->engine.forget(conversation_id);
    });
}

genie_status genie_engine_cancel(genie_engine* engine, const char* conversation_id) {
    return guarded(__func__, [&] {
        genie_engine* e = check(engine);
        if (conversation_id)
            e->engine.cancel(conversation_id);
        else
            e->engine.cancel_all();
    });
}

void genie_engine_status_clear(genie_engine_status_info* out) {
    if (!out) return;
    std::free(out->health_reason);
    std::free(out->model_path);
    std::free(out->model_name);
    std::free(out->architecture);
    std::free(out->backend);
    std::free(out->last_error);
    const unsigned int version = out->version;
    *out = genie_engine_status_info GENIE_ENGINE_STATUS_INIT;
    out->version = version;
}

genie_status genie_engine_status(genie_engine_status_info* out, const genie_engine* engine) {
    return guarded(__func__, [&] {
        require_not_null(out, "out");
        check_version(out->version, GENIE_ENGINE_STATUS_VERSION, "genie_engine_status_info");
        genie_engine_status_clear(out);
        const genie::EngineStatus s = check(engine)->engine.status();
        genie_engine_status_info r = GENIE_ENGINE_STATUS_INIT;
        r.version = out->version;
        try {
            r.health_reason = copy_string(s.health_reason);
            r.model_path = copy_string(s.model_path);
            r.model_name = copy_string(s.model_name);
            r.architecture = copy_string(s.architecture);
            r.backend = copy_string(s.backend);
            r.last_error = copy_string(s.last_error);
        } catch (...) {
            genie_engine_status_clear(&r);
            throw;
        }
        r.state = engine_state_to_c(s.state);
        r.health = engine_health_to_c(s.health);
        r.loading = s.loading ? 1 : 0;
        r.load_progress = s.load_progress;
        r.context_length = s.context_length;
        r.n_ctx_train = s.n_ctx_train;
        r.weights_bytes = s.memory.weights;
        r.kv_bytes = s.memory.kv;
        r.scratch_bytes = s.memory.scratch;
        r.device_bytes = s.memory.device;
        r.process_rss_bytes = s.memory.process_rss;
        r.last_error_status = static_cast<genie_status>(s.last_error_code);
        r.requests = s.counters.requests;
        r.failures = s.counters.failures;
        r.cancelled = s.counters.cancelled;
        r.prompt_tokens = s.counters.prompt_tokens;
        r.reused_tokens = s.counters.reused_tokens;
        r.generated_tokens = s.counters.generated_tokens;
        r.stuck_events = s.counters.stuck_events;
        r.out_of_memory = s.counters.out_of_memory;
        r.loads = s.counters.loads;
        r.load_failures = s.counters.load_failures;
        r.active_requests = s.active_requests;
        r.queued_requests = s.queued_requests;
        r.conversations = s.conversations;
        r.seconds_since_token = s.seconds_since_token;
        *out = r;
    });
}

genie_status genie_engine_chat_options_init(genie_engine_chat_options* opts, unsigned int version) {
    return guarded(__func__, [&] {
        require_not_null(opts, "opts");
        check_version(version, GENIE_ENGINE_CHAT_OPTIONS_VERSION, "genie_engine_chat_options");
        *opts = genie_engine_chat_options GENIE_ENGINE_CHAT_OPTIONS_INIT;
    });
}

genie_status genie_engine_chat(genie_engine* engine, const genie_engine_chat_options* opts,
                               const genie_chat_request* request, genie_piece_callback callback, void* user,
                               genie_chat_result* out) {
    return guarded(__func__, [&] {
        const auto start = ChatStream::Clock::now();
        begin_chat_result(out);
        genie_engine* e = check(engine);
        genie_engine_chat_options o = GENIE_ENGINE_CHAT_OPTIONS_INIT;
        if (opts) {
            check_version(opts->version, GENIE_ENGINE_CHAT_OPTIONS_VERSION, "genie_engine_chat_options");
            o = *opts;
        }
        ChatCall call = convert_chat_request(request);
        genie::EngineChatRequest rq;
        if (o.conversation_id) rq.conversation_id = o.conversation_id;
        rq.priority = o.priority;
        rq.messages = std::move(call.messages);
        rq.options = call.options;
        rq.sampler = call.sampler;
        switch (call.response_format) {
            case GENIE_RESPONSE_FORMAT_JSON_OBJECT: rq.response_format = genie::ResponseFormat::JsonObject; break;
            case GENIE_RESPONSE_FORMAT_JSON_SCHEMA: rq.response_format = genie::ResponseFormat::JsonSchema; break;
            case GENIE_RESPONSE_FORMAT_GRAMMAR: rq.response_format = genie::ResponseFormat::Grammar; break;
            default: rq.response_format = genie::ResponseFormat::Text; break;
        }
        rq.json_schema = call.schema;
        rq.grammar = call.grammar;
        rq.constraint_options = call.constraint_options;
        ChatStream stream(callback, user);
        const genie::EngineChatResult r = e->engine.chat(rq, stream.callback());
        fill_chat_result(out, r.chat, stream.ended, start, call.parse_tools);
    });
}

}  // extern "C"
