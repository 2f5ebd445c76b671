// Special-token partitioning (llama.cpp's tokenizer_st_partition): before the text is
// tokenized, occurrences of special tokens are cut out and become their ids. Tokens are
// tried one at a time, longest text first, each over all the remaining text pieces.
// Control and unknown tokens count only with parse_special; user-defined tokens always
// (as Hugging Face does for added tokens).
#include "tokenizer/vocab.hpp"

namespace genie::tokenizer {

namespace {
bool ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
}  // namespace

std::vector<Fragment> partition_special(const Tokenizer::Impl& vocab, std::string_view text, bool parse_special) {
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back(Fragment{kNoToken, 0, text.size()});
    std::vector<Fragment> next;

    for (const TokenId special : vocab.special_by_length) {
        const TokenData& data = vocab.tokens[size_t(special)];
        if (!parse_special && (data.attr & (kAttrControl | kAttrUnknown))) continue;
        const std::string_view needle = data.text;

        // Quick check: skip the rebuild when the token occurs in no raw fragment.
        bool any = false;
        for (const Fragment& f : fragments) {
            if (f.token == kNoToken && text.substr(f.offset, f.length).find(needle) != std::string_view::npos) {
                any = true;
                break;
            }
        }
        if (!any) continue;

        next.clear();
        for (const Fragment& f : fragments) {
            if (f.token != kNoToken) {
                next.push_back(f);
                continue;
            }
            size_t base = f.offset;
            size_t length = f.length;
            while (true) {
                const size_t match = text.substr(0, base + length).find(needle, base);
                if (match == std::string_view::npos) {
                    next.push_back(Fragment{kNoToken, base, length});
                    break;
                }
                if (match > base) {
                    size_t left_length = match - base;
                    if (data.attr & kAttrLstrip)
                        while (left_length > 0 && ascii_space(text[base + left_length - 1])) --left_length;
                    if (left_length > 0) next.push_back(Fragment{kNoToken, base, left_length});
                }
                next.push_back(Fragment{special, 0, 0});
                const size_t right = match + needle.size();
                if (right >= base + length) break;
                size_t right_offset = right;
                size_t right_length = base + length - right;
                if (data.attr & kAttrRstrip) {
                    while (right_length > 0 && ascii_space(text[right_offset])) {
                        ++right_offset;
                        --right_length;
                    }
                }
                if (right_length == 0) break;
                base = right_offset;
                length = right_length;
            }
        }
        fragments.swap(next);
    }
    return fragments;
}

}  // namespace genie::tokenizer
