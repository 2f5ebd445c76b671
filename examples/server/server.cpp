// genie-server: an OpenAI-compatible HTTP server on libgenie, a drop-in for llama-server
// (same request fields, response shapes, SSE framing and error bodies). See docs/server.md.
//
//   genie-server -m MODEL.gguf [--host 127.0.0.1] [--port 8080] [-c CTX] [--threads T]
//                [--api-key KEY | --api-key-file PATH] [--parallel N]
//
// The listener starts first; the model loads on a background thread (every endpoint
// answers 503 "Loading model" until it is usable). Generation runs on genie::Engine: the
// handlers translate each HTTP request (translate.hpp) into an Engine request, which
// renders the prompt, waits in the engine's bounded queue (beyond it 503), runs on the
// conversation's session (--parallel N at once) and is cancelled when the client leaves.
#include "http_front.hpp"
#include "metrics.hpp"
#include "options.hpp"
#include "protocol.hpp"
#include "request.hpp"
#include "tokenize_gate.hpp"
#include "translate.hpp"

#include <genie/chat.hpp>
#include <genie/engine.hpp>
#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>
#include <genie/version.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <malloc.h>

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace genie::server {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

constexpr size_t kMaxBodyBytes = size_t{8} << 20;
constexpr size_t kMaxTokenizeBytes = size_t{1} << 20;  // the /tokenize 'content' field
const std::string kFingerprint = std::string("genie-") + GENIE_VERSION_STRING;

/// The client of one generation request, shared by the handler, the stream and the
/// engine's cancellation check (all on the request's worker thread).
struct Client {
    PeerProbe probe = PeerProbe::for_current_request();
    bool gone = false;  // the probe found it gone, or a streamed write failed
};


// ---- the server -----------------------------------------------------------------------

enum Phase { kLoading = 0, kReady = 1, kFailed = 2 };

struct Completion;

class Server {
public:
    explicit Server(Options o) : opt_(std::move(o)) {
        model_id_ = std::filesystem::path(opt_.model).filename().string();
        max_waiting_ = env_int("GENIE_SERVER_MAX_QUEUE", std::max(8, 4 * opt_.parallel));
        // --parallel N: N requests run at once, each on its own session; as many sessions
        // (conversations by conversation_id, and spares that one-off requests reuse by
        // prompt prefix) keep their KV cache between requests.
        EngineOptions eo;
        eo.session.context_length = opt_.ctx;
        eo.session.threads = opt_.threads;
        eo.max_concurrent = opt_.parallel;
        eo.max_conversations = opt_.parallel;
        eo.max_queued = max_waiting_;
        eo.keep_one_off_sessions = true;
        eo.watchdog_timeout_s = 0;  // clients that leave are noticed by the CancelCheck
        engine_ = std::make_unique<Engine>(eo);
        fail_stream_after_ = env_int("GENIE_SERVER_TEST_STREAM_ERROR_AFTER", 0);
        FrontOptions fo;
        fo.host = opt_.host;
        fo.port = opt_.port;
        // Every generation that runs or waits holds a worker, and 8 more serve the rest.
        fo.workers = opt_.parallel + max_waiting_ + 8;
        fo.max_connections = env_int("GENIE_SERVER_MAX_CONNECTIONS", 256);
        fo.limits.max_body_bytes = kMaxBodyBytes;
        fo.head_timeout_ms = env_int("GENIE_SERVER_HEAD_TIMEOUT_MS", 10'000);
        fo.body_timeout_ms = env_int("GENIE_SERVER_BODY_TIMEOUT_MS", 60'000);
        fo.error_body = [](int status, const std::string& message) {
            return error_body(status, message, status == 503 ? "unavailable_error" : "invalid_request_error").dump();
        };
        fo.on_rejected = [this](int status) { metrics_.request("other", status); };
        http_ = std::make_unique<HttpFront>(std::move(fo));
        // /tokenize: as many at once as there are slots, and as many waiting as the queue holds.
        tokenize_gate_ = std::make_unique<TokenizeGate>(opt_.parallel, max_waiting_);
    }

    int run();
    void stop() {
        stopping_ = true;
        engine_->cancel_all();
        http_->stop();
    }

private:
    void load();
    void routes();
    bool ready() const { return phase_.load(std::memory_order_acquire) == kReady; }

    void handle_chat(const httplib::Request& req, httplib::Response& res);
    void handle_completion(const httplib::Request& req, httplib::Response& res);
    void handle_tokenize(const httplib::Request& req, httplib::Response& res);
    void handle_detokenize(const httplib::Request& req, httplib::Response& res);
    void handle_models(httplib::Response& res);

    /// The engine's cancellation check for `client`: it left, or the server stops.
    CancelCheck cancel_check(const std::shared_ptr<Client>& client);
    /// Prepares `request` and waits for its turn in the engine; on failure (bad request,
    /// prompt over the context, queue full, client gone) fills `res` and returns false.
    template <class Request>
    bool admit(const Request& request, std::optional<EngineTicket>& ticket, httplib::Response& res);
    void record(const GenerateResult& g, Clock::time_point start, bool cancelled);
    /// Answers an admitted request: a stream, or the whole response.
    void respond(const std::shared_ptr<Completion>& c, const char* id_prefix, const SamplingFields& sampling,
                 const std::string& model, bool stream, httplib::Response& res);

    Options opt_;
    std::unique_ptr<HttpFront> http_;
    std::unique_ptr<TokenizeGate> tokenize_gate_;
    std::atomic<int> phase_{kLoading};
    std::atomic<bool> stopping_{false};
    std::string load_error_;
    std::unique_ptr<Engine> engine_;
    std::optional<Model> model_;  // the engine's model, for /v1/models and /tokenize
    std::string model_id_;
    int n_ctx_ = 0;
    int max_waiting_ = 8;
    int fail_stream_after_ = 0;  // test hook: a streamed generation fails after this many pieces
    Metrics metrics_;

    friend struct Completion;
};

void send_json(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json; charset=utf-8");
}

/// llama-server's usage, plus "max_tokens_capped_to" when the request's max_tokens did
/// not fit the context and was lowered.
json usage_with_cap(const GenerateResult& g, int capped) {
    json u = usage_json(g);
    if (capped > 0) u["max_tokens_capped_to"] = capped;
    return u;
}

void send_error(httplib::Response& res, int code, const std::string& message, const std::string& type) {
    send_json(res, code, error_body(code, message, type));
}

/// A request cut short (or refused) because the server is stopping: 503, so the client
/// knows the answer is not complete and may retry elsewhere.
void send_shutting_down(httplib::Response& res) {
    send_error(res, 503, "the server is shutting down", "unavailable_error");
}

void bad_request(httplib::Response& res, const std::string& message) {
    send_error(res, 400, message, "invalid_request_error");
}

std::string known_path(const std::string& path) {
    static const char* kPaths[] = {"/health", "/v1/health", "/v1/models", "/models", "/v1/chat/completions",
                                   "/chat/completions", "/v1/completions", "/completions", "/tokenize",
                                   "/detokenize", "/metrics"};
    for (const char* p : kPaths)
        if (path == p) return path;
    return "other";
}

void Server::load() {
    if (const int delay = env_int("GENIE_SERVER_TEST_LOAD_DELAY_MS", 0); delay > 0) {
        // Test hook: keeps the server in the "Loading model" state for a while.
        for (int waited = 0; waited < delay && !stopping_; waited += 10)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    try {
        ModelOptions mo;
        mo.progress = [this](float) { return !stopping_.load(); };
        engine_->load(opt_.model, mo);
        engine_->wait();
        engine_->warmup();  // the first request does not pay the page faults of the weights
        model_ = engine_->model();
        n_ctx_ = engine_->status().context_length;
        phase_.store(kReady, std::memory_order_release);
        fmt::print(stderr, "genie-server: model loaded ({:.0f} ms), {} slot(s) of {} tokens, ready\n", model_->load_time_ms(),
                   opt_.parallel, n_ctx_);
    } catch (const std::exception& e) {
        load_error_ = e.what();
        phase_.store(kFailed, std::memory_order_release);
        fmt::print(stderr, "genie-server: loading the model failed: {}\n", e.what());
    }
}

int Server::run() {
    routes();
    std::string error;
    if (!http_->open(error)) {
        fmt::print(stderr, "genie-server: {}\n", error);
        return 1;
    }
    fmt::print(stderr, "genie-server {}: listening on http://{}:{} (loading {})\n", GENIE_VERSION_STRING, opt_.host,
               opt_.port, opt_.model);
    std::thread loader([this] { load(); });
    http_->serve();
    stopping_ = true;
    loader.join();
    return 0;
}

void Server::routes() {
    http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        const bool is_health = req.path == "/health" || req.path == "/v1/health";
        if (stopping_) {
            send_shutting_down(res);
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!opt_.api_key.empty() && !is_health) {
            // "Authorization: Bearer KEY" (the scheme is required), else "X-Api-Key: KEY".
            std::string key;
            if (req.has_header("Authorization")) {
                key = req.get_header_value("Authorization");
                key = key.rfind("Bearer ", 0) == 0 ? key.substr(7) : std::string();
            } else {
                key = req.get_header_value("X-Api-Key");
            }
            if (key.empty() || key != opt_.api_key) {
                send_error(res, 401, "Invalid API Key", "authentication_error");
                return httplib::Server::HandlerResponse::Handled;
            }
        }
        const int phase = phase_.load(std::memory_order_acquire);
        if (phase == kLoading) {
            send_error(res, 503, "Loading model", "unavailable_error");
            return httplib::Server::HandlerResponse::Handled;
        }
        if (phase == kFailed) {
            send_error(res, 503, "Model failed to load: " + load_error_, "unavailable_error");
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    http_->set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        if (res.status == 404 && known_path(req.path) != "other") {
            // A known path with the wrong method.
            const bool get = req.path == "/health" || req.path == "/v1/health" || req.path == "/v1/models" ||
                             req.path == "/models" || req.path == "/metrics";
            res.set_header("Allow", get ? "GET" : "POST");
            send_error(res, 405, fmt::format("{} is not allowed on {} (use {})", req.method, req.path, get ? "GET" : "POST"),
                       "invalid_request_error");
        } else if (res.status == 404) {
            send_error(res, 404, "File Not Found", "not_found_error");
        } else if (res.status == 413) {
            send_error(res, 413, fmt::format("the request body is larger than {} bytes", kMaxBodyBytes),
                       "invalid_request_error");
        } else {
            return httplib::Server::HandlerResponse::Unhandled;
        }
        return httplib::Server::HandlerResponse::Handled;
    }));
    http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string message = "unknown error";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            message = e.what();
        } catch (...) {
        }
        send_error(res, 500, message, "server_error");
    });
    http_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
        metrics_.request(known_path(req.path), res.status);
        if (res.body.size() > (size_t{1} << 20)) trim_memory_after_request();
    });
    // A JSON body never holds a raw NUL byte; nlohmann's parser would stop at it and
    // accept what came before.
    auto json_post = [this](void (Server::*handler)(const httplib::Request&, httplib::Response&)) {
        return [this, handler](const httplib::Request& req, httplib::Response& res) {
            if (req.body.find('\0') != std::string::npos)
                return bad_request(res, "invalid JSON in the request body: it contains a NUL byte");
            (this->*handler)(req, res);
        };
    };

    auto health = [](const httplib::Request&, httplib::Response& res) { send_json(res, 200, json{{"status", "ok"}}); };
    http_->Get("/health", health);
    http_->Get("/v1/health", health);
    http_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) { handle_models(res); });
    http_->Get("/models", [this](const httplib::Request&, httplib::Response& res) { handle_models(res); });
    http_->Post("/v1/chat/completions", json_post(&Server::handle_chat));
    http_->Post("/chat/completions", json_post(&Server::handle_chat));
    http_->Post("/v1/completions", json_post(&Server::handle_completion));
    http_->Post("/completions", json_post(&Server::handle_completion));
    http_->Post("/tokenize", json_post(&Server::handle_tokenize));
    http_->Post("/detokenize", json_post(&Server::handle_detokenize));
    http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.status = 200;
        const EngineStatus st = engine_->status();
        res.set_content(metrics_.render(st.active_requests, st.queued_requests, opt_.parallel), "text/plain; version=0.0.4");
    });
}

