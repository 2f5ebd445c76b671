// The sampler: llama.cpp's default chain (common/sampling.cpp) restricted to the stages
// in SamplerOptions: penalties -> top-k -> typical -> top-p -> min-p -> temperature ->
// dist (a seeded draw). Each stage follows the behaviour of its counterpart in llama.cpp's
// src/llama-sampler.cpp, including the candidate order it leaves behind and whether it
// leaves the candidates sorted, since the draw walks the candidates in that order; float
// and double arithmetic is done in the same types and order so the drawn token is the same.
// test/unit/test_sampler.cpp checks this against tokens drawn by llama.cpp itself.
#include <genie/error.hpp>
#include <genie/sampler.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <deque>
#include <numeric>
#include <random>
#include <unordered_map>
#include <vector>

namespace genie {
namespace {

struct Candidate {
    TokenId id;
    float logit;
    float p;
};

bool by_logit(const Candidate& a, const Candidate& b) { return a.logit > b.logit; }

// The candidate list (llama_token_data_array): `sorted` means descending by logit.
struct Candidates {
    std::vector<Candidate> c;
    bool sorted = false;

    void sort_prefix(size_t n) {  // the n largest first, in descending order
        std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(n), c.end(), by_logit);
        c.resize(n);
        sorted = true;
    }
    // Softmax into p in the current order (max from the front when sorted).
    void softmax(bool do_sort) {
        if (do_sort && !sorted) sort_prefix(c.size());
        float max_l = c.front().logit;
        if (!sorted)
            for (size_t i = 1; i < c.size(); ++i) max_l = std::max(max_l, c[i].logit);
        float sum = 0.0f;
        for (auto& x : c) {
            x.p = std::exp(x.logit - max_l);
            sum += x.p;
        }
        for (auto& x : c) x.p /= sum;
    }
};

void top_k(Candidates& cand, int32_t k) {
    if (k <= 0) return;
    const size_t n = std::min(static_cast<size_t>(k), cand.c.size());
    if (!cand.sorted) cand.sort_prefix(n);
    cand.c.resize(n);
}

void typical(Candidates& cand, float p) {
    if (p >= 1.0f) return;
    auto& c = cand.c;
    cand.softmax(true);
    float entropy = 0.0f;
    for (const auto& x : c) entropy += -x.p * std::log(x.p);
    std::vector<float> shifted(c.size());
    for (size_t i = 0; i < c.size(); ++i) shifted[i] = std::fabs(-std::log(c[i].p) - entropy);
    std::vector<size_t> idx(c.size());
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return shifted[a] < shifted[b]; });
    float cum = 0.0f;
    size_t keep = idx.size();
    for (size_t i = 0; i < idx.size(); ++i) {
        cum += c[idx[i]].p;
        if (cum > p) {
            keep = i + 1;
            break;
        }
    }
    std::vector<Candidate> out;
    out.reserve(keep);
    for (size_t i = 0; i < keep; ++i) out.push_back(c[idx[i]]);
    c = std::move(out);
    cand.sorted = false;  // ordered by typicality, not by logit
}

void top_p(Candidates& cand, float p) {
    if (p >= 1.0f) return;
    auto& c = cand.c;
    cand.softmax(false);  // probabilities summed in the current order, then sorted
    if (!cand.sorted) std::sort(c.begin(), c.end(), by_logit);
    cand.sorted = true;
    float cum = 0.0f;
    size_t keep = c.size();
    for (size_t i = 0; i < c.size(); ++i) {
        cum += c[i].p;
        if (cum >= p) {
            keep = i + 1;
            break;
        }
    }
    c.resize(keep);
}

void min_p(Candidates& cand, float p) {
    auto& c = cand.c;
    if (p <= 0.0f || c.empty()) return;
    if (!cand.sorted) {  // filter in place, keeping the current order
        float max_logit = -FLT_MAX;
        for (const auto& x : c) max_logit = std::max(max_logit, x.logit);
        const float min_logit = max_logit + std::log(p);
        std::vector<Candidate> kept;
        for (const auto& x : c)
            if (x.logit >= min_logit) kept.push_back(x);
        if (!kept.empty()) {
            c = std::move(kept);
            return;
        }
        cand.sort_prefix(c.size());
    }
    const float min_logit = c.front().logit + std::log(p);
    size_t i = 1;
    while (i < c.size() && !(c[i].logit < min_logit)) ++i;
    c.resize(i);
}

// llama.cpp's dist sampler: one uniform double per draw; the first candidate whose
// running (double) sum of exp(logit - max) reaches that fraction of the total.
TokenId draw(Candidates& cand, std::mt19937& rng) {
    auto& c = cand.c;
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    if (c.size() == 1) {
        uniform(rng);
        return c.front().id;
    }
    float max_l = c.front().logit;
    if (!cand.sorted)
        for (size_t i = 1; i < c.size(); ++i) max_l = std::max(max_l, c[i].logit);
    double sum = 0.0;
    for (auto& x : c) {
        x.p = std::exp(x.logit - max_l);
        sum += x.p;
    }
    const double target = sum * uniform(rng);
    double run = 0.0;
    for (const auto& x : c) {
        run += x.p;
        if (run >= target) return x.id;
    }
    return c.back().id;
}

}  // namespace

