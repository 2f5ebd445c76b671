// JSON-schema keywords of the constraint, one test per keyword: strings the constraint
// accepts and strings it rejects (complete values; prefixes where the rejection must come
// early), errors naming the schema path, and mask walks over ambiguous (anyOf) and
// recursive schemas.
#include "constraint/json_grammar.hpp"
#include "support/test_support.hpp"

#include <genie/constraint.hpp>
#include <genie/error.hpp>
#include <genie/tokenizer.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <random>

using namespace genie;

namespace {

// The grammar alone (no tokenizer): what the automaton accepts as complete values.
struct Schema {
    constraint::Grammar g;
    explicit Schema(const char* text, JsonConstraintOptions o = {}) : g(constraint::compile_schema(text, o)) {}
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

std::string error_of(const char* text) {
    try {
        Schema s(text);
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::InvalidArgument);
        return e.what();
    }
    return "no error";
}

const Tokenizer& stories_vocab() {
    static const Tokenizer t = Tokenizer::load(test::testdata_dir() / "models" / "stories260K.gguf");
    return t;
}

bool bit(const std::vector<uint64_t>& m, size_t i) { return (m[i >> 6] >> (i & 63)) & 1; }

// Random walks through the masks of `c`: each mask equals a brute-force check of every
// token, no allowed token leads to an empty mask, and every finished text is accepted by
// json_matches_schema (and parses). Returns the number of finished walks.
int walks(const std::shared_ptr<const JsonConstraint>& c, const char* schema_text, int n, int max_steps) {
    const Tokenizer& tok = c->tokenizer();
    std::mt19937 rng(77);
    int done = 0;
    for (int w = 0; w < n; ++w) {
        JsonMatcher m(c);
        for (int step = 0; step < max_steps; ++step) {
            const auto mask = m.mask_bits();
            std::vector<TokenId> allowed;
            for (size_t i = 0; i < tok.vocab_size(); ++i) {
                const bool on = bit(mask, i);
                JsonMatcher copy = m;
                INFO("text so far: " << m.text() << " token '" << tok.token_to_piece(static_cast<TokenId>(i)) << "'");
                REQUIRE(copy.accept_token(static_cast<TokenId>(i)) == on);
                if (on && !tok.is_eog(static_cast<TokenId>(i))) {
                    allowed.push_back(static_cast<TokenId>(i));
                    bool any = false;
                    for (uint64_t x : copy.mask_bits()) any = any || x != 0;
                    REQUIRE(any);
                }
            }
            if (m.is_complete() && (rng() % 3 == 0 || allowed.empty() || step > max_steps / 2)) break;
            REQUIRE(!allowed.empty());
            TokenId pick = allowed[rng() % allowed.size()];
            if (step > max_steps / 4)  // prefer closing bytes so walks finish
                for (int t = 0; t < 8; ++t) {
                    const TokenId x = allowed[rng() % allowed.size()];
                    if (tok.token_to_piece(x).find_first_of("}]\"") != std::string::npos) {
                        pick = x;
                        break;
                    }
                }
            REQUIRE(m.accept_token(pick));
        }
        if (m.is_complete()) {
            ++done;
            INFO("output: " << m.text());
            REQUIRE(nlohmann::json::accept(m.text()));
            REQUIRE(json_matches_schema(schema_text, m.text()));
        }
    }
    return done;
}

}  // namespace

