// Speculative decoding (docs/speculative.md): greedy output equals plain greedy decoding on
// every fixture architecture (draft = another quantization of the same architecture, and
// the target itself), prompt lookup likewise, the vocabulary check, and at temperature > 0
// the output distribution equals the target's (rejection sampling) on stories260K.
#include "backend/cpu/kernels/kernels.hpp"
#include "gguf/gguf_reader.hpp"
#include "gguf/gguf_writer.hpp"
#include "support/test_support.hpp"

#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

using namespace genie;

namespace {

std::filesystem::path fixture(const std::string& name) { return test::fixture_dir() / (name + ".gguf"); }
std::filesystem::path stories() { return test::testdata_dir() / "models" / "stories260K.gguf"; }

SessionOptions session_options() {
    SessionOptions so;
    so.context_length = 256;
    so.threads = 2;
    return so;
}

/// The scalar kernels compute each output row alone (quant/vec_dot.hpp per output), so a
/// batch of rows gives the same floats as one row: there, identity is exact. The fast
/// kernels sum in another order for a batch than for one row (docs/speculative.md).
/// A prompt's tokens as Session::generate(text) makes them.
std::vector<TokenId> prompt_tokens_of(const Model& model, const std::string& text) {
    TokenizeOptions to;
    to.add_special = true;
    to.parse_special = true;
    return model.tokenizer().tokenize(text, to);
}

bool batch_invariant_kernels() { return std::strcmp(cpu::kernel_set().isa, "scalar") == 0; }

/// The gap between the two largest logits of `logits`.
float top2_gap(std::span<const float> logits) {
    float a = -INFINITY, b = -INFINITY;
    for (float l : logits) {
        if (l > a) {
            b = a;
            a = l;
        } else if (l > b) {
            b = l;
        }
    }
    return a - b;
}

/// Speculative greedy output against plain greedy output of `target` on `prompt`. Exact
/// under batch-invariant kernels; otherwise the first divergence (if any) must be at a
/// step where plain decoding's top two logits are within float rounding of each other.
void check_greedy_identity(const Model& target, const GenerateResult& plain, const GenerateResult& spec,
                           std::span<const TokenId> prompt_tokens) {
    INFO("plain " << plain.tokens.size() << " tokens, speculative " << spec.tokens.size() << " tokens; proposals "
                  << spec.draft_tokens << ", kept " << spec.accepted_draft_tokens);
    if (spec.tokens == plain.tokens) return;
    REQUIRE_FALSE(batch_invariant_kernels());
    size_t at = 0;
    while (at < plain.tokens.size() && at < spec.tokens.size() && plain.tokens[at] == spec.tokens[at]) ++at;
    REQUIRE(at < plain.tokens.size());
    Session probe(target, session_options());
    std::vector<TokenId> seq(prompt_tokens.begin(), prompt_tokens.end());
    seq.insert(seq.end(), plain.tokens.begin(), plain.tokens.begin() + static_cast<long>(at));
    const std::span<const float> logits = probe.evaluate(seq);
    const float top = *std::max_element(logits.begin(), logits.end());
    INFO("first divergence at output token " << at << ", top-2 gap " << top2_gap(logits) << " at top logit " << top);
    CHECK(top2_gap(logits) <= 1e-3f * std::max(1.0f, std::fabs(top)));
}

struct Pair {
    const char* target;
    const char* draft;
};

}  // namespace