struct Sampler::State {
    SamplerOptions options;
    std::mt19937 rng;
    Candidates candidates;
    std::deque<TokenId> window;                    // the last penalty_last_n accepted tokens
    std::unordered_map<TokenId, int32_t> counts;  // occurrences in `window`
    std::vector<std::shared_ptr<SamplerStage>> stages;
    std::vector<float> scratch;  // logits after logit_bias and the user stages

    TokenId prepare(std::span<const float> logits);

    bool penalties_on() const {
        const auto& o = options;
        return o.penalty_last_n > 0 &&
               !(o.repeat_penalty == 1.0f && o.frequency_penalty == 0.0f && o.presence_penalty == 0.0f);
    }
    void apply_penalties() {
        if (!penalties_on() || counts.empty()) return;
        const auto& o = options;
        for (auto& x : candidates.c) {
            const auto it = counts.find(x.id);
            if (it == counts.end()) continue;
            if (x.logit <= 0)
                x.logit *= o.repeat_penalty;
            else
                x.logit /= o.repeat_penalty;
            x.logit -= static_cast<float>(it->second) * o.frequency_penalty + o.presence_penalty;
        }
        candidates.sorted = false;
    }
};

Sampler::Sampler(const SamplerOptions& options) : state_(std::make_unique<State>()) {
    const auto finite_nonneg = [](float v) { return std::isfinite(v) && v >= 0.0f; };
    if (!std::isfinite(options.temperature) || !finite_nonneg(options.top_p) || !finite_nonneg(options.min_p) ||
        !finite_nonneg(options.typical_p))
        throw Error(ErrorCode::InvalidArgument,
                    "sampler options: temperature, top_p, min_p and typical_p must be finite (and the last three >= 0)");
    if (!std::isfinite(options.repeat_penalty) || !(options.repeat_penalty > 0.0f) ||
        !std::isfinite(options.frequency_penalty) || !std::isfinite(options.presence_penalty))
        throw Error(ErrorCode::InvalidArgument,
                    "sampler options: repeat_penalty must be finite and > 0, frequency/presence penalties finite");
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

void Sampler::add_stage(std::shared_ptr<SamplerStage> stage) {
    if (!stage) throw Error(ErrorCode::InvalidArgument, "sampler: add_stage needs a stage");
    state_->stages.push_back(std::move(stage));
}

void Sampler::accept(TokenId token) {
    State& s = *state_;
    for (auto& stage : s.stages) stage->accept(token);
    if (!s.penalties_on()) return;
    s.window.push_back(token);
    ++s.counts[token];
    if (s.window.size() > static_cast<size_t>(s.options.penalty_last_n)) {
        const TokenId old = s.window.front();
        s.window.pop_front();
        if (--s.counts[old] == 0) s.counts.erase(old);
    }
}

void Sampler::reset() {
    for (auto& stage : state_->stages) stage->reset();
    state_->rng.seed(state_->options.seed);
    state_->window.clear();
    state_->counts.clear();
}

/// Runs the chain up to the draw on `logits`; returns the greedy token when temperature <= 0,
/// else kNoToken with the candidates left ready for the draw (logits divided by temperature).
TokenId Sampler::State::prepare(std::span<const float> logits) {
    if (logits.empty()) throw Error(ErrorCode::InvalidArgument, "sampler: no logits");
    const SamplerOptions& o = options;
    Candidates& cand = candidates;
    if (!o.logit_bias.empty() || !stages.empty()) {
        scratch.assign(logits.begin(), logits.end());
        for (const auto& [id, bias] : o.logit_bias)
            if (id >= 0 && static_cast<size_t>(id) < scratch.size()) scratch[static_cast<size_t>(id)] += bias;
        for (auto& stage : stages) stage->apply(scratch);
        logits = scratch;
    }
    cand.c.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) cand.c[i] = {static_cast<TokenId>(i), logits[i], 0.0f};
    cand.sorted = false;
    apply_penalties();
    if (o.temperature <= 0.0f) {
        // Greedy: the first maximum (lowest id on ties), as llama.cpp's greedy sampler.
        size_t best = 0;
        for (size_t i = 1; i < cand.c.size(); ++i)
            if (cand.c[i].logit > cand.c[best].logit) best = i;
        return cand.c[best].id;
    }
    top_k(cand, o.top_k);
    typical(cand, o.typical_p);
    top_p(cand, o.top_p);
    min_p(cand, o.min_p);
    for (auto& x : cand.c) x.logit /= o.temperature;
    return kNoToken;
}

TokenId Sampler::sample(std::span<const float> logits) {
    State& s = *state_;
    const TokenId greedy = s.prepare(logits);
    if (greedy != kNoToken) return greedy;
    return draw(s.candidates, s.rng);
}

void Sampler::distribution(std::span<const float> logits, std::vector<TokenProbability>& out) {
    State& s = *state_;
    out.clear();
    const TokenId greedy = s.prepare(logits);
    if (greedy != kNoToken) {
        out.push_back({greedy, 1.0});
        return;
    }
    // The weights draw() uses: exp(logit - max) in float, summed in double.
    const auto& c = s.candidates.c;
    float max_l = c.front().logit;
    for (size_t i = 1; i < c.size(); ++i) max_l = std::max(max_l, c[i].logit);
    double sum = 0.0;
    for (const auto& x : c) sum += static_cast<double>(std::exp(x.logit - max_l));
    for (const auto& x : c) {
        const double p = static_cast<double>(std::exp(x.logit - max_l)) / sum;
        if (p > 0.0) out.push_back({x.id, p});
    }
}

double Sampler::uniform() {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    return u(state_->rng);
}

}  // namespace genie
