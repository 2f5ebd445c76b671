// Google Benchmark micro-benchmarks of the tokenizer. Vocabularies come from
// ../shared/testdata/tokenizer/vocab; the Qwen3 one is converted from the Hugging Face
// files on first use (into the system temp directory).
#include "tokenizer/hf_import.hpp"

#include <genie/tokenizer.hpp>

#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

namespace {

namespace fs = std::filesystem;

const fs::path kTestdata = GENIE_TESTDATA_DIR;

const genie::Tokenizer& qwen() {
    static const genie::Tokenizer t = [] {
        const fs::path out = fs::temp_directory_path() / "genie-bench-qwen3-vocab.gguf";
        genie::tokenizer::convert_hf_tokenizer(kTestdata / "tokenizer" / "qwen", out);
        return genie::Tokenizer::load(out);
    }();
    return t;
}

const genie::Tokenizer& llama_spm() {
    static const genie::Tokenizer t = genie::Tokenizer::load(kTestdata / "tokenizer" / "vocab" / "ggml-vocab-llama-spm.gguf");
    return t;
}

// ~64 KiB of mixed English, code and CJK.
const std::string& mixed_text() {
    static const std::string text = [] {
        const std::string block =
            "The quick brown fox jumps over the lazy dog. It's 2024 and we've got 3.14159 reasons to tokenize!\n"
            "int main(int argc, char** argv) {\n    for (int i = 0; i < argc; ++i) printf(\"%s\\n\", argv[i]);\n}\n"
            "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C\xE3\x80\x82"  // 你好，世界。
            "\xE6\x9D\xB1\xE4\xBA\xAC\xE3\x81\xAF\xE6\x97\xA5\xE6\x9C\xAC\xE3\x81\xAE\xE9\xA6\x96\xE9\x83\xBD\xE3\x81\xA7\xE3\x81\x99\xE3\x80\x82\n";
        std::string t;
        while (t.size() < 64 * 1024) t += block;
        return t;
    }();
    return text;
}

void BM_TokenizeQwen(benchmark::State& state) {
    const auto& tok = qwen();
    const auto& text = mixed_text();
    size_t n = 0;
    for (auto _ : state) {
        auto ids = tok.tokenize(text);
        n = ids.size();
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(int64_t(state.iterations() * text.size()));
    state.counters["tokens/s"] = benchmark::Counter(double(n) * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TokenizeQwen)->Unit(benchmark::kMillisecond);

void BM_TokenizeLlamaSpm(benchmark::State& state) {
    const auto& tok = llama_spm();
    const auto& text = mixed_text();
    size_t n = 0;
    for (auto _ : state) {
        auto ids = tok.tokenize(text);
        n = ids.size();
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(int64_t(state.iterations() * text.size()));
    state.counters["tokens/s"] = benchmark::Counter(double(n) * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TokenizeLlamaSpm)->Unit(benchmark::kMillisecond);

void BM_DetokenizeStreamingQwen(benchmark::State& state) {
    const auto& tok = qwen();
    const auto ids = tok.tokenize(mixed_text());
    for (auto _ : state) {
        genie::StreamingDetokenizer stream(tok);
        size_t bytes = 0;
        for (genie::TokenId id : ids) bytes += stream.push(id).size();
        bytes += stream.flush().size();
        benchmark::DoNotOptimize(bytes);
    }
    state.counters["tokens/s"] =
        benchmark::Counter(double(ids.size()) * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DetokenizeStreamingQwen)->Unit(benchmark::kMillisecond);

void BM_LoadQwenVocab(benchmark::State& state) {
    qwen();
    const fs::path path = fs::temp_directory_path() / "genie-bench-qwen3-vocab.gguf";
    for (auto _ : state) {
        auto t = genie::Tokenizer::load(path);
        benchmark::DoNotOptimize(t.vocab_size());
    }
}
BENCHMARK(BM_LoadQwenVocab)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
