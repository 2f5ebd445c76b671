// Speculative decoding (docs/speculative.md): proposals from a draft model or from prompt
// lookup, and their verification against the target's logits for every proposed position.
#pragma once

#include <genie/model.hpp>
#include <genie/sampler.hpp>
#include <genie/session.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace genie::runtime {

/// Throws InvalidArgument unless `draft` has the target's vocabulary: the same number of
/// tokens and logits and the same text for every token id (the message names the first id
/// that differs and both texts).
void check_same_vocabulary(const Model& target, const Model& draft);

/// The proposals of one step and, per proposal, the distribution it was drawn from
/// (empty: a point mass on the token, as for greedy drafting and prompt lookup).
struct Proposal {
    std::vector<TokenId> tokens;
    std::vector<std::vector<TokenProbability>> q;
    void clear() {
        tokens.clear();
        q.clear();
    }
};

/// Up to `n` proposals continuing `context` (the whole sequence: the draft session reuses
/// its cached prefix) from the draft model, drawn with `draft_sampler` (greedy at
/// temperature <= 0). Stops early at a token the draft gives less than `p_min` (softmax of
/// its raw logits) and at an end-of-generation token (included).
void propose_from_draft(Session& draft, std::span<const TokenId> context, Sampler& draft_sampler, int32_t n, float p_min,
                        Proposal& out);

/// The outcome of verifying a proposal: how many proposals were kept, and the token the
/// target chooses after them (a correction at the first rejection, else one more token).
struct Verdict {
    int32_t accepted = 0;
    TokenId next = kNoToken;
};

/// Verifies `proposal` against `target_logits` ([proposal.tokens.size() + 1, n_vocab]:
/// row j is the target's logits after the context and the first j proposals). Greedy
/// (temperature <= 0): a proposal is kept while it is the token sampler.sample gives for its
/// row. Otherwise the standard rejection rule: keep token x with probability min(1, p(x) /
/// q(x)), where p is `sampler`'s distribution of the row and q the proposal's; at the first
/// rejection draw from norm(max(0, p - q)); after all are kept, draw from the last row. Kept
/// proposals are passed to sampler.accept (so penalties see them); `next` is not.
Verdict verify(std::span<const float> target_logits, int32_t n_vocab, const Proposal& proposal, Sampler& sampler);

/// Next proposal length under SpeculativeOptions::adaptive, after `proposed` proposals of
/// which `accepted` were kept.
int32_t adapt_draft_length(const SpeculativeOptions& options, int32_t current, int32_t proposed, int32_t accepted);

}  // namespace genie::runtime
