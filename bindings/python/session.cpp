// genie.Session: one conversation (KV cache + generate loop), its results and streams.
// The GIL is released while the model runs; a Python callback re-acquires it per piece.
// genie.Stream runs the generation on a worker thread that feeds a queue, so a plain
// Python for-loop (or another thread) consumes pieces as they are produced.
#include "bindings.hpp"

#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace py = pybind11;

namespace genie::python {
namespace {

struct PySession {
    PySession(const Model& model, const SessionOptions& options) : session(model, options) {}
    Session session;
    BusyFlag busy;
    // chat()'s forced tool-call constraint, kept while the tools stay the same.
    std::string tool_key;
    std::shared_ptr<const JsonConstraint> tool_constraint;
    // Session.speculative: the speculative options of every generate / stream / chat call.
    SpeculativeOptions speculative;
};

py::dict speculative_dict(const SpeculativeOptions& o) {
    py::dict d;
    d["draft_max"] = o.draft_max;
    d["draft_min"] = o.draft_min;
    d["draft_p_min"] = o.draft_p_min;
    d["adaptive"] = o.adaptive;
    d["lookup_ngram"] = o.lookup_ngram;
    return d;
}

/// Session.speculative = {...}: the keys of speculative_dict; the ones left out keep their
/// value; an unknown key is an InvalidArgument.
void set_speculative(SpeculativeOptions& o, const py::dict& d) {
    SpeculativeOptions n = o;
    for (const auto& [key_object, value] : d) {
        const std::string key = py::cast<std::string>(key_object);
        if (key == "draft_max") n.draft_max = py::cast<int32_t>(value);
        else if (key == "draft_min") n.draft_min = py::cast<int32_t>(value);
        else if (key == "draft_p_min") n.draft_p_min = py::cast<float>(value);
        else if (key == "adaptive") n.adaptive = py::cast<bool>(value);
        else if (key == "lookup_ngram") n.lookup_ngram = py::cast<int32_t>(value);
        else raise_error(ErrorCode::InvalidArgument, "Session.speculative: unknown key '" + key +
                                                         "' (draft_max, draft_min, draft_p_min, adaptive, lookup_ngram)");
    }
    o = n;
}

KvType parse_kv_type(const std::string& name) {
    if (name == "f16") return KvType::F16;
    if (name == "f32") return KvType::F32;
    if (name == "q8_0" || name == "int8") return KvType::Q8_0;
    raise_error(ErrorCode::InvalidArgument, "kv_type must be 'f16', 'f32' or 'q8_0', not '" + name + "'");
}

/// A str or os.PathLike as a path string.
std::string fs_path(const py::object& path) { return py::str(py::module_::import("os").attr("fspath")(path)); }

py::array_t<float> to_numpy(std::span<const float> values) {
    py::array_t<float> out(std::vector<py::ssize_t>{static_cast<py::ssize_t>(values.size())});
    if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * sizeof(float));
    return out;
}

/// A prompt (text or token ids) and the sampler a generation uses: either the caller's
/// genie.Sampler (kept alive by `sampler_ref`) or one made from the sampling keywords.
struct Request {
    std::variant<std::string, std::vector<TokenId>> prompt;
    GenerateOptions options;
    py::object sampler_ref;
    std::unique_ptr<PySampler> owned_sampler;
    PySampler* sampler = nullptr;

    Request(const py::object& prompt_object, const py::object& sampler_object, const SamplingArgs& sampling,
            int32_t max_tokens, bool stop_on_eog, bool add_special, bool parse_special,
            const std::vector<std::string>& stop, const py::object& constraint = py::none()) {
        if (!constraint.is_none()) options.constraint = py::cast<PyConstraint&>(constraint).constraint;
        if (py::isinstance<py::str>(prompt_object))
            prompt = py::cast<std::string>(prompt_object);
        else
            prompt = py::cast<std::vector<TokenId>>(prompt_object);
        options.max_tokens = max_tokens;
        options.stop_on_eog = stop_on_eog;
        options.add_special = add_special;
        options.parse_special = parse_special;
        options.stop = stop;
        if (!sampler_object.is_none()) {
            if (sampling.any())
                raise_error(ErrorCode::InvalidArgument,
                            "give either sampler= or sampling keywords (temperature=, top_k= ...), not both");
            sampler = py::cast<PySampler*>(sampler_object);
            sampler_ref = sampler_object;
        } else {
            owned_sampler = std::make_unique<PySampler>(sampling.options());
            sampler = owned_sampler.get();
        }
    }

