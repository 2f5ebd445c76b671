// genie.Engine: one model's lifecycle (load, swap, unload), health and warm conversations
// by id, as genie::Engine (docs/engine.md). The GIL is released while the engine loads,
// waits for a turn or generates; a Python callback re-acquires it per piece.
#include "bindings.hpp"

#include <genie/engine.hpp>
#include <genie/error.hpp>

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <optional>
#include <string>

namespace py = pybind11;

namespace genie::python {
namespace {

SamplerOptions sampler_options(std::optional<float> temperature, std::optional<int32_t> top_k,
                               std::optional<float> top_p, std::optional<float> min_p, std::optional<uint32_t> seed) {
    return SamplingArgs{.temperature = temperature, .top_p = top_p, .min_p = min_p, .top_k = top_k, .seed = seed}.options();
}

py::dict status_dict(const EngineStatus& s) {
    py::dict d;
    d["state"] = engine_state_name(s.state);
    d["health"] = engine_health_name(s.health);
    d["health_reason"] = s.health_reason;
    d["loading"] = s.loading;
    d["load_progress"] = s.load_progress;
    d["model_path"] = s.model_path;
    d["model_name"] = s.model_name;
    d["architecture"] = s.architecture;
    d["context_length"] = s.context_length;
    d["n_ctx_train"] = s.n_ctx_train;
    d["last_error"] = s.last_error;
    d["last_error_code"] = error_code_name(s.last_error_code);
    d["active_requests"] = s.active_requests;
    d["queued_requests"] = s.queued_requests;
    d["conversations"] = s.conversations;
    d["seconds_since_token"] = s.seconds_since_token;
    py::dict memory;
    memory["weights"] = s.memory.weights;
    memory["kv"] = s.memory.kv;
    memory["scratch"] = s.memory.scratch;
    memory["device"] = s.memory.device;
    memory["process_rss"] = s.memory.process_rss;
    d["memory"] = memory;
    const EngineCounters& c = s.counters;
    py::dict counters;
    counters["requests"] = c.requests;
    counters["failures"] = c.failures;
    counters["cancelled"] = c.cancelled;
    counters["rejected_busy"] = c.rejected_busy;
    counters["prompt_tokens"] = c.prompt_tokens;
    counters["reused_tokens"] = c.reused_tokens;
    counters["generated_tokens"] = c.generated_tokens;
    counters["stuck_events"] = c.stuck_events;
    counters["out_of_memory"] = c.out_of_memory;
    counters["loads"] = c.loads;
    counters["load_failures"] = c.load_failures;
    d["counters"] = counters;
    return d;
}

/// Runs a prepared request with the GIL released; the callback's exception is re-raised.
py::dict run(Engine& engine, const EngineChatRequest* chat, const EngineTextRequest* text, const py::object& callback,
             bool parse_tools) {
    std::exception_ptr callback_error;
    const PieceCallback on_piece = python_piece_callback(callback, callback_error);
    EngineChatResult r;
    {
        py::gil_scoped_release release;
        r = chat ? engine.chat(*chat, on_piece) : engine.complete(*text, on_piece);
    }
    if (callback_error) std::rethrow_exception(callback_error);
    py::dict out = chat_result_dict(r.chat, parse_tools);
    out["reused_tokens"] = r.reused_tokens;
    out["warm"] = r.warm;
    out["queue_ms"] = r.queue_ms;
    out["total_ms"] = r.total_ms;
    return out;
}

}  // namespace

void register_engine(py::module_& m) {
    py::class_<Engine>(m, "Engine",
                       "The in-process engine: owns at most one model, loads/swaps/unloads it in the background, "
                       "admits requests by priority (max_concurrent at once, max_queued waiting: beyond, "
                       "genie.BusyError) and keeps a session per conversation id (warm turns). Thread-safe.")
        .def(py::init([](int32_t context_length, int32_t threads, int32_t max_conversations, int32_t max_concurrent,
                         int32_t max_queued, double watchdog_timeout_s, bool keep_one_off_sessions) {
                 EngineOptions o;
                 o.session.context_length = context_length;
                 o.session.threads = threads;
                 o.max_conversations = max_conversations;
                 o.max_concurrent = max_concurrent;
                 o.max_queued = max_queued;
                 o.watchdog_timeout_s = watchdog_timeout_s;
                 o.keep_one_off_sessions = keep_one_off_sessions;
                 return new Engine(o);
             }),
             py::kw_only(), py::arg("context_length") = 0, py::arg("threads") = 0, py::arg("max_conversations") = 4,
             py::arg("max_concurrent") = 1, py::arg("max_queued") = -1, py::arg("watchdog_timeout_s") = 60.0,
             py::arg("keep_one_off_sessions") = false,
             "context_length 0 = min(training context, 4096); max_queued < 0 = no bound; docs/engine.md.")
        .def(
            "load",
            [](Engine& self, const std::filesystem::path& path, const std::string& backend, bool wait) {
                ModelOptions mo;
                mo.backend = parse_backend(backend);
                py::gil_scoped_release release;
                self.load(path, mo);
                if (wait) self.wait();
            },
            py::arg("path"), py::kw_only(), py::arg("backend") = "auto", py::arg("wait") = true,
            "Loads a GGUF file (unloading the current model first). wait=False returns at once: poll status() "
            "or call wait().")
        .def(
            "swap",
            [](Engine& self, const std::filesystem::path& path, const std::string& backend, bool wait) {
                ModelOptions mo;
                mo.backend = parse_backend(backend);
                py::gil_scoped_release release;
                self.swap(path, mo);
                if (wait) self.wait();
            },
            py::arg("path"), py::kw_only(), py::arg("backend") = "auto", py::arg("wait") = true,
            "Loads another model while the current one keeps serving; on failure the old one stays "
            "(health DEGRADED) and the error is raised when waiting.")
        .def(
            "wait",
            [](Engine& self, std::optional<double> timeout_s) {
                py::gil_scoped_release release;
                if (!timeout_s) {
                    self.wait();
                    return true;
                }
                return self.wait_for(std::chrono::milliseconds(static_cast<int64_t>(*timeout_s * 1000)));
            },
            py::arg("timeout_s") = py::none(),
            "Waits for the running load/swap; raises its error. With timeout_s: False while it still runs.")
        .def(
            "unload",
            [](Engine& self) {
                py::gil_scoped_release release;
                self.unload();
            },
            "Cancels running requests, fails queued ones (genie.NotLoadedError), frees the model and every session.")
        .def(
            "warmup",
            [](Engine& self) {
                py::gil_scoped_release release;
                self.warmup();
            },
            "One tiny forward pass and the chat template's parse, so the first request is not slow.")
        .def("status", [](const Engine& self) { return status_dict(self.status()); },
             "A dict: state, health, health_reason, model_path, context_length, memory {...}, counters {...}, "
             "active_requests, queued_requests, conversations, last_error ...")
        .def(
            "health",
            [](const Engine& self) {
                const EngineStatus s = self.status();
                return py::make_tuple(engine_health_name(s.health), s.health_reason);
            },
            "(health, reason): ('OK', ''), ('DEGRADED', 'stuck: ...'), ('FAILED', 'load failed: ...').")
        .def(
            "chat",
            [](Engine& self, const py::list& messages, const std::string& conversation_id, int32_t priority,
               int32_t max_tokens, std::optional<float> temperature, std::optional<int32_t> top_k,
               std::optional<float> top_p, std::optional<float> min_p, std::optional<uint32_t> seed,
               const std::vector<std::string>& stop, const py::object& tools, const py::object& tool_choice,
               std::optional<bool> parallel_tool_calls, const py::object& json_schema, const std::string& grammar,
               bool json_object, std::optional<bool> think, double deadline_s, double idle_timeout_s,
               const py::object& callback) {
                EngineChatRequest r;
                r.conversation_id = conversation_id;
                r.priority = priority;
                r.messages = messages_from_python(messages);
                r.sampler = sampler_options(temperature, top_k, top_p, min_p, seed);
                ChatOptions& o = r.options;
                o.generate.max_tokens = max_tokens;
                o.generate.stop = stop;
                o.generate.deadline_s = deadline_s;
                o.generate.idle_timeout_s = idle_timeout_s;
                o.enable_thinking = think;
                o.parallel_tool_calls = parallel_tool_calls.value_or(true);
                const ToolChoiceArgs choice = tool_choice_args(tools, tool_choice, o);
                const int constraints = (choice.forced ? 1 : 0) + (json_schema.is_none() ? 0 : 1) +
                                        (grammar.empty() ? 0 : 1) + (json_object ? 1 : 0);
                if (constraints > 1)
                    raise_error(ErrorCode::InvalidArgument,
                                "at most one of a forced tool_choice, json_schema, grammar and json_object");
                if (choice.forced) {
                    r.response_format = ResponseFormat::JsonSchema;
                    r.json_schema = tool_call_schema(o.tools_json, choice.function, parallel_tool_calls.value_or(false));
                    r.constraint_options = tool_call_constraint_options();
                } else if (!json_schema.is_none()) {
                    r.response_format = ResponseFormat::JsonSchema;
                    r.json_schema = py::isinstance<py::str>(json_schema)
                                        ? py::cast<std::string>(json_schema)
                                        : py::cast<std::string>(py::module_::import("json").attr("dumps")(json_schema));
                } else if (!grammar.empty()) {
                    r.response_format = ResponseFormat::Grammar;
                    r.grammar = grammar;
                } else if (json_object) {
                    r.response_format = ResponseFormat::JsonObject;
                }
                // A constrained answer is the JSON itself: no think block unless asked for.
                if (r.response_format != ResponseFormat::Text && !think) o.enable_thinking = false;
                return run(self, &r, nullptr, callback, choice.parse_tools);
            },
            py::arg("messages"), py::kw_only(), py::arg("conversation_id") = "", py::arg("priority") = 0,
            py::arg("max_tokens") = 256, py::arg("temperature") = py::none(), py::arg("top_k") = py::none(),
            py::arg("top_p") = py::none(), py::arg("min_p") = py::none(), py::arg("seed") = py::none(),
            py::arg("stop") = std::vector<std::string>{}, py::arg("tools") = py::none(),
            py::arg("tool_choice") = "auto", py::arg("parallel_tool_calls") = py::none(),
            py::arg("json_schema") = py::none(), py::arg("grammar") = "", py::arg("json_object") = false,
            py::arg("think") = py::none(), py::arg("deadline_s") = 0.0, py::arg("idle_timeout_s") = 0.0,
            py::arg("callback") = py::none(),
            "A chat turn on the conversation's session (conversation_id '' = one-off): the same rendering, "
            "tools and answer dict as Session.chat, plus reused_tokens, warm, queue_ms, total_ms. json_schema "
            "(dict or JSON text), grammar (GBNF) or json_object constrain the answer (the engine caches the "
            "constraint). callback(piece) gets genie.Piece objects (piece.kind 'content' or 'reasoning'); "
            "returning False stops. deadline_s / idle_timeout_s end it with finish_reason 'timeout'.")
        .def(
            "complete",
            [](Engine& self, const py::object& prompt, const std::string& conversation_id, int32_t priority,
               int32_t max_tokens, std::optional<float> temperature, std::optional<int32_t> top_k,
               std::optional<float> top_p, std::optional<float> min_p, std::optional<uint32_t> seed,
               const std::vector<std::string>& stop, const py::object& callback) {
                EngineTextRequest r;
                r.conversation_id = conversation_id;
                r.priority = priority;
                if (py::isinstance<py::str>(prompt))
                    r.prompt = py::cast<std::string>(prompt);
                else
                    r.prompt_tokens = py::cast<std::vector<TokenId>>(prompt);
                r.sampler = sampler_options(temperature, top_k, top_p, min_p, seed);
                r.generate.max_tokens = max_tokens;
                r.generate.stop = stop;
                return run(self, nullptr, &r, callback, false);
            },
            py::arg("prompt"), py::kw_only(), py::arg("conversation_id") = "", py::arg("priority") = 0,
            py::arg("max_tokens") = 256, py::arg("temperature") = py::none(), py::arg("top_k") = py::none(),
            py::arg("top_p") = py::none(), py::arg("min_p") = py::none(), py::arg("seed") = py::none(),
            py::arg("stop") = std::vector<std::string>{}, py::arg("callback") = py::none(),
            "A text completion (no chat template): prompt is a str or a list of token ids. Returns the same dict "
            "as chat (no tool calls).")
        .def("cancel", &Engine::cancel, py::arg("conversation_id"), "Cancels the conversation's running request.")
        .def("cancel_all", &Engine::cancel_all, "Cancels every running request.")
        .def(
            "trim",
            [](Engine& self, int32_t keep_idle) {
                py::gil_scoped_release release;
                return self.trim(keep_idle);
            },
            py::arg("keep_idle") = 0, "Frees idle kept sessions except the keep_idle most recent; returns the bytes.")
        .def("forget", &Engine::forget, py::arg("conversation_id"), "Forgets one conversation.")
        .def(
            "set_context_limit",
            [](Engine& self, int32_t n_ctx) {
                py::gil_scoped_release release;
                self.set_context_limit(n_ctx);
            },
            py::arg("n_ctx"), "Tokens of context per session (0 = min(training context, 4096)).");
}

}  // namespace genie::python