void Server::handle_models(httplib::Response& res) {
    const ModelInfo& info = model_->info();
    json meta{
        {"vocab_type", model_->tokenizer().kind() == VocabKind::SentencePiece ? 1 : 2},
        {"n_vocab", info.n_vocab},
        {"n_ctx", n_ctx_},
        {"n_ctx_train", info.n_ctx_train},
        {"n_embd", info.n_embd},
        {"n_params", info.parameter_count},
        {"size", info.file_size},
    };
    json model_info{{"id", model_id_},   {"aliases", json::array()}, {"tags", json::array()}, {"object", "model"},
                    {"created", std::time(nullptr)}, {"owned_by", "genie"}, {"meta", meta}};
    json body{
        {"models", json::array({json{{"name", model_id_},
                                     {"model", model_id_},
                                     {"modified_at", ""},
                                     {"size", ""},
                                     {"digest", ""},
                                     {"type", "model"},
                                     {"description", ""},
                                     {"tags", json::array({""})},
                                     {"capabilities", json::array({"completion"})},
                                     {"parameters", ""},
                                     {"details", json{{"parent_model", ""},
                                                      {"format", "gguf"},
                                                      {"family", ""},
                                                      {"families", json::array({""})},
                                                      {"parameter_size", ""},
                                                      {"quantization_level", ""}}}}})},
        {"object", "list"},
        {"data", json::array({model_info})},
    };
    send_json(res, 200, body);
}

