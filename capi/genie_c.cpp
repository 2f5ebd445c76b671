// The C ABI's library, model, sampler and session entry points (include/genie/genie.h).
// Every body that can fail runs inside guarded() (capi/guard.hpp): one try/catch that
// turns any exception (genie::Error, std::bad_alloc, anything else) into a status and a
// thread-local message, so nothing ever unwinds into C.
#include "chat_convert.hpp"
#include "convert.hpp"
#include "guard.hpp"
#include "handles.hpp"

#include <genie/chat.hpp>
#include <genie/version.h>

#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace genie::capi;

// The shared part of the three generate entry points: validates, marks the session and
// sampler busy, runs `run(session, sampler, options, callback)` and fills `out`.
template <class Run>
void generate_common(genie_generate_result* out, genie_session* session, genie_sampler* sampler,
                     const genie_generate_options* opts, genie_generate_callback callback, void* user, Run&& run) {
    begin_generate_result(out);
    check(session);
    check(sampler);
    const genie::GenerateOptions options = generate_options_from_c(opts);
    BusyGuard guard;
    guard.acquire(session->busy, "the session");
    guard.acquire(sampler->busy, "the sampler");
    genie::PieceCallback on_piece;
    if (callback) {
        on_piece = [callback, user](const genie::Piece& piece) {
            return callback(user, piece.text.data(), piece.text.size(), piece.token) == 0;
        };
    }
    const genie::GenerateResult result = run(session->session, sampler->sampler, options, on_piece);
    if (out) fill_generate_result(out, result);
}


std::vector<genie::ChatMessage> to_messages(const genie_chat_message* messages, size_t count) {
    if (!messages && count != 0) invalid_arg("messages is NULL but count is not 0");
    std::vector<genie::ChatMessage> out;
    out.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        if (!messages[i].role) invalid_arg("messages[" + std::to_string(i) + "].role is NULL");
        genie::ChatMessage m;
        m.role = messages[i].role;
        if (messages[i].content) m.content = std::string(messages[i].content);
        out.push_back(std::move(m));
    }
    return out;
}

std::string render_chat(const genie_model* model, const genie_chat_message* messages, size_t count,
                        bool add_generation_prompt) {
    const std::vector<genie::ChatMessage> list = to_messages(messages, count);
    return genie::render_chat(model->model, list, genie::ChatOptions{}, add_generation_prompt);
}

}  // namespace

