// The JSON constraint: schema compilation, the byte-level matcher in both directions,
// and the token masks (exactness against a brute-force check, liveness, completion).
#include "constraint/json_grammar.hpp"
#include "support/test_support.hpp"
#include "tokenizer/hf_import.hpp"

#include <genie/constraint.hpp>
#include <genie/error.hpp>
#include <genie/tokenizer.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <random>

using namespace genie;
using nlohmann::json;

namespace {

const Tokenizer& stories_vocab() {
    static const Tokenizer t = Tokenizer::load(test::testdata_dir() / "models" / "stories260K.gguf");
    return t;
}

const Tokenizer& qwen_vocab() {
    static const Tokenizer t = [] {
        const auto out = test::temp_path("constraint-qwen-vocab");
        tokenizer::convert_hf_tokenizer(test::testdata_dir() / "tokenizer" / "qwen", out);
        return Tokenizer::load(out);
    }();
    return t;
}

std::shared_ptr<const JsonConstraint> schema(const char* text, JsonConstraintOptions o = {}) {
    return JsonConstraint::from_schema(text, stories_vocab(), o);
}

/// True when `text` is a complete value the constraint accepts.
bool accepts(const std::shared_ptr<const JsonConstraint>& c, std::string_view text) {
    JsonMatcher m(c);
    return m.accept_text(text) && m.is_complete();
}
/// True when `text` is a prefix of some accepted value.
bool prefix_ok(const std::shared_ptr<const JsonConstraint>& c, std::string_view text) {
    JsonMatcher m(c);
    return m.accept_text(text);
}

size_t utf8_length(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

// A small validator for the schema subset (the test's independent check).
bool validate(const json& v, const json& s) {
    if (s.is_boolean()) return s.get<bool>();
    if (s.contains("const") && v != s["const"]) return false;
    if (s.contains("enum")) {
        bool found = false;
        for (const auto& e : s["enum"]) found = found || e == v;
        if (!found) return false;
    }
    if (s.contains("type")) {
        std::vector<std::string> types;
        if (s["type"].is_array()) for (const auto& t : s["type"]) types.push_back(t.get<std::string>());
        else types.push_back(s["type"].get<std::string>());
        bool ok = false;
        for (const auto& t : types) {
            if (t == "object") ok = ok || v.is_object();
            if (t == "array") ok = ok || v.is_array();
            if (t == "string") ok = ok || v.is_string();
            if (t == "number") ok = ok || v.is_number();
            if (t == "integer") ok = ok || v.is_number_integer() || v.is_number_unsigned();
            if (t == "boolean") ok = ok || v.is_boolean();
            if (t == "null") ok = ok || v.is_null();
        }
        if (!ok) return false;
    }
    if (v.is_object()) {
        const json props = s.value("properties", json::object());
        for (const auto& r : s.value("required", json::array()))
            if (!v.contains(r.get<std::string>())) return false;
        for (const auto& [k, x] : v.items()) {
            if (props.contains(k)) {
                if (!validate(x, props[k])) return false;
            } else if (s.contains("additionalProperties") && !validate(x, s["additionalProperties"])) {
                return false;
            }
        }
    }
    if (v.is_array()) {
        if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
        if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
        if (s.contains("items"))
            for (const auto& x : v)
                if (!validate(x, s["items"])) return false;
    }
    if (v.is_string()) {
        const size_t n = utf8_length(v.get<std::string>());
        if (s.contains("minLength") && n < s["minLength"].get<size_t>()) return false;
        if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) return false;
    }
    return true;
}

const char* kPerson = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "age": {"type": "integer"},
    "score": {"type": "number"},
    "alive": {"type": "boolean"},
    "pet": {"type": ["string", "null"]},
    "color": {"enum": ["red", "green", "dark red", 7, null]},
    "kind": {"const": "person"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "minItems": 1, "maxItems": 3},
    "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
                "required": ["city"], "additionalProperties": false}
  },
  "required": ["name", "age", "kind"],
  "additionalProperties": false
})";

bool bit(const std::vector<uint64_t>& m, size_t i) { return (m[i >> 6] >> (i & 63)) & 1; }

