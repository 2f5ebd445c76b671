// Parity with llama.cpp on real checkpoints: every golden file in test/golden/real/
// (written by bench/real_parity.py --write-golden from llama-cpp-python) is replayed
// through libgenie when its model is in models/ (scripts/get-model NAME). ctest runs one
// entry per golden file through test/golden/run_real.sh, which reports the test skipped
// (with the command that fetches the model) when the file is absent.
//  - a chat case renders, with the GGUF's own template, to the reference's prompt text;
//  - every prompt tokenizes to the reference's ids;
//  - teacher-forced along the reference's greedy path, one token at a time: |Δ log-prob|
//    of the reference's token within the quantized-model tolerance of docs/parity.md (1.0),
//    and our argmax equal to the reference's token at every decisive step (the reference's
//    top-1 / top-2 log-prob margin above that tolerance).
//  - printed beside them: top-1 agreement and max |Δ| against the yardstick the golden
//    file carries (llama.cpp's default kernels against its --no-repack kernels on the same
//    cases). The target, "at least as close as llama.cpp is to itself", is tracked
//    in docs/parity.md; it is not met on every model yet (the V·p summation order), so it is
//    reported here, not enforced.
#include "support/test_support.hpp"

#include <genie/chat.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

using namespace genie;
using nlohmann::json;

namespace {

std::filesystem::path real_golden_dir() {
    return std::filesystem::path(GENIE_SOURCE_DIR) / "test" / "golden" / "real";
}

std::filesystem::path models_dir() {
    const char* dir = std::getenv("GENIE_MODELS_DIR");
    return dir && *dir ? std::filesystem::path(dir) : std::filesystem::path(GENIE_SOURCE_DIR) / "models";
}

std::string render(const Model& model, const json& messages) {
    std::vector<ChatMessage> list;
    for (const json& m : messages) {
        ChatMessage message;
        message.role = m.at("role");
        message.content = m.at("content");
        list.push_back(std::move(message));
    }
    const Tokenizer& tok = model.tokenizer();
    ChatTemplateOptions options;
    if (tok.bos() != kNoToken) options.bos_token = std::string(tok.token_text(tok.bos()));
    if (tok.eos() != kNoToken) options.eos_token = std::string(tok.token_text(tok.eos()));
    const ChatTemplate tmpl = model.chat_template().empty() ? ChatTemplate::chatml() : ChatTemplate(model.chat_template());
    return tmpl.render(list, options);
}

/// log p(token) from raw logits, in double.
double log_prob(std::span<const float> logits, TokenId token) {
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (const float l : logits) sum += std::exp(static_cast<double>(l) - max);
    return static_cast<double>(logits[static_cast<size_t>(token)]) - max - std::log(sum);
}

void check_real(const std::string& name) {
    std::ifstream in(real_golden_dir() / (name + ".json"));
    REQUIRE(in.good());
    const json golden = json::parse(in);
    const auto path = models_dir() / golden.at("file").get<std::string>();
    if (!std::filesystem::exists(path)) {
        WARN(fmt::format("SKIPPED: {} is missing (scripts/get-model {})", path.string(), name));
        return;
    }
    const Model model = Model::load(path);
    SessionOptions so;
    so.context_length = golden["settings"]["n_ctx"];
    so.threads = 2;
    Session session(model, so);

    constexpr double kTolerance = 1.0;  // docs/parity.md: quantized weights, F16 KV cache
    int steps = 0, top1 = 0, decisive = 0, decisive_equal = 0;
    double max_delta = 0, sum_delta = 0;
    for (const json& c : golden["cases"]) {
        const std::string prompt = c["prompt"];
        INFO(name << " prompt " << json(prompt).dump());
        if (c["kind"] == "chat") CHECK(render(model, c["messages"]) == prompt);
        const std::vector<TokenId> prompt_tokens = c["prompt_tokens"];
        TokenizeOptions to;
        to.add_special = true;
        to.parse_special = true;
        CHECK(model.tokenizer().tokenize(prompt, to) == prompt_tokens);

        std::vector<TokenId> seq = prompt_tokens;
        const std::vector<TokenId> expected = c["tokens"];
        session.reset();
        for (size_t step = 0; step < expected.size(); ++step) {
            const auto logits = session.evaluate(seq);
            const json& s = c["steps"][step];
            const TokenId reference = expected[step];
            REQUIRE(s["top_ids"][0] == reference);
            const double delta = std::abs(log_prob(logits, reference) - s["top_logprobs"][0].get<double>());
            const auto ours = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
            ++steps;
            top1 += ours == reference;
            if (s["top_logprobs"][0].get<double>() - s["top_logprobs"][1].get<double>() > kTolerance) {
                ++decisive;
                decisive_equal += ours == reference;
                if (ours != reference) FAIL_CHECK("step " << step << ": argmax " << ours << ", reference " << reference);
            }
            max_delta = std::max(max_delta, delta);
            sum_delta += delta;
            seq.push_back(reference);
        }
    }
    const json& yard = golden["yardstick"];
    const double yard_top1 = yard["top1_agreement"], yard_max = yard["max_abs_dlogprob"];
    const double our_top1 = static_cast<double>(top1) / steps;
    const bool target = our_top1 >= yard_top1 && max_delta <= yard_max;
    fmt::print("golden real {}: {} steps; argmax equal on {}/{} decisive steps; top-1 agreement {:.1f} % "
               "(llama.cpp against itself {:.1f} %); max |dlogprob| {:.3f} (itself {:.3f}); mean {:.4f} "
               "(itself {:.4f}); at least as close as llama.cpp to itself: {}\n",
               name, steps, decisive_equal, decisive, 100 * our_top1, 100 * yard_top1, max_delta, yard_max,
               sum_delta / steps, yard["mean_abs_dlogprob"].get<double>(), target ? "yes" : "not yet");
    CHECK(decisive_equal == decisive);
    CHECK(max_delta <= kTolerance);
}

}  // namespace

// Hidden from the default run (the models are fetched, not generated): ctest runs it once
// per golden file with `-c NAME` (test/CMakeLists.txt).
TEST_CASE("golden real: checkpoints match llama.cpp", "[.real]") {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(real_golden_dir()))
        if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    REQUIRE_FALSE(names.empty());
    for (const auto& n : names) DYNAMIC_SECTION(n) { check_real(n); }
}