namespace {

/// Greedy speculative decoding of `pair` (and of the target drafting for itself) against
/// plain greedy decoding, for each draft length in `draft_maxes`.
void check_draft_pair(const Pair& pair, std::initializer_list<int32_t> draft_maxes, int32_t max_tokens) {
    for (const bool self_draft : {false, true}) {
        const std::string draft_name = self_draft ? pair.target : pair.draft;
        INFO(pair.target << " drafted by " << draft_name);
        const Model target = Model::load(fixture(pair.target));
        const Model draft = Model::load(fixture(draft_name));
        Sampler sampler;  // greedy
        GenerateOptions go;
        go.max_tokens = max_tokens;
        go.stop_on_eog = false;
        const std::string prompt = "Once upon a time, in a small village by the sea, there lived";
        const std::vector<TokenId> prompt_tokens = prompt_tokens_of(target, prompt);
        Session plain_session(target, session_options());
        const GenerateResult plain = plain_session.generate(prompt, sampler, go);
        REQUIRE(plain.tokens.size() == static_cast<size_t>(max_tokens));
        SessionOptions so = session_options();
        so.draft_model = draft;
        for (const int32_t draft_max : draft_maxes) {
            for (const bool adaptive : {false, true}) {
                INFO("draft_max " << draft_max << (adaptive ? " adaptive" : ""));
                Session spec_session(target, so);
                go.speculative.draft_max = draft_max;
                go.speculative.draft_p_min = 0.0f;  // every step proposes draft_max tokens
                go.speculative.adaptive = adaptive;
                Sampler s2;
                const GenerateResult spec = spec_session.generate(prompt, s2, go);
                CHECK(spec.draft_tokens > 0);
                check_greedy_identity(target, plain, spec, prompt_tokens);
                if (self_draft && batch_invariant_kernels()) CHECK(spec.accepted_draft_tokens == spec.draft_tokens);
                // The cache is consistent with what was produced: a second call that
                // continues the output reuses all of it.
                std::vector<TokenId> follow = prompt_tokens;
                follow.insert(follow.end(), spec.tokens.begin(), spec.tokens.end());
                GenerateOptions one;
                one.max_tokens = 1;
                CHECK(spec_session.generate(follow, s2, one).reused_prompt_tokens >= static_cast<int32_t>(follow.size()) - 1);
            }
        }
    }
}

}  // namespace

TEST_CASE("speculative greedy decoding with a draft model gives plain greedy decoding's tokens", "[speculative]") {
    const Pair pairs[] = {
        {"llama-tiny-f32", "llama-tiny-q4_k_m"},  {"llama-tiny-q4_k_m", "llama-tiny-q8_0"},
        {"qwen2-tiny-f32", "qwen2-tiny-q4_0"},    {"qwen2-tiny-q4_k_m", "qwen3-tiny-q8_0"},
        {"qwen3-tiny-f16", "qwen3-tiny-q4_k"},    {"qwen3-tiny-q4_k_m", "qwen3-tiny-q4_k_m"},
        {"gemma3-tiny-f32", "gemma3-tiny-q4_k_m"}, {"gemma3-tiny-q4_k_m", "llama-tiny-q8_0"},
    };
    for (const Pair& pair : pairs)
        DYNAMIC_SECTION(pair.target << " drafted by " << pair.draft) { check_draft_pair(pair, {1, 3, 8}, 40); }
}

// Run by ctest with GENIE_CPU_ISA=scalar (batch-invariant kernels: exact identity, and a
// model drafting for itself keeps every proposal); a smaller set, the scalar kernels are slow.
TEST_CASE("speculative greedy decoding is exact on batch-invariant kernels", "[.speculative-scalar]") {
    if (!batch_invariant_kernels()) WARN("not the scalar kernels (set GENIE_CPU_ISA=scalar): checked up to ties only");
    const Pair pairs[] = {
        {"llama-tiny-f32", "llama-tiny-q8_0"},
        {"qwen3-tiny-f32", "qwen2-tiny-f32"},
        {"gemma3-tiny-f32", "llama-tiny-f32"},
    };
    for (const Pair& pair : pairs)
        DYNAMIC_SECTION(pair.target << " drafted by " << pair.draft) { check_draft_pair(pair, {3}, 12); }
}

TEST_CASE("prompt lookup speculation gives plain greedy decoding's tokens", "[speculative]") {
    for (const char* name : {"llama-tiny-q4_k_m", "qwen2-tiny-f32", "qwen3-tiny-q8_0", "gemma3-tiny-f32"}) {
        DYNAMIC_SECTION(name) {
            const Model target = Model::load(fixture(name));
            // The prompt quotes what the model says after its start, then starts again, so
            // the history holds n-grams the output is likely to repeat.
            const std::vector<TokenId> start = prompt_tokens_of(target, "The quick brown fox jumps over the lazy dog");
            GenerateOptions go;
            go.max_tokens = 24;
            go.stop_on_eog = false;
            Sampler sampler;
            std::vector<TokenId> prompt = start;
            {
                Session first(target, session_options());
                const GenerateResult said = first.generate(start, sampler, go);
                prompt.insert(prompt.end(), said.tokens.begin(), said.tokens.end());
                prompt.insert(prompt.end(), start.begin() + 1, start.end());
            }
            go.max_tokens = 48;
            Session plain_session(target, session_options());
            const GenerateResult plain = plain_session.generate(prompt, sampler, go);
            int32_t proposed = 0;
            for (const int32_t ngram : {1, 2, 3}) {
                INFO("lookup_ngram " << ngram);
                Session spec_session(target, session_options());
                go.speculative.lookup_ngram = ngram;
                go.speculative.draft_max = 6;
                Sampler s2;
                const GenerateResult spec = spec_session.generate(prompt, s2, go);
                proposed += spec.draft_tokens;
                check_greedy_identity(target, plain, spec, prompt);
            }
            CHECK(proposed > 0);
        }
    }
}

