// GBNF grammars as a constraint: each construct with accepted and rejected strings, the
// grammar errors, and mask walks (exactness against a brute-force check, liveness).
#include "constraint/json_grammar.hpp"
#include "support/test_support.hpp"

#include <genie/constraint.hpp>
#include <genie/error.hpp>
#include <genie/tokenizer.hpp>

#include <catch2/catch.hpp>

#include <random>

using namespace genie;

namespace {

struct Gbnf {
    constraint::Grammar g;
    explicit Gbnf(std::string_view text) : g(constraint::compile_gbnf(text)) {}
    bool accepts(std::string_view s) const { return constraint::accepts(g, s); }
    bool prefix(std::string_view s) const {
        constraint::StateSet a, b;
        a.push() = g.initial();
        for (char c : s) {
            if (!g.advance(a, static_cast<uint8_t>(c), b)) return false;
            std::swap(a, b);
        }
        return true;
    }
};

std::string error_of(std::string_view text) {
    try {
        Gbnf g(text);
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::InvalidArgument);
        return e.what();
    }
    return "no error";
}

void check_all(const Gbnf& g, std::initializer_list<const char*> ok, std::initializer_list<const char*> bad) {
    for (const char* s : ok) {
        INFO("should accept: '" << s << "'");
        CHECK(g.accepts(s));
    }
    for (const char* s : bad) {
        INFO("should reject: '" << s << "'");
        CHECK_FALSE(g.accepts(s));
    }
}

const Tokenizer& stories_vocab() {
    static const Tokenizer t = Tokenizer::load(test::testdata_dir() / "models" / "stories260K.gguf");
    return t;
}

bool bit(const std::vector<uint64_t>& m, size_t i) { return (m[i >> 6] >> (i & 63)) & 1; }

// Random walks through the masks; returns the finished texts.
std::vector<std::string> walks(const std::shared_ptr<const JsonConstraint>& c, int n, int max_steps) {
    const Tokenizer& tok = c->tokenizer();
    std::mt19937 rng(5);
    std::vector<std::string> done;
    for (int w = 0; w < n; ++w) {
        JsonMatcher m(c);
        for (int step = 0; step < max_steps; ++step) {
            const auto mask = m.mask_bits();
            std::vector<TokenId> allowed;
            for (size_t i = 0; i < tok.vocab_size(); ++i) {
                const bool on = bit(mask, i);
                JsonMatcher copy = m;
                INFO("text so far: '" << m.text() << "' token '" << tok.token_to_piece(static_cast<TokenId>(i)) << "'");
                REQUIRE(copy.accept_token(static_cast<TokenId>(i)) == on);
                if (on && !tok.is_eog(static_cast<TokenId>(i))) {
                    allowed.push_back(static_cast<TokenId>(i));
                    bool any = false;
                    for (uint64_t x : copy.mask_bits()) any = any || x != 0;
                    REQUIRE(any);
                }
            }
            if (m.is_complete() && (allowed.empty() || rng() % 4 == 0 || step > max_steps / 2)) break;
            REQUIRE(!allowed.empty());
            REQUIRE(m.accept_token(allowed[rng() % allowed.size()]));
        }
        if (m.is_complete()) done.push_back(m.text());
    }
    return done;
}

}  // namespace

TEST_CASE("gbnf: literals, sequences, alternatives", "[constraint][gbnf]") {
    check_all(Gbnf(R"(root ::= "on" | "off" | "toggle" " " "now")"), {"on", "off", "toggle now"},
              {"", "o", "onn", "toggle", "togglenow", "of"});
    check_all(Gbnf("root ::= greeting \" \" name\ngreeting ::= \"hi\" | \"hello\"\nname ::= \"bob\""),
              {"hi bob", "hello bob"}, {"hi  bob", "hey bob", "hello"});
}

TEST_CASE("gbnf: grouping and repetition * + ?", "[constraint][gbnf]") {
    check_all(Gbnf(R"(root ::= "a" ("b" | "c")* "d")"), {"ad", "abd", "acbcbd"}, {"a", "abcb", "ab d", "bd"});
    check_all(Gbnf(R"(root ::= "x"+ "y"?)"), {"x", "xxx", "xxy"}, {"", "y", "xyy", "xyx"});
    check_all(Gbnf(R"(root ::= ("ab")+)"), {"ab", "abab"}, {"a", "aba", "abb"});
    check_all(Gbnf(R"(root ::= "ab"*)"), {"", "ab", "abab"}, {"a", "b"});
}

TEST_CASE("gbnf: counted repetition {m} {m,} {m,n}", "[constraint][gbnf]") {
    check_all(Gbnf(R"(root ::= [0-9]{3})"), {"123"}, {"12", "1234", "12a"});
    check_all(Gbnf(R"(root ::= [0-9]{2,})"), {"12", "12345678"}, {"1", ""});
    check_all(Gbnf(R"(root ::= [0-9]{1,3} ("," [0-9]{0,2}){0,2})"), {"1", "123", "1,", "1,2,34", "123,45"},
              {"1234", "1,234", "1,2,3,4", ","});
    check_all(Gbnf(R"(root ::= ("ab" | "c"){2})"), {"abab", "abc", "cc"}, {"ab", "ccc"});
}

