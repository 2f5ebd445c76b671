// Tool calls: the schema of a forced call (one per offered tool, each with its own
// parameters), and the check that keeps only calls of offered tools with valid arguments.
#include "constraint/json_grammar.hpp"
#include "support/test_support.hpp"

#include <genie/chat.hpp>
#include <genie/constraint.hpp>
#include <genie/error.hpp>
#include <genie/tokenizer.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <random>

using namespace genie;

namespace {

const char* kTools = R"([
  {"type":"function","function":{"name":"set_light","description":"Switch a light",
    "parameters":{"type":"object","properties":{"room":{"type":"string"},"on":{"type":"boolean"},
                  "brightness":{"type":"integer","minimum":0,"maximum":100}},"required":["room","on"]}}},
  {"type":"function","function":{"name":"get_weather",
    "parameters":{"$defs":{"city":{"type":"string","minLength":1}},"type":"object",
                  "properties":{"city":{"$ref":"#/$defs/city"}},"required":["city"],"additionalProperties":false}}},
  {"type":"function","function":{"name":"stop_timer"}}
])";

bool matches(const std::string& schema, const char* text) { return json_matches_schema(schema, text); }

}  // namespace

TEST_CASE("tool calls: the forced-call schema is a union over the offered tools", "[tools]") {
    const std::string s = tool_call_schema(kTools, "", false);
    CHECK(matches(s, R"({"name":"set_light","arguments":{"room":"kitchen","on":true,"brightness":40}})"));
    CHECK(matches(s, R"({"arguments":{"city":"Paris"},"name":"get_weather"})"));
    CHECK(matches(s, R"({"name":"stop_timer","arguments":{}})"));
    CHECK_FALSE(matches(s, R"({"name":"joke","arguments":{}})"));                                      // not offered
    CHECK_FALSE(matches(s, R"({"name":"set_light","arguments":{"room":"kitchen","on":true,"brightness":140}})"));
    CHECK_FALSE(matches(s, R"({"name":"get_weather","arguments":{}})"));                               // city required
    CHECK_FALSE(matches(s, R"({"name":"get_weather","arguments":{"room":"x"}})"));                     // its own schema
    CHECK_FALSE(matches(s, R"({"name":"get_weather","arguments":{"city":""}})"));                      // $ref rebased
    CHECK_FALSE(matches(s, R"({"name":"set_light"})"));
    CHECK_FALSE(matches(s, R"([{"name":"stop_timer","arguments":{}}])"));  // no array without parallel
    const std::string p = tool_call_schema(kTools, "", true);
    CHECK(matches(p, R"([{"name":"stop_timer","arguments":{}},{"name":"get_weather","arguments":{"city":"Oslo"}}])"));
    CHECK(matches(p, R"({"name":"stop_timer","arguments":{}})"));
    CHECK_FALSE(matches(p, "[]"));
    const std::string named = tool_call_schema(kTools, "get_weather", false);
    CHECK(matches(named, R"({"name":"get_weather","arguments":{"city":"Rome"}})"));
    CHECK_FALSE(matches(named, R"({"name":"stop_timer","arguments":{}})"));
}

TEST_CASE("tool calls: schema errors name the tool and the keyword's path", "[tools]") {
    auto error_of = [](const char* tools, const char* name = "") -> std::string {
        try {
            tool_call_schema(tools, name, false);
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::InvalidArgument);
            return e.what();
        }
        return "no error";
    };
    CHECK_THAT(error_of(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object",
                            "properties":{"x":{"not":{"type":"null"}}}}}}])"),
               Catch::Contains("tool 'f' parameters: JSON schema: #/properties/x/not: unsupported keyword 'not'"));
    CHECK_THAT(error_of(kTools, "nope"), Catch::Contains("'nope', which is not among the tools"));
    CHECK_THAT(error_of("{}"), Catch::Contains("must be a JSON array"));
}

