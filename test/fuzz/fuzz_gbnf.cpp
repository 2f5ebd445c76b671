// Fuzz target: the GBNF grammar compiler and the constrained matcher over it, bound to
// stories260K's 512-token SentencePiece vocabulary (byte tokens included), loaded once.
// Input: the grammar text up to a 0xFF byte, then bytes for the matcher: chunks of text
// (accept_text), token ids (accept_token / allows / mask_bits) and masked argmax steps.
// Properties: from_grammar compiles or throws genie::Error; the matcher never crashes and
// never loops; a rejected chunk leaves the state unchanged; a token allows() allows is taken
// by accept_token; mask_bits() and allows() agree; whenever the matcher says the output is
// complete, the tokenizer-free path (constraint::accepts) accepts the same bytes.
#include "constraint/json_grammar.hpp"
#include "fuzz_support.hpp"

#include <genie/constraint.hpp>
#include <genie/error.hpp>
#include <genie/tokenizer.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const genie::Tokenizer tok = genie::Tokenizer::load(genie_fuzz::testdata_dir() / "models" / "stories260K.gguf");
    if (size > 8192) return 0;
    genie_fuzz::Input in(data, size);
    const std::string_view grammar = in.until('\xff');
    genie::JsonConstraintOptions options;
    options.mask_cache_entries = 8;
    std::shared_ptr<const genie::JsonConstraint> constraint;
    try {
        constraint = genie::JsonConstraint::from_grammar(grammar, tok, options);
    } catch (const genie::Error& e) {
        if (std::getenv("GENIE_FUZZ_VERBOSE")) std::fprintf(stderr, "grammar rejected: %s\n", e.what());
        return 0;
    }
    const genie::constraint::Grammar& g = constraint->impl().grammar;
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
            const auto id = static_cast<genie::TokenId>(in.below(static_cast<uint32_t>(tok.vocab_size())));
            const bool allowed = m.allows(id);
            const auto& bits = m.mask_bits();
            if ((((bits[static_cast<size_t>(id) / 64] >> (id % 64)) & 1) != 0) != allowed)
                genie_fuzz::property_failed("mask_bits() and allows() disagree");
            if (allowed && !m.accept_token(id)) genie_fuzz::property_failed("accept_token() rejected an allowed token");
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
            (void)copy.accept_text("a");
        }
        if (m.is_complete() && !genie::constraint::accepts(g, m.text()))
            genie_fuzz::property_failed("the matcher and constraint::accepts disagree", m.text());
    }
    return 0;
}
