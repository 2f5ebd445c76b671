// genie.Model: a loaded GGUF model (immutable; any number of threads and Sessions may
// share it). Tokenizer and chat-template helpers hang off it.
#include "bindings.hpp"

#include <genie/chat.hpp>
#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>
#include <genie/tokenizer.hpp>

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <string>
#include <vector>

namespace py = pybind11;

namespace genie::python {

BackendKind parse_backend(const std::string& name) {
    if (name == "auto") return BackendKind::Auto;
    if (name == "cpu") return BackendKind::Cpu;
    if (name == "cuda") return BackendKind::Cuda;
    raise_error(ErrorCode::InvalidArgument, "backend must be 'auto', 'cpu' or 'cuda', not '" + name + "'");
}

namespace {

Model load(const std::filesystem::path& path, const std::string& backend) {
    ModelOptions options;
    options.backend = parse_backend(backend);
    py::gil_scoped_release release;
    return Model::load(path, options);
}

py::dict info_dict(const Model& model) {
    const ModelInfo& i = model.info();
    const Tokenizer& tok = model.tokenizer();
    py::dict d;
    d["architecture"] = i.architecture;
    d["name"] = i.name;
    d["parameter_count"] = i.parameter_count;
    d["file_size"] = i.file_size;
    d["weight_bytes"] = i.weight_bytes;
    d["decode_bytes"] = i.decode_bytes;
    d["n_vocab"] = i.n_vocab;
    d["n_ctx_train"] = i.n_ctx_train;
    d["n_embd"] = i.n_embd;
    d["n_layer"] = i.n_layer;
    d["n_head"] = i.n_head;
    d["n_head_kv"] = i.n_head_kv;
    d["head_dim"] = i.head_dim;
    d["n_ff"] = i.n_ff;
    d["bos"] = tok.bos();
    d["eos"] = tok.eos();
    d["load_time_ms"] = model.load_time_ms();
    return d;
}

std::string chat_template_source(const Model& model) {
    return model.chat_template();
}

std::string apply_chat_template(const Model& model, const py::list& messages, bool add_generation_prompt) {
    const std::vector<ChatMessage> list = messages_from_python(messages);
    return render_chat(model, list, ChatOptions{}, add_generation_prompt);  // the template parsed once per Model
}

}  // namespace

void register_model(py::module_& m) {
    py::class_<Model>(m, "Model",
                      "A model loaded from a GGUF file: immutable, shared by any number of Sessions and threads.")
        .def(py::init(&load), py::arg("path"), py::arg("backend") = "auto",
             "Loads and validates a GGUF file. backend: 'auto', 'cpu' or 'cuda'. Raises genie.NotFoundError, "
             "genie.FormatError, genie.UnsupportedError.")
        .def_property_readonly("info", &info_dict,
                               "dict: architecture, name, parameter_count, file_size, weight_bytes, decode_bytes, n_vocab, "
                               "n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, bos, eos, "
                               "load_time_ms")
        .def_property_readonly("n_vocab", [](const Model& model) { return model.info().n_vocab; })
        .def_property_readonly("chat_template", &chat_template_source,
                               "The GGUF's tokenizer.chat_template ('' when it has none).")
        .def(
            "tokenize",
            [](const Model& model, const std::string& text, bool add_special, bool parse_special) {
                TokenizeOptions options;
                options.add_special = add_special;
                options.parse_special = parse_special;
                py::gil_scoped_release release;
                return model.tokenizer().tokenize(text, options);
            },
            py::arg("text"), py::arg("add_special") = false, py::arg("parse_special") = false,
            "Token ids of `text` (str, UTF-8). add_special adds BOS/EOS as the vocabulary asks; "
            "parse_special recognises control tokens written as text.")
        .def(
            "detokenize",
            [](const Model& model, const std::vector<TokenId>& tokens, bool remove_special, bool render_special) {
                DetokenizeOptions options;
                options.remove_special = remove_special;
                options.render_special = render_special;
                options.replace_invalid_utf8 = true;  // a Python str must be valid
                return model.tokenizer().detokenize(tokens, options);
            },
            py::arg("tokens"), py::arg("remove_special") = false, py::arg("render_special") = false,
            "The text of `tokens` (llama.cpp's llama_detokenize; invalid UTF-8 becomes U+FFFD).")
        .def(
            "token_to_piece",
            [](const Model& model, TokenId token, bool render_special) {
                return py::bytes(model.tokenizer().token_to_piece(token, render_special));
            },
            py::arg("token"), py::arg("render_special") = false, "The raw bytes of one token.")
        .def(
            "is_eog", [](const Model& model, TokenId token) { return model.tokenizer().is_eog(token); },
            py::arg("token"), "True for an end-of-generation token.")
        .def("apply_chat_template", &apply_chat_template, py::arg("messages"), py::arg("add_generation_prompt") = true,
             "Renders [{'role': ..., 'content': ...}, ...] with the model's chat template (ChatML when the GGUF "
             "has none) and returns the prompt text.")
        .def("__repr__", [](const Model& model) {
            return "<genie.Model " + model.info().architecture + " '" + model.info().name + "'>";
        });
}

}  // namespace genie::python