TEST_CASE("a draft model with another vocabulary is refused and the error names the first differing token", "[speculative]") {
    const Model target = Model::load(fixture("llama-tiny-f32"));
    SessionOptions so = session_options();
    so.draft_model = Model::load(fixture("qwen2-tiny-f32"));
    CHECK_THROWS_WITH(Session(target, so), Catch::Contains("draft model's vocabulary differs") && Catch::Contains("tokens"));

    // stories260K with token 300's text changed.
    const auto reader = gguf::Reader::open(stories());
    gguf::Writer w;
    w.copy_metadata(reader);
    for (const auto& t : reader.tensors())
        w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.size_bytes));
    gguf::Array tokens = *w.find("tokenizer.ggml.tokens")->array();
    const std::string original = *tokens.items[300].string();
    tokens.items[300] = gguf::Value(std::string("<changed>"));
    w.set("tokenizer.ggml.tokens", gguf::Value(std::move(tokens)));
    const auto path = test::temp_path("stories-vocab");
    w.write(path);
    SessionOptions so2 = session_options();
    so2.draft_model = Model::load(path);
    CHECK_THROWS_WITH(Session(Model::load(stories()), so2),
                      Catch::Contains(fmt::format("token 300 is \"{}\" in the target and \"<changed>\" in the draft", original)));
    std::filesystem::remove(path);
}

namespace {

/// stories260K with its output matrix scaled by `scale`: the same vocabulary, another
/// distribution (a draft whose proposals the rejection rule must correct).
std::filesystem::path scaled_stories(float scale) {
    const auto reader = gguf::Reader::open(stories());
    gguf::Writer w;
    w.copy_metadata(reader);
    for (const auto& t : reader.tensors()) {
        std::vector<uint8_t> bytes(t.data, t.data + t.size_bytes);
        if (t.name == "output.weight") {
            REQUIRE(t.type == DType::F32);
            for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
                float v;
                std::memcpy(&v, bytes.data() + i, 4);
                v *= scale;
                std::memcpy(bytes.data() + i, &v, 4);
            }
        }
        w.add_tensor(t.name, t.type, t.shape, std::move(bytes));
    }
    const auto path = test::temp_path("stories-scaled");
    w.write(path);
    return path;
}

using Marginal = std::map<TokenId, double>;

/// The exact distribution of output tokens 1 and 2 (0-based) under plain sampling with
/// `options`: token 0 is drawn from the prompt's logits, then each from the next row.
void exact_marginals(const Model& model, std::span<const TokenId> prompt, const SamplerOptions& options, Marginal& m1,
                     Marginal& m2) {
    Session s(model, session_options());
    Sampler sampler(options);
    std::vector<TokenProbability> d0, d1, d2;
    std::vector<TokenId> seq(prompt.begin(), prompt.end());
    sampler.distribution(s.evaluate(seq), d0);
    for (const auto& [t0, p0] : d0) {
        seq.push_back(t0);
        sampler.distribution(s.evaluate(seq), d1);
        for (const auto& [t1, p1] : d1) {
            m1[t1] += p0 * p1;
            seq.push_back(t1);
            sampler.distribution(s.evaluate(seq), d2);
            for (const auto& [t2, p2] : d2) m2[t2] += p0 * p1 * p2;
            seq.pop_back();
        }
        seq.pop_back();
    }
}

/// Pearson's chi-square statistic of `counts` (n samples) against `expected`, cells with
/// an expected count below 5 pooled into one; `dof` gets the degrees of freedom.
double chi_square(const Marginal& expected, const std::map<TokenId, int>& counts, int n, int& dof) {
    double stat = 0.0, pooled_e = 0.0, pooled_o = 0.0;
    int cells = 0;
    for (const auto& [t, p] : expected) {
        const double e = p * n;
        const auto it = counts.find(t);
        const double o = it == counts.end() ? 0.0 : it->second;
        if (e < 5.0) {
            pooled_e += e;
            pooled_o += o;
            continue;
        }
        stat += (o - e) * (o - e) / e;
        ++cells;
    }
    for (const auto& [t, c] : counts)  // tokens plain sampling never gives
        if (!expected.contains(t)) pooled_o += c;
    if (pooled_e > 0.0 || pooled_o > 0.0) {
        stat += (pooled_o - pooled_e) * (pooled_o - pooled_e) / std::max(pooled_e, 1e-9);
        ++cells;
    }
    dof = cells - 1;
    return stat;
}