TEST_CASE("schema: anyOf / oneOf", "[constraint][schema]") {
    Schema s(R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":2},
                          {"type":"object","properties":{"a":{"const":1}},"required":["a"],"additionalProperties":false},
                          {"type":"object","properties":{"b":{"type":"boolean"}},"required":["b"],"additionalProperties":false}]})");
    for (const char* ok : {"12", R"("ab")", R"({"a":1})", R"({"b":true})", R"({ "b" : false })"}) {
        INFO(ok);
        CHECK(s.accepts(ok));
    }
    for (const char* bad : {"1.5", R"("abc")", R"({"a":2})", R"({"a":1,"b":true})", R"({})", "null"}) {
        INFO(bad);
        CHECK_FALSE(s.accepts(bad));
    }
    CHECK_FALSE(s.prefix(R"({"c)"));  // no alternative has a key starting with c
    Schema o(R"({"oneOf":[{"type":"null"},{"enum":["x","y"]}]})");
    CHECK(o.accepts("null"));
    CHECK(o.accepts(R"("y")"));
    CHECK_FALSE(o.accepts(R"("z")"));
    // Sibling keywords apply to every alternative.
    Schema sib(R"({"type":"object","required":["id"],"properties":{"id":{"type":"integer"}},
                   "anyOf":[{"properties":{"x":{"type":"string"}},"required":["x"]},{"properties":{"y":{"type":"null"}},"required":["y"]}]})");
    CHECK(sib.accepts(R"({"id":1,"x":"a"})"));
    CHECK(sib.accepts(R"({"y":null,"id":2})"));
    CHECK_FALSE(sib.accepts(R"({"x":"a"})"));
    CHECK_FALSE(sib.accepts(R"({"id":1})"));
}

TEST_CASE("schema: allOf of objects merges properties and required", "[constraint][schema]") {
    Schema s(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                          {"properties":{"b":{"type":"string"}},"required":["b"]},
                          {"properties":{"a":{"minimum":0}}}]})");
    CHECK(s.accepts(R"({"a":1,"b":"x"})"));
    CHECK(s.accepts(R"({"b":"x","a":0})"));
    CHECK_FALSE(s.accepts(R"({"a":1})"));
    CHECK_FALSE(s.accepts(R"({"a":-1,"b":"x"})"));
    CHECK_FALSE(s.accepts(R"({"a":"1","b":"x"})"));
    CHECK_THAT(error_of(R"({"allOf":[{"type":"string"},{"type":"integer"}]})"), Catch::Contains("types do not overlap"));
}

