// End-to-end on the CUDA backend: the golden files of test/golden (llama.cpp's top-20
// logits along its greedy continuation, written by test/golden/make.py) replayed through
// a Model loaded with BackendKind::Cuda, exactly as test/integration/test_golden.cpp does
// on the CPU, with GPU tolerances: the reference is llama.cpp's CPU build, so besides the
// int8 activation rounding the CPU tests already allow for, the GPU differs in summation
// order (warp reductions, cuBLAS), rope's powf and F16 prefill tiles. Tolerance by
// weight type: f32 1e-2, f16 0.1, quantized 1.5 (the CPU test: 1e-3, 5e-2, 1.0). Argmax
// must equal llama.cpp's on every step whose reference top-1/top-2 margin exceeds it.
#include "support/test_support.hpp"

#include <genie/model.hpp>
#include <genie/session.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

using namespace genie;
using nlohmann::json;

namespace {

std::filesystem::path golden_dir() { return std::filesystem::path(GENIE_SOURCE_DIR) / "test" / "golden"; }

std::filesystem::path model_path(const std::string& name) {
    if (name == "stories260K" || name == "llama-2-tiny-random") return test::testdata_dir() / "models" / (name + ".gguf");
    return test::fixture_dir() / (name + ".gguf");
}

double gpu_tolerance(const std::string& name) {
    if (name.find("-f32") != std::string::npos || name == "stories260K") return 1e-2;
    if (name.find("-f16") != std::string::npos || name == "llama-2-tiny-random") return 0.1;
    return 1.5;
}

void check_model_on_cuda(const std::string& name) {
    std::ifstream in(golden_dir() / (name + ".json"));
    REQUIRE(in.good());
    const json golden = json::parse(in);
    const auto path = model_path(name);
    if (!std::filesystem::exists(path))
        FAIL(fmt::format("{} is missing: the ctest fixture 'fixtures' generates it (scripts/make-fixtures)", path.string()));
    ModelOptions mo;
    mo.backend = BackendKind::Cuda;
    const Model model = Model::load(path, mo);
    SessionOptions so;
    so.context_length = 512;
    so.kv_type = golden["settings"]["kv_type"] == "f32" ? KvType::F32 : KvType::F16;
    Session session(model, so);
    const double tolerance = gpu_tolerance(name);
    double max_delta = 0;
    int decisive = 0, decisive_matches = 0, ties = 0;
    for (const json& c : golden["cases"]) {
        INFO(name << " prompt " << json(c["prompt"]).dump());
        const std::vector<TokenId> prompt_tokens = c["prompt_tokens"];
        const std::vector<TokenId> expected = c["tokens"];
        std::vector<TokenId> seq = prompt_tokens;
        size_t first_tie = expected.size();
        for (size_t step = 0; step < expected.size(); ++step) {
            const auto logits = session.evaluate(seq);
            const json& s = c["steps"][step];
            const std::vector<int> ids = s["top_ids"];
            const std::vector<double> values = s["top_logits"];
            for (size_t i = 0; i < ids.size(); ++i)
                max_delta = std::max(max_delta, std::abs(static_cast<double>(logits[ids[i]]) - values[i]));
            const auto ours = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
            if (values[0] - values[1] > tolerance) {
                ++decisive;
                decisive_matches += ours == expected[step];
                if (ours != expected[step]) FAIL_CHECK("step " << step << ": argmax " << ours << ", reference " << expected[step]);
            } else {
                ++ties;
                first_tie = std::min(first_tie, step);
            }
            seq.push_back(expected[step]);
        }
        // Free-running greedy generation (prefill + decode on the device) up to the first tie.
        Sampler greedy(SamplerOptions{.temperature = 0.0f});
        GenerateOptions go;
        go.max_tokens = static_cast<int32_t>(expected.size());
        go.stop_on_eog = false;
        session.reset();
        const GenerateResult r = session.generate(std::span<const TokenId>(prompt_tokens), greedy, go);
        REQUIRE(r.tokens.size() == expected.size());
        CHECK(std::equal(expected.begin(), expected.begin() + static_cast<long>(first_tie), r.tokens.begin()));
    }
    fmt::print("cuda golden {}: argmax equal on {}/{} decisive steps ({} ties); max |dlogit| {:.3g} (tolerance {})\n", name,
               decisive_matches, decisive, ties, max_delta, tolerance);
    CHECK(decisive_matches == decisive);
    CHECK(max_delta <= tolerance);
}

std::vector<std::string> golden_names() {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(golden_dir()))
        if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace

TEST_CASE("cuda golden: every golden model matches llama.cpp on the CUDA backend", "[gpu][golden]") {
    const auto names = golden_names();
    REQUIRE(names.size() >= 3);
    for (const auto& n : names) DYNAMIC_SECTION(n) { check_model_on_cuda(n); }
}

TEST_CASE("cuda golden: the CUDA and CPU backends agree token for token on a quantized model", "[gpu][golden]") {
    const auto path = model_path("qwen3-tiny-q4_k_m");
    REQUIRE(std::filesystem::exists(path));
    ModelOptions cuda_options;
    cuda_options.backend = BackendKind::Cuda;
    ModelOptions cpu_options;
    cpu_options.backend = BackendKind::Cpu;
    const Model on_gpu = Model::load(path, cuda_options), on_cpu = Model::load(path, cpu_options);
    SessionOptions so;
    so.context_length = 256;
    Session gpu(on_gpu, so), cpu(on_cpu, so);
    const std::vector<TokenId> prompt = on_cpu.tokenizer().tokenize("The capital of France is");
    Sampler g1(SamplerOptions{.temperature = 0.0f}), g2(SamplerOptions{.temperature = 0.0f});
    GenerateOptions go;
    go.max_tokens = 32;
    go.stop_on_eog = false;
    const auto a = gpu.generate(std::span<const TokenId>(prompt), g1, go);
    const auto b = cpu.generate(std::span<const TokenId>(prompt), g2, go);
    // Logits of the prompt: close (not equal: int8 activation rounding differs, Q8_1 vs Q8_K).
    const auto la = gpu.evaluate(prompt), lb = cpu.evaluate(prompt);
    double max_delta = 0;
    for (size_t i = 0; i < la.size(); ++i) max_delta = std::max(max_delta, std::abs(static_cast<double>(la[i]) - lb[i]));
    fmt::print("cuda vs cpu qwen3-tiny-q4_k_m: {} of {} greedy tokens equal before the first difference; max |dlogit| {:.3g}\n",
               std::mismatch(a.tokens.begin(), a.tokens.end(), b.tokens.begin()).first - a.tokens.begin(), a.tokens.size(), max_delta);
    CHECK(max_delta <= 1.5);
    CHECK(a.tokens.front() == b.tokens.front());
}
