// Prompt lookup (n-gram) proposals for speculative decoding: the tokens that followed an
// earlier occurrence of the sequence's last n tokens (answers that quote the question,
// code edits, JSON).
#pragma once

#include <genie/tokenizer.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace genie::runtime {

/// Appends to `out` up to `max_tokens` tokens that followed the most recent earlier
/// occurrence of the last `ngram` tokens of `history` (none when they did not occur
/// before, or history is shorter than ngram + 1).
void lookup_proposals(std::span<const TokenId> history, int32_t ngram, int32_t max_tokens, std::vector<TokenId>& out);

}  // namespace genie::runtime
