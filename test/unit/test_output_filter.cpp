// Stop strings, reasoning split and tool-call extraction on text streams.
#include "runtime/output_filter.hpp"

#include <genie/chat.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace genie;
using genie::runtime::OutputFilter;
using genie::runtime::Segment;

namespace {

struct Collected {
    std::string content, reasoning;
    bool stopped = false;
    size_t held_max = 0;  // most bytes ever fed but not yet emitted
};

/// Feeds `text` split into pieces of `step` bytes (at UTF-8 boundaries for ASCII input).
Collected run(OutputFilter f, const std::string& text, size_t step) {
    Collected c;
    size_t fed = 0, emitted = 0;
    auto take = [&](std::vector<Segment> segs) {
        for (auto& s : segs) {
            (s.kind == PieceKind::Reasoning ? c.reasoning : c.content) += s.text;
            emitted += s.text.size();
        }
    };
    for (size_t i = 0; i < text.size() && !f.stopped(); i += step) {
        const std::string piece = text.substr(i, step);
        fed += piece.size();
        take(f.push(piece));
    }
    take(f.finish());
    c.stopped = f.stopped();
    return c;
}

}  // namespace

TEST_CASE("output filter: stop strings are held back and never emitted", "[filter]") {
    for (size_t step : {1u, 2u, 3u, 7u, 100u}) {
        INFO("step " << step);
        auto c = run(OutputFilter({"</s>", "\nUser:"}, false, false), "Hello world.\nUser: more", step);
        CHECK(c.content == "Hello world.");
        CHECK(c.stopped);
        // A partial match that does not complete is released.
        c = run(OutputFilter({"\nUser:"}, false, false), "a\nUs b\nUse", step);
        CHECK(c.content == "a\nUs b\nUse");
        CHECK_FALSE(c.stopped);
    }
    // While a possible stop string is pending, nothing after its start is emitted.
    OutputFilter f({"STOP"}, false, false);
    auto segs = f.push("abcST");
    REQUIRE(segs.size() == 1);
    CHECK(segs[0].text == "abc");
    CHECK(f.push("O").empty());
    segs = f.push("x");
    REQUIRE(segs.size() == 1);
    CHECK(segs[0].text == "STOx");
}

TEST_CASE("output filter: Qwen3 <think> blocks become reasoning", "[filter]") {
    for (size_t step : {1u, 2u, 5u, 100u}) {
        INFO("step " << step);
        auto c = run(OutputFilter({}, true, false), "<think>\nLet me think.\n</think>\n\nThe answer is 4.", step);
        CHECK(c.reasoning == "Let me think.\n");
        CHECK(c.content == "The answer is 4.");
        // The template opened the block itself.
        c = run(OutputFilter({}, true, true), "\nhmm\n</think>\n\nYes.", step);
        CHECK(c.reasoning == "hmm\n");
        CHECK(c.content == "Yes.");
        // An empty think block (enable_thinking=false answers start with content).
        c = run(OutputFilter({}, true, false), "<think>\n\n</think>\n\nHi!", step);
        CHECK(c.reasoning.empty());
        CHECK(c.content == "Hi!");
        // <think> after content is ordinary text; without split it is text as well.
        c = run(OutputFilter({}, true, false), "Use <think> tags.", step);
        CHECK(c.content == "Use <think> tags.");
        c = run(OutputFilter({}, false, false), "<think>x</think>y", step);
        CHECK(c.content == "<think>x</think>y");
        // Stop strings apply inside reasoning too, and end everything.
        c = run(OutputFilter({"<|end|>"}, true, false), "<think>a<|end|>b</think>c", step);
        CHECK(c.reasoning == "a");
        CHECK(c.content.empty());
        CHECK(c.stopped);
    }
}

TEST_CASE("tool calls: the forms assistants see", "[toolcalls]") {
    auto calls = extract_tool_calls("<tool_call>\n{\"name\": \"set_light\", \"arguments\": {\"room\": \"kitchen\", \"on\": true}}\n</tool_call>");
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].name == "set_light");
    CHECK(calls[0].arguments_json == R"({"on":true,"room":"kitchen"})");

    calls = extract_tool_calls("<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"b\",\"arguments\":{\"x\":1}}</tool_call>");
    REQUIRE(calls.size() == 2);
    CHECK(calls[1].name == "b");
    CHECK(calls[1].arguments_json == R"({"x":1})");

    calls = extract_tool_calls("Sure.\n```json\n{\"tool\": \"timer\", \"arguments\": {\"minutes\": 5}}\n```\n");
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].name == "timer");
    CHECK(calls[0].arguments_json == R"({"minutes":5})");

    calls = extract_tool_calls(R"({"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}]})");
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].id == "call_1");
    CHECK(calls[0].name == "weather");
    CHECK(calls[0].arguments_json == R"({"city": "Oslo"})");

    calls = extract_tool_calls(R"(I'll call it: {"name": "volume", "parameters": {"level": 3}} now)");
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].name == "volume");
    CHECK(calls[0].arguments_json == R"({"level":3})");

    CHECK(extract_tool_calls("The kitchen light is on.").empty());
    CHECK(extract_tool_calls("{\"answer\": 42}").empty());
    CHECK(extract_tool_calls("<tool_call>not json</tool_call>").empty());
    CHECK(extract_tool_calls("{\"name\": \"x\"").empty());  // truncated
    CHECK(extract_tool_calls("").empty());
}
