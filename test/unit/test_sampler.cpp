// genie::Sampler against llama.cpp's sampler chain: test/sampling/expected.json holds the
// tokens llama.cpp (via llama-cpp-python, see test/sampling/make_expected.py) draws for
// hashed logits, several option sets, vocab sizes, temperatures and seeds, 50 draws each
// with every drawn token accepted. Plus determinism of seeds, copies and reset().
#include <genie/error.hpp>
#include <genie/sampler.hpp>

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace {

uint32_t mix32(uint32_t x) {
    x = (x ^ (x >> 16)) * 0x45D9F3Bu;
    x = (x ^ (x >> 16)) * 0x45D9F3Bu;
    return x ^ (x >> 16);
}

// The logits make_expected.py feeds llama.cpp at `step` (bit-identical float32 values).
std::vector<float> logits_for(uint32_t n_vocab, uint32_t step) {
    std::vector<float> out(n_vocab);
    auto u = [](uint32_t i, uint32_t salt) {
        return static_cast<double>(mix32(i * 2654435761u + salt)) / 4294967296.0;
    };
    for (uint32_t i = 0; i < n_vocab; ++i) {
        const double u1 = u(i, n_vocab * 3 + 1), u2 = u(i, n_vocab * 3 + 2), u3 = u(i, n_vocab * 3 + 3);
        const double u4 = u(i, 1000003u * (step + 1));
        const double v = (((u1 + u2) + u3) / 3.0) * 8.0 - 4.0 + 0.5 * (u4 - 0.5);
        out[i] = static_cast<float>(v);
    }
    return out;
}

nlohmann::json load_expected() {
    std::ifstream in(std::string(GENIE_SOURCE_DIR) + "/test/sampling/expected.json");
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

genie::SamplerOptions options_from(const nlohmann::json& c, float temperature, uint32_t seed) {
    genie::SamplerOptions o;
    o.temperature = temperature;
    o.seed = seed;
    o.penalty_last_n = c.at("penalty_last_n").get<int32_t>();
    o.repeat_penalty = c.at("repeat_penalty").get<float>();
    o.frequency_penalty = c.at("frequency_penalty").get<float>();
    o.presence_penalty = c.at("presence_penalty").get<float>();
    o.top_k = c.at("top_k").get<int32_t>();
    o.typical_p = c.at("typical_p").get<float>();
    o.top_p = c.at("top_p").get<float>();
    o.min_p = c.at("min_p").get<float>();
    return o;
}

std::vector<genie::TokenId> run(genie::Sampler& s, uint32_t n_vocab, int steps, uint32_t first_step = 0) {
    std::vector<genie::TokenId> out;
    for (int i = 0; i < steps; ++i) {
        const auto logits = logits_for(n_vocab, first_step + static_cast<uint32_t>(i));
        const genie::TokenId t = s.sample(logits);
        s.accept(t);
        out.push_back(t);
    }
    return out;
}

}  // namespace

TEST_CASE("sampler: the test logits match the generator's", "[sampler]") {
    const auto expected = load_expected();
    for (const auto& chk : expected.at("logit_checks")) {
        const auto logits = logits_for(chk.at("n_vocab").get<uint32_t>(), chk.at("step").get<uint32_t>());
        CHECK(logits.at(chk.at("index").get<size_t>()) == chk.at("value").get<float>());
    }
}

TEST_CASE("sampler: draws the tokens llama.cpp's default chain draws", "[sampler]") {
    const auto expected = load_expected();
    const auto& configs = expected.at("configs");
    size_t total = 0, agree = 0, cases = 0, cases_exact = 0;
    for (const auto& cs : expected.at("cases")) {
        const std::string name = cs.at("config").get<std::string>();
        const auto n_vocab = cs.at("n_vocab").get<uint32_t>();
        const auto temperature = cs.at("temperature").get<float>();
        const auto seed = cs.at("seed").get<uint32_t>();
        const auto want = cs.at("tokens").get<std::vector<genie::TokenId>>();
        genie::Sampler sampler(options_from(configs.at(name), temperature, seed));
        const auto got = run(sampler, n_vocab, static_cast<int>(want.size()));
        size_t same = 0;
        for (size_t i = 0; i < want.size(); ++i) same += got[i] == want[i];
        total += want.size();
        agree += same;
        ++cases;
        cases_exact += same == want.size();
        INFO(name << " vocab " << n_vocab << " temp " << temperature << " seed " << seed);
        CHECK(got == want);
    }
    WARN("sampler vs llama.cpp: " << agree << "/" << total << " draws agree ("
                                  << (total ? 100.0 * static_cast<double>(agree) / static_cast<double>(total) : 0.0)
                                  << "%), " << cases_exact << "/" << cases << " sequences exact");
    CHECK(agree == total);
}

TEST_CASE("sampler: the same seed gives the same draws and reset() restarts them", "[sampler]") {
    genie::SamplerOptions o;
    o.temperature = 1.0f;
    o.top_k = 0;
    o.top_p = 1.0f;
    o.min_p = 0.0f;
    o.repeat_penalty = 1.2f;
    o.presence_penalty = 0.3f;
    o.seed = 7;
    genie::Sampler a(o), b(o);
    const auto ra = run(a, 1000, 40);
    CHECK(run(b, 1000, 40) == ra);
    a.reset();  // RNG and penalty window restart
    CHECK(run(a, 1000, 40) == ra);

    // A copy continues independently from the same state.
    a.reset();
    run(a, 1000, 10);
    genie::Sampler c = a;
    CHECK(run(a, 1000, 20, 10) == run(c, 1000, 20, 10));

    // Another seed gives (almost surely) another sequence.
    o.seed = 8;
    genie::Sampler d(o);
    CHECK(run(d, 1000, 40) != ra);
}

TEST_CASE("sampler: greedy takes the first maximum after penalties", "[sampler]") {
    genie::SamplerOptions o;  // temperature 0
    genie::Sampler g(o);
    const std::vector<float> logits{1.0f, 3.0f, 3.0f, -2.0f};
    CHECK(g.sample(logits) == 1);
    o.repeat_penalty = 2.0f;
    genie::Sampler p(o);
    p.accept(1);
    CHECK(p.sample(logits) == 2);  // 3/2 < 3
    p.accept(2);
    CHECK(p.sample(logits) == 1);  // both 1.5: the first
    p.reset();
    CHECK(p.sample(logits) == 1);
}

TEST_CASE("sampler: invalid options throw", "[sampler]") {
    genie::SamplerOptions o;
    o.top_p = -1.0f;
    CHECK_THROWS_AS(genie::Sampler(o), genie::Error);
    o = {};
    o.repeat_penalty = 0.0f;
    CHECK_THROWS_AS(genie::Sampler(o), genie::Error);
    genie::Sampler s;
    CHECK_THROWS_AS(s.sample(std::vector<float>{}), genie::Error);
}

TEST_CASE("sampler: logit bias and user stages run before the built-in chain", "[sampler]") {
    std::vector<float> logits{1.0f, 3.0f, 2.0f, 0.5f};
    genie::SamplerOptions o;  // greedy
    o.logit_bias = {{1, -10.0f}, {3, 1.0f}, {99, 5.0f}};  // out-of-range ids are ignored
    genie::Sampler biased(o);
    CHECK(biased.sample(logits) == 2);

    struct Ban final : genie::SamplerStage {
        genie::TokenId banned;
        int accepted = 0, resets = 0;
        explicit Ban(genie::TokenId t) : banned(t) {}
        void apply(std::span<float> l) override { l[static_cast<size_t>(banned)] = -INFINITY; }
        void accept(genie::TokenId) override { ++accepted; }
        void reset() override { ++resets; }
    };
    auto ban = std::make_shared<Ban>(2);
    biased.add_stage(ban);
    CHECK(biased.sample(logits) == 3);  // 2 banned; 3 (0.5 + 1) beats 0 (1.0)
    biased.accept(0);
    biased.reset();
    CHECK(ban->accepted == 1);
    CHECK(ban->resets == 1);
    CHECK_THROWS_AS(biased.add_stage(nullptr), genie::Error);
}
