// The sampler: greedy at temperature 0, otherwise top-k -> top-p -> min-p ->
// temperature -> a seeded draw (llama.cpp's default order).
#include <genie/error.hpp>
#include <genie/sampler.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace genie {

struct Sampler::State {
    SamplerOptions options;
    std::mt19937 rng;
    struct Candidate {
        TokenId id;
        float logit;
        float p;
    };
    std::vector<Candidate> candidates;
};

Sampler::Sampler(const SamplerOptions& options) : state_(std::make_unique<State>()) {
    if (!std::isfinite(options.temperature) || !(options.top_p >= 0.0f) || !(options.min_p >= 0.0f) ||
        !std::isfinite(options.top_p) || !std::isfinite(options.min_p))
        throw Error(ErrorCode::InvalidArgument, "sampler options: temperature, top_p and min_p must be finite and >= 0");
    state_->options = options;
    state_->rng.seed(options.seed);
}
Sampler::Sampler(const Sampler& other) : state_(std::make_unique<State>(*other.state_)) {}
Sampler& Sampler::operator=(const Sampler& other) {
    if (this != &other) state_ = std::make_unique<State>(*other.state_);
    return *this;
}
Sampler::Sampler(Sampler&&) noexcept = default;
Sampler& Sampler::operator=(Sampler&&) noexcept = default;
Sampler::~Sampler() = default;

const SamplerOptions& Sampler::options() const noexcept { return state_->options; }

void Sampler::accept(TokenId) {}

void Sampler::reset() { state_->rng.seed(state_->options.seed); }

TokenId Sampler::sample(std::span<const float> logits) {
    if (logits.empty()) throw Error(ErrorCode::InvalidArgument, "sampler: no logits");
    const SamplerOptions& o = state_->options;
    if (o.temperature <= 0.0f) {
        // Greedy: the first maximum (lowest id on ties), as llama.cpp's greedy sampler.
        size_t best = 0;
        for (size_t i = 1; i < logits.size(); ++i)
            if (logits[i] > logits[best]) best = i;
        return static_cast<TokenId>(best);
    }
    auto& c = state_->candidates;
    c.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) c[i] = {static_cast<TokenId>(i), logits[i], 0.0f};
    auto by_logit = [](const State::Candidate& a, const State::Candidate& b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    auto softmax = [&] {
        const float max = c.front().logit;
        double sum = 0.0;
        for (auto& x : c) {
            x.p = std::exp(x.logit - max);
            sum += x.p;
        }
        for (auto& x : c) x.p = static_cast<float>(x.p / sum);
    };
    // top-k
    const size_t k = o.top_k > 0 ? std::min<size_t>(static_cast<size_t>(o.top_k), c.size()) : c.size();
    std::partial_sort(c.begin(), c.begin() + static_cast<long>(k), c.end(), by_logit);
    c.resize(k);
    // top-p: the smallest prefix whose probability mass reaches p
    if (o.top_p < 1.0f) {
        softmax();
        double cum = 0.0;
        size_t keep = c.size();
        for (size_t i = 0; i < c.size(); ++i) {
            cum += c[i].p;
            if (cum >= o.top_p) {
                keep = i + 1;
                break;
            }
        }
        c.resize(keep);
    }
    // min-p: drop tokens less likely than min_p times the most likely one
    if (o.min_p > 0.0f) {
        const float threshold = c.front().logit + std::log(o.min_p);
        size_t keep = 1;
        while (keep < c.size() && c[keep].logit >= threshold) ++keep;
        c.resize(keep);
    }
    for (auto& x : c) x.logit /= o.temperature;
    softmax();
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const double u = uniform(state_->rng);
    double cum = 0.0;
    for (const auto& x : c) {
        cum += x.p;
        if (u < cum) return x.id;
    }
    return c.back().id;
}

}  // namespace genie