/// Random walks through the masks: every step the mask is non-empty, agrees with a
/// brute-force check of every token (or every `brute_force_stride`-th one, plus every
/// allowed one), no checked allowed token leads to a state with an empty mask, and the
/// finished text parses and validates. Returns how many walks completed.
int random_walks(const std::shared_ptr<const JsonConstraint>& c, const json& s, int walks, int max_steps,
                 size_t brute_force_stride) {
    const Tokenizer& tok = c->tokenizer();
    std::mt19937 rng(1234);
    int completed = 0;
    for (int w = 0; w < walks; ++w) {
        JsonMatcher m(c);
        for (int step = 0; step < max_steps; ++step) {
            const auto mask = m.mask_bits();
            std::vector<TokenId> allowed;
            for (size_t i = 0; i < tok.vocab_size(); ++i) {
                const bool on = bit(mask, i);
                if (on) allowed.push_back(static_cast<TokenId>(i));
                if (i % brute_force_stride == 0 || on) {
                    JsonMatcher copy = m;
                    const bool ok = copy.accept_token(static_cast<TokenId>(i));
                    INFO("text so far: " << m.text() << " token " << i << " '"
                                         << tok.token_to_piece(static_cast<TokenId>(i)) << "'");
                    REQUIRE(ok == on);
                    // No allowed token leads to a dead state: the next mask is not empty.
                    if (on && !tok.is_eog(static_cast<TokenId>(i)) && i % brute_force_stride == 0) {
                        const auto next = copy.mask_bits();
                        bool any = false;
                        for (uint64_t x : next) any = any || x != 0;
                        REQUIRE(any);
                    }
                }
            }
            INFO("text so far: " << m.text());
            REQUIRE(!allowed.empty());
            if (m.is_complete() && (rng() % 4 == 0 || step > max_steps / 2)) {
                const TokenId eog = tok.eog_tokens().front();
                REQUIRE(bit(mask, static_cast<size_t>(eog)));
                break;
            }
            // Prefer closing as the walk gets long, so walks finish.
            TokenId pick = allowed[rng() % allowed.size()];
            if (step > max_steps / 4) {
                for (int tries = 0; tries < 8; ++tries) {
                    const TokenId t = allowed[rng() % allowed.size()];
                    const std::string p = tok.token_to_piece(t);
                    if (p.find_first_of("}]\"") != std::string::npos || tok.is_eog(t)) {
                        pick = t;
                        break;
                    }
                }
            }
            if (tok.is_eog(pick)) break;
            REQUIRE(m.accept_token(pick));
        }
        if (m.is_complete()) {
            ++completed;
            INFO("output: " << m.text());
            json v;
            REQUIRE_NOTHROW(v = json::parse(m.text()));
            REQUIRE(validate(v, s));
        }
    }
    return completed;
}

}  // namespace

