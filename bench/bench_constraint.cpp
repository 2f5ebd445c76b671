// Google Benchmark: the cost of the JSON constraint's token mask on the Qwen vocabulary
// (151k tokens; converted from ../shared/testdata/tokenizer/qwen on first use).
//
//   BM_MaskUncached/<state>   one trie + automaton walk (a mask-cache miss)
//   BM_MaskCached/<state>     cache hit: hash the state, look the mask up
//   BM_ApplyCached            what the generate loop pays on a hit: copy the logits, mask them
//   BM_Document/<cache>       a whole Qwen-tokenized document, token by token
//                             (mask + apply + accept), per token; cache 0 = every mask walked
//   BM_Build                  JsonConstraint::from_schema (schema + trie over the vocabulary)
#include "constraint/json_grammar.hpp"
#include "tokenizer/hf_import.hpp"

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

void BM_MaskUncached(benchmark::State& state) {
    const auto& c = cached();
    const auto& impl = c->impl();
    genie::JsonMatcher m(c);
    if (!m.accept_text(kProbes[state.range(0)].prefix)) state.SkipWithError("prefix rejected");
    genie::constraint::State s = impl.grammar.initial();
    for (const char* p = kProbes[state.range(0)].prefix; *p; ++p) impl.grammar.step(s, static_cast<uint8_t>(*p));
    genie::constraint::Mask mask;
    std::vector<genie::constraint::State> scratch;
    size_t allowed = 0;
    for (auto _ : state) {
        genie::constraint::compute_mask(impl.grammar, impl.trie, s, mask, scratch);
        benchmark::DoNotOptimize(mask.data());
    }
    for (uint64_t w : mask) allowed += static_cast<size_t>(__builtin_popcountll(w));
    state.SetLabel(std::string(kProbes[state.range(0)].name) + " allowed=" + std::to_string(allowed));
}

void BM_MaskCached(benchmark::State& state) {
    const auto& c = cached();
    genie::JsonMatcher m(c);
    m.accept_text(kProbes[state.range(0)].prefix);
    const auto& impl = c->impl();
    genie::constraint::State s = impl.grammar.initial();
    for (const char* p = kProbes[state.range(0)].prefix; *p; ++p) impl.grammar.step(s, static_cast<uint8_t>(*p));
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

void BM_Document(benchmark::State& state) {
    const auto c = constraint(static_cast<size_t>(state.range(0)));
    const std::vector<genie::TokenId> tokens = qwen().tokenize(kDocument);
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

BENCHMARK_MAIN();
