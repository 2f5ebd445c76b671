// Streaming detokenization: every output is valid UTF-8, a character split across
// tokens is held back until complete, and the concatenation round-trips the text.
#include "test_tokenizer_fixtures.hpp"

#include "tokenizer/unicode.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace genie;
using genie::test::tokenizer_for;

namespace {

bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        size_t bad = 0;
        const int len = tokenizer::unicode::check_sequence(s, i, bad);
        if (len <= 0) return false;
        i += size_t(len);
    }
    return true;
}

const std::vector<std::string>& samples() {
    static const std::vector<std::string> s = {
        "Hello, world! It's a test.",
        "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C",                  // 你好，世界
        "\xE6\x9D\xB1\xE4\xBA\xAC \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",                  // 東京 한국어
        "emoji \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD family \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7",
        "combining e\xCC\x81 a\xCC\x88 n\xCC\x83 \xE0\xA4\xA8\xE0\xA4\xBF and \xD7\xA9\xD6\xB8\xD7\x9C\xD7\x95\xD7\x9D",
        "rare \xF0\x9D\x84\x9E \xF0\x90\x8C\xB0 \xF0\xB1\x8D\x90 \xE1\x9A\xA0\xE1\x9A\xA1",
        "code:\n\tfor (int i = 0; i < n; ++i) { x += \"\xC3\xA9\"; }\r\n",
        "  leading and trailing spaces  ",
    };
    return s;
}

}  // namespace

TEST_CASE("streaming: round-trips UTF-8 split at every token boundary", "[tokenizer][streaming]") {
    for (const char* name : {"qwen2", "llama-bpe", "gpt-2", "llama-spm", "phi-3", "deepseek-llm"}) {
        const Tokenizer& tok = tokenizer_for(name);
        const bool spm = tok.kind() == VocabKind::SentencePiece;
        for (const std::string& text : samples()) {
            INFO(name << ": " << text);
            const auto ids = tok.tokenize(text);
            StreamingOptions so;
            so.strip_leading_space = true;  // SentencePiece added a "▁" in front
            StreamingDetokenizer stream(tok, so);
            std::string all;
            for (TokenId id : ids) {
                const std::string piece = stream.push(id);
                CHECK(valid_utf8(piece));
                CHECK(stream.pending_bytes() < 4);
                all += piece;
            }
            all += stream.flush();
            // SentencePiece maps characters it lacks to byte tokens: still exact
            CHECK(all == text);
            if (!spm) CHECK(all == tok.detokenize(ids));
        }
    }
}

TEST_CASE("streaming: a multi-byte character split across tokens is held back", "[tokenizer][streaming]") {
    const Tokenizer& qwen = tokenizer_for("qwen2");
    const auto ids = qwen.tokenize("\xF0\x9D\x84\x9E!");  // U+1D11E is two tokens here
    REQUIRE(ids.size() == 3);
    StreamingDetokenizer s(qwen);
    CHECK(s.push(ids[0]) == "");
    CHECK(s.pending_bytes() == 3);
    CHECK(s.push(ids[1]) == "\xF0\x9D\x84\x9E");
    CHECK(s.pending_bytes() == 0);
    CHECK(s.push(ids[2]) == "!");
    CHECK(s.flush() == "");
}

TEST_CASE("streaming: invalid and incomplete bytes become U+FFFD, never a broken string", "[tokenizer][streaming]") {
    const Tokenizer& spm = tokenizer_for("llama-spm");
    auto byte_token = [&](unsigned b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        return *spm.find_token(name);
    };
    StreamingDetokenizer s(spm);
    CHECK(s.push(byte_token(0xE4)) == "");
    CHECK(s.push(byte_token(0xBD)) == "");
    // 'A' cannot continue the sequence: the partial sequence is replaced, then 'A'
    CHECK(s.push(byte_token('A')) == "\xEF\xBF\xBD" "A");
    CHECK(s.push(byte_token(0xFF)) == "\xEF\xBF\xBD");  // never valid: replaced at once
    CHECK(s.push(byte_token(0xF0)) == "");
    CHECK(s.flush() == "\xEF\xBF\xBD");  // incomplete at the end
    CHECK(s.pending_bytes() == 0);
    // control tokens render only when asked
    CHECK(s.push(1) == "");
    StreamingOptions render;
    render.render_special = true;
    StreamingDetokenizer r(spm, render);
    CHECK(r.push(1) == "<s>");
    CHECK_THROWS(r.push(99999));
}

TEST_CASE("streaming: random token sequences always give valid UTF-8", "[tokenizer][streaming]") {
    std::mt19937 rng(1234);
    for (const char* name : {"qwen2", "llama-spm"}) {
        const Tokenizer& tok = tokenizer_for(name);
        std::uniform_int_distribution<TokenId> pick(0, TokenId(tok.vocab_size() - 1));
        for (int round = 0; round < 200; ++round) {
            StreamingDetokenizer s(tok);
            std::string all;
            for (int k = 0; k < 12; ++k) {
                const std::string out = s.push(pick(rng));
                REQUIRE(valid_utf8(out));
                all += out;
            }
            const std::string tail = s.flush();
            REQUIRE(valid_utf8(tail));
            all += tail;
            REQUIRE(valid_utf8(all));
        }
    }
}

TEST_CASE("streaming: sanitize_utf8 replaces maximal invalid subparts", "[tokenizer][streaming]") {
    CHECK(sanitize_utf8("abc") == "abc");
    CHECK(sanitize_utf8("a\xFF" "b") == "a\xEF\xBF\xBD" "b");
    CHECK(sanitize_utf8("\xE4\xBD") == "\xEF\xBF\xBD");
    CHECK(sanitize_utf8("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
    CHECK(sanitize_utf8("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");                   // overlong
    CHECK(sanitize_utf8("\xF0\x9F\x98\x80") == "\xF0\x9F\x98\x80");
}