    // A chat (Session.chat / chat_stream): the messages and the options they render with.
    bool is_chat = false;
    std::vector<ChatMessage> messages;
    ChatOptions chat;
    bool parse_tools = true;

    // Runs without the GIL (the caller released it).
    ChatResult run_chat(Session& session, const PieceCallback& on_piece) {
        return session.chat(messages, sampler->sampler, chat, on_piece);
    }

    // Runs without the GIL (the caller released it).
    GenerateResult run(Session& session, const PieceCallback& on_piece) {
        if (const auto* text = std::get_if<std::string>(&prompt))
            return session.generate(*text, sampler->sampler, options, on_piece);
        const auto& tokens = std::get<std::vector<TokenId>>(prompt);
        if (tokens.empty()) raise_error(ErrorCode::InvalidArgument, "the prompt is empty (no tokens)");
        return session.generate(std::span<const TokenId>(tokens), sampler->sampler, options, on_piece);
    }
};

/// The PieceCallback of a Python callback (none when it is None); an exception it raises
/// stops the generation and lands in `error`.
GenerateResult generate(PySession& self, const py::object& prompt, int32_t max_tokens, const py::object& sampler,
                        const SamplingArgs& sampling, bool stop_on_eog, bool add_special, bool parse_special,
                        const std::vector<std::string>& stop, const py::object& constraint, const py::object& callback) {
    Request request(prompt, sampler, sampling, max_tokens, stop_on_eog, add_special, parse_special, stop, constraint);
    request.options.speculative = self.speculative;
    BusyScope session_busy(self.busy, "the session");
    BusyScope sampler_busy(request.sampler->busy, "the sampler");
    std::exception_ptr callback_error;
    const PieceCallback on_piece = python_piece_callback(callback, callback_error);
    GenerateResult result;
    {
        py::gil_scoped_release release;
        result = request.run(self.session, on_piece);
    }
    if (callback_error) std::rethrow_exception(callback_error);
    return result;
}

/// genie.Stream: iterates the pieces of a generation running on a worker thread.
class Stream {
public:
    Stream(py::object session_object, std::unique_ptr<Request> request)
        : session_ref_(std::move(session_object)), request_(std::move(request)) {
        session_ = py::cast<PySession*>(session_ref_);
        session_->busy.acquire("the session");
        try {
            request_->sampler->busy.acquire("the sampler");
        } catch (...) {
            session_->busy.release();
            throw;
        }
        auto state = state_;
        Session* session = &session_->session;
        Request* req = request_.get();
        worker_ = std::thread([state, session, req] {
            GenerateResult result;
            ChatResult chat;
            std::exception_ptr error;
            const PieceCallback queue_piece = [&](const Piece& piece) {
                std::lock_guard<std::mutex> lock(state->mutex);
                state->queue.push_back(piece);
                state->cv.notify_one();
                return true;
            };
            try {
                if (req->is_chat)
                    chat = req->run_chat(*session, queue_piece);
                else
                    result = req->run(*session, queue_piece);
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard<std::mutex> lock(state->mutex);
            state->result = std::move(result);
            state->chat = std::move(chat);
            state->error = error;
            state->done = true;
            state->cv.notify_one();
        });
    }

    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream() {
        try {
            close();
        } catch (...) {
        }
    }

    Piece next() {
        std::optional<Piece> piece;
        {
            py::gil_scoped_release release;
            std::unique_lock<std::mutex> lock(state_->mutex);
            state_->cv.wait(lock, [&] { return !state_->queue.empty() || state_->done; });
            if (!state_->queue.empty()) {
                piece = std::move(state_->queue.front());
                state_->queue.pop_front();
            }
        }
        if (piece) return std::move(*piece);
        finish();
        if (error_) {
            const std::exception_ptr error = error_;
            error_ = nullptr;  // raised once
            std::rethrow_exception(error);
        }
        throw py::stop_iteration();
    }

    /// Stops the generation (if it still runs) and waits for the worker.
    void close() {
        if (finished_) return;
        session_->session.cancel();
        finish();
    }

    /// None until exhausted; then the GenerateResult (stream) or the chat dict (chat_stream).
    py::object result() const { return result_; }

private:
    struct State {
        std::mutex mutex;
        std::condition_variable cv;
        std::deque<Piece> queue;
        bool done = false;
        std::exception_ptr error;
        GenerateResult result;
        ChatResult chat;
    };

    void finish() {
        if (finished_) return;
        {
            py::gil_scoped_release release;
            if (worker_.joinable()) worker_.join();
        }
        finished_ = true;
        request_->sampler->busy.release();
        session_->busy.release();
        if (state_->error) {
            error_ = state_->error;
        } else if (request_->is_chat) {
            result_ = chat_result_dict(state_->chat, request_->parse_tools);
        } else {
            result_ = py::cast(std::move(state_->result));
        }
    }

    py::object session_ref_;
    PySession* session_ = nullptr;
    std::unique_ptr<Request> request_;
    std::shared_ptr<State> state_ = std::make_shared<State>();
    std::thread worker_;
    bool finished_ = false;
    std::exception_ptr error_;
    py::object result_ = py::none();
};

// The keyword arguments generate() and stream() share.
#define GENIE_GENERATE_ARGS                                                                                    \
    py::arg("prompt"), py::kw_only(), py::arg("max_tokens") = 256, py::arg("sampler") = py::none(),          \
        py::arg("temperature") = py::none(), py::arg("top_k") = py::none(), py::arg("top_p") = py::none(),   \
        py::arg("min_p") = py::none(), py::arg("seed") = py::none(), py::arg("typical_p") = py::none(),      \
        py::arg("penalty_last_n") = py::none(), py::arg("repeat_penalty") = py::none(),                      \
        py::arg("frequency_penalty") = py::none(), py::arg("presence_penalty") = py::none(),                 \
        py::arg("stop_on_eog") = true, py::arg("add_special") = true, py::arg("parse_special") = true,        \
        py::arg("stop") = std::vector<std::string>{}, py::arg("constraint") = py::none()

SamplingArgs sampling_args(std::optional<float> temperature, std::optional<int32_t> top_k, std::optional<float> top_p,
                           std::optional<float> min_p, std::optional<uint32_t> seed, std::optional<float> typical_p,
                           std::optional<int32_t> penalty_last_n, std::optional<float> repeat_penalty,
                           std::optional<float> frequency_penalty, std::optional<float> presence_penalty) {
    SamplingArgs s;
    s.temperature = temperature;
    s.top_k = top_k;
    s.top_p = top_p;
    s.min_p = min_p;
    s.seed = seed;
    s.typical_p = typical_p;
    s.penalty_last_n = penalty_last_n;
    s.repeat_penalty = repeat_penalty;
    s.frequency_penalty = frequency_penalty;
    s.presence_penalty = presence_penalty;
    return s;
}


/// The request of Session.chat / chat_stream: the messages and their options. A forced
/// tool_choice builds the tool-call constraint (cached per session).
std::unique_ptr<Request> chat_request(PySession& self, const py::list& messages, int32_t max_tokens,
                                      const py::object& sampler, const SamplingArgs& sampling,
                                      const std::vector<std::string>& stop, const py::object& tools,
                                      const py::object& tool_choice, std::optional<bool> parallel_tool_calls,
                                      const py::object& constraint, std::optional<bool> think) {
    auto request = std::make_unique<Request>(py::str(""), sampler, sampling, max_tokens, true, true, true, stop, constraint);
    request->is_chat = true;
    request->messages = messages_from_python(messages);
    ChatOptions& options = request->chat;
    request->options.speculative = self.speculative;
    options.generate = request->options;
    options.enable_thinking = think;
    options.parallel_tool_calls = parallel_tool_calls.value_or(true);
    const ToolChoiceArgs choice = tool_choice_args(tools, tool_choice, options);
    request->parse_tools = choice.parse_tools;
    if (choice.forced) {
        if (options.generate.constraint)
            raise_error(ErrorCode::InvalidArgument, "constraint= and a forced tool_choice cannot both constrain the answer");
        const std::string schema = tool_call_schema(options.tools_json, choice.function, parallel_tool_calls.value_or(false));
        if (self.tool_key != schema || !self.tool_constraint) {
            py::gil_scoped_release release;
            self.tool_constraint = JsonConstraint::from_schema(schema, self.session.model().tokenizer(),
                                                               tool_call_constraint_options());
            self.tool_key = schema;
        }
        options.generate.constraint = self.tool_constraint;
    }
    if (options.generate.constraint && !think) options.enable_thinking = false;
    return request;
}

/// Session.chat: renders the messages (prepare_chat, via Session::chat), generates the
/// answer and returns a dict with every tool call.
py::dict chat(PySession& self, Request& request, const py::object& callback) {
    BusyScope session_busy(self.busy, "the session");
    BusyScope sampler_busy(request.sampler->busy, "the sampler");
    std::exception_ptr callback_error;
    const PieceCallback on_piece = python_piece_callback(callback, callback_error);
    ChatResult result;
    {
        py::gil_scoped_release release;
        result = request.run_chat(self.session, on_piece);
    }
    if (callback_error) std::rethrow_exception(callback_error);
    return chat_result_dict(result, request.parse_tools);
}

}  // namespace

const char* finish_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::Stop: return "stop";
        case FinishReason::Length: return "length";
        case FinishReason::Cancelled: return "cancelled";
        case FinishReason::Timeout: return "timeout";
    }
    return "unknown";
}