CancelCheck Server::cancel_check(const std::shared_ptr<Client>& client) {
    return [this, client] {
        if (!client->gone && client->probe.gone()) client->gone = true;
        return client->gone || stopping_.load();
    };
}

template <class Request>
bool Server::admit(const Request& request, std::optional<EngineTicket>& ticket, httplib::Response& res) {
    try {
        ticket.emplace(engine_->prepare(request));
    } catch (const Error& e) {
        if (e.code() == ErrorCode::NotLoaded) {
            send_shutting_down(res);
            return false;
        }
        // A template that fails to render is llama-server's "Failed to format input".
        const std::string_view what = e.what();
        if (what.rfind("chat template", 0) == 0) bad_request(res, std::string("Failed to format input: ") + e.what());
        else if (e.code() == ErrorCode::InvalidArgument || e.code() == ErrorCode::Format) bad_request(res, e.what());
        else send_error(res, 500, e.what(), "server_error");
        return false;
    }
    try {
        ticket->wait_turn();
        return true;
    } catch (const Error& e) {
        switch (e.code()) {
            case ErrorCode::ContextOverflow:
                send_json(res, 400, exceed_context_body(ticket->prompt_tokens(), ticket->context_length()));
                break;
            case ErrorCode::Busy:
                metrics_.rejected_busy();
                send_error(res, 503,
                           fmt::format("the server is busy: all {} slots are in use and {} requests are waiting",
                                       opt_.parallel, max_waiting_),
                           "unavailable_error");
                break;
            case ErrorCode::Cancelled:
            case ErrorCode::NotLoaded:
                if (stopping_) send_shutting_down(res);
                else send_error(res, 499, "the client closed the connection", "invalid_request_error");
                break;
            default: send_error(res, 500, e.what(), "server_error");
        }
        return false;
    }
}