/// The chi-square quantile for significance 1e-4 (Wilson-Hilferty: z = 3.719).
double chi_square_critical(int dof) {
    const double k = dof, z = 3.719;
    const double c = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
    return k * c * c * c;
}

double total_variation(const Marginal& a, const Marginal& b) {
    double tv = 0.0;
    std::map<TokenId, double> all = a;
    for (const auto& [t, p] : b) all[t] += 0.0;
    for (const auto& [t, unused] : all) {
        const double pa = a.contains(t) ? a.at(t) : 0.0, pb = b.contains(t) ? b.at(t) : 0.0;
        tv += std::fabs(pa - pb);
    }
    return tv / 2.0;
}

}  // namespace

TEST_CASE("speculative sampling at temperature > 0 keeps the target's distribution", "[speculative]") {
    const Model target = Model::load(stories());
    const auto draft_path = scaled_stories(0.5f);
    const Model draft = Model::load(draft_path);
    const std::vector<TokenId> prompt = target.tokenizer().tokenize("Once upon a time, Lily saw a big");
    SamplerOptions so;
    so.temperature = 0.8f;  // with the default top-k 40, top-p 0.95, min-p 0.05
    Marginal m1, m2;
    exact_marginals(target, prompt, so, m1, m2);
    // The test has power: the draft's own marginals are far from the target's.
    Marginal q1, q2;
    exact_marginals(draft, prompt, so, q1, q2);
    INFO("TV(target, draft) of output tokens 1 and 2: " << total_variation(m1, q1) << ", " << total_variation(m2, q2));
    REQUIRE(total_variation(m1, q1) > 0.1);

    constexpr int kSamples = 3000;
    for (const bool lookup : {false, true}) {
        DYNAMIC_SECTION((lookup ? "prompt lookup" : "draft model")) {
            SessionOptions sess = session_options();
            if (!lookup) sess.draft_model = draft;
            Session session(target, sess);
            GenerateOptions go;
            go.max_tokens = 3;
            go.stop_on_eog = false;
            go.speculative.draft_max = 4;
            go.speculative.draft_p_min = 0.0f;
            go.speculative.lookup_ngram = lookup ? 1 : 0;
            std::map<TokenId, int> c1, c2;
            int proposed = 0, kept = 0;
            for (int seed = 0; seed < kSamples; ++seed) {
                SamplerOptions o = so;
                o.seed = static_cast<uint32_t>(seed);
                Sampler sampler(o);
                session.reset();
                const GenerateResult r = session.generate(prompt, sampler, go);
                REQUIRE(r.tokens.size() == 3);
                ++c1[r.tokens[1]];
                ++c2[r.tokens[2]];
                proposed += r.draft_tokens;
                kept += r.accepted_draft_tokens;
            }
            INFO("proposals " << proposed << ", kept " << kept);
            CHECK(proposed >= kSamples);  // every sample went through at least one verification
            CHECK(kept > 0);
            CHECK(kept < proposed);  // and the rejection branch ran too
            for (const auto& [m, c] : {std::pair{&m1, &c1}, std::pair{&m2, &c2}}) {
                int dof = 0;
                const double stat = chi_square(*m, *c, kSamples, dof);
                INFO("chi-square " << stat << " with " << dof << " degrees of freedom, critical value (p = 1e-4) "
                                   << chi_square_critical(dof));
                REQUIRE(dof >= 1);
                CHECK(stat < chi_square_critical(dof));
            }
        }
    }
    std::filesystem::remove(draft_path);
}

TEST_CASE("speculative options are checked", "[speculative]") {
    const Model target = Model::load(fixture("qwen3-tiny-f32"));
    Session session(target, session_options());
    Sampler sampler;
    GenerateOptions go;
    go.speculative.draft_max = -1;
    CHECK_THROWS_AS(session.generate("hi", sampler, go), Error);
    go.speculative.draft_max = 4;
    go.speculative.draft_p_min = 1.5f;
    CHECK_THROWS_AS(session.generate("hi", sampler, go), Error);
}
