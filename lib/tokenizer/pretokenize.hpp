// Byte-level BPE pre-tokenizers: split text into words before BPE merges, as
// llama.cpp's unicode_regex_split does for each `tokenizer.ggml.pre` type.
//
// Each pre-tokenizer is a list of regexes applied one after another; each regex
// splits every piece from the previous step into its matches and the text between
// them ("Isolated" split). The three most common regexes (GPT-2, Llama 3, Qwen2) are
// hand-written scanners, as in llama.cpp; the others run on PCRE2 exactly the way
// llama.cpp runs them on std::regex:
//  - a regex with \p{..} classes runs on a "collapsed" string, one byte per code point:
//    ASCII stays itself, other whitespace becomes \v, other code points become one
//    byte per general category (0xD1 N, 0xD2 L, 0xD3 P, 0xD4 M, 0xD5 S, 0xD0 other),
//    and \p{X} becomes a class of that byte plus the ASCII members of X;
//  - a regex without \p{..} runs on the code points themselves (PCRE2 UTF mode, no UCP),
//    with non-ASCII whitespace replaced by \v so \s sees it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace genie::tokenizer {

class PreTokenizer {
public:
    /// Builds the pre-tokenizer for a list of regexes (llama.cpp's regex_exprs). Throws
    /// genie::Error(Internal) if PCRE2 rejects one.
    explicit PreTokenizer(const std::vector<std::string>& regexes);
    PreTokenizer(PreTokenizer&&) noexcept;
    PreTokenizer& operator=(PreTokenizer&&) noexcept;
    ~PreTokenizer();

    /// Splits `cpts` (decoded text) into words; `word_lengths` receives the number of
    /// code points of each word, in order, summing to cpts.size(). Thread-safe.
    void split(const std::vector<uint32_t>& cpts, std::vector<size_t>& word_lengths) const;

    struct Step;

private:
    std::vector<std::unique_ptr<Step>> steps_;
};

}  // namespace genie::tokenizer