void Server::record(const GenerateResult& g, Clock::time_point start, bool cancelled) {
    metrics_.generation(g.prompt_tokens, g.reused_prompt_tokens, g.completion_tokens, g.timings.prompt_eval_ms,
                        g.timings.time_to_first_token_ms, g.timings.decode_ms, ms_since(start));
    if (cancelled) metrics_.cancelled();
}

/// What a chat or text completion answers with, shared by the streamed and the
/// non-streamed paths.
struct Completion {
    Server* server = nullptr;
    bool chat = true;
    bool parse_tools = false;   // chat: tools offered and tool_choice is not "none"
    bool include_usage = true;  // chat: stream_options.include_usage
    int max_tokens_capped = 0;  // > 0: the request's max_tokens was lowered to this
    std::string id, model;
    std::time_t created = 0;
    Clock::time_point start;
    std::shared_ptr<Client> client;
    std::optional<EngineTicket> ticket;

    json chunk(json choice) const {
        return json{{"choices", json::array({std::move(choice)})},
                    {"created", created},
                    {"id", id},
                    {"model", model},
                    {"system_fingerprint", kFingerprint},
                    {"object", chat ? "chat.completion.chunk" : "text_completion"}};
    }
    json chat_choice(json delta, const char* finish) const {
        return json{{"finish_reason", finish ? json(finish) : json(nullptr)}, {"index", 0}, {"delta", std::move(delta)}};
    }
    json text_choice(const std::string& text, const char* finish) const {
        return json{{"text", text}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish ? json(finish) : json(nullptr)}};
    }

    /// The streamed response (runs in the content provider, on the request's thread).
    void stream(httplib::DataSink& sink) {
        client->probe.response_started();
        auto write = [&](const std::string& s) {
            if (client->gone) return false;
            if (!sink.write(s.data(), s.size())) client->gone = true;  // the engine's check cancels it
            return !client->gone;
        };
        if (chat) write(sse_event(chunk(chat_choice(json{{"role", "assistant"}, {"content", nullptr}}, nullptr))));
        ContentGate gate(parse_tools);
        int pieces = 0;
        bool refused = false;  // the callback stopped the generation (client gone or shutdown)
        auto on_piece = [&](const Piece& p) {
            if (client->gone || server->stopping_) {
                refused = true;
                return false;
            }
            if (p.text.empty()) return true;
            if (server->fail_stream_after_ > 0 && ++pieces > server->fail_stream_after_)
                throw std::runtime_error(fmt::format("test hook: error injected after {} pieces", pieces - 1));
            if (!chat) return write(sse_event(chunk(text_choice(p.text, nullptr))));
            json delta;
            if (p.kind == PieceKind::Reasoning) {
                delta = json{{"reasoning_content", p.text}};
            } else {
                const std::string t = gate.push(p.text);
                if (t.empty()) return true;
                delta = json{{"content", t}};
            }
            return write(sse_event(chunk(chat_choice(std::move(delta), nullptr))));
        };
        try {
            const EngineChatResult r = ticket->run(on_piece);
            const GenerateResult& g = r.chat.generation;
            const bool has_tool_calls = chat && parse_tools && !r.chat.tool_calls.empty();
            if (has_tool_calls) {
                write(sse_event(chunk(chat_choice(json{{"tool_calls", tool_calls_json(r.chat.tool_calls, true)}}, nullptr))));
            } else if (const std::string rest = gate.finish(); chat && !rest.empty()) {
                write(sse_event(chunk(chat_choice(json{{"content", rest}}, nullptr))));
            }
            server->record(g, start, client->gone);
            if (server->stopping_ && (g.finish_reason == FinishReason::Cancelled || refused)) {
                // Cut by the shutdown: an error event, not a finish_reason that looks complete.
                write(sse_event(error_body(503, "the server is shutting down", "unavailable_error")));
                write(std::string(kSseDone));
                sink.done();
                return;
            }
            const char* finish = finish_reason_name(g.finish_reason, has_tool_calls);
            json last = chat ? chunk(chat_choice(json::object(), finish)) : chunk(text_choice("", finish));
            if (include_usage && chat) {
                write(sse_event(last));
                last = chunk(json::object());
                last["choices"] = json::array();
                last["usage"] = usage_with_cap(g, max_tokens_capped);
            } else if (include_usage) {
                last["usage"] = usage_with_cap(g, max_tokens_capped);
            }
            last["timings"] = timings_json(g);
            write(sse_event(last));
        } catch (const Error& e) {
            const bool bad = e.code() == ErrorCode::ContextOverflow || e.code() == ErrorCode::InvalidArgument;
            write(sse_event(error_body(bad ? 400 : 500, e.what(), bad ? "invalid_request_error" : "server_error")));
        } catch (const std::exception& e) {
            write(sse_event(error_body(500, e.what(), "server_error")));
        }
        write(std::string(kSseDone));
        sink.done();
    }

    /// The non-streamed response.
    void answer(httplib::Response& res) {
        EngineChatResult r;
        try {
            r = ticket->run();
        } catch (const Error& e) {
            if (e.code() == ErrorCode::ContextOverflow || e.code() == ErrorCode::InvalidArgument)
                return bad_request(res, e.what());
            return send_error(res, 500, e.what(), "server_error");
        }
        const GenerateResult& g = r.chat.generation;
        server->record(g, start, client->gone);
        if (server->stopping_ && g.finish_reason == FinishReason::Cancelled) return send_shutting_down(res);
        if (client->gone) return send_error(res, 499, "the client closed the connection", "invalid_request_error");
        json choice;
        if (chat) {
            const bool has_tool_calls = parse_tools && !r.chat.tool_calls.empty();
            json message{{"role", "assistant"}, {"content", has_tool_calls ? content_before_tool_calls(g.text) : g.text}};
            if (!g.reasoning.empty()) message["reasoning_content"] = g.reasoning;
            if (has_tool_calls) message["tool_calls"] = tool_calls_json(r.chat.tool_calls, false);
            choice = json{{"finish_reason", finish_reason_name(g.finish_reason, has_tool_calls)},
                          {"index", 0},
                          {"message", std::move(message)}};
        } else {
            choice = json{{"text", g.text},
                          {"index", 0},
                          {"logprobs", nullptr},
                          {"finish_reason", finish_reason_name(g.finish_reason, false)}};
        }
        json body{
            {"choices", json::array({std::move(choice)})},
            {"created", created},
            {"model", model},
            {"system_fingerprint", kFingerprint},
            {"object", chat ? "chat.completion" : "text_completion"},
            {"usage", usage_with_cap(g, max_tokens_capped)},
            {"id", id},
            {"timings", timings_json(g)},
        };
        send_json(res, 200, body);
    }
};

