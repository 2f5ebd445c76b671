// Google Benchmark: the cost of the JSON constraint's token mask on the Qwen vocabulary
// (151k tokens; converted from ../shared/testdata/tokenizer/qwen on first use).
//
//   BM_MaskUncached/<state>   one trie + automaton walk (a mask-cache miss)
//   BM_MaskCached/<state>     cache hit: hash the state, look the mask up
//   BM_ApplyCached            what the generate loop pays on a hit: copy the logits, mask them
//   BM_Document/<cache>       a whole Qwen-tokenized document, token by token
//                             (mask + apply + accept), per token; cache 0 = every mask walked
//   BM_Build                  JsonConstraint::from_schema (schema + trie over the vocabulary)
//   BM_ToolMaskUncached/<state>  the forced tool-call union (tool_call_schema over 4 tools):
//                             mask walks where the state set has forked (start, key) and inside
//   BM_GbnfMaskUncached/<state>  a GBNF grammar (llama.cpp's json.gbnf): mask walks
//   BM_ToolDocument/<cache>, BM_GbnfDocument/<cache>  a whole document token by token, as BM_Document
#include "constraint/json_grammar.hpp"
#include "tokenizer/hf_import.hpp"

#include <genie/chat.hpp>
#include <genie/constraint.hpp>
#include <genie/tokenizer.hpp>

#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const genie::Tokenizer& qwen() {
    static const genie::Tokenizer t = [] {
        const fs::path out = fs::temp_directory_path() / "genie-bench-qwen3-vocab.gguf";
        genie::tokenizer::convert_hf_tokenizer(fs::path(GENIE_TESTDATA_DIR) / "tokenizer" / "qwen", out);
        return genie::Tokenizer::load(out);
    }();
    return t;
}

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer"},
    "email": {"type": "string"},
    "score": {"type": "number"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
    "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"},
                "zip": {"type": "string"}}, "required": ["city"], "additionalProperties": false},
    "status": {"enum": ["active", "inactive", "banned"]}
  },
  "required": ["name", "age"],
  "additionalProperties": false
})";

const char* kDocument =
    R"({"name": "Ada Lovelace", "age": 36, "email": "ada@example.com", "score": 98.25,)"
    R"( "tags": ["math", "poetry", "engines"], "address": {"street": "12 St James's Square", "city": "London"},)"
    R"( "status": "active"})";

std::shared_ptr<const genie::JsonConstraint> constraint(size_t cache_entries) {
    genie::JsonConstraintOptions o;
    o.mask_cache_entries = cache_entries;
    return genie::JsonConstraint::from_schema(kSchema, qwen(), o);
}

const std::shared_ptr<const genie::JsonConstraint>& cached() {
    static const auto c = constraint(512);
    return c;
}

// Matcher states worth measuring: the text fed before the mask.
struct Probe {
    const char* name;
    const char* prefix;
};
const Probe kProbes[] = {
    {"start", ""},
    {"key", R"({")"},
    {"key_prefix", R"({"ad)"},
    {"after_key", R"({"name")"},
    {"string_value", R"({"name": "Ada)"},
    {"number", R"({"name": "A", "age": 3)"},
    {"after_value", R"({"name": "A", "age": 3,)"},
    {"enum", R"({"name": "A", "age": 3, "status": ")"},
    {"complete", R"({"name": "A", "age": 3})"},
};

// The automaton's state set after `prefix` (empty set when the prefix is rejected).
genie::constraint::StateSet states_after(const genie::JsonConstraint& c, const char* prefix) {
    const auto& g = c.impl().grammar;
    genie::constraint::StateSet a, b;
    a.push() = g.initial();
    for (const char* p = prefix; *p; ++p) {
        if (!g.advance(a, static_cast<uint8_t>(*p), b)) return b;
        std::swap(a, b);
    }
    return a;
}

void mask_uncached(benchmark::State& state, const genie::JsonConstraint& c, const Probe& probe) {
    const auto& impl = c.impl();
    const genie::constraint::StateSet s = states_after(c, probe.prefix);
    if (s.empty()) {
        state.SkipWithError("prefix rejected");
        return;
    }
    genie::constraint::Mask mask;
    std::vector<genie::constraint::StateSet> scratch;
    size_t allowed = 0;
    for (auto _ : state) {
        genie::constraint::compute_mask(impl.grammar, impl.trie, s, mask, scratch);
        benchmark::DoNotOptimize(mask.data());
    }
    for (uint64_t w : mask) allowed += static_cast<size_t>(__builtin_popcountll(w));
    state.SetLabel(std::string(probe.name) + " allowed=" + std::to_string(allowed) + " states=" + std::to_string(s.n));
}

void BM_MaskUncached(benchmark::State& state) { mask_uncached(state, *cached(), kProbes[state.range(0)]); }

void BM_MaskCached(benchmark::State& state) {
    const auto& c = cached();
    const auto& impl = c->impl();
    const genie::constraint::StateSet s = states_after(*c, kProbes[state.range(0)].prefix);
    benchmark::DoNotOptimize(impl.mask(s));
    for (auto _ : state) benchmark::DoNotOptimize(impl.mask(s));
    state.SetLabel(kProbes[state.range(0)].name);
}

void BM_ApplyCached(benchmark::State& state) {
    const auto& c = cached();
    genie::JsonMatcher m(c);
    m.accept_text(R"({"name": "Ada)");
    std::vector<float> logits(c->vocab_size(), 0.5f), work;
    m.mask_bits();
    for (auto _ : state) {
        work.assign(logits.begin(), logits.end());
        benchmark::DoNotOptimize(m.apply(work));
    }
}

