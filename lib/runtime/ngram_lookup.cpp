#include "runtime/ngram_lookup.hpp"

#include <algorithm>

namespace genie::runtime {

void lookup_proposals(std::span<const TokenId> history, int32_t ngram, int32_t max_tokens, std::vector<TokenId>& out) {
    const auto n = static_cast<int64_t>(history.size());
    if (ngram <= 0 || max_tokens <= 0 || n < ngram + 1) return;
    const std::span<const TokenId> key = history.last(static_cast<size_t>(ngram));
    // Occurrences start before the key itself (they may overlap it: a repeated token run),
    // newest first, so at least one token follows each.
    for (int64_t s = n - ngram - 1; s >= 0; --s) {
        if (!std::equal(key.begin(), key.end(), history.begin() + s)) continue;
        const int64_t from = s + ngram;
        const int64_t count = std::min<int64_t>(max_tokens, n - from);
        out.insert(out.end(), history.begin() + from, history.begin() + from + count);
        return;
    }
}

}  // namespace genie::runtime
