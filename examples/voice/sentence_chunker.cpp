#include "sentence_chunker.hpp"

#include <cctype>

namespace voice {

namespace {

size_t cp_length(unsigned char lead) {
    if (lead < 0x80) return 1;
    if ((lead >> 5) == 0x6) return 2;
    if ((lead >> 4) == 0xE) return 3;
    if ((lead >> 3) == 0x1E) return 4;
    return 1;  // a stray continuation byte: pass it on alone
}

bool is_space(std::string_view cp) { return cp == " " || cp == "\t" || cp == "\r" || cp == "\f" || cp == "\v"; }
bool is_ascii_terminator(std::string_view cp) { return cp == "." || cp == "!" || cp == "?"; }
bool is_cjk_terminator(std::string_view cp) { return cp == "\u3002" || cp == "\uFF01" || cp == "\uFF1F"; }
bool is_closer(std::string_view cp) {
    return cp == "\"" || cp == "'" || cp == ")" || cp == "\u201D" || cp == "\u2019" || cp == "\u300D" ||
           cp == "\u300F" || cp == "\uFF09";
}

bool speakable(std::string_view s) {
    for (unsigned char c : s)
        if (c >= 0x80 || std::isalnum(c)) return true;
    return false;
}

template <class Fn>
void for_each_cp(std::string_view text, Fn&& fn) {
    for (size_t i = 0; i < text.size();) {
        const size_t n = std::min(cp_length(static_cast<unsigned char>(text[i])), text.size() - i);
        fn(text.substr(i, n));
        i += n;
    }
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

std::vector<std::string> SentenceChunker::push(std::string_view text, bool reasoning) {
    std::vector<std::string> out;
    if (reasoning) return out;
    size_t pos = 0;
    while (pos <= text.size()) {
        const size_t nl = text.find('\n', pos);
        feed_line_text(text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos), out);
        if (nl == std::string_view::npos) break;
        end_line(out);
        pos = nl + 1;
    }
    return out;
}

std::vector<std::string> SentenceChunker::flush() {
    std::vector<std::string> out;
    if (!line_.empty() || prefix_done_) end_line(out);
    boundary(out, true);
    reset();
    return out;
}

void SentenceChunker::reset() {
    line_.clear();
    prefix_done_ = fence_line_ = in_fence_ = false;
    held_ = 0;
    in_link_target_ = false;
    link_depth_ = 0;
    current_.clear();
    current_chars_ = 0;
    after_terminator_ = false;
    last_space_ = true;
}

// Decides how the current line starts (fence, heading, bullet, number, quote) once enough
// of it arrived; strips the marker from line_. False while still undecided.
bool SentenceChunker::decide_prefix() {
    size_t i = 0;
    while (i < line_.size() && (line_[i] == ' ' || line_[i] == '\t')) ++i;
    if (i == line_.size()) return false;
    const std::string_view rest = std::string_view(line_).substr(i);
    if (starts_with(rest, "```") || starts_with(rest, "~~~")) {
        fence_line_ = true;
        prefix_done_ = true;
        line_.clear();
        return true;
    }
    if (starts_with("```", rest) || starts_with("~~~", rest)) return false;  // "`", "``": maybe a fence
    size_t strip = i;
    if (!in_fence_) {
        if (rest[0] == '#') {
            size_t j = 0;
            while (j < rest.size() && rest[j] == '#') ++j;
            if (j == rest.size()) return false;
            if (rest[j] == ' ') strip = i + j + 1;
        } else if (rest[0] == '-' || rest[0] == '*' || rest[0] == '+') {
            if (rest.size() == 1) return false;
            if (rest[1] == ' ') strip = i + 2;
        } else if (std::isdigit(static_cast<unsigned char>(rest[0]))) {
            size_t j = 0;
            while (j < rest.size() && std::isdigit(static_cast<unsigned char>(rest[j]))) ++j;
            if (j == rest.size()) return false;
            if (rest[j] == '.' || rest[j] == ')') {
                if (j + 1 == rest.size()) return false;
                if (rest[j + 1] == ' ') strip = i + j + 2;
            }
        } else if (rest[0] == '>') {
            strip = i + 1;
            if (rest.size() > 1 && rest[1] == ' ') ++strip;
        }
    }
    line_.erase(0, strip);
    prefix_done_ = true;
    return true;
}

void SentenceChunker::feed_line_text(std::string_view text, std::vector<std::string>& out) {
    std::string decided;
    if (!prefix_done_) {
        line_.append(text);
        if (!decide_prefix()) return;
        decided.swap(line_);
        text = decided;
    }
    if (fence_line_ || in_fence_) return;
    for_each_cp(text, [&](std::string_view cp) { inline_char(cp, out); });
}

void SentenceChunker::end_line(std::vector<std::string>& out) {
    if (!prefix_done_) {
        // Never decided (e.g. "``", "#", "12"): plain text, unless inside a fence.
        const bool fence = starts_with(line_, "```") || starts_with(line_, "~~~");
        if (fence) fence_line_ = true;
        if (!fence && !in_fence_) {
            const std::string text = std::move(line_);
            for_each_cp(text, [&](std::string_view cp) { inline_char(cp, out); });
        }
    }
    if (fence_line_) in_fence_ = !in_fence_;
    if (held_ == '!') split_char("!", out);
    held_ = 0;
    in_link_target_ = false;
    line_.clear();
    prefix_done_ = false;
    fence_line_ = false;
    // A line break ends a sentence (list items, headings), unless it is too short.
    after_terminator_ = false;
    boundary(out, false);
    if (!current_.empty() && !last_space_) {
        current_ += ' ';
        ++current_chars_;
        last_space_ = true;
    }
}

void SentenceChunker::inline_char(std::string_view cp, std::vector<std::string>& out) {
    if (in_link_target_) {
        if (cp == "(") {
            ++link_depth_;
        } else if (cp == ")") {
            if (link_depth_ == 0)
                in_link_target_ = false;
            else
                --link_depth_;
        }
        return;
    }
    if (held_ != 0) {
        const char h = held_;
        held_ = 0;
        if (h == ']') {
            if (cp == "(") {
                in_link_target_ = true;
                link_depth_ = 0;
                return;
            }
        } else if (h == '!') {
            if (cp != "[") split_char("!", out);  // "![alt](url)": an image, '!' dropped
        }
    }
    if (cp == "!" || cp == "]") {
        held_ = cp[0];
        return;
    }
    if (cp == "[" || cp == "*" || cp == "`") return;
    if (cp == "_" || cp == "|") {
        split_char(" ", out);
        return;
    }
    split_char(cp, out);
}

void SentenceChunker::split_char(std::string_view cp, std::vector<std::string>& out) {
    if (after_terminator_) {
        if (is_closer(cp) || is_ascii_terminator(cp)) {
            current_.append(cp);
            ++current_chars_;
            return;
        }
        after_terminator_ = false;
        if (is_space(cp)) {
            boundary(out, false);
            if (!current_.empty()) {  // too short: the next sentence is joined to it
                current_ += ' ';
                ++current_chars_;
            }
            last_space_ = true;
            return;
        }
        // "3.5", "e.g.x": not the end of a sentence.
    }
    if (is_space(cp)) {
        if (!last_space_ && !current_.empty()) {
            current_ += ' ';
            ++current_chars_;
        }
        last_space_ = true;
        return;
    }
    current_.append(cp);
    ++current_chars_;
    last_space_ = false;
    if (is_ascii_terminator(cp))
        after_terminator_ = true;
    else if (is_cjk_terminator(cp))
        boundary(out, false);
}

void SentenceChunker::boundary(std::vector<std::string>& out, bool force) {
    while (!current_.empty() && current_.back() == ' ') {
        current_.pop_back();
        --current_chars_;
    }
    if (current_.empty()) return;
    if (!speakable(current_)) {  // "---", "...": never joined to the next sentence
        current_.clear();
        current_chars_ = 0;
        last_space_ = true;
        after_terminator_ = false;
        return;
    }
    if (!force && current_chars_ < options_.min_chars) return;
    if (speakable(current_)) out.push_back(current_);
    current_.clear();
    current_chars_ = 0;
    last_space_ = true;
    after_terminator_ = false;
}

}  // namespace voice
