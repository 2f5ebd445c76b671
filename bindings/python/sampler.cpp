// genie.Sampler: picks the next token from logits (llama.cpp's default chain).
#include "bindings.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <map>

namespace py = pybind11;

namespace genie::python {

void register_sampler(py::module_& m) {
    py::class_<PySampler>(m, "Sampler",
                          "Picks tokens from logits: penalties -> top-k -> typical -> top-p -> min-p -> "
                          "temperature -> seeded draw. temperature <= 0 is greedy. One generation at a time.")
        .def(py::init([](float temperature, int32_t top_k, float top_p, float min_p, uint32_t seed, float typical_p,
                         int32_t penalty_last_n, float repeat_penalty, float frequency_penalty,
                         float presence_penalty, const std::map<TokenId, float>& logit_bias) {
                 SamplerOptions o;
                 o.temperature = temperature;
                 o.top_k = top_k;
                 o.top_p = top_p;
                 o.min_p = min_p;
                 o.seed = seed;
                 o.typical_p = typical_p;
                 o.penalty_last_n = penalty_last_n;
                 o.repeat_penalty = repeat_penalty;
                 o.frequency_penalty = frequency_penalty;
                 o.presence_penalty = presence_penalty;
                 o.logit_bias.assign(logit_bias.begin(), logit_bias.end());
                 return new PySampler(o);
             }),
             py::kw_only(), py::arg("temperature") = 0.0f, py::arg("top_k") = 40, py::arg("top_p") = 0.95f,
             py::arg("min_p") = 0.05f, py::arg("seed") = 42u, py::arg("typical_p") = 1.0f,
             py::arg("penalty_last_n") = 64, py::arg("repeat_penalty") = 1.0f, py::arg("frequency_penalty") = 0.0f,
             py::arg("presence_penalty") = 0.0f, py::arg("logit_bias") = std::map<TokenId, float>{},
             "logit_bias: {token: bias} added first (float('-inf') bans a token).")
        .def(
            "sample",
            [](PySampler& s, const py::array_t<float, py::array::c_style | py::array::forcecast>& logits) {
                if (logits.ndim() != 1 || logits.size() == 0)
                    raise_error(ErrorCode::InvalidArgument, "logits must be a non-empty 1-D float array");
                BusyScope busy(s.busy, "the sampler");
                return s.sampler.sample(std::span<const float>(logits.data(), static_cast<size_t>(logits.size())));
            },
            py::arg("logits"), "The token chosen from one float per vocabulary entry.")
        .def(
            "accept",
            [](PySampler& s, TokenId token) {
                BusyScope busy(s.busy, "the sampler");
                s.sampler.accept(token);
            },
            py::arg("token"), "Tells the sampler a token was accepted (feeds the penalties).")
        .def(
            "reset",
            [](PySampler& s) {
                BusyScope busy(s.busy, "the sampler");
                s.sampler.reset();
            },
            "Restores the initial state (RNG from the seed, empty penalty window).")
        .def_property_readonly("temperature", [](const PySampler& s) { return s.sampler.options().temperature; })
        .def_property_readonly("seed", [](const PySampler& s) { return s.sampler.options().seed; });
}

}  // namespace genie::python