TEST_CASE("json constraint: any object accepts and rejects", "[constraint]") {
    const auto c = JsonConstraint::any_object(stories_vocab());
    for (const char* ok : {"{}", R"({"a":1})", R"( {"a": [1, 2.5e-3, -0, true, false, null, "x"], "b": {"c": {}}})",
                           R"({"esc":"q\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"})",
                           "{\"utf8\":\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"}", R"({"n":1E+10,"m":0.5,"k":-12e3})",
                           "{\n\"a\":\n1}"})
        CHECK(accepts(c, ok));
    for (const char* bad : {"[]", "1", R"({"a":01})", R"({"a":1.})", R"({"a":.5})", R"({"a":1e})", R"({"a":tru})",
                            R"({"a":"x)", R"({a:1})", R"({"a":1,})", R"({"a" 1})", R"({"a":"\x"})", R"({"a":"\uD800"})",
                            R"({"a":"\uDC00"})", R"({"a":"\u12G4"})", "{\"a\":\"\x01\"}", "{\"a\":\"\xC0\xAF\"}",
                            "{\"a\":\"\xED\xA0\x80\"}", "{\"a\":\"\xF5\x80\x80\x80\"}", "{}{}", "{} ", R"({"a":1}x)",
                            R"({"a":-})", R"({"a":+1})", R"({"a":1e100})"})
        CHECK_FALSE(accepts(c, bad));
    // Prefixes: incomplete but fine.
    CHECK(prefix_ok(c, R"({"a":[1,{"b":"\uD83D)"));
    CHECK_FALSE(accepts(c, R"({"a":[1,{"b":"\uD83D)"));
    CHECK(prefix_ok(c, "{\"a\":\"\xF0\x9F"));
}

TEST_CASE("json constraint: whitespace is limited", "[constraint]") {
    JsonConstraintOptions o;
    o.max_whitespace = 2;
    const auto c = JsonConstraint::any_object(stories_vocab(), o);
    CHECK(accepts(c, "{ \"a\" :  1 , \"b\":\n\t2 }"));
    CHECK_FALSE(accepts(c, "{   \"a\":1}"));
    CHECK_FALSE(prefix_ok(c, "   {"));
    o.max_whitespace = 0;
    const auto compact = JsonConstraint::any_object(stories_vocab(), o);
    CHECK(accepts(compact, R"({"a":[1,2]})"));
    CHECK_FALSE(accepts(compact, R"({"a": 1})"));
}

TEST_CASE("json constraint: max_string_length caps unlimited strings and additional keys", "[constraint]") {
    JsonConstraintOptions o;
    o.max_string_length = 3;
    const auto c = JsonConstraint::from_schema(
        R"({"type":"object","properties":{"long_name":{"type":"string","maxLength":5},"s":{"type":"string"}}})",
        stories_vocab(), o);
    CHECK(accepts(c, R"({"s":"abc","long_name":"abcde","xyz":"\u00e9\uD83D\uDE00"})"));
    CHECK_FALSE(prefix_ok(c, R"({"s":"abcd)"));
    CHECK(prefix_ok(c, R"({"long_name":"abcde)"));
    // Keys of additional properties may be longer than every property key, no longer.
    CHECK(prefix_ok(c, R"({"long_name_")"));
    CHECK_FALSE(prefix_ok(c, R"({"long_name_x)"));
    CHECK(random_walks(c, json::object(), 20, 300, 1) >= 15);
}

TEST_CASE("json constraint: close_after_bytes steers to the end", "[constraint]") {
    JsonConstraintOptions o;
    o.close_after_bytes = 8;
    const auto c = JsonConstraint::any_object(stories_vocab(), o);
    JsonMatcher m(c);
    REQUIRE(m.accept_text(R"({"abc":"xy)"));  // 10 bytes: the budget is spent
    CHECK_FALSE(JsonMatcher(m).accept_text("z"));
    REQUIRE(m.accept_text("\""));
    CHECK_FALSE(JsonMatcher(m).accept_text(","));
    REQUIRE(m.accept_text(" }"));
    CHECK(m.is_complete());
    // What the schema requires is still written.
    const char* text = R"({"type":"object","properties":{"a":{"type":"string","minLength":3},
        "b":{"type":"array","items":{"type":"integer"},"minItems":2},"c":{"type":"string"}},
        "required":["a","b"],"additionalProperties":false})";
    const auto s = JsonConstraint::from_schema(text, stories_vocab(), o);
    JsonMatcher r(s);
    REQUIRE(r.accept_text(R"({"c":"x","a":")"));
    CHECK(r.accept_text("ab"));
    CHECK_FALSE(JsonMatcher(r).accept_text("\""));
    CHECK(r.accept_text("c\",\"b\":[1,2"));
    CHECK_FALSE(JsonMatcher(r).accept_text(","));
    CHECK(r.accept_text("]}"));
    CHECK(r.is_complete());
    // Every walk ends once the budget is spent.
    o.close_after_bytes = 40;
    CHECK(random_walks(JsonConstraint::any_object(stories_vocab(), o), json::object(), 20, 400, 1) == 20);
    CHECK(random_walks(JsonConstraint::from_schema(kPerson, stories_vocab(), o), json::parse(kPerson), 20, 400, 1) == 20);
}

TEST_CASE("json constraint: untyped nesting is limited", "[constraint]") {
    JsonConstraintOptions o;
    o.max_nesting = 3;
    const auto c = JsonConstraint::any_object(stories_vocab(), o);
    CHECK(accepts(c, R"({"a":{"b":[1]}})"));
    CHECK_FALSE(prefix_ok(c, R"({"a":{"b":[[)"));
    CHECK(accepts(c, R"({"a":{"b":[1,"x",null]}})"));
}

TEST_CASE("json constraint: schema accepts and rejects", "[constraint]") {
    const auto c = schema(kPerson);
    const json s = json::parse(kPerson);
    const std::vector<std::string> good = {
        R"({"name":"Ann","age":3,"kind":"person"})",
        R"({"kind":"person","age":-40,"name":"\u00e9l\u00e8ve"})",
        R"({"name":"Bo","age":0,"kind":"person","score":1.5e+3,"alive":false,"pet":null,"color":"dark red"})",
        R"({"name":"Bo","age":1,"kind":"person","pet":"cat","color":7,"tags":["a","bcdef"]})",
        R"({"name":"Bo","age":1,"kind":"person","color":null,"address":{"zip":12,"city":"Oslo"}})",
        R"({ "name": "Bo", "age": 1, "kind": "person", "tags": [ "x" ] })",
    };
    for (const auto& g : good) {
        INFO(g);
        CHECK(accepts(c, g));
        CHECK(validate(json::parse(g), s));
    }
    const std::vector<std::string> bad = {
        R"({"name":"Ann","age":3})",                                           // kind missing
        R"({"name":"","age":3,"kind":"person"})",                              // minLength
        R"({"name":"abcdefghijklm","age":3,"kind":"person"})",                 // maxLength
        R"({"name":"Ann","age":3.5,"kind":"person"})",                         // integer
        R"({"name":"Ann","age":1e3,"kind":"person"})",                         // integer
        R"({"name":"Ann","age":3,"kind":"people"})",                           // const
        R"({"name":"Ann","age":3,"kind":"person","color":"blue"})",            // enum
        R"({"name":"Ann","age":3,"kind":"person","colour":"red"})",            // additionalProperties false
        R"({"name":"Ann","age":3,"kind":"person","name":"Bo"})",               // duplicate
        R"({"name":"Ann","age":3,"kind":"person","tags":[]})",                 // minItems
        R"({"name":"Ann","age":3,"kind":"person","tags":["a","b","c","d"]})",  // maxItems
        R"({"name":"Ann","age":3,"kind":"person","tags":["abcdef"]})",         // items maxLength
        R"({"name":"Ann","age":3,"kind":"person","alive":1})",                 // boolean
        R"({"name":"Ann","age":3,"kind":"person","pet":5})",                   // type list
        R"({"name":"Ann","age":3,"kind":"person","address":{"zip":1}})",       // nested required
        R"({"name":"Ann","age":3,"kind":"person","address":{"city":"x","street":"y"}})",  // nested additional
        R"(["name"])",
    };
    for (const auto& b : bad) {
        INFO(b);
        CHECK_FALSE(accepts(c, b));
    }
}

TEST_CASE("json constraint: enums, consts and numbers as values", "[constraint]") {
    const auto num = schema(R"({"type":"number"})");
    for (const char* ok : {"0", "-0", "12", "1.25", "1e5", "1E-05", "-3.0e+12", "123456789012345"})
        CHECK(accepts(num, ok));
    for (const char* bad : {"01", "1.", "1e", "--1", "1.2.3", "1234567890123456", "\"1\""}) CHECK_FALSE(accepts(num, bad));
    const auto e = schema(R"({"enum":[1, 12, "a", "ab", {"x":[1]}, true]})");
    for (const char* ok : {"1", "12", "\"a\"", "\"ab\"", R"({"x":[1]})", "true"}) CHECK(accepts(e, ok));
    for (const char* bad : {"2", "123", "\"b\"", R"({"x": [1]})", "false", "null"}) CHECK_FALSE(accepts(e, bad));
    const auto arr = schema(R"({"type":"array","items":{"type":"integer"},"maxItems":2})");
    CHECK(accepts(arr, "[]"));
    CHECK(accepts(arr, "[1,2]"));
    CHECK_FALSE(prefix_ok(arr, "[1,2,"));
    const auto any = schema("{}");
    CHECK(accepts(any, "\"x\""));
    CHECK(accepts(any, "[{\"a\":null}]"));
    // additionalProperties as a schema, required property only there.
    const auto extra = schema(R"({"type":"object","additionalProperties":{"type":"integer"},"required":["n"]})");
    CHECK(accepts(extra, R"({"n":1,"m":2})"));
    CHECK_FALSE(accepts(extra, R"({"m":2})"));
    CHECK_FALSE(accepts(extra, R"({"n":"x"})"));
    CHECK_FALSE(accepts(extra, R"({"n":1,"n":2})"));
}

TEST_CASE("json constraint: invalid schemas are rejected before generation", "[constraint]") {
    auto message = [](const char* text) -> std::string {
        try {
            schema(text);
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::InvalidArgument);
            return e.what();
        }
        return "no error";
    };
    CHECK_THAT(message("{"), Catch::Contains("not valid JSON"));
    CHECK_THAT(message(R"({"type":"thing"})"), Catch::Contains("unknown type 'thing'"));
    CHECK_THAT(message(R"({"type":"object","properties":{"a":{"type":"integer","not":{"const":3}}}})"),
               Catch::Contains("#/properties/a/not: unsupported keyword 'not'"));
    CHECK_THAT(message(R"({"anyOf":[{"type":"integer","multipleOf":2}]})"),
               Catch::Contains("#/anyOf/0/multipleOf: unsupported keyword 'multipleOf'"));
    CHECK_THAT(message(R"({"enum":[]})"), Catch::Contains("'enum' must not be empty"));
    CHECK_THAT(message(R"({"type":"array","minItems":3,"maxItems":2})"),
               Catch::Contains("minItems is greater than maxItems"));
    CHECK_THAT(message(R"({"type":"object","required":["x"],"additionalProperties":false})"),
               Catch::Contains("required property 'x' is not allowed"));
    CHECK_THAT(message("false"), Catch::Contains("accepts no value"));
    CHECK_THAT(message("3"), Catch::Contains("must be an object or a boolean"));
    JsonConstraintOptions o;
    o.max_whitespace = 100;
    CHECK_THROWS_AS(JsonConstraint::any_object(stories_vocab(), o), Error);
}

TEST_CASE("json constraint: masks are exact and live (SentencePiece, 512 tokens)", "[constraint]") {
    const auto c = schema(kPerson);
    const int done = random_walks(c, json::parse(kPerson), 30, 400, 1);
    CHECK(done >= 20);
    const auto any = JsonConstraint::any_object(stories_vocab());
    CHECK(random_walks(any, json::object(), 30, 300, 1) >= 20);
}

TEST_CASE("json constraint: cached masks of long limited strings and arrays are exact", "[constraint]") {
    // Counts far from their limits share one cache entry (docs/constraints.md); the walks
    // compare every (possibly cached) mask with a brute-force check.
    const char* text = R"({"type":"object","properties":{
        "s":{"type":"string","minLength":2,"maxLength":60},
        "a":{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":40}},
        "required":["s","a"],"additionalProperties":false})";
    const auto c = schema(text);
    CHECK(random_walks(c, json::parse(text), 25, 400, 1) >= 15);
    JsonConstraintOptions o;
    o.max_string_length = 40;
    CHECK(random_walks(JsonConstraint::any_object(stories_vocab(), o), json::object(), 15, 300, 1) >= 10);
}

TEST_CASE("json constraint: EOG only once complete", "[constraint]") {
    const auto c =
        schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false})");
    const Tokenizer& tok = stories_vocab();
    JsonMatcher m(c);
    REQUIRE(!tok.eog_tokens().empty());
    const TokenId eog = tok.eog_tokens().front();
    CHECK_FALSE(m.allows(eog));
    REQUIRE(m.accept_text("{\"a\":1}"));
    CHECK(m.is_complete());
    const auto& mask = m.mask_bits();
    size_t allowed = 0;
    for (size_t i = 0; i < tok.vocab_size(); ++i) allowed += bit(mask, i);
    CHECK(allowed == tok.eog_tokens().size());
    CHECK(m.accept_token(eog));
    std::vector<float> logits(tok.vocab_size(), 1.0f);
    CHECK(m.apply(logits) == tok.eog_tokens().size());
    CHECK(logits[static_cast<size_t>(eog)] == 1.0f);
}

TEST_CASE("json constraint: masks on the Qwen vocabulary (151k tokens)", "[constraint][qwen]") {
    const auto c = JsonConstraint::from_schema(kPerson, qwen_vocab());
    // Brute force on every 97th token plus every allowed one.
    CHECK(random_walks(c, json::parse(kPerson), 6, 200, 97) >= 3);
}