void start_stream(httplib::Response& res, std::shared_ptr<Completion> c) {
    res.status = 200;
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider("text/event-stream", [c](size_t, httplib::DataSink& sink) {
        c->stream(sink);
        return true;
    });
}

void Server::respond(const std::shared_ptr<Completion>& c, const char* id_prefix, const SamplingFields& sampling,
                     const std::string& model, bool stream, httplib::Response& res) {
    // usage.max_tokens_capped_to when the request asked for more than the context leaves.
    if (sampling.max_tokens && *sampling.max_tokens > c->ticket->max_tokens()) c->max_tokens_capped = c->ticket->max_tokens();
    c->id = id_prefix + random_string(32);
    c->created = std::time(nullptr);
    c->model = model.empty() ? model_id_ : model;
    if (stream) return start_stream(res, c);
    c->answer(res);
}

void Server::handle_chat(const httplib::Request& req, httplib::Response& res) {
    auto c = std::make_shared<Completion>();
    c->server = this;
    c->start = Clock::now();
    ChatRequest r;
    try {
        r = parse_chat_request(req.body);
    } catch (const RequestError& e) {
        return bad_request(res, e.what());
    }
    EngineChatRequest er;
    try {
        er = engine_chat_request(r, n_ctx_, static_cast<uint32_t>(std::random_device{}()));
    } catch (const Error& e) {
        return bad_request(res, e.what());
    }
    c->client = std::make_shared<Client>();
    er.cancelled = cancel_check(c->client);
    c->parse_tools = parses_tools(r);
    c->include_usage = r.include_usage;
    if (!admit(er, c->ticket, res)) return;
    respond(c, "chatcmpl-", r.sampling, r.model, r.stream, res);
}

