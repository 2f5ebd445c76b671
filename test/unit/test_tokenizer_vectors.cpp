// llama.cpp's tokenizer test vectors (../shared/testdata/tokenizer/vectors): every
// .inp/.out pair whose vocabulary is available must match token for token.
#include "test_tokenizer_fixtures.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace genie;

namespace {

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    REQUIRE(in);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct VectorSet {
    std::vector<std::string> inputs;
    std::vector<std::vector<TokenId>> expected;
};

// .inp: tests each followed by "\n__ggml_vocab_test__\n"; .out: one line per test, each id
// written as " <id>".
VectorSet read_vectors(const std::string& name) {
    const auto dir = genie::test::testdata_dir() / "tokenizer" / "vectors";
    const std::string inp = slurp(dir / ("ggml-vocab-" + name + ".gguf.inp"));
    const std::string out = slurp(dir / ("ggml-vocab-" + name + ".gguf.out"));
    VectorSet v;
    const std::string sep = "\n__ggml_vocab_test__\n";
    size_t pos = 0;
    for (size_t hit; (hit = inp.find(sep, pos)) != std::string::npos; pos = hit + sep.size())
        v.inputs.push_back(inp.substr(pos, hit - pos));
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream ids(line);
        std::vector<TokenId> row;
        for (TokenId id; ids >> id;) row.push_back(id);
        v.expected.push_back(std::move(row));
    }
    return v;
}

void check_vectors(const std::string& name) {
    const VectorSet v = read_vectors(name);
    REQUIRE(v.inputs.size() == 46);
    REQUIRE(v.expected.size() == v.inputs.size());
    const Tokenizer& tok = genie::test::tokenizer_for(name);
    size_t passed = 0;
    for (size_t i = 0; i < v.inputs.size(); ++i) {
        const auto got = tok.tokenize(v.inputs[i]);  // no BOS/EOS, special text as text
        if (got == v.expected[i]) {
            ++passed;
        } else {
            INFO(name << " vector " << i << ": '" << v.inputs[i] << "'");
            CHECK(got == v.expected[i]);
        }
    }
    WARN(name << ": " << passed << "/" << v.inputs.size() << " vectors match");
    CHECK(passed == v.inputs.size());
}

}  // namespace

TEST_CASE("tokenizer vectors: gpt-2", "[tokenizer][vectors]") { check_vectors("gpt-2"); }
TEST_CASE("tokenizer vectors: llama-spm", "[tokenizer][vectors]") { check_vectors("llama-spm"); }
TEST_CASE("tokenizer vectors: phi-3", "[tokenizer][vectors]") { check_vectors("phi-3"); }
TEST_CASE("tokenizer vectors: qwen2 (Qwen3 vocab converted from HF files)", "[tokenizer][vectors]") { check_vectors("qwen2"); }
TEST_CASE("tokenizer vectors: llama-bpe (Llama 3 vocab converted from HF files)", "[tokenizer][vectors]") { check_vectors("llama-bpe"); }
TEST_CASE("tokenizer vectors: deepseek-coder", "[tokenizer][vectors]") { check_vectors("deepseek-coder"); }
TEST_CASE("tokenizer vectors: deepseek-llm", "[tokenizer][vectors]") { check_vectors("deepseek-llm"); }
TEST_CASE("tokenizer vectors: falcon", "[tokenizer][vectors]") { check_vectors("falcon"); }
TEST_CASE("tokenizer vectors: starcoder", "[tokenizer][vectors]") { check_vectors("starcoder"); }
TEST_CASE("tokenizer vectors: refact", "[tokenizer][vectors]") { check_vectors("refact"); }
TEST_CASE("tokenizer vectors: mpt", "[tokenizer][vectors]") { check_vectors("mpt"); }

TEST_CASE("tokenizer vectors: llama-spm vectors also hold for llama-2-tiny-random", "[tokenizer][vectors]") {
    const VectorSet v = read_vectors("llama-spm");
    const Tokenizer tok = Tokenizer::load(genie::test::testdata_dir() / "models" / "llama-2-tiny-random.gguf");
    for (size_t i = 0; i < v.inputs.size(); ++i) {
        INFO("vector " << i);
        CHECK(tok.tokenize(v.inputs[i]) == v.expected[i]);
    }
}

TEST_CASE("tokenizer vectors: every available set is covered", "[tokenizer][vectors]") {
    // command-r and bert-bge have vectors but no vocabulary in the test data.
    for (const char* name : {"command-r", "bert-bge"}) CHECK_FALSE(genie::test::vocab_for_vectors(name).has_value());
}