PieceCallback python_piece_callback(const py::object& callback, std::exception_ptr& error) {
    if (callback.is_none()) return {};
    return [&callback, &error](const Piece& piece) {
        py::gil_scoped_acquire acquire;
        try {
            const py::object keep_going = callback(piece);
            // Only an explicit False stops; None (no return statement) continues.
            return !(py::isinstance<py::bool_>(keep_going) && !py::cast<bool>(keep_going));
        } catch (...) {
            error = std::current_exception();
            return false;
        }
    };
}

ToolChoiceArgs tool_choice_args(const py::object& tools, const py::object& tool_choice, ChatOptions& options) {
    ToolChoiceArgs out;
    if (!tools.is_none()) options.tools_json = py::cast<std::string>(py::module_::import("json").attr("dumps")(tools));
    if (py::isinstance<py::str>(tool_choice)) {
        const std::string choice = py::cast<std::string>(tool_choice);
        if (choice == "none") out.parse_tools = false;
        else if (choice == "required") out.forced = true;
        else if (choice != "auto")
            raise_error(ErrorCode::InvalidArgument, "tool_choice must be 'auto', 'none', 'required' or "
                                                    "{'type': 'function', 'function': {'name': ...}}, not '" + choice + "'");
    } else {
        const py::dict d = py::cast<py::dict>(tool_choice);
        if (!d.contains("function")) raise_error(ErrorCode::InvalidArgument, "tool_choice dict needs 'function'");
        out.function = py::cast<std::string>(py::cast<py::dict>(d["function"])["name"]);
        out.forced = true;
    }
    if (out.forced && options.tools_json.empty())
        raise_error(ErrorCode::InvalidArgument, "tool_choice asks for a tool call but tools is empty");
    return out;
}