void Server::handle_completion(const httplib::Request& req, httplib::Response& res) {
    auto c = std::make_shared<Completion>();
    c->server = this;
    c->start = Clock::now();
    c->chat = false;
    CompletionRequest r;
    try {
        r = parse_completion_request(req.body);
    } catch (const RequestError& e) {
        return bad_request(res, e.what());
    }
    EngineTextRequest er;
    try {
        er = engine_text_request(r, n_ctx_, static_cast<uint32_t>(std::random_device{}()));
    } catch (const Error& e) {
        return bad_request(res, e.what());
    }
    c->client = std::make_shared<Client>();
    er.cancelled = cancel_check(c->client);
    if (!admit(er, c->ticket, res)) return;
    respond(c, "cmpl-", r.sampling, r.model, r.stream, res);
}

void Server::handle_tokenize(const httplib::Request& req, httplib::Response& res) {
    TokenizeRequest r;
    try {
        r = parse_tokenize_request(req.body);
    } catch (const RequestError& e) {
        return bad_request(res, e.what());
    }
    if (r.content.size() > kMaxTokenizeBytes)
        return bad_request(res, fmt::format("'content' is longer than {} bytes", kMaxTokenizeBytes));
    if (!tokenize_gate_->enter()) {
        metrics_.rejected_busy();
        return send_error(res, 503, "the server is busy: too many /tokenize requests at once", "unavailable_error");
    }
    struct Leave {
        TokenizeGate& g;
        ~Leave() { g.leave(); }
    } leave{*tokenize_gate_};
    const Tokenizer& tok = model_->tokenizer();
    TokenizeOptions to;
    to.add_special = r.add_special;
    to.parse_special = r.parse_special;
    const std::vector<TokenId> ids = tok.tokenize(r.content, to);
    // The body is written as text, one token at a time (no JSON tree of the whole answer:
    // that cost ~230 bytes of memory per input byte with pieces).
    std::string out = "{\"tokens\":[";
    out.reserve(ids.size() * (r.with_pieces ? 24 : 7) + 16);
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) out += ',';
        const TokenId id = ids[i];
        if (!r.with_pieces) {
            out += std::to_string(id);
            continue;
        }
        const std::string piece = tok.token_to_piece(id, true);
        out += "{\"id\":" + std::to_string(id) + ",\"piece\":";
        if (sanitize_utf8(piece) == piece) {
            out += json(piece).dump();
        } else {  // not valid UTF-8 on its own: the bytes, as llama-server gives them
            out += '[';
            for (size_t k = 0; k < piece.size(); ++k) {
                if (k) out += ',';
                out += std::to_string(static_cast<unsigned char>(piece[k]));
            }
            out += ']';
        }
        out += '}';
    }
    out += "]}";
    res.status = 200;
    res.set_content(out, "application/json; charset=utf-8");
}