TEST_CASE("gbnf: character classes, ranges, negation, '.', escapes", "[constraint][gbnf]") {
    check_all(Gbnf(R"(root ::= [a-cx] [^0-9a-z] .)"), {"a!z", "xA9", "bZé", "c-\xF0\x9F\x98\x80"},
              {"d!z", "a1z", "aaz", "a!"});
    check_all(Gbnf(R"(root ::= "\x41\u00e9\n\t\"\\" [\]\[] [\x30-\x32])"), {"A\xC3\xA9\n\t\"\\]0", "A\xC3\xA9\n\t\"\\[2"},
              {"A\xC3\xA9\n\t\"\\]3", "Ae\n\t\"\\]0"});
    // Multi-byte classes prune at the lead byte: no 3-byte code point is in [à-ÿ].
    const Gbnf g(R"(root ::= [à-ÿ]+)");
    CHECK(g.accepts("\xC3\xA0\xC3\xBF"));
    CHECK_FALSE(g.prefix("\xE2"));
    CHECK_FALSE(g.prefix("\xC3\x80"));  // À is below the range
    CHECK_FALSE(g.accepts("\xC3"));     // a partial code point is not complete
}

TEST_CASE("gbnf: comments, newlines inside groups, rule names", "[constraint][gbnf]") {
    const char* text = R"(# a comment
root ::= item ( # comment inside a group
    "," item
  )* # trailing comment
item ::= [a-z_]+ | num-ber
num-ber ::= [0-9]+
)";
    check_all(Gbnf(text), {"a", "a,b_c,12"}, {"a,", ",a", "a;b"});
}

TEST_CASE("gbnf: recursion (right and nested)", "[constraint][gbnf]") {
    const Gbnf parens(R"g(root ::= "(" root ")" | "")g");
    check_all(parens, {"", "()", "((()))"}, {"(", "())", ")("});
    const Gbnf expr(R"g(root ::= term (("+" | "-") term)*
term ::= factor ("*" factor)*
factor ::= [0-9]+ | "(" root ")")g");
    check_all(expr, {"1", "1+2*3", "(1+2)*3", "((4))"}, {"1+", "(1", "1)", "+1", "1**2"});
}

TEST_CASE("gbnf: llama.cpp's json.gbnf", "[constraint][gbnf]") {
    const char* json_gbnf = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)";
    const Gbnf g(json_gbnf);
    check_all(g, {R"({})", R"({"a": [1, 2.5e3, "x\n", true, null], "b": {}})", "{\"k\":\"\\u00e9\"}\n  "},
              {R"({"a"})", R"([1])", R"({"a":01x})", R"({"a":"\q"})", "{} {}"});
    const auto c = JsonConstraint::from_grammar(json_gbnf, stories_vocab());
    const auto texts = walks(c, 10, 120);
    CHECK(texts.size() >= 2);
    for (const auto& t : texts) {
        INFO(t);
        CHECK(g.accepts(t));
    }
}

TEST_CASE("gbnf: masks are exact and live", "[constraint][gbnf]") {
    const char* text = R"(root ::= cmd (" " cmd){0,3}
cmd ::= ("on" | "off" | "dim " [0-9]{1,2} "%") | "say \"" [^"]{0,12} "\"")";
    const auto c = JsonConstraint::from_grammar(text, stories_vocab());
    const Gbnf g(text);
    const auto texts = walks(c, 20, 80);
    CHECK(texts.size() >= 10);
    for (const auto& t : texts) {
        INFO(t);
        CHECK(g.accepts(t));
    }
}

TEST_CASE("gbnf: errors", "[constraint][gbnf]") {
    CHECK_THAT(error_of("root ::= foo"), Catch::Contains("rule 'foo' is used but not defined"));
    CHECK_THAT(error_of("item ::= \"a\""), Catch::Contains("no rule named 'root'"));
    CHECK_THAT(error_of("root ::= root \"a\" | \"b\""), Catch::Contains("left-recursive"));
    CHECK_THAT(error_of("root ::= \"a\" root"), Catch::Contains("matches no finite string"));
    CHECK_THAT(error_of("root ::= (\"a\"?)*"), Catch::Contains("can match the empty string"));
    CHECK_THAT(error_of("root ::= \"abc"), Catch::Contains("not closed"));
    CHECK_THAT(error_of("root ::= [a-"), Catch::Contains("unexpected end"));
    CHECK_THAT(error_of("root ::= [ab"), Catch::Contains("not closed"));
    CHECK_THAT(error_of("root ::= \"a\"{3,1}"), Catch::Contains("below its minimum"));
    CHECK_THAT(error_of("root ::= \"a\"\nroot ::= \"b\""), Catch::Contains("defined twice"));
    CHECK_THAT(error_of("root := \"a\""), Catch::Contains("line 1"));
    CHECK_THAT(error_of("root ::= \"a\"\n  | \"b\""), Catch::Contains("line 2"));
    CHECK_THAT(error_of("root ::= * \"a\""), Catch::Contains("without anything to repeat"));
}