namespace {
py::dict call_dict(const ToolCall& c, size_t index) {
    py::dict d;
    d["id"] = c.id.empty() ? "call_" + std::to_string(index) : c.id;
    d["name"] = c.name;
    d["arguments"] = c.arguments_json;
    if (!c.error.empty()) d["error"] = c.error;
    return d;
}
}  // namespace

py::dict chat_result_dict(const ChatResult& result, bool parse_tools) {
    py::dict out;
    out["text"] = result.generation.text;
    out["reasoning"] = result.generation.reasoning;
    py::list calls, rejected;
    if (parse_tools) {
        for (size_t i = 0; i < result.tool_calls.size(); ++i) calls.append(call_dict(result.tool_calls[i], i));
        for (size_t i = 0; i < result.rejected_tool_calls.size(); ++i)
            rejected.append(call_dict(result.rejected_tool_calls[i], i));
    }
    out["tool_calls"] = calls;
    out["rejected_tool_calls"] = rejected;
    out["finish_reason"] = parse_tools && !result.tool_calls.empty() && result.generation.finish_reason == FinishReason::Stop
                               ? "tool_calls"
                               : finish_name(result.generation.finish_reason);
    out["prompt_tokens"] = result.generation.prompt_tokens;
    out["completion_tokens"] = result.generation.completion_tokens;
    out["generation"] = result.generation;
    return out;
}