void Server::handle_detokenize(const httplib::Request& req, httplib::Response& res) {
    DetokenizeRequest r;
    try {
        r = parse_detokenize_request(req.body);
    } catch (const RequestError& e) {
        return bad_request(res, e.what());
    }
    const Tokenizer& tok = model_->tokenizer();
    std::string content;
    for (int32_t id : r.tokens) {
        if (id < 0 || static_cast<size_t>(id) >= tok.vocab_size())
            return bad_request(res, fmt::format("'tokens' contains token id {} outside the vocabulary [0, {})", id,
                                                tok.vocab_size()));
        content += tok.token_to_piece(id, true);  // llama-server's tokens_to_str
    }
    send_json(res, 200, json{{"content", content}});
}

}  // namespace
}  // namespace genie::server

int main(int argc, char** argv) {
    using namespace genie::server;
    bool help = false;
    Options options;
    try {
        options = parse_args(argc, argv, help);
    } catch (const std::exception& e) {
        fmt::print(stderr, "genie-server: {}\n", e.what());
        usage(stderr);
        return 2;
    }
    if (help) {
        usage(stdout);
        return 0;
    }
    // A client that disconnects must not kill the process; stop on SIGINT/SIGTERM.
    signal(SIGPIPE, SIG_IGN);
    // Blocks of 256 KiB and more (request bodies, large answers, their buffers) are mapped
    // on their own and unmapped when freed, whichever thread frees them. glibc's default
    // raises this threshold after the first such free, after which they stay in its arenas.
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);  // every thread started below inherits the mask

    Server server(options);
    std::thread signals([&] {
        int sig = 0;
        sigwait(&stop_signals, &sig);
        if (sig == SIGINT || sig == SIGTERM) {
            fmt::print(stderr, "genie-server: signal {}, stopping\n", sig);
            server.stop();
        }
    });
    const int rc = server.run();
    // Wake the signal thread if the server stopped for another reason.
    pthread_kill(signals.native_handle(), SIGTERM);
    signals.join();
    return rc;
}
