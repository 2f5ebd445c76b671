// Turns the generated text stream into what a caller may see: stop strings are held
// back while a partial match is pending and never emitted; Qwen3-style <think>...</think>
// at the start of the output is split off as reasoning (tags removed).
#pragma once

#include <genie/session.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace genie::runtime {

struct Segment {
    PieceKind kind;
    std::string text;
};

class OutputFilter {
public:
    /// `stops`: stop strings (empty ones ignored). `split_reasoning`: recognise an opening
    /// "<think>" before any content and the closing "</think>". `start_in_reasoning`: the
    /// prompt already opened the think block (the template ended with "<think>").
    OutputFilter(std::vector<std::string> stops, bool split_reasoning, bool start_in_reasoning);

    /// Feeds complete UTF-8 text; returns what may be emitted now, in order.
    std::vector<Segment> push(std::string_view text);
    /// End of generation: releases text held back for a partial match.
    std::vector<Segment> finish();
    /// True once a stop string matched: nothing more is emitted.
    bool stopped() const noexcept { return stopped_; }

private:
    enum class Marker { Stop, ThinkOpen, ThinkClose };
    void emit(std::vector<Segment>& out, PieceKind kind, std::string_view text);

    std::vector<std::string> stops_;
    bool split_reasoning_;
    PieceKind kind_;
    bool content_started_ = false;  // a non-whitespace content byte was emitted
    bool strip_leading_ws_ = false;  // just after a think tag: drop whitespace
    bool stopped_ = false;
    std::string pending_;
};

}  // namespace genie::runtime