extern "C" {

// ---- library --------------------------------------------------------------------------

int genie_abi_version(void) { return GENIE_ABI_VERSION; }

const char* genie_version(void) { return GENIE_VERSION_STRING; }

const char* genie_status_name(genie_status status) {
    return genie::error_code_name(static_cast<genie::ErrorCode>(status));
}

const char* genie_last_error(void) { return last_error(); }

void genie_error_clear(void) { clear_last_error(); }

genie_status genie_log_set(genie_log_callback callback, void* user) {
    return guarded(__func__, [&] { set_log_sink(callback, user); });
}

void genie_string_free(char* text) { std::free(text); }

void genie_tokens_free(genie_token* tokens) { std::free(tokens); }

// ---- model ----------------------------------------------------------------------------

genie_status genie_model_options_init(genie_model_options* opts, unsigned int version) {
    return guarded(__func__, [&] {
        require_not_null(opts, "opts");
        check_version(version, GENIE_MODEL_OPTIONS_VERSION, "genie_model_options");
        const genie_model_options defaults = GENIE_MODEL_OPTIONS_INIT;
        // Write only the fields of `version`: an older caller's struct is shorter.
        std::memset(opts, 0, version >= 2 ? sizeof *opts : offsetof(genie_model_options, use_mmap));
        opts->version = version;
        opts->backend = defaults.backend;
        if (version >= 2) {
            opts->use_mmap = defaults.use_mmap;
            opts->memory_budget_bytes = defaults.memory_budget_bytes;
        }
    });
}

genie_status genie_model_load(genie_model** out, const char* path, const genie_model_options* opts) {
    return guarded(__func__, [&] {
        require_not_null(out, "out");
        *out = nullptr;
        require_not_null(path, "path");
        genie::ModelOptions options;
        if (opts) {
            check_version(opts->version, GENIE_MODEL_OPTIONS_VERSION, "genie_model_options");
            options.backend = backend_from_c(enum_field(opts->backend));
            if (opts->version >= 2) {
                if (opts->use_mmap != 0 && opts->use_mmap != 1)
                    invalid_arg("use_mmap must be 0 or 1, not " + std::to_string(opts->use_mmap));
                options.use_mmap = opts->use_mmap == 1;
                options.memory_budget_bytes = opts->memory_budget_bytes;
            }
        }
        genie::Model model = genie::Model::load(path, options);
        std::string chat_template = model.chat_template();
        *out = new genie_model{genie_model::kTag, std::move(model), std::move(chat_template)};
        const std::string message = std::string("loaded '") + path + "' (" + (*out)->model.info().architecture +
                                    ") in " + std::to_string((*out)->model.load_time_ms()) + " ms";
        log_message(GENIE_LOG_INFO, message.c_str());
    });
}

void genie_model_free(genie_model* model) { destroy(model); }

genie_status genie_model_get_info(genie_model_info* out, const genie_model* model) {
    return guarded(__func__, [&] {
        require_not_null(out, "out");
        check_version(out->version, GENIE_MODEL_INFO_VERSION, "genie_model_info");
        check(model);
        const genie::ModelInfo& info = model->model.info();
        const genie::Tokenizer& tok = model->model.tokenizer();
        out->architecture = info.architecture.c_str();
        out->name = info.name.c_str();
        out->parameter_count = info.parameter_count;
        out->file_size = info.file_size;
        out->weight_bytes = info.weight_bytes;
        out->n_vocab = info.n_vocab;
        out->n_ctx_train = info.n_ctx_train;
        out->n_embd = info.n_embd;
        out->n_layer = info.n_layer;
        out->n_head = info.n_head;
        out->n_head_kv = info.n_head_kv;
        out->head_dim = info.head_dim;
        out->n_ff = info.n_ff;
        out->bos = tok.bos();
        out->eos = tok.eos();
        out->load_time_ms = model->model.load_time_ms();
        if (out->version >= 2) out->decode_bytes = info.decode_bytes;
    });
}

genie_status genie_model_token_is_eog(int* out, const genie_model* model, genie_token token) {
    return guarded(__func__, [&] {
        require_not_null(out, "out");
        *out = 0;
        check(model);
        *out = model->model.tokenizer().is_eog(token) ? 1 : 0;
    });
}

genie_status genie_model_chat_template(const char** out, const genie_model* model) {
    return guarded(__func__, [&] {
        require_not_null(out, "out");
        *out = nullptr;
        check(model);
        *out = model->chat_template.c_str();
    });
}

genie_status genie_model_tokenize(genie_token** out_tokens, size_t* out_count, const genie_model* model,
                                  const char* text, size_t text_len, unsigned int flags) {
    return guarded(__func__, [&] {
        require_not_null(out_tokens, "out_tokens");
        *out_tokens = nullptr;
        require_not_null(out_count, "out_count");
        *out_count = 0;
        check(model);
        const std::string_view input = text_arg(text, text_len, "text");
        if (flags & ~(GENIE_TOKENIZE_ADD_SPECIAL | GENIE_TOKENIZE_PARSE_SPECIAL))
            invalid_arg("unknown tokenize flags " + std::to_string(flags));
        genie::TokenizeOptions options;
        options.add_special = (flags & GENIE_TOKENIZE_ADD_SPECIAL) != 0;
        options.parse_special = (flags & GENIE_TOKENIZE_PARSE_SPECIAL) != 0;
        const std::vector<genie::TokenId> tokens = model->model.tokenizer().tokenize(input, options);
        *out_tokens = copy_tokens(tokens);
        *out_count = tokens.size();
    });
}

genie_status genie_model_detokenize(char** out_text, size_t* out_len, const genie_model* model,
                                    const genie_token* tokens, size_t count, unsigned int flags) {
    return guarded(__func__, [&] {
        require_not_null(out_text, "out_text");
        *out_text = nullptr;
        if (out_len) *out_len = 0;
        check(model);
        if (!tokens && count != 0) invalid_arg("tokens is NULL but count is not 0");
        if (flags & ~(GENIE_DETOKENIZE_REMOVE_SPECIAL | GENIE_DETOKENIZE_RENDER_SPECIAL))
            invalid_arg("unknown detokenize flags " + std::to_string(flags));
        genie::DetokenizeOptions options;
        options.remove_special = (flags & GENIE_DETOKENIZE_REMOVE_SPECIAL) != 0;
        options.render_special = (flags & GENIE_DETOKENIZE_RENDER_SPECIAL) != 0;
        options.replace_invalid_utf8 = true;
        const std::string text =
            model->model.tokenizer().detokenize(std::span<const genie::TokenId>(tokens, count), options);
        *out_text = copy_string(text);
        if (out_len) *out_len = text.size();
    });
}

genie_status genie_model_apply_chat_template(char** out_text, size_t* out_len, const genie_model* model,
                                             const genie_chat_message* messages, size_t count,
                                             int add_generation_prompt) {
    return guarded(__func__, [&] {
        require_not_null(out_text, "out_text");
        *out_text = nullptr;
        if (out_len) *out_len = 0;
        check(model);
        const std::string text = render_chat(model, messages, count, add_generation_prompt != 0);
        *out_text = copy_string(text);
        if (out_len) *out_len = text.size();
    });
}

// ---- sampler --------------------------------------------------------------------------

genie_status genie_sampler_options_init(genie_sampler_options* opts, unsigned int version) {
    return guarded(__func__, [&] {
        require_not_null(opts, "opts");
        check_version(version, GENIE_SAMPLER_OPTIONS_VERSION, "genie_sampler_options");
        *opts = genie_sampler_options GENIE_SAMPLER_OPTIONS_INIT;
    });
}

genie_status genie_sampler_create(genie_sampler** out, const genie_sampler_options* opts) {
    return guarded(__func__, [&] {
        require_not_null(out, "out");
        *out = nullptr;
        genie_sampler_options o = GENIE_SAMPLER_OPTIONS_INIT;
        if (opts) {
            check_version(opts->version, GENIE_SAMPLER_OPTIONS_VERSION, "genie_sampler_options");
            o = *opts;
        }
        *out = new genie_sampler{genie_sampler::kTag, genie::Sampler(sampler_options_from_c(o)), {false}};
    });
}

void genie_sampler_free(genie_sampler* sampler) { destroy(sampler); }

genie_status genie_sampler_reset(genie_sampler* sampler) {
    return guarded(__func__, [&] {
        check(sampler);
        BusyGuard guard;
        guard.acquire(sampler->busy, "the sampler");
        sampler->sampler.reset();
    });
}

genie_status genie_sampler_sample(genie_token* out, genie_sampler* sampler, const float* logits, size_t count) {
    return guarded(__func__, [&] {
        require_not_null(out, "out");
        *out = GENIE_NO_TOKEN;
        check(sampler);
        if (!logits || count == 0) invalid_arg("logits must be a non-empty array");
        BusyGuard guard;
        guard.acquire(sampler->busy, "the sampler");
        *out = sampler->sampler.sample(std::span<const float>(logits, count));
    });
}

genie_status genie_sampler_accept(genie_sampler* sampler, genie_token token) {
    return guarded(__func__, [&] {
        check(sampler);
        BusyGuard guard;
        guard.acquire(sampler->busy, "the sampler");
        sampler->sampler.accept(token);
    });
}

// ---- session --------------------------------------------------------------------------

genie_status genie_session_options_init(genie_session_options* opts, unsigned int version) {
    return guarded(__func__, [&] {
        require_not_null(opts, "opts");
        check_version(version, GENIE_SESSION_OPTIONS_VERSION, "genie_session_options");
        *opts = genie_session_options GENIE_SESSION_OPTIONS_INIT;
    });
}

genie_status genie_generate_options_init(genie_generate_options* opts, unsigned int version) {
    return guarded(__func__, [&] {
        require_not_null(opts, "opts");
        check_version(version, GENIE_GENERATE_OPTIONS_VERSION, "genie_generate_options");
        *opts = genie_generate_options GENIE_GENERATE_OPTIONS_INIT;
    });
}

genie_status genie_session_create(genie_session** out, genie_model* model, const genie_session_options* opts) {
    return guarded(__func__, [&] {
        require_not_null(out, "out");
        *out = nullptr;
        check(model);
        genie::SessionOptions options;
        if (opts) {
            check_version(opts->version, GENIE_SESSION_OPTIONS_VERSION, "genie_session_options");
            options.context_length = opts->context_length;
            options.threads = opts->threads;
            options.batch_size = opts->batch_size;
            options.kv_type = kv_type_from_c(enum_field(opts->kv_type));
            if (options.threads < 0) invalid_arg("threads must be >= 0");
        }
        *out = new genie_session{genie_session::kTag, genie::Session(model->model, options), {false}};
        log_message(GENIE_LOG_INFO,
                    ("session created: context " + std::to_string((*out)->session.context_length()) + " tokens").c_str());
    });
}

void genie_session_free(genie_session* session) { destroy(session); }

void genie_generate_result_clear(genie_generate_result* result) {
    if (!result) return;
    std::free(result->text);
    std::free(result->tokens);
    const unsigned int version = result->version;
    *result = genie_generate_result GENIE_GENERATE_RESULT_INIT;
    result->version = version;
}

genie_status genie_session_generate(genie_generate_result* out, genie_session* session, const char* prompt,
                                    size_t prompt_len, genie_sampler* sampler, const genie_generate_options* opts,
                                    genie_generate_callback callback, void* user) {
    return guarded(__func__, [&] {
        const std::string_view text = text_arg(prompt, prompt_len, "prompt");
        generate_common(out, session, sampler, opts, callback, user,
                        [&](genie::Session& s, genie::Sampler& sm, const genie::GenerateOptions& o,
                            const genie::PieceCallback& cb) { return s.generate(text, sm, o, cb); });
    });
}

genie_status genie_session_generate_tokens(genie_generate_result* out, genie_session* session,
                                           const genie_token* prompt, size_t prompt_count, genie_sampler* sampler,
                                           const genie_generate_options* opts, genie_generate_callback callback,
                                           void* user) {
    return guarded(__func__, [&] {
        if (!prompt && prompt_count != 0) invalid_arg("prompt is NULL but prompt_count is not 0");
        const std::span<const genie::TokenId> tokens(prompt, prompt_count);
        generate_common(out, session, sampler, opts, callback, user,
                        [&](genie::Session& s, genie::Sampler& sm, const genie::GenerateOptions& o,
                            const genie::PieceCallback& cb) {
                            if (tokens.empty()) invalid_arg("the prompt is empty (no tokens)");
                            return s.generate(tokens, sm, o, cb);
                        });
    });
}

genie_status genie_chat_request_init(genie_chat_request* req, unsigned int version) {
    return guarded(__func__, [&] {
        require_not_null(req, "req");
        check_version(version, GENIE_CHAT_REQUEST_VERSION, "genie_chat_request");
        const genie_chat_request defaults = GENIE_CHAT_REQUEST_INIT;
        // Write only the fields of `version`: an older caller's struct is shorter.
        std::memcpy(req, &defaults, version >= 2 ? sizeof *req : offsetof(genie_chat_request, message_extras));
        req->version = version;
    });
}

void genie_chat_result_clear(genie_chat_result* result) {
    if (!result) return;
    std::free(result->text);
    std::free(result->reasoning);
    std::free(result->tool_name);
    std::free(result->tool_arguments);
    const unsigned int version = result->version;
    if (version >= 2) {
        free_tool_calls(result->tool_calls, result->n_tool_calls);
        free_tool_calls(result->rejected_tool_calls, result->n_rejected_tool_calls);
    }
    const genie_chat_result empty = GENIE_CHAT_RESULT_INIT;
    std::memcpy(result, &empty, chat_result_size(version));  // a version-1 struct is shorter
    result->version = version;
}

genie_status genie_session_chat(genie_session* session, const genie_chat_request* request,
                                genie_piece_callback callback, void* user, genie_chat_result* out) {
    return guarded(__func__, [&] {
        // Request conversion, streaming with timeouts and the result: capi/chat_convert.hpp
        // (shared with genie_engine_chat).
        const auto start = ChatStream::Clock::now();
        begin_chat_result(out);
        check(session);
        ChatCall call = convert_chat_request(request);
        genie::Sampler sampler(call.sampler);

        BusyGuard guard;
        guard.acquire(session->busy, "the session");
        const std::string key = call.constraint_key();
        if (key.empty()) {
            call.options.generate.constraint = nullptr;
        } else if (key == "o:") {
            if (!session->any_object) session->any_object = call.build_constraint(session->session.model().tokenizer());
            call.options.generate.constraint = session->any_object;
        } else {
            if (!session->schema || session->schema_text != key) {
                session->schema.reset();
                // InvalidArgument for a bad schema or grammar.
                session->schema = call.build_constraint(session->session.model().tokenizer());
                session->schema_text = key;
            }
            call.options.generate.constraint = session->schema;
        }
        ChatStream stream(callback, user);
        const genie::ChatResult chat = session->session.chat(call.messages, sampler, call.options, stream.callback());
        fill_chat_result(out, chat, stream.ended, start, call.parse_tools);
    });
}

genie_status genie_session_cancel(genie_session* session) {
    return guarded(__func__, [&] { check(session)->session.cancel(); });
}

genie_status genie_session_evaluate(const float** out_logits, size_t* out_count, genie_session* session,
                                    const genie_token* tokens, size_t count) {
    return guarded(__func__, [&] {
        require_not_null(out_logits, "out_logits");
        *out_logits = nullptr;
        require_not_null(out_count, "out_count");
        *out_count = 0;
        check(session);
        if (!tokens && count != 0) invalid_arg("tokens is NULL but count is not 0");
        BusyGuard guard;
        guard.acquire(session->busy, "the session");
        const std::span<const float> logits =
            session->session.evaluate(std::span<const genie::TokenId>(tokens, count));
        *out_logits = logits.data();
        *out_count = logits.size();
    });
}

genie_status genie_session_last_logits(const float** out_logits, size_t* out_count, const genie_session* session) {
    return guarded(__func__, [&] {
        require_not_null(out_logits, "out_logits");
        *out_logits = nullptr;
        require_not_null(out_count, "out_count");
        *out_count = 0;
        check(session);
        const std::span<const float> logits = session->session.last_logits();
        *out_logits = logits.empty() ? nullptr : logits.data();
        *out_count = logits.size();
    });
}

genie_status genie_session_cached_tokens(const genie_token** out_tokens, size_t* out_count,
                                         const genie_session* session) {
    return guarded(__func__, [&] {
        require_not_null(out_tokens, "out_tokens");
        *out_tokens = nullptr;
        require_not_null(out_count, "out_count");
        *out_count = 0;
        check(session);
        const std::span<const genie::TokenId> tokens = session->session.cached_tokens();
        *out_tokens = tokens.empty() ? nullptr : tokens.data();
        *out_count = tokens.size();
    });
}

genie_status genie_session_context_length(int32_t* out, const genie_session* session) {
    return guarded(__func__, [&] {
        require_not_null(out, "out");
        *out = 0;
        *out = check(session)->session.context_length();
    });
}

genie_status genie_session_reset(genie_session* session) {
    return guarded(__func__, [&] {
        check(session);
        BusyGuard guard;
        guard.acquire(session->busy, "the session");
        session->session.reset();
    });
}

}  // extern "C"
