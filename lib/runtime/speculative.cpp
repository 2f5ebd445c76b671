#include "runtime/speculative.hpp"

#include "model/model_impl.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace genie::runtime {

void check_same_vocabulary(const Model& target, const Model& draft) {
    const Tokenizer& t = target.tokenizer();
    const Tokenizer& d = draft.tokenizer();
    const int32_t t_logits = target.impl().hparams.n_vocab, d_logits = draft.impl().hparams.n_vocab;
    if (t.vocab_size() != d.vocab_size() || t_logits != d_logits)
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("the draft model's vocabulary differs from the target's: {} tokens ({} logits) in the target, "
                                "{} tokens ({} logits) in the draft",
                                t.vocab_size(), t_logits, d.vocab_size(), d_logits));
    for (size_t i = 0; i < t.vocab_size(); ++i) {
        const auto id = static_cast<TokenId>(i);
        if (t.token_text(id) != d.token_text(id))
            throw Error(ErrorCode::InvalidArgument,
                        fmt::format("the draft model's vocabulary differs from the target's: token {} is \"{}\" in the target "
                                    "and \"{}\" in the draft",
                                    id, t.token_text(id), d.token_text(id)));
    }
}

namespace {

/// softmax(logits)[token] (the draft's confidence in its proposal).
double softmax_at(std::span<const float> logits, TokenId token) {
    const float max_l = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float l : logits) sum += std::exp(static_cast<double>(l - max_l));
    return std::exp(static_cast<double>(logits[static_cast<size_t>(token)] - max_l)) / sum;
}

/// Draws from `dist` (probabilities summing to `total`) with uniform u in [0, 1).
TokenId draw_from(std::span<const TokenProbability> dist, double total, double u) {
    const double target = u * total;
    double run = 0.0;
    for (const TokenProbability& tp : dist) {
        run += tp.p;
        if (run > target) return tp.token;
    }
    return dist.back().token;
}

double probability_of(std::span<const TokenProbability> dist, TokenId token) {
    for (const TokenProbability& tp : dist)
        if (tp.token == token) return tp.p;
    return 0.0;
}

}  // namespace

void propose_from_draft(Session& draft, std::span<const TokenId> context, Sampler& draft_sampler, int32_t n, float p_min,
                        Proposal& out) {
    out.clear();
    if (n <= 0) return;
    const bool greedy = draft_sampler.options().temperature <= 0.0f;
    const Tokenizer& tok = draft.model().tokenizer();
    std::vector<TokenId> seq(context.begin(), context.end());
    std::vector<TokenProbability> q;
    for (int32_t i = 0; i < n; ++i) {
        if (static_cast<int32_t>(seq.size()) >= draft.context_length()) break;
        const std::span<const float> logits = draft.evaluate(seq);  // reuses the cached prefix
        TokenId token;
        if (greedy) {
            token = draft_sampler.sample(logits);
            q.clear();
        } else {
            draft_sampler.distribution(logits, q);
            double total = 0.0;
            for (const TokenProbability& tp : q) total += tp.p;
            token = draw_from(q, total, draft_sampler.uniform());
        }
        if (p_min > 0.0f && softmax_at(logits, token) < p_min) break;
        out.tokens.push_back(token);
        out.q.push_back(q);
        if (tok.is_eog(token)) break;
        seq.push_back(token);
    }
}

Verdict verify(std::span<const float> target_logits, int32_t n_vocab, const Proposal& proposal, Sampler& sampler) {
    const bool greedy = sampler.options().temperature <= 0.0f;
    const auto row = [&](size_t j) { return target_logits.subspan(j * static_cast<size_t>(n_vocab), static_cast<size_t>(n_vocab)); };
    std::vector<TokenProbability> p;
    const size_t k = proposal.tokens.size();
    for (size_t j = 0; j < k; ++j) {
        const TokenId x = proposal.tokens[j];
        if (greedy) {
            const TokenId t = sampler.sample(row(j));
            if (t != x) return {static_cast<int32_t>(j), t};
        } else {
            sampler.distribution(row(j), p);
            const std::vector<TokenProbability>& q = proposal.q[j];
            const double px = probability_of(p, x);
            const double qx = q.empty() ? 1.0 : probability_of(q, x);
            // Keep x with probability min(1, p(x) / q(x)): u < p/q as u * q < p.
            if (!(sampler.uniform() * qx < px)) {
                // Rejected: draw from the residual norm(max(0, p - q)).
                std::vector<double> q_dense;
                if (!q.empty()) {
                    q_dense.assign(static_cast<size_t>(n_vocab), 0.0);
                    for (const TokenProbability& tp : q) q_dense[static_cast<size_t>(tp.token)] = tp.p;
                }
                double total = 0.0;
                for (TokenProbability& tp : p) {
                    const double qt = q.empty() ? (tp.token == x ? 1.0 : 0.0) : q_dense[static_cast<size_t>(tp.token)];
                    tp.p = std::max(0.0, tp.p - qt);
                    total += tp.p;
                }
                std::erase_if(p, [](const TokenProbability& tp) { return tp.p <= 0.0; });
                if (p.empty()) {  // p <= q everywhere up to rounding: p itself
                    sampler.distribution(row(j), p);
                    total = 1.0;
                }
                return {static_cast<int32_t>(j), draw_from(p, total, sampler.uniform())};
            }
        }
        sampler.accept(x);
    }
    return {static_cast<int32_t>(k), sampler.sample(row(k))};
}

int32_t adapt_draft_length(const SpeculativeOptions& options, int32_t current, int32_t proposed, int32_t accepted) {
    if (!options.adaptive) return options.draft_max;
    const int32_t lo = std::max(1, options.draft_min);
    const int32_t next = accepted >= proposed ? current + 2 : accepted + 1;
    return std::clamp(next, lo, std::max(lo, options.draft_max));
}

}  // namespace genie::runtime