TEST_CASE("schema: $ref, $defs, definitions, recursion", "[constraint][schema]") {
    Schema s(R"({"$defs":{"pos":{"type":"integer","minimum":1}},"definitions":{"name":{"type":"string"}},
                 "type":"object","properties":{"n":{"$ref":"#/$defs/pos"},"s":{"$ref":"#/definitions/name"}},
                 "required":["n"],"additionalProperties":false})");
    CHECK(s.accepts(R"({"n":3,"s":"x"})"));
    CHECK_FALSE(s.accepts(R"({"n":0})"));
    CHECK_FALSE(s.accepts(R"({"n":1,"s":2})"));
    // A tree: recursion through an optional property and array items.
    Schema tree(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
                    "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],"additionalProperties":false}},
                    "$ref":"#/$defs/node"})");
    CHECK(tree.accepts(R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
    CHECK_FALSE(tree.accepts(R"({"v":1,"kids":[{"kids":[]}]})"));
    // A reference to the root.
    Schema list(R"({"type":"object","properties":{"next":{"$ref":"#"}},"additionalProperties":false})");
    CHECK(list.accepts(R"({"next":{"next":{}}})"));
    CHECK_FALSE(list.accepts(R"({"next":{"x":1}})"));
    CHECK_THAT(error_of(R"({"$ref":"#/$defs/missing"})"), Catch::Contains("#/$ref: '#/$defs/missing' does not resolve"));
    CHECK_THAT(error_of(R"({"$ref":"http://example.com/s.json"})"), Catch::Contains("only local references"));
    CHECK_THAT(error_of(R"({"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]})"),
               Catch::Contains("no finite value"));
}

TEST_CASE("schema: enum and const of any JSON value", "[constraint][schema]") {
    Schema s(R"({"enum":[{"a":[1,2]},[true,null],"x",1.5,null]})");
    for (const char* ok : {R"({"a":[1,2]})", "[true,null]", R"("x")", "1.5", "null"}) {
        INFO(ok);
        CHECK(s.accepts(ok));
    }
    for (const char* bad : {R"({"a":[1]})", "[true]", R"("y")", "1.6", "1"}) {
        INFO(bad);
        CHECK_FALSE(s.accepts(bad));
    }
    Schema c(R"({"const":{"k":"v"}})");
    CHECK(c.accepts(R"({"k":"v"})"));
    CHECK_FALSE(c.accepts(R"({"k":"w"})"));
}

TEST_CASE("schema: pattern (regex subset)", "[constraint][schema]") {
    Schema anchored(R"({"type":"string","pattern":"^[A-Z]{2}-\\d{3,4}(x|yz)?$"})");
    for (const char* ok : {R"("AB-123")", R"("ZZ-1234x")", R"("QQ-000yz")"}) {
        INFO(ok);
        CHECK(anchored.accepts(ok));
    }
    for (const char* bad : {R"("ab-123")", R"("AB-12")", R"("AB-12345")", R"("AB-123y")", R"(" AB-123")"}) {
        INFO(bad);
        CHECK_FALSE(anchored.accepts(bad));
    }
    CHECK_FALSE(anchored.prefix(R"("A1)"));  // rejected at the first wrong byte
    // Unanchored: a search, as JSON Schema says.
    Schema search(R"({"type":"string","pattern":"o+k"})");
    CHECK(search.accepts(R"("is it ok?")"));
    CHECK_FALSE(search.accepts(R"("nope")"));
    // Classes with negation, '.', escapes of JSON strings, non-ASCII.
    Schema cls(R"({"type":"string","pattern":"^[^0-9]+\\.[é-ü]$"})");
    CHECK(cls.accepts(R"("ab.é")"));
    CHECK(cls.accepts(R"("a\"b.ü")"));  // the decoded string is a"b.ü
    CHECK_FALSE(cls.accepts(R"("a1.é")"));
    CHECK_FALSE(cls.accepts(R"("ab.a")"));
    Schema quoted(R"({"type":"string","pattern":"^\"$"})");
    CHECK(quoted.accepts(R"("\"")"));
    CHECK_FALSE(quoted.accepts(R"("\\")"));
    CHECK_THAT(error_of(R"({"type":"string","pattern":"^(a$"})"), Catch::Contains("#/pattern"));
    CHECK_THAT(error_of(R"j({"type":"string","pattern":"(?=a)"})j"), Catch::Contains("lookarounds"));
    CHECK_THAT(error_of(R"({"type":"string","pattern":"a","maxLength":3})"), Catch::Contains("not supported"));
}

TEST_CASE("schema: formats date, time, date-time, uuid", "[constraint][schema]") {
    Schema date(R"({"type":"string","format":"date"})");
    CHECK(date.accepts(R"("2026-12-07")"));
    CHECK_FALSE(date.accepts(R"("2026-13-07")"));
    CHECK_FALSE(date.accepts(R"("2026-12-32")"));
    CHECK_FALSE(date.accepts(R"("26-12-07")"));
    Schema time(R"({"type":"string","format":"time"})");
    CHECK(time.accepts(R"("23:59:60Z")") == false);
    CHECK(time.accepts(R"("23:59:59Z")"));
    CHECK(time.accepts(R"("08:00:00.250+01:00")"));
    CHECK_FALSE(time.accepts(R"("24:00:00Z")"));
    CHECK_FALSE(time.accepts(R"("08:00:00")"));
    Schema dt(R"({"type":"string","format":"date-time"})");
    CHECK(dt.accepts(R"("2026-12-07T19:30:00Z")"));
    CHECK_FALSE(dt.accepts(R"("2026-12-07 19:30:00Z")"));
    Schema uuid(R"({"type":"string","format":"uuid"})");
    CHECK(uuid.accepts(R"("123e4567-e89b-12d3-a456-426614174000")"));
    CHECK_FALSE(uuid.accepts(R"("123e4567-e89b-12d3-a456-42661417400")"));
    CHECK_FALSE(uuid.accepts(R"("123e4567e89b12d3a456426614174000")"));
    Schema email(R"({"type":"string","format":"email"})");  // not enforced: an annotation
    CHECK(email.accepts(R"("anything")"));
}

TEST_CASE("schema: integer minimum / maximum / exclusive, exact", "[constraint][schema]") {
    Schema s(R"({"type":"integer","minimum":0,"maximum":100})");
    for (int v = -20; v <= 120; ++v) {
        INFO(v);
        CHECK(s.accepts(std::to_string(v)) == (v >= 0 && v <= 100));
    }
    CHECK_FALSE(s.prefix("-"));    // no negative value is allowed
    CHECK_FALSE(s.prefix("101"));  // rejected at the last digit, not at the end
    CHECK_FALSE(s.prefix("00"));
    CHECK_FALSE(s.accepts("50.0"));
    Schema neg(R"({"type":"integer","exclusiveMinimum":-15,"exclusiveMaximum":7})");
    for (int v = -30; v <= 30; ++v) {
        INFO(v);
        CHECK(neg.accepts(std::to_string(v)) == (v > -15 && v < 7));
    }
    Schema big(R"({"type":"integer","minimum":1000,"maximum":1234})");
    CHECK(big.accepts("1234"));
    CHECK_FALSE(big.accepts("1235"));
    CHECK_FALSE(big.prefix("13"));
    CHECK_FALSE(big.prefix("9"));
    CHECK(big.prefix("1"));
    Schema draft4(R"({"type":"integer","minimum":5,"exclusiveMinimum":true})");
    CHECK_FALSE(draft4.accepts("5"));
    CHECK(draft4.accepts("6"));
    CHECK_THAT(error_of(R"({"type":"integer","minimum":5,"maximum":4})"), Catch::Contains("no integer"));
    CHECK_THAT(error_of(R"({"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":2})"), Catch::Contains("no integer"));
}

TEST_CASE("schema: number minimum / maximum / exclusive", "[constraint][schema]") {
    Schema s(R"({"type":"number","minimum":-1.5,"exclusiveMaximum":2})");
    for (const char* ok : {"-1.5", "-1.49", "0", "1.999", "-0.5", "1"}) {
        INFO(ok);
        CHECK(s.accepts(ok));
    }
    for (const char* bad : {"-1.51", "2", "2.0", "-2", "1e0", "10"}) {
        INFO(bad);
        CHECK_FALSE(s.accepts(bad));
    }
    CHECK_FALSE(s.prefix("2"));
    CHECK_FALSE(s.prefix("-1.6"));
}

TEST_CASE("schema: string minLength / maxLength", "[constraint][schema]") {
    Schema s(R"({"type":"string","minLength":2,"maxLength":3})");
    CHECK(s.accepts(R"("ab")"));
    CHECK(s.accepts(R"("äöü")"));
    CHECK_FALSE(s.accepts(R"("a")"));
    CHECK_FALSE(s.accepts(R"("abcd")"));
}

TEST_CASE("schema: items, prefixItems, minItems, maxItems", "[constraint][schema]") {
    Schema tuple(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})");
    CHECK(tuple.accepts(R"(["a",1])"));
    CHECK(tuple.accepts(R"(["a"])"));
    CHECK(tuple.accepts("[]"));
    CHECK_FALSE(tuple.accepts(R"([1,"a"])"));
    CHECK_FALSE(tuple.accepts(R"(["a",1,2])"));
    Schema rest(R"({"type":"array","prefixItems":[{"const":"op"}],"items":{"type":"integer"},"minItems":2,"maxItems":3})");
    CHECK(rest.accepts(R"(["op",1])"));
    CHECK(rest.accepts(R"(["op",1,2])"));
    CHECK_FALSE(rest.accepts(R"(["op"])"));
    CHECK_FALSE(rest.accepts(R"(["op",1,2,3])"));
    CHECK_FALSE(rest.accepts(R"(["op","x"])"));
    Schema old(R"({"type":"array","items":[{"type":"null"}],"additionalItems":{"type":"boolean"}})");
    CHECK(old.accepts("[null,true,false]"));
    CHECK_FALSE(old.accepts("[null,1]"));
    Schema plain(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2})");
    CHECK(plain.accepts("[1,2]"));
    CHECK_FALSE(plain.accepts("[]"));
    CHECK_FALSE(plain.accepts("[1,2,3]"));
}

TEST_CASE("schema: additionalProperties as a schema, required in any order", "[constraint][schema]") {
    Schema s(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],
                 "additionalProperties":{"type":"string"}})");
    CHECK(s.accepts(R"({"b":2,"a":1})"));
    CHECK(s.accepts(R"({"x":"s","a":1,"b":2})"));
    CHECK_FALSE(s.accepts(R"({"a":1,"b":2,"x":3})"));
    CHECK_FALSE(s.accepts(R"({"b":2})"));
    CHECK_FALSE(s.accepts(R"({"a":1,"a":1,"b":2})"));
}

TEST_CASE("schema: unsupported keywords name their path", "[constraint][schema]") {
    CHECK_THAT(error_of(R"({"type":"object","properties":{"x":{"not":{"type":"null"}}}})"),
               Catch::Contains("JSON schema: #/properties/x/not: unsupported keyword 'not'"));
    CHECK_THAT(error_of(R"({"type":"array","items":{"uniqueItems":true}})"),
               Catch::Contains("#/items/uniqueItems: unsupported keyword 'uniqueItems'"));
    CHECK_THAT(error_of(R"({"$defs":{"a":{"if":{}}},"$ref":"#/$defs/a"})"), Catch::Contains("#/$defs/a/if"));
    CHECK_THAT(error_of(R"({"patternProperties":{"^x":{}}})"), Catch::Contains("#/patternProperties"));
}

TEST_CASE("schema: json_matches_schema validates values", "[constraint][schema]") {
    const char* s = R"({"type":"object","properties":{"room":{"type":"string"},"brightness":{"type":"integer","minimum":0,"maximum":100}},
                        "required":["room"],"additionalProperties":false})";
    CHECK(json_matches_schema(s, R"({"room": "kitchen", "brightness": 40})"));
    CHECK(json_matches_schema(s, "{\n  \"room\" :   \"hall\"\n}"));
    CHECK_FALSE(json_matches_schema(s, R"({"room":"kitchen","brightness":140})"));
    CHECK_FALSE(json_matches_schema(s, R"({"brightness":40})"));
    CHECK_FALSE(json_matches_schema(s, R"({"room":"kitchen",)"));
}

TEST_CASE("schema: masks are exact and live under anyOf, $ref recursion, patterns and bounds", "[constraint][schema]") {
    const char* text = R"({"$defs":{"call":{"anyOf":[
          {"type":"object","properties":{"name":{"const":"set_light"},"arguments":{"type":"object",
             "properties":{"room":{"type":"string","pattern":"^[a-z]+$"},"on":{"type":"boolean"},
                           "level":{"type":"integer","minimum":0,"maximum":100}},"required":["room"],"additionalProperties":false}},
           "required":["name","arguments"],"additionalProperties":false},
          {"type":"object","properties":{"name":{"const":"get_weather"},"arguments":{"type":"object",
             "properties":{"city":{"type":"string","maxLength":8},"when":{"type":"string","format":"date"}},"required":["city"],
             "additionalProperties":false}}, "required":["name","arguments"],"additionalProperties":false}]}},
        "anyOf":[{"$ref":"#/$defs/call"},{"type":"array","items":{"$ref":"#/$defs/call"},"minItems":1,"maxItems":2}]})";
    JsonConstraintOptions o;
    o.max_whitespace = 1;
    const auto c = JsonConstraint::from_schema(text, stories_vocab(), o);
    CHECK(walks(c, text, 12, 160) >= 6);
    const char* tree = R"({"type":"object","properties":{"v":{"type":"number","minimum":-2,"maximum":2.5},
                           "k":{"type":"array","items":{"$ref":"#"},"maxItems":2}},"required":["v"],"additionalProperties":false})";
    CHECK(walks(JsonConstraint::from_schema(tree, stories_vocab(), o), tree, 12, 160) >= 6);
}
