// Pieces of speculative decoding that need no model: prompt lookup proposals, the
// sampler's distribution, and the verification rule on hand-made logits.
#include "runtime/ngram_lookup.hpp"
#include "runtime/speculative.hpp"

#include <genie/sampler.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

using namespace genie;

TEST_CASE("prompt lookup proposes what followed the newest earlier occurrence of the last n-gram", "[speculative]") {
    const std::vector<TokenId> h{1, 2, 3, 4, 9, 2, 3, 5, 6, 7, 2, 3};
    std::vector<TokenId> out;
    runtime::lookup_proposals(h, 2, 3, out);
    CHECK(out == std::vector<TokenId>{5, 6, 7});  // [2 3] last occurred before at index 5
    out.clear();
    runtime::lookup_proposals(h, 3, 3, out);  // [7 2 3] never occurred before
    CHECK(out.empty());
    out.clear();
    runtime::lookup_proposals(std::vector<TokenId>{4, 4, 4}, 1, 5, out);  // overlapping run
    CHECK(out == std::vector<TokenId>{4});
    out.clear();
    runtime::lookup_proposals(h, 0, 3, out);
    CHECK(out.empty());
}

TEST_CASE("Sampler::distribution is what sample draws from", "[speculative]") {
    const std::vector<float> logits{1.0f, 3.0f, 2.0f, -1.0f, 0.5f};
    SamplerOptions o;
    o.temperature = 0.5f;
    o.top_k = 3;
    o.top_p = 1.0f;
    o.min_p = 0.0f;
    Sampler s(o);
    std::vector<TokenProbability> d;
    s.distribution(logits, d);
    REQUIRE(d.size() == 3);
    double sum = 0.0;
    for (const auto& tp : d) sum += tp.p;
    CHECK(sum == Approx(1.0));
    const double z = std::exp(3.0 / 0.5) + std::exp(2.0 / 0.5) + std::exp(1.0 / 0.5);
    for (const auto& tp : d) CHECK(tp.p == Approx(std::exp(logits[static_cast<size_t>(tp.token)] / 0.5) / z).epsilon(1e-5));
    Sampler greedy;
    greedy.distribution(logits, d);
    REQUIRE(d.size() == 1);
    CHECK(d[0].token == 1);
    CHECK(d[0].p == 1.0);
}

TEST_CASE("greedy verification keeps proposals while they are the argmax of their row", "[speculative]") {
    // Rows: argmax 2, then 0, then 1.
    const std::vector<float> rows{0, 1, 5, 9, 1, 2, 0, 7, 3};
    Sampler greedy;
    runtime::Proposal p;
    p.tokens = {2, 0};
    p.q.assign(2, {});
    runtime::Verdict v = runtime::verify(rows, 3, p, greedy);
    CHECK(v.accepted == 2);
    CHECK(v.next == 1);
    p.tokens = {2, 1};
    v = runtime::verify(rows, 3, p, greedy);
    CHECK(v.accepted == 1);
    CHECK(v.next == 0);  // the target's token replaces the first rejected proposal
}