TEST_CASE("tool calls: only offered tools with valid arguments are calls", "[tools]") {
    std::vector<ToolCall> calls = extract_tool_calls(
        "<tool_call>{\"name\": \"set_light\", \"arguments\": {\"room\": \"hall\", \"on\": false}}</tool_call>\n"
        "<tool_call>{\"name\": \"joke\", \"arguments\": {}}</tool_call>\n"
        "<tool_call>{\"name\": \"set_light\", \"arguments\": {\"room\": \"hall\", \"on\": true, \"brightness\": 101}}</tool_call>\n"
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>");
    REQUIRE(calls.size() == 4);
    std::vector<ToolCall> all = calls;
    const auto rejected = check_tool_calls(all, kTools, true);
    REQUIRE(all.size() == 2);
    CHECK(all[0].name == "set_light");
    CHECK(all[1].name == "get_weather");
    REQUIRE(rejected.size() == 2);
    CHECK_THAT(rejected[0].error, Catch::Contains("'joke' is not an offered tool"));
    CHECK_THAT(rejected[1].error, Catch::Contains("do not follow its parameters schema"));
    std::vector<ToolCall> first = calls;
    const auto rejected_single = check_tool_calls(first, kTools, false);
    REQUIRE(first.size() == 1);
    CHECK(first[0].name == "set_light");
    CHECK(rejected_single.size() == 3);
    // A bare object naming an unknown function (the "Tell me a joke" answer) is content.
    std::vector<ToolCall> joke = extract_tool_calls(R"({"name": "joke", "arguments": {"topic": "cats"}})");
    REQUIRE(joke.size() == 1);
    CHECK(check_tool_calls(joke, kTools).size() == 1);
    CHECK(joke.empty());
}

TEST_CASE("tool calls: the forced-call constraint writes compact calls and cannot stall", "[tools]") {
    JsonConstraintOptions o;
    o.max_whitespace = 1;
    const std::string schema = tool_call_schema(kTools, "", true);
    const auto c = JsonConstraint::from_schema(
        schema, Tokenizer::load(test::testdata_dir() / "models" / "stories260K.gguf"), o);
    JsonMatcher m(c);
    CHECK(m.accept_text(R"({"name": "set_light", "arguments": {"room": "x", "on": true}})"));
    CHECK(m.is_complete());
    m.reset();
    CHECK_FALSE(m.accept_text("{\n  \"name\""));  // pretty-printing is not allowed
    m.reset();
    CHECK_FALSE(m.accept_text(R"({"name":"jo)"));  // nothing but offered names
    m.reset();
    CHECK_FALSE(m.accept_text(R"({"name":"get_weather","arguments":{"room)"));  // that tool's keys only
    // Random walks: every finished call validates against the tools.
    std::mt19937 rng(3);
    int finished = 0;
    for (int w = 0; w < 20; ++w) {
        JsonMatcher walk(c);
        for (int step = 0; step < 200 && !walk.is_complete(); ++step) {
            const auto& mask = walk.mask_bits();
            std::vector<TokenId> allowed;
            for (size_t i = 0; i < c->vocab_size(); ++i)
                if ((mask[i >> 6] >> (i & 63)) & 1) allowed.push_back(static_cast<TokenId>(i));
            REQUIRE(!allowed.empty());
            TokenId pick = allowed[rng() % allowed.size()];
            for (int t = 0; step > 30 && t < 8; ++t) {  // prefer closing bytes so walks finish
                const TokenId x = allowed[rng() % allowed.size()];
                if (c->tokenizer().token_to_piece(x).find_first_of("}]\"") != std::string::npos) {
                    pick = x;
                    break;
                }
            }
            REQUIRE(walk.accept_token(pick));
        }
        if (!walk.is_complete()) continue;
        ++finished;
        INFO(walk.text());
        std::vector<ToolCall> calls = extract_tool_calls(walk.text());
        REQUIRE(!calls.empty());
        CHECK(check_tool_calls(calls, kTools, true).empty());
    }
    CHECK(finished >= 5);
}
