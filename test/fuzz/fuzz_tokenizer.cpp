// Fuzz target: the tokenizer. Real vocabularies (loaded once): GPT-2 (byte-level BPE) and
// Llama 2 SentencePiece from ../shared/testdata, plus the Qwen3 fixture vocabulary when
// the build has generated it. For any byte string:
//  - tokenize never crashes or throws (parse_special on and off);
//  - byte-level BPE, valid UTF-8: the concatenated pieces are exactly the input (llama.cpp's
//    byte-level BPE is lossless: every byte has a token);
//  - SentencePiece with byte fallback, valid UTF-8: the pieces are the input, after the
//    one space SentencePiece puts in front of it (and with U+2581 read as a space);
//  - the streaming detokenizer, fed the tokens and then arbitrary ids taken from the
//    input, only ever returns valid UTF-8, and for valid input gives the input back;
//  - detokenize accepts every token sequence (ids in range) and rejects an id out of range
//    with genie::Error.
#include "fuzz_support.hpp"

#include <genie/error.hpp>
#include <genie/tokenizer.hpp>

#include <memory>
#include <string>
#include <vector>

namespace {

struct Vocab {
    genie::Tokenizer tok;
    bool byte_level;      // gpt2-style: lossless for any valid UTF-8
    bool spm_byte_fallback;  // SentencePiece with <0xXX> tokens
};

std::vector<Vocab> load_vocabs() {
    std::vector<Vocab> out;
    const auto dir = genie_fuzz::testdata_dir() / "tokenizer" / "vocab";
    out.push_back({genie::Tokenizer::load(dir / "ggml-vocab-gpt-2.gguf"), true, false});
    out.push_back({genie::Tokenizer::load(dir / "ggml-vocab-llama-spm.gguf"), false, true});
#ifdef GENIE_FIXTURE_DIR
    const std::filesystem::path qwen = std::filesystem::path(GENIE_FIXTURE_DIR) / "tokenizer-qwen3.gguf";
    if (std::filesystem::exists(qwen)) out.push_back({genie::Tokenizer::load(qwen), true, false});
#endif
    return out;
}

bool valid_utf8(std::string_view s) { return genie::sanitize_utf8(s) == s; }

void check_stream_valid(const std::string& text, const char* what) {
    if (!valid_utf8(text)) genie_fuzz::property_failed(what, text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::vector<Vocab> vocabs = load_vocabs();
    if (size > 4096) return 0;  // long inputs only slow the search down
    genie_fuzz::Input in(data, size);
    const uint8_t mode = in.byte();
    const Vocab& v = vocabs[mode % vocabs.size()];
    const bool parse_special = (mode & 0x10) != 0;
    // The text runs to the first 0xFF byte (never part of UTF-8), so it may hold NULs.
    const std::string_view text = in.until('\xff');
    const std::string_view extra_ids = in.rest();

    genie::TokenizeOptions topt;
    topt.parse_special = parse_special;
    topt.add_special = (mode & 0x20) != 0;
    std::vector<genie::TokenId> tokens;
    try {
        tokens = v.tok.tokenize(text, topt);
    } catch (const genie::Error& e) {
        genie_fuzz::property_failed("tokenize threw", e.what());
    }
    for (genie::TokenId t : tokens)
        if (t < 0 || static_cast<size_t>(t) >= v.tok.vocab_size()) genie_fuzz::property_failed("token id out of range");

    const bool valid = valid_utf8(text);
    if (valid && !parse_special && !topt.add_special) {
        std::string pieces;
        for (genie::TokenId t : tokens) pieces += v.tok.token_to_piece(t);
        if (v.byte_level && pieces != text)
            genie_fuzz::property_failed("byte-level BPE round trip", std::string(text) + "\n--- became ---\n" + pieces);
        if (v.spm_byte_fallback && !text.empty()) {
            // SentencePiece writes spaces as U+2581 and turns every U+2581 back into a space
            // (llama.cpp and Hugging Face alike), so a literal U+2581 comes back as a space.
            std::string expected(text);
            for (size_t at; (at = expected.find("\xe2\x96\x81")) != std::string::npos;) expected.replace(at, 3, " ");
            if (pieces != " " + expected && pieces != expected)
                genie_fuzz::property_failed("SentencePiece round trip", std::string(text) + "\n--- became ---\n" + pieces);
        }
    }

    // Streaming: the tokens, then arbitrary ids (2 bytes each, some out of range).
    genie::StreamingDetokenizer stream(v.tok, genie::StreamingOptions{(mode & 0x40) != 0, false});
    std::string streamed;
    for (genie::TokenId t : tokens) {
        std::string piece = stream.push(t);
        check_stream_valid(piece, "streaming piece is not valid UTF-8");
        streamed += piece;
    }
    if (valid && !parse_special && !topt.add_special && v.byte_level && streamed + stream.flush() != text)
        genie_fuzz::property_failed("streaming round trip", text);
    stream.reset();
    std::vector<genie::TokenId> ids;
    for (size_t i = 0; i + 1 < extra_ids.size(); i += 2) {
        const auto raw = static_cast<uint16_t>(static_cast<uint8_t>(extra_ids[i]) << 8 | static_cast<uint8_t>(extra_ids[i + 1]));
        // Mostly in range (the vocabularies have 32k-150k ids), sometimes past the end.
        const auto id = static_cast<genie::TokenId>(raw % (v.tok.vocab_size() + 16));
        try {
            check_stream_valid(stream.push(id), "streaming piece (random ids) is not valid UTF-8");
            ids.push_back(id);
        } catch (const genie::Error&) {
            if (static_cast<size_t>(id) < v.tok.vocab_size()) genie_fuzz::property_failed("push rejected an id in range");
        }
    }
    check_stream_valid(stream.flush(), "flush is not valid UTF-8");

    // Whole-sequence detokenization accepts any ids in range, with every option.
    genie::DetokenizeOptions dopt;
    dopt.remove_special = (mode & 0x01) != 0;
    dopt.render_special = (mode & 0x02) != 0;
    dopt.replace_invalid_utf8 = (mode & 0x04) != 0;
    try {
        const std::string text2 = v.tok.detokenize(ids, dopt);
        if (dopt.replace_invalid_utf8) check_stream_valid(text2, "detokenize(replace_invalid_utf8) is not valid UTF-8");
    } catch (const genie::Error& e) {
        genie_fuzz::property_failed("detokenize threw for ids in range", e.what());
    }
    const genie::TokenId bad[] = {static_cast<genie::TokenId>(v.tok.vocab_size())};
    try {
        (void)v.tok.detokenize(bad, dopt);
        genie_fuzz::property_failed("detokenize accepted an id out of range");
    } catch (const genie::Error&) {
    }
    return 0;
}
