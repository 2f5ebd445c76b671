// Fuzz target: the JSON-schema compiler and the constrained matcher, bound to a real
// (small) vocabulary: stories260K's 512-token SentencePiece vocab, loaded once.
// Input: an options byte, the schema text up to a 0xFF byte, then bytes for the matcher:
// chunks of text (accept_text) and token ids (accept_token / allows / mask_bits).
// Properties: from_schema compiles or throws genie::Error; the matcher never crashes; a
// rejected chunk leaves the state unchanged; whenever the matcher says the output is
// complete, the bytes accepted so far parse as JSON and validate against the schema
// (json_matches_schema); a token that allows() / mask_bits() allow is taken by accept_token.
// Seeds cover anyOf/allOf/$ref (recursive), pattern/format, bounds and prefixItems.
#include "fuzz_support.hpp"

#include <genie/constraint.hpp>
#include <genie/error.hpp>
#include <genie/tokenizer.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

void check_complete(const genie::JsonMatcher& m, std::string_view schema, bool from_schema) {
    if (!m.is_complete()) return;
    if (!nlohmann::json::accept(m.text())) genie_fuzz::property_failed("complete output does not parse as JSON", m.text());
    // The validator (same compiler, no tokenizer) agrees with the matcher.
    if (from_schema && !genie::json_matches_schema(schema, m.text()))
        genie_fuzz::property_failed("complete output does not validate against its schema", m.text());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const genie::Tokenizer tok = genie::Tokenizer::load(genie_fuzz::testdata_dir() / "models" / "stories260K.gguf");
    if (size > 8192) return 0;
    genie_fuzz::Input in(data, size);
    const uint8_t mode = in.byte();
    const std::string_view schema = in.until('\xff');

    genie::JsonConstraintOptions options;
    options.max_whitespace = mode & 3;
    options.max_nesting = 1 + ((mode >> 2) & 7);
    options.max_string_length = (mode & 0x20) ? 16 : 0;
    options.close_after_bytes = (mode & 0x40) ? 32 : 0;
    options.mask_cache_entries = 8;

    std::shared_ptr<const genie::JsonConstraint> constraint;
    try {
        switch (mode >> 7) {
            case 0: constraint = genie::JsonConstraint::from_schema(schema, tok, options); break;
            default: constraint = (schema.size() & 1) ? genie::JsonConstraint::any_value(tok, options)
                                                      : genie::JsonConstraint::any_object(tok, options);
        }
    } catch (const genie::Error& e) {
        if (std::getenv("GENIE_FUZZ_VERBOSE")) std::fprintf(stderr, "schema rejected: %s\n", e.what());
        return 0;
    }

    genie::JsonMatcher m(constraint);
    int steps = 0;
    while (!in.empty() && ++steps < 256) {
        const uint8_t op = in.byte();
        if (op < 0xc0) {  // text chunk
            const std::string before = m.text();
            const std::string_view chunk = in.bytes(op & 0x1f);
            const bool ok = m.accept_text(chunk);
            if (!ok && m.text() != before) genie_fuzz::property_failed("a rejected chunk changed the state");
            if (ok && m.text() != before + std::string(chunk)) genie_fuzz::property_failed("accept_text lost bytes");
        } else if (op < 0xe0) {  // one token, checked against the mask
            const auto id = static_cast<genie::TokenId>(in.below(static_cast<uint32_t>(tok.vocab_size()) + 4)) - 2;
            const bool in_range = id >= 0 && static_cast<size_t>(id) < tok.vocab_size();
            const bool allowed = in_range && m.allows(id);
            if (in_range) {
                const auto& bits = m.mask_bits();
                const bool bit = (bits[static_cast<size_t>(id) / 64] >> (id % 64)) & 1;
                if (bit != allowed) genie_fuzz::property_failed("mask_bits() and allows() disagree");
            }
            const bool taken = m.accept_token(id);
            // (A token the mask forbids may still be a valid prefix that leads nowhere, so
            // only this direction is a property.)
            if (allowed && !taken) genie_fuzz::property_failed("accept_token() rejected a token allows() allowed");
        } else if (op < 0xf0) {  // the masked argmax step a generation takes
            std::vector<float> logits(tok.vocab_size());
            for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 2654435761u + op) % 1000);
            if (m.apply(logits) != 0) {
                size_t best = 0;
                for (size_t i = 1; i < logits.size(); ++i)
                    if (logits[i] > logits[best]) best = i;
                if (!m.accept_token(static_cast<genie::TokenId>(best)))
                    genie_fuzz::property_failed("the best unmasked token was rejected");
            }
        } else if (op == 0xff) {
            m.reset();
        } else {
            genie::JsonMatcher copy = m;  // copies are independent
            (void)copy.accept_text("}");
        }
        check_complete(m, schema, (mode >> 7) == 0);
    }
    if (std::getenv("GENIE_FUZZ_VERBOSE"))
        std::fprintf(stderr, "matcher: %d steps, complete %d, text '%s'\n", steps, m.is_complete(), m.text().c_str());
    return 0;
}
