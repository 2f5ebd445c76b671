#include "runtime/output_filter.hpp"

#include <algorithm>

namespace genie::runtime {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

/// Length of the longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_suffix(std::string_view text, std::string_view marker) {
    const size_t max = std::min(text.size(), marker.size() - 1);
    for (size_t n = max; n > 0; --n)
        if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
    return 0;
}

}  // namespace

OutputFilter::OutputFilter(std::vector<std::string> stops, bool split_reasoning, bool start_in_reasoning)
    : split_reasoning_(split_reasoning),
      kind_(split_reasoning && start_in_reasoning ? PieceKind::Reasoning : PieceKind::Content),
      strip_leading_ws_(split_reasoning && start_in_reasoning) {
    for (auto& s : stops)
        if (!s.empty()) stops_.push_back(std::move(s));
}

void OutputFilter::emit(std::vector<Segment>& out, PieceKind kind, std::string_view text) {
    if (strip_leading_ws_) {
        size_t i = 0;
        while (i < text.size() && is_space(text[i])) ++i;
        text.remove_prefix(i);
        if (text.empty()) return;
        strip_leading_ws_ = false;
    }
    if (text.empty()) return;
    if (kind == PieceKind::Content && !content_started_)
        content_started_ = std::any_of(text.begin(), text.end(), [](char c) { return !is_space(c); });
    if (!out.empty() && out.back().kind == kind) out.back().text += text;
    else out.push_back({kind, std::string(text)});
}

std::vector<Segment> OutputFilter::push(std::string_view text) {
    std::vector<Segment> out;
    if (stopped_) return out;
    pending_ += text;
    for (;;) {
        // The markers active now, and the earliest complete occurrence among them.
        std::vector<std::pair<std::string_view, Marker>> active;
        for (const auto& s : stops_) active.emplace_back(s, Marker::Stop);
        if (split_reasoning_ && kind_ == PieceKind::Content && !content_started_) active.emplace_back(kThinkOpen, Marker::ThinkOpen);
        if (split_reasoning_ && kind_ == PieceKind::Reasoning) active.emplace_back(kThinkClose, Marker::ThinkClose);
        size_t best = std::string::npos, best_len = 0;
        Marker best_marker = Marker::Stop;
        for (const auto& [m, kind] : active) {
            const size_t at = pending_.find(m);
            if (at != std::string::npos && (at < best || (at == best && m.size() > best_len))) {
                best = at;
                best_len = m.size();
                best_marker = kind;
            }
        }
        if (best == std::string::npos) {
            // Hold back the longest tail that could still become a marker.
            size_t hold = 0;
            for (const auto& [m, kind] : active) hold = std::max(hold, partial_suffix(pending_, m));
            emit(out, kind_, std::string_view(pending_).substr(0, pending_.size() - hold));
            pending_.erase(0, pending_.size() - hold);
            return out;
        }
        const std::string before = pending_.substr(0, best);
        pending_.erase(0, best + best_len);
        switch (best_marker) {
            case Marker::Stop:
                emit(out, kind_, before);
                stopped_ = true;
                pending_.clear();
                return out;
            case Marker::ThinkOpen:
                if (std::any_of(before.begin(), before.end(), [](char c) { return !is_space(c); })) {
                    // Text came first: this "<think>" is ordinary content.
                    emit(out, kind_, before);
                    emit(out, kind_, kThinkOpen);
                } else {
                    kind_ = PieceKind::Reasoning;  // leading whitespace before the tag is dropped
                    strip_leading_ws_ = true;
                }
                break;
            case Marker::ThinkClose:
                emit(out, kind_, before);
                kind_ = PieceKind::Content;
                strip_leading_ws_ = true;
                break;
        }
    }
}

std::vector<Segment> OutputFilter::finish() {
    std::vector<Segment> out;
    if (!stopped_) emit(out, kind_, pending_);
    pending_.clear();
    return out;
}

}  // namespace genie::runtime
