// Parity with llama.cpp: every golden file in test/golden/ (written by
// test/golden/make.py from llama-cpp-python) is replayed through libgenie.
//  - the prompt tokenizes to the same ids;
//  - teacher-forced along the reference continuation, our argmax equals the reference
//    token at every step (greedy token-for-token parity) and our logits of the
//    reference's top-20 ids are within the per-type tolerance;
//  - Session::generate (greedy, EOG ignored) produces the same 64 tokens.
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

json read_golden(const std::string& name) {
    std::ifstream in(golden_dir() / (name + ".json"));
    REQUIRE(in.good());
    return json::parse(in);
}

std::filesystem::path model_path(const std::string& name) {
    if (name == "stories260K" || name == "llama-2-tiny-random") return test::testdata_dir() / "models" / (name + ".gguf");
    return test::fixture_dir() / (name + ".gguf");
}

/// Largest |Δlogit| we accept against llama.cpp, by the model's weight type. F32 models
/// differ only by summation order; quantized ones also by where ggml's SIMD kernels round.
double tolerance_for(const std::string& name) {
    if (name.find("-f32") != std::string::npos || name == "stories260K") return 1e-3;
    return 2e-2;
}

struct Stats {
    double max_delta = 0;
    int steps = 0;
    int token_matches = 0;
};

Stats check_model(const std::string& name) {
    const json golden = read_golden(name);
    const auto path = model_path(name);
    if (!std::filesystem::exists(path))
        FAIL(fmt::format("{} is missing: the ctest fixture 'fixtures' generates it (scripts/make-fixtures)", path.string()));
    const Model model = Model::load(path);
    SessionOptions so;
    so.context_length = 512;
    so.threads = 2;
    so.kv_type = golden["settings"]["kv_type"] == "f32" ? KvType::F32 : KvType::F16;
    Session session(model, so);
    Stats stats;
    for (const json& c : golden["cases"]) {
        const std::string prompt = c["prompt"];
        INFO(name << " prompt " << json(prompt).dump());
        const std::vector<TokenId> prompt_tokens = c["prompt_tokens"];
        TokenizeOptions to;
        to.add_special = true;
        to.parse_special = true;
        CHECK(model.tokenizer().tokenize(prompt, to) == prompt_tokens);

        std::vector<TokenId> seq = prompt_tokens;
        const std::vector<TokenId> expected = c["tokens"];
        for (size_t step = 0; step < expected.size(); ++step) {
            const auto logits = session.evaluate(seq);
            const json& s = c["steps"][step];
            const std::vector<int> ids = s["top_ids"];
            const std::vector<double> values = s["top_logits"];
            for (size_t i = 0; i < ids.size(); ++i)
                stats.max_delta = std::max(stats.max_delta, std::abs(static_cast<double>(logits[ids[i]]) - values[i]));
            const auto ours = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
            stats.token_matches += ours == expected[step];
            ++stats.steps;
            seq.push_back(expected[step]);
        }

        // Free-running greedy generation equals the reference continuation.
        Sampler greedy(SamplerOptions{.temperature = 0.0f});
        GenerateOptions go;
        go.max_tokens = static_cast<int32_t>(expected.size());
        go.stop_on_eog = false;
        const GenerateResult r = session.generate(std::span<const TokenId>(prompt_tokens), greedy, go);
        CHECK(r.tokens == expected);
        CHECK(r.reused_prompt_tokens == static_cast<int32_t>(prompt_tokens.size()) - 1);  // the cache held the prompt
    }
    fmt::print("golden {}: {} steps, {} argmax matches, max |dlogit| {:.3g} (tolerance {:.0e})\n", name, stats.steps,
               stats.token_matches, stats.max_delta, tolerance_for(name));
    CHECK(stats.token_matches == stats.steps);
    CHECK(stats.max_delta <= tolerance_for(name));
    return stats;
}

std::vector<std::string> golden_names(const std::string& prefix) {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(golden_dir()))
        if (e.path().extension() == ".json" && e.path().stem().string().rfind(prefix, 0) == 0)
            names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace

TEST_CASE("golden: stories260K matches llama.cpp", "[golden]") { check_model("stories260K"); }

TEST_CASE("golden: llama-2-tiny-random matches llama.cpp", "[golden]") { check_model("llama-2-tiny-random"); }

TEST_CASE("golden: llama fixtures match llama.cpp", "[golden][fixtures]") {
    const auto names = golden_names("llama-tiny");
    REQUIRE_FALSE(names.empty());
    for (const auto& n : names) DYNAMIC_SECTION(n) { check_model(n); }
}

TEST_CASE("golden: qwen2 fixtures match llama.cpp", "[golden][fixtures]") {
    const auto names = golden_names("qwen2-tiny");
    REQUIRE_FALSE(names.empty());
    for (const auto& n : names) DYNAMIC_SECTION(n) { check_model(n); }
}

TEST_CASE("golden: qwen3 fixtures match llama.cpp", "[golden][fixtures]") {
    const auto names = golden_names("qwen3-tiny");
    REQUIRE_FALSE(names.empty());
    for (const auto& n : names) DYNAMIC_SECTION(n) { check_model(n); }
}