void document(benchmark::State& state, const std::shared_ptr<const genie::JsonConstraint>& c, const char* text) {
    const std::vector<genie::TokenId> tokens = qwen().tokenize(text);
    std::vector<float> logits(c->vocab_size(), 0.5f), work;
    for (auto _ : state) {
        genie::JsonMatcher m(c);
        for (genie::TokenId t : tokens) {
            work.assign(logits.begin(), logits.end());
            m.apply(work);
            if (!m.accept_token(t)) {
                state.SkipWithError("document token rejected");
                return;
            }
        }
        benchmark::DoNotOptimize(m.is_complete());
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * tokens.size()));
    state.SetLabel(std::to_string(tokens.size()) + " tokens; items/s = tokens/s");
}

void BM_Document(benchmark::State& state) { document(state, constraint(static_cast<size_t>(state.range(0))), kDocument); }

// ---- the forced tool-call union ----------------------------------------------------------

const char* kTools = R"([
  {"type":"function","function":{"name":"set_light","parameters":{"type":"object","properties":{
     "room":{"type":"string"},"on":{"type":"boolean"},"brightness":{"type":"integer","minimum":0,"maximum":100}},
     "required":["room","on"],"additionalProperties":false}}},
  {"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{
     "city":{"type":"string"},"date":{"type":"string","format":"date"}},"required":["city"],"additionalProperties":false}}},
  {"type":"function","function":{"name":"set_timer","parameters":{"type":"object","properties":{
     "minutes":{"type":"integer","minimum":1,"maximum":600},"label":{"type":"string"}},"required":["minutes"],
     "additionalProperties":false}}},
  {"type":"function","function":{"name":"play_media","parameters":{"type":"object","properties":{
     "query":{"type":"string"},"room":{"enum":["kitchen","living room","bedroom"]}},"required":["query"],
     "additionalProperties":false}}}
])";

const char* kToolDocument = R"({"name": "set_light", "arguments": {"room": "kitchen", "on": true, "brightness": 40}})";

std::shared_ptr<const genie::JsonConstraint> tool_constraint(size_t cache_entries) {
    genie::JsonConstraintOptions o = genie::tool_call_constraint_options();
    o.mask_cache_entries = cache_entries;
    return genie::JsonConstraint::from_schema(genie::tool_call_schema(kTools, "", true), qwen(), o);
}

const Probe kToolProbes[] = {
    {"start", ""},                                                        // object or array: every tool forks
    {"key", R"({")"},                                                     // 4 states
    {"name_value", R"({"name": "set)"},                                   // one tool left
    {"arguments_key", R"({"name": "set_light", "arguments": {")"},
    {"string_value", R"({"name": "set_light", "arguments": {"room": "kit)"},
    {"bounded_int", R"({"name": "set_light", "arguments": {"room": "k", "on": true, "brightness": 4)"},
    {"args_first", R"({"arguments": {")"},                                // 4 states inside arguments
};

void BM_ToolMaskUncached(benchmark::State& state) {
    static const auto c = tool_constraint(512);
    mask_uncached(state, *c, kToolProbes[state.range(0)]);
}
void BM_ToolDocument(benchmark::State& state) {
    document(state, tool_constraint(static_cast<size_t>(state.range(0))), kToolDocument);
}

// ---- a GBNF grammar ------------------------------------------------------------------------

const char* kJsonGbnf = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)";

std::shared_ptr<const genie::JsonConstraint> gbnf_constraint(size_t cache_entries) {
    genie::JsonConstraintOptions o;
    o.mask_cache_entries = cache_entries;
    return genie::JsonConstraint::from_grammar(kJsonGbnf, qwen(), o);
}

const Probe kGbnfProbes[] = {
    {"start", ""},
    {"key", R"({")"},
    {"after_key", R"({"name")"},
    {"string_value", R"({"name": "Ada)"},
    {"number", R"({"name": "A", "age": 3)"},
    {"after_value", R"({"name": "A", "age": 3,)"},
    {"complete", R"({"name": "A", "age": 3})"},
};

void BM_GbnfMaskUncached(benchmark::State& state) {
    static const auto c = gbnf_constraint(512);
    mask_uncached(state, *c, kGbnfProbes[state.range(0)]);
}
void BM_GbnfDocument(benchmark::State& state) {
    document(state, gbnf_constraint(static_cast<size_t>(state.range(0))), kDocument);
}

void BM_Build(benchmark::State& state) {
    qwen();
    for (auto _ : state) benchmark::DoNotOptimize(constraint(512));
    const auto& trie = cached()->impl().trie;
    state.counters["trie_nodes"] = static_cast<double>(trie.nodes.size());
    state.counters["trie_tokens"] = static_cast<double>(trie.tokens.size());
    state.counters["max_token_bytes"] = trie.max_depth;
}

}  // namespace

BENCHMARK(BM_MaskUncached)->DenseRange(0, std::size(kProbes) - 1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskCached)->DenseRange(0, std::size(kProbes) - 1)->Unit(benchmark::kNanosecond);
BENCHMARK(BM_ApplyCached)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Document)->Arg(0)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Build)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ToolMaskUncached)->DenseRange(0, std::size(kToolProbes) - 1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ToolDocument)->Arg(0)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GbnfMaskUncached)->DenseRange(0, std::size(kGbnfProbes) - 1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GbnfDocument)->Arg(0)->Arg(512)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
