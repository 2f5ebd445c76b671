// Streaming sentence chunker for a voice loop: model pieces in, speakable sentences out,
// as early as possible. No libgenie or TTS dependency (unit-tested on its own:
// test/unit/test_sentence_chunker.cpp).
//
// Rules (docs/voice.md):
//  - A sentence ends at ASCII '.', '!' or '?' (a run of them, then closing quotes or
//    brackets) followed by whitespace — so "3.5" and "e.g.x" do not split, and the end
//    is known only when the next character arrives (or at flush()).
//  - CJK '。', '！', '？' end a sentence at once.
//  - A line break ends a sentence (list items, headings).
//  - A sentence shorter than `min_chars` code points is not emitted alone: it is joined
//    with the next one ("Hi. How are you?" is one chunk with min_chars 12).
//  - Markdown and code are stripped: fenced code blocks (``` or ~~~) are dropped whole;
//    inline code keeps its text without backticks; heading marks, list bullets and
//    numbers, block quotes, emphasis '*' / '__', table pipes and link targets are removed
//    ("[text](url)" -> "text"). Chunks with no letter or digit (rules, "...") are dropped.
//  - Reasoning is dropped: pieces pushed with reasoning = true are ignored.
//  - Runs of whitespace become one space; chunks are trimmed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace voice {

class SentenceChunker {
public:
    struct Options {
        size_t min_chars = 12;  ///< shortest chunk emitted alone (code points)
    };

    SentenceChunker() : SentenceChunker(Options{}) {}
    explicit SentenceChunker(Options options) : options_(options) {}

    /// Feeds a piece of model output; returns the sentences it completed, in order.
    std::vector<std::string> push(std::string_view text, bool reasoning = false);
    /// End of the answer: returns what is left (possibly shorter than min_chars).
    std::vector<std::string> flush();
    /// Forgets everything (barge-in).
    void reset();

private:
    void feed_line_text(std::string_view text, std::vector<std::string>& out);
    void inline_char(std::string_view cp, std::vector<std::string>& out);
    void split_char(std::string_view cp, std::vector<std::string>& out);
    void boundary(std::vector<std::string>& out, bool force);
    void end_line(std::vector<std::string>& out);
    bool decide_prefix();

    Options options_;
    // Line level (markdown prefixes, code fences).
    std::string line_;         // the current line's text not yet handed on (undecided prefix)
    bool prefix_done_ = false; // the current line's prefix was decided and stripped
    bool fence_line_ = false;  // the current line opens/closes a fence (dropped)
    bool in_fence_ = false;    // inside a fenced code block (dropped)
    // Inline level.
    char held_ = 0;            // '!' or ']' waiting for the next character (0: none)
    bool in_link_target_ = false;
    int link_depth_ = 0;
    bool prev_underscore_ = false;
    // Sentence level.
    std::string current_;      // the sentence being built
    size_t current_chars_ = 0; // code points in current_
    bool after_terminator_ = false;
    bool last_space_ = true;
};

}  // namespace voice
