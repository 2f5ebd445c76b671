// genie.Constraint (JSON schema / any object / GBNF grammar), genie.ToolCall,
// genie.ChatResult, the tool helpers, and the conversion of Python message dicts.
#include "bindings.hpp"

#include <genie/model.hpp>

#include <pybind11/stl.h>

namespace py = pybind11;

namespace genie::python {
namespace {

/// A str, or any JSON-serialisable object dumped with json.dumps.
std::string json_text(const py::object& value) {
    if (py::isinstance<py::str>(value)) return py::cast<std::string>(value);
    return py::cast<std::string>(py::module_::import("json").attr("dumps")(value));
}

JsonConstraintOptions constraint_options(int32_t max_whitespace, int32_t max_nesting, uint32_t max_string_length,
                                         uint32_t close_after_bytes) {
    JsonConstraintOptions o;
    o.max_whitespace = max_whitespace;
    o.max_nesting = max_nesting;
    o.max_string_length = max_string_length;
    o.close_after_bytes = close_after_bytes;
    return o;
}

}  // namespace

std::vector<ChatMessage> messages_from_python(const py::list& messages) {
    std::vector<ChatMessage> list;
    for (const py::handle item : messages) {
        const py::dict message = py::cast<py::dict>(item);
        ChatMessage m;
        if (!message.contains("role")) raise_error(ErrorCode::InvalidArgument, "every message needs a 'role'");
        m.role = py::cast<std::string>(message["role"]);
        if (message.contains("content") && !message["content"].is_none())
            m.content = py::cast<std::string>(message["content"]);
        if (message.contains("tool_calls") && !message["tool_calls"].is_none())
            m.tool_calls_json = json_text(py::reinterpret_borrow<py::object>(message["tool_calls"]));
        if (message.contains("tool_call_id") && !message["tool_call_id"].is_none())
            m.tool_call_id = py::cast<std::string>(message["tool_call_id"]);
        if (message.contains("name") && !message["name"].is_none()) m.name = py::cast<std::string>(message["name"]);
        list.push_back(std::move(m));
    }
    return list;
}

void register_chat(py::module_& m) {
    py::class_<PyConstraint, std::shared_ptr<PyConstraint>>(
        m, "Constraint",
        "A compiled output constraint bound to a model's vocabulary (docs/constraints.md). Build once, pass to "
        "Session.generate(constraint=...) or Session.chat(constraint=...) any number of times.")
        .def_static(
            "json_schema",
            [](const Model& model, const py::object& schema, int32_t max_whitespace, int32_t max_nesting,
               uint32_t max_string_length, uint32_t close_after_bytes) {
                const std::string text = json_text(schema);
                auto c = std::make_shared<PyConstraint>();
                {
                    py::gil_scoped_release release;
                    c->constraint = JsonConstraint::from_schema(
                        text, model.tokenizer(),
                        constraint_options(max_whitespace, max_nesting, max_string_length, close_after_bytes));
                }
                c->kind = "json_schema";
                return c;
            },
            py::arg("model"), py::arg("schema"), py::kw_only(), py::arg("max_whitespace") = 2, py::arg("max_nesting") = 8,
            py::arg("max_string_length") = 0, py::arg("close_after_bytes") = 0,
            "A JSON value following `schema` (a dict or JSON text). Raises genie.InvalidArgumentError naming the "
            "schema path of an unsupported keyword (e.g. '#/properties/x/not').")
        .def_static(
            "json_object",
            [](const Model& model, int32_t max_whitespace) {
                auto c = std::make_shared<PyConstraint>();
                {
                    py::gil_scoped_release release;
                    c->constraint = JsonConstraint::any_object(model.tokenizer(), constraint_options(max_whitespace, 8, 0, 0));
                }
                c->kind = "json_object";
                return c;
            },
            py::arg("model"), py::kw_only(), py::arg("max_whitespace") = 2, "Any JSON object.")
        .def_static(
            "grammar",
            [](const Model& model, const std::string& gbnf, const std::string& root) {
                auto c = std::make_shared<PyConstraint>();
                {
                    py::gil_scoped_release release;
                    c->constraint = JsonConstraint::from_grammar(gbnf, model.tokenizer(), {}, root);
                }
                c->kind = "grammar";
                return c;
            },
            py::arg("model"), py::arg("gbnf"), py::kw_only(), py::arg("root") = "root",
            "Text the GBNF grammar (llama.cpp's format) derives from rule `root`. Raises "
            "genie.InvalidArgumentError with the line and column of a syntax error.")
        .def_readonly("kind", &PyConstraint::kind)
        .def(
            "accepts",
            [](const PyConstraint& c, const py::object& text) {
                const std::string bytes = py::isinstance<py::bytes>(text) ? py::cast<std::string>(text)
                                                                         : py::cast<std::string>(py::str(text));
                JsonMatcher matcher(c.constraint);
                return matcher.accept_text(bytes) && matcher.is_complete();
            },
            py::arg("text"), "True when `text` (str or bytes) is a complete output the constraint accepts.")
        .def(
            "accepts_prefix",
            [](const PyConstraint& c, const py::object& text) {
                const std::string bytes = py::isinstance<py::bytes>(text) ? py::cast<std::string>(text)
                                                                         : py::cast<std::string>(py::str(text));
                JsonMatcher matcher(c.constraint);
                return matcher.accept_text(bytes);
            },
            py::arg("text"), "True when `text` can still be completed to an accepted output.")
        .def("__repr__", [](const PyConstraint& c) { return "<genie.Constraint " + c.kind + ">"; });

    m.def(
        "tool_call_schema",
        [](const py::object& tools, const std::string& function, bool parallel) {
            return tool_call_schema(json_text(tools), function, parallel);
        },
        py::arg("tools"), py::kw_only(), py::arg("function") = "", py::arg("parallel") = false,
        "The JSON schema (text) of a forced tool call: {'name': const, 'arguments': that tool's parameters} for "
        "each tool (or only `function`); with parallel, an array of calls too.");
    m.def(
        "json_matches_schema",
        [](const py::object& schema, const std::string& text) { return json_matches_schema(json_text(schema), text); },
        py::arg("schema"), py::arg("json_text"),
        "True when json_text is a JSON value following schema (the constraint's compiler, no model needed).");
}

}  // namespace genie::python