void register_session(py::module_& m) {
    py::class_<Piece>(m, "Piece", "One streamed piece: complete UTF-8 text and the token that completed it.")
        .def_readonly("text", &Piece::text, "str (may be '' when the token only began a character)")
        .def_readonly("token", &Piece::token, "int; -1 for the final flush of held-back text")
        .def_property_readonly(
            "kind", [](const Piece& p) { return p.kind == PieceKind::Reasoning ? "reasoning" : "content"; },
            "'content' (the answer) or 'reasoning' (inside <think>...</think>, chat only)")
        .def("__str__", [](const Piece& p) { return p.text; })
        .def("__repr__", [](const Piece& p) { return "<genie.Piece " + std::to_string(p.token) + " " + py::repr(py::str(p.text)).cast<std::string>() + ">"; });

    py::class_<Timings>(m, "Timings", "Milliseconds and rates of one generation.")
        .def_readonly("load_ms", &Timings::load_ms)
        .def_readonly("prompt_eval_ms", &Timings::prompt_eval_ms)
        .def_readonly("time_to_first_token_ms", &Timings::time_to_first_token_ms)
        .def_readonly("decode_ms", &Timings::decode_ms)
        .def_readonly("prompt_tokens_per_s", &Timings::prompt_tokens_per_s)
        .def_readonly("decode_tokens_per_s", &Timings::decode_tokens_per_s);

    py::class_<GenerateResult>(m, "GenerateResult", "The outcome of Session.generate.")
        .def_readonly("text", &GenerateResult::text)
        .def_readonly("tokens", &GenerateResult::tokens)
        .def_property_readonly("finish_reason", [](const GenerateResult& r) { return finish_name(r.finish_reason); },
                               "'stop' (end-of-generation token or callback returned False), 'length' or 'cancelled'")
        .def_readonly("prompt_tokens", &GenerateResult::prompt_tokens)
        .def_readonly("reused_prompt_tokens", &GenerateResult::reused_prompt_tokens)
        .def_readonly("completion_tokens", &GenerateResult::completion_tokens)
        .def_readonly("draft_tokens", &GenerateResult::draft_tokens, "tokens proposed by speculative decoding")
        .def_readonly("accepted_draft_tokens", &GenerateResult::accepted_draft_tokens,
                      "proposed tokens the target kept")
        .def_readonly("timings", &GenerateResult::timings)
        .def("__repr__", [](const GenerateResult& r) {
            return "<genie.GenerateResult " + std::string(finish_name(r.finish_reason)) + ", " +
                   std::to_string(r.completion_tokens) + " tokens>";
        });

    py::class_<Stream>(m, "Stream",
                       "Iterator over the pieces of a generation running on a worker thread. `result` is set once "
                       "it is exhausted; close() (or leaving a `with` block) cancels what is left.")
        .def("__iter__", [](py::object self) { return self; })
        .def("__next__", &Stream::next)
        .def("close", &Stream::close)
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](Stream& s, const py::args&) { s.close(); })
        .def_property_readonly("result", &Stream::result,
                               "None until exhausted; then the GenerateResult (stream) or chat's dict (chat_stream)");

    py::class_<PySession>(m, "Session",
                          "One conversation with a model: owns a KV cache that persists between calls (a prompt "
                          "that extends what the cache holds evaluates only the new suffix). One call at a time "
                          "(genie.BusyError otherwise), except cancel().")
        .def(py::init([](const Model& model, int32_t context_length, int32_t threads, int32_t batch_size,
                         const std::string& kv_type, std::optional<Model> draft_model, int32_t draft_threads) {
                 SessionOptions o;
                 o.context_length = context_length;
                 o.threads = threads;
                 o.batch_size = batch_size;
                 o.kv_type = parse_kv_type(kv_type);
                 o.draft_model = std::move(draft_model);
                 o.draft_threads = draft_threads;
                 py::gil_scoped_release release;
                 return new PySession(model, o);
             }),
             py::arg("model"), py::kw_only(), py::arg("context_length") = 0, py::arg("threads") = 0,
             py::arg("batch_size") = 512, py::arg("kv_type") = "f16", py::arg("draft_model") = py::none(),
             py::arg("draft_threads") = 0,
             "context_length 0 = min(training context, 4096); threads 0 = all; kv_type 'f16', 'f32' or 'q8_0' (INT8). "
             "draft_model: a Model with the same vocabulary that proposes tokens for speculative decoding "
             "(docs/speculative.md; tune with Session.speculative).")
        .def_property(
            "speculative", [](const PySession& self) { return speculative_dict(self.speculative); },
            [](PySession& self, const py::dict& d) { set_speculative(self.speculative, d); },
            "Speculative decoding options of every call (dict: draft_max, draft_min, draft_p_min, adaptive, "
            "lookup_ngram); speculation runs with draft_max > 0 and a draft_model or lookup_ngram > 0.")
        .def(
            "generate",
            [](PySession& self, const py::object& prompt, int32_t max_tokens, const py::object& sampler,
               std::optional<float> temperature, std::optional<int32_t> top_k, std::optional<float> top_p,
               std::optional<float> min_p, std::optional<uint32_t> seed, std::optional<float> typical_p,
               std::optional<int32_t> penalty_last_n, std::optional<float> repeat_penalty,
               std::optional<float> frequency_penalty, std::optional<float> presence_penalty, bool stop_on_eog,
               bool add_special, bool parse_special, const std::vector<std::string>& stop,
               const py::object& constraint, const py::object& callback) {
                return generate(self, prompt, max_tokens, sampler,
                                sampling_args(temperature, top_k, top_p, min_p, seed, typical_p, penalty_last_n,
                                              repeat_penalty, frequency_penalty, presence_penalty),
                                stop_on_eog, add_special, parse_special, stop, constraint, callback);
            },
            GENIE_GENERATE_ARGS, py::arg("callback") = py::none(),
            "Generates after `prompt` (str, or a list of token ids). Sampling: pass sampler=genie.Sampler(...) "
            "or the keywords (default greedy). callback(piece) runs on this thread with the GIL held; returning "
            "False stops. The GIL is released while the model runs. Returns a GenerateResult.")
        .def(
            "stream",
            [](py::object self, const py::object& prompt, int32_t max_tokens, const py::object& sampler,
               std::optional<float> temperature, std::optional<int32_t> top_k, std::optional<float> top_p,
               std::optional<float> min_p, std::optional<uint32_t> seed, std::optional<float> typical_p,
               std::optional<int32_t> penalty_last_n, std::optional<float> repeat_penalty,
               std::optional<float> frequency_penalty, std::optional<float> presence_penalty, bool stop_on_eog,
               bool add_special, bool parse_special, const std::vector<std::string>& stop,
               const py::object& constraint) {
                auto request = std::make_unique<Request>(
                    prompt, sampler,
                    sampling_args(temperature, top_k, top_p, min_p, seed, typical_p, penalty_last_n, repeat_penalty,
                                  frequency_penalty, presence_penalty),
                    max_tokens, stop_on_eog, add_special, parse_special, stop, constraint);
                request->options.speculative = py::cast<PySession&>(self).speculative;
                return std::make_unique<Stream>(std::move(self), std::move(request));
            },
            GENIE_GENERATE_ARGS,
            "Like generate, but returns a genie.Stream: `for piece in session.stream(...)` yields genie.Piece "
            "objects as they are produced; stream.result holds the GenerateResult afterwards.")
        .def(
            "chat",
            [](PySession& self, const py::list& messages, int32_t max_tokens, const py::object& sampler,
               std::optional<float> temperature, std::optional<int32_t> top_k, std::optional<float> top_p,
               std::optional<float> min_p, std::optional<uint32_t> seed, const std::vector<std::string>& stop,
               const py::object& tools, const py::object& tool_choice, std::optional<bool> parallel_tool_calls,
               const py::object& constraint, std::optional<bool> think, const py::object& callback) {
                const auto request =
                    chat_request(self, messages, max_tokens, sampler,
                                 sampling_args(temperature, top_k, top_p, min_p, seed, {}, {}, {}, {}, {}), stop, tools,
                                 tool_choice, parallel_tool_calls, constraint, think);
                return chat(self, *request, callback);
            },
            py::arg("messages"), py::kw_only(), py::arg("max_tokens") = 256, py::arg("sampler") = py::none(),
            py::arg("temperature") = py::none(), py::arg("top_k") = py::none(), py::arg("top_p") = py::none(),
            py::arg("min_p") = py::none(), py::arg("seed") = py::none(), py::arg("stop") = std::vector<std::string>{},
            py::arg("tools") = py::none(), py::arg("tool_choice") = "auto", py::arg("parallel_tool_calls") = py::none(),
            py::arg("constraint") = py::none(), py::arg("think") = py::none(), py::arg("callback") = py::none(),
            "Renders `messages` (dicts: role, content, and tool_calls / tool_call_id / name so a tool's result goes "
            "back into the conversation) with the model's chat template and generates the answer. tools: a list of "
            "OpenAI tool definitions; tool_choice 'auto' (calls of tools not offered, or with arguments that do not "
            "follow the tool's schema, are not calls), 'none', 'required' or {'type': 'function', 'function': "
            "{'name': ...}} (the answer is constrained to such a call). constraint: a genie.Constraint. Returns a "
            "dict: text, reasoning, tool_calls [{'id', 'name', 'arguments'}], rejected_tool_calls (with 'error'), "
            "finish_reason ('tool_calls' when there are calls), prompt_tokens, completion_tokens, generation.")
        .def(
            "chat_stream",
            [](py::object self, const py::list& messages, int32_t max_tokens, const py::object& sampler,
               std::optional<float> temperature, std::optional<int32_t> top_k, std::optional<float> top_p,
               std::optional<float> min_p, std::optional<uint32_t> seed, const std::vector<std::string>& stop,
               const py::object& tools, const py::object& tool_choice, std::optional<bool> parallel_tool_calls,
               const py::object& constraint, std::optional<bool> think) {
                auto request = chat_request(py::cast<PySession&>(self), messages, max_tokens, sampler,
                                            sampling_args(temperature, top_k, top_p, min_p, seed, {}, {}, {}, {}, {}),
                                            stop, tools, tool_choice, parallel_tool_calls, constraint, think);
                return std::make_unique<Stream>(std::move(self), std::move(request));
            },
            py::arg("messages"), py::kw_only(), py::arg("max_tokens") = 256, py::arg("sampler") = py::none(),
            py::arg("temperature") = py::none(), py::arg("top_k") = py::none(), py::arg("top_p") = py::none(),
            py::arg("min_p") = py::none(), py::arg("seed") = py::none(), py::arg("stop") = std::vector<std::string>{},
            py::arg("tools") = py::none(), py::arg("tool_choice") = "auto", py::arg("parallel_tool_calls") = py::none(),
            py::arg("constraint") = py::none(), py::arg("think") = py::none(),
            "Like chat, but returns a genie.Stream: `for piece in session.chat_stream(messages)` yields genie.Piece "
            "objects (piece.kind 'content' or 'reasoning') as they are produced; stream.result holds chat's dict "
            "(tool calls included) afterwards.")
        .def(
            "evaluate",
            [](PySession& self, const std::vector<TokenId>& tokens) {
                BusyScope busy(self.busy, "the session");
                std::span<const float> logits;
                {
                    py::gil_scoped_release release;
                    logits = self.session.evaluate(tokens);
                }
                return to_numpy(logits);
            },
            py::arg("tokens"),
            "Evaluates `tokens` as the whole sequence (the cached prefix is reused) and returns the logits of the "
            "last token: a float32 numpy array of n_vocab values (a copy).")
        .def(
            "last_logits", [](PySession& self) { return to_numpy(self.session.last_logits()); },
            "Logits of the last evaluated token (a copy; empty before any evaluation).")
        .def_property_readonly(
            "cached_tokens",
            [](PySession& self) {
                const auto t = self.session.cached_tokens();
                return std::vector<TokenId>(t.begin(), t.end());
            },
            "The tokens the KV cache holds.")
        .def_property_readonly("context_length", [](PySession& self) { return self.session.context_length(); })
        .def(
            "reset",
            [](PySession& self) {
                BusyScope busy(self.busy, "the session");
                self.session.reset();
            },
            "Empties the KV cache.")
        .def(
            "cancel", [](PySession& self) { self.session.cancel(); },
            "Asks a running generate/stream to stop (finish_reason 'cancelled'). Any thread.")
        .def(
            "save_state",
            [](PySession& self, const py::object& path) {
                const std::string p = fs_path(path);
                BusyScope busy(self.busy, "the session");
                py::gil_scoped_release release;
                return self.session.save_state(p);
            },
            py::arg("path"),
            "Saves the KV cache (its tokens and their keys/values) to `path` atomically (temporary file, fsync, "
            "rename); returns the file's size in bytes. docs/kv-cache.md.")
        .def(
            "load_state",
            [](PySession& self, const py::object& path) {
                const std::string p = fs_path(path);
                BusyScope busy(self.busy, "the session");
                py::gil_scoped_release release;
                self.session.load_state(p);
            },
            py::arg("path"),
            "Replaces the KV cache with a state save_state wrote (same model, KV type and shape). Raises "
            "genie.FormatError (truncated/corrupt/not a KV file), genie.InvalidArgumentError (another model, KV "
            "type or shape, too many tokens), genie.NotFoundError; the session is then unchanged.");

    py::class_<KvCacheDir>(m, "KvCacheDir",
                           "A folder of saved session states under keys (e.g. conversation ids) within a size "
                           "budget; the least recently used entries are evicted. docs/kv-cache.md.")
        .def(py::init([](const py::object& dir, uint64_t max_bytes) { return new KvCacheDir(fs_path(dir), max_bytes); }),
             py::arg("dir"), py::arg("max_bytes") = 0, "max_bytes 0 = no limit. Creates the folder when missing.")
        .def(
            "store",
            [](KvCacheDir& self, const std::string& key, PySession& session) {
                BusyScope busy(session.busy, "the session");
                py::gil_scoped_release release;
                return self.store(key, session.session);
            },
            py::arg("key"), py::arg("session"),
            "Saves the session's state under `key` and evicts the least recently used entries beyond the budget. "
            "False when the state alone is larger than the budget (nothing kept).")
        .def(
            "restore",
            [](KvCacheDir& self, const std::string& key, PySession& session) {
                BusyScope busy(session.busy, "the session");
                py::gil_scoped_release release;
                return self.restore(key, session.session);
            },
            py::arg("key"), py::arg("session"),
            "Loads `key`'s state into the session: True, or False when there is none or it does not fit this "
            "session (a corrupt entry is deleted).")
        .def("remove", &KvCacheDir::remove, py::arg("key"), "Deletes `key`'s entry; False when there was none.")
        .def("path_for", [](const KvCacheDir& self, const std::string& key) { return self.path_for(key).string(); },
             py::arg("key"))
        .def_property_readonly("size_bytes", &KvCacheDir::size_bytes)
        .def_property_readonly("max_bytes", &KvCacheDir::max_bytes);
}

}  // namespace genie::python
