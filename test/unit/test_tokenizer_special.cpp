// Special tokens, BOS/EOS, vocabulary queries and errors. Expected values are what
// llama.cpp reports for the same GGUF files (llama_vocab_bos/eos/eot/nl/is_eog ...).
#include "test_tokenizer_fixtures.hpp"

#include "gguf/gguf_reader.hpp"
#include "gguf/gguf_writer.hpp"
#include "tokenizer/tokenizer_internal.hpp"

#include <genie/error.hpp>

#include <catch2/catch.hpp>

using namespace genie;
using genie::test::testdata_dir;
using genie::test::tokenizer_for;

namespace {
std::vector<TokenId> ids(std::initializer_list<TokenId> l) { return l; }
}  // namespace

TEST_CASE("tokenizer: Qwen3 special ids and end-of-generation set", "[tokenizer][special]") {
    const Tokenizer& t = tokenizer_for("qwen2");
    CHECK(t.vocab_size() == 151669);
    CHECK(t.kind() == VocabKind::BytePairEncoding);
    CHECK(t.pre_tokenizer() == "qwen2");
    CHECK(t.bos() == 151643);
    CHECK(t.eos() == 151645);
    CHECK(t.eot() == 151645);
    CHECK(t.pad() == 151643);
    CHECK(t.newline() == 198);
    CHECK_FALSE(t.adds_bos());
    CHECK_FALSE(t.adds_eos());
    // llama.cpp: 128247 ("</s>"), <|endoftext|>, <|im_end|>, <|fim_pad|>, <|repo_name|>, <|file_sep|>
    CHECK(t.eog_tokens() == ids({128247, 151643, 151645, 151662, 151663, 151664}));
    CHECK(t.is_eog(151645));
    CHECK_FALSE(t.is_eog(151644));
    CHECK_FALSE(t.is_eog(-1));
    CHECK_FALSE(t.is_eog(1 << 30));
    CHECK(t.token_type(151644) == TokenType::Control);
    CHECK(t.token_type(151667) == TokenType::UserDefined);  // <think> is not "special" in Qwen3
    CHECK(t.token_text(151667) == "<think>");
    CHECK(t.find_token("<|im_start|>") == 151644);
    CHECK_FALSE(t.find_token("no such token").has_value());
}

TEST_CASE("tokenizer: Llama 3, Llama 2, phi-3 and gpt-2 special ids match llama.cpp", "[tokenizer][special]") {
    const Tokenizer& l3 = tokenizer_for("llama-bpe");
    CHECK(l3.vocab_size() == 128256);
    CHECK(l3.bos() == 128000);
    CHECK(l3.eos() == 128001);
    CHECK(l3.eot() == 128009);
    CHECK(l3.adds_bos());
    CHECK(l3.eog_tokens() == ids({128001, 128009}));

    const Tokenizer& spm = tokenizer_for("llama-spm");
    CHECK(spm.kind() == VocabKind::SentencePiece);
    CHECK(spm.bos() == 1);
    CHECK(spm.eos() == 2);
    CHECK(spm.eot() == kNoToken);
    CHECK(spm.newline() == 13);
    CHECK(spm.adds_bos());
    CHECK(spm.eog_tokens() == ids({2}));
    CHECK(spm.token_type(13) == TokenType::Byte);

    const Tokenizer& phi3 = tokenizer_for("phi-3");
    CHECK(phi3.eos() == 32000);
    CHECK(phi3.eot() == 32007);
    CHECK(phi3.eog_tokens() == ids({2, 32000, 32007}));

    const Tokenizer& gpt2 = tokenizer_for("gpt-2");
    CHECK(gpt2.bos() == 50256);
    CHECK(gpt2.eot() == 50256);
    CHECK(gpt2.newline() == 198);
}

TEST_CASE("tokenizer: BOS/EOS follow the vocabulary flags or the explicit options", "[tokenizer][special]") {
    const Tokenizer& spm = tokenizer_for("llama-spm");
    CHECK(spm.tokenize("Hello world") == ids({15043, 3186}));
    CHECK(spm.tokenize(" Hello world") == ids({29871, 15043, 3186}));
    TokenizeOptions special;
    special.add_special = true;
    CHECK(spm.tokenize("Hello world", special) == ids({1, 15043, 3186}));
    CHECK(spm.tokenize("", special) == ids({1}));  // SentencePiece: encode('') with specials is [BOS]
    CHECK(spm.tokenize("").empty());
    TokenizeOptions eos = special;
    eos.add_eos = true;
    CHECK(spm.tokenize("Hello", eos) == ids({1, 15043, 2}));
    TokenizeOptions no_bos = special;
    no_bos.add_bos = false;
    CHECK(spm.tokenize("Hello", no_bos) == ids({15043}));

    const Tokenizer& qwen = tokenizer_for("qwen2");
    CHECK(qwen.tokenize("Hello", special) == ids({9707}));  // Qwen adds no BOS
    TokenizeOptions force_bos;
    force_bos.add_bos = true;
    CHECK(qwen.tokenize("Hello", force_bos) == ids({151643, 9707}));

    const Tokenizer& l3 = tokenizer_for("llama-bpe");
    CHECK(l3.tokenize("Hello", special) == ids({128000, 9906}));
}

TEST_CASE("tokenizer: control tokens are parsed only with parse_special, user-defined ones always", "[tokenizer][special]") {
    const Tokenizer& qwen = tokenizer_for("qwen2");
    const std::string text = "<|im_start|>user\nHi<|im_end|>";
    TokenizeOptions parse;
    parse.parse_special = true;
    CHECK(qwen.tokenize(text, parse) == ids({151644, 872, 198, 13048, 151645}));
    const auto plain = qwen.tokenize(text);
    CHECK(plain.size() > 5);
    CHECK(std::find(plain.begin(), plain.end(), 151644) == plain.end());
    // <think> is user-defined: one token even without parse_special
    CHECK(qwen.tokenize("<think>\nok</think>") == ids({151667, 198, 562, 151668}));

    // SentencePiece: after a special token the text gets the "▁" prefix again
    const Tokenizer& spm = tokenizer_for("llama-spm");
    CHECK(spm.tokenize("<s>Hello", parse) == ids({1, 15043}));
    CHECK(spm.tokenize("Hi</s>Hi", parse) == ids({6324, 2, 6324}));
}

TEST_CASE("tokenizer: token_to_piece renders control tokens only when asked", "[tokenizer][special]") {
    const Tokenizer& qwen = tokenizer_for("qwen2");
    CHECK(qwen.token_to_piece(151644) == "");
    CHECK(qwen.token_to_piece(151644, true) == "<|im_start|>");
    CHECK(qwen.token_to_piece(151667) == "<think>");  // user-defined: always
    CHECK(qwen.token_to_piece(9707) == "Hello");
    CHECK(qwen.token_to_piece(220) == " ");
    const Tokenizer& spm = tokenizer_for("llama-spm");
    CHECK(spm.token_to_piece(15043) == " Hello");
    CHECK(spm.token_to_piece(13) == "\n");  // <0x0A>
    CHECK(spm.token_to_piece(1) == "");
    CHECK(spm.token_to_piece(1, true) == "<s>");
    CHECK_THROWS_AS(spm.token_to_piece(32000), Error);
    CHECK_THROWS_AS(spm.token_to_piece(-1), Error);
}

TEST_CASE("tokenizer: detokenize follows llama_detokenize", "[tokenizer][detokenize]") {
    const Tokenizer& spm = tokenizer_for("llama-spm");
    CHECK(spm.detokenize(ids({15043, 3186})) == "Hello world");  // leading space removed
    // the unrendered BOS takes the leading-space removal, as in llama.cpp
    CHECK(spm.detokenize(ids({1, 15043, 3186})) == " Hello world");
    DetokenizeOptions render;
    render.render_special = true;
    CHECK(spm.detokenize(ids({1, 15043}), render) == "<s> Hello");
    DetokenizeOptions remove;
    remove.remove_special = true;
    CHECK(spm.detokenize(ids({1, 15043}), remove) == " Hello");  // llama.cpp keeps the space after a removed BOS

    const Tokenizer& gpt2 = tokenizer_for("gpt-2");
    // clean_spaces: " ," and " 's" lose their space
    CHECK(gpt2.detokenize(gpt2.tokenize("Hello , it 's")) == "Hello, it's");
    const Tokenizer& qwen = tokenizer_for("qwen2");
    CHECK(qwen.detokenize(qwen.tokenize("Hello , it 's")) == "Hello , it 's");  // qwen2: no clean-up
    CHECK_THROWS_AS(qwen.detokenize(ids({-5})), Error);
    // a lone half of a character: raw bytes by default, U+FFFD when asked
    const auto zh = qwen.tokenize("\xF0\x9D\x84\x9E");  // U+1D11E: two byte-level tokens
    REQUIRE(zh.size() > 1);
    CHECK(qwen.detokenize(std::vector<TokenId>(zh.begin(), zh.end() - 1)).size() == 3);
    DetokenizeOptions fix;
    fix.replace_invalid_utf8 = true;
    CHECK(qwen.detokenize(std::vector<TokenId>(zh.begin(), zh.end() - 1), fix) == "\xEF\xBF\xBD");
}

TEST_CASE("tokenizer: invalid UTF-8 never throws and follows llama.cpp", "[tokenizer][special]") {
    const Tokenizer& qwen = tokenizer_for("qwen2");
    // llama.cpp decodes each invalid byte as U+FFFD before byte-level BPE
    CHECK(qwen.tokenize("a\xFF" "b") == qwen.tokenize("a\xEF\xBF\xBD" "b"));
    CHECK(qwen.tokenize("\xC3") == qwen.tokenize("\xEF\xBF\xBD"));
    CHECK_NOTHROW(qwen.tokenize("\xF7\xBF\xBF\xBF"));  // above U+10FFFF: llama.cpp throws, we give U+FFFD
    CHECK(qwen.tokenize("\xF7\xBF\xBF\xBF") == qwen.tokenize("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
    // SentencePiece keeps the raw bytes: byte fallback
    const Tokenizer& spm = tokenizer_for("llama-spm");
    CHECK(spm.tokenize("\xFF") == ids({29871, 258}));  // ▁ then <0xFF>
    std::string all;
    for (int b = 0; b < 256; ++b) all.push_back(char(b));
    for (const char* name : {"gpt-2", "llama-spm", "qwen2", "llama-bpe", "deepseek-llm", "falcon"})
        CHECK_NOTHROW(tokenizer_for(name).tokenize(all));
}

TEST_CASE("tokenizer: load errors are genie::Error with codes", "[tokenizer][errors]") {
    try {
        Tokenizer::load(testdata_dir() / "no-such-file.gguf");
        FAIL("no exception");
    } catch (const Error& e) {
        CHECK((e.code() == ErrorCode::NotFound || e.code() == ErrorCode::Io));
    }
    auto load_bytes = [](gguf::Writer& w) {
        return tokenizer::make_tokenizer(gguf::Reader::from_bytes(w.to_bytes(), "test.gguf"));
    };
    {
        gguf::Writer w;
        w.set("general.architecture", "llama");
        try {
            load_bytes(w);
            FAIL("no exception");
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::NotFound);  // tokenizer.ggml.model missing
        }
    }
    {
        gguf::Writer w;
        w.set("tokenizer.ggml.model", "t5");
        w.set("tokenizer.ggml.tokens", gguf::Value::array_of(std::vector<std::string>{"a"}));
        try {
            load_bytes(w);
            FAIL("no exception");
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::Unsupported);
        }
    }
    {
        gguf::Writer w;
        w.set("tokenizer.ggml.model", "gpt2");
        w.set("tokenizer.ggml.pre", "no-such-pre");
        w.set("tokenizer.ggml.tokens", gguf::Value::array_of(std::vector<std::string>{"a"}));
        w.set("tokenizer.ggml.merges", gguf::Value::array_of(std::vector<std::string>{}));
        try {
            load_bytes(w);
            FAIL("no exception");
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::Unsupported);
        }
    }
    {
        gguf::Writer w;
        w.set("tokenizer.ggml.model", "gpt2");
        w.set("tokenizer.ggml.pre", "gpt-2");
        w.set("tokenizer.ggml.tokens", gguf::Value::array_of(std::vector<std::string>{"a", "b"}));
        w.set("tokenizer.ggml.token_type", gguf::Value::array_of(std::vector<int32_t>{1}));
        w.set("tokenizer.ggml.merges", gguf::Value::array_of(std::vector<std::string>{"a b"}));
        try {
            load_bytes(w);
            FAIL("no exception");
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::Format);  // fewer token types than tokens
        }
    }
}

TEST_CASE("tokenizer: a tiny hand-made BPE vocabulary merges by rank", "[tokenizer][bpe]") {
    gguf::Writer w;
    w.set("tokenizer.ggml.model", "gpt2");
    w.set("tokenizer.ggml.pre", "gpt-2");
    // byte-level: "Ġ" is the space
    const std::vector<std::string> tokens = {"a", "b", "c", "ab", "bc", "abc", "\xC4\xA0", "\xC4\xA0" "a"};
    w.set("tokenizer.ggml.tokens", gguf::Value::array_of(tokens));
    w.set("tokenizer.ggml.token_type", gguf::Value::array_of(std::vector<int32_t>(tokens.size(), 1)));
    // "b c" ranks before "a b": "abc" -> a + bc (no "a bc" merge) 
    w.set("tokenizer.ggml.merges", gguf::Value::array_of(std::vector<std::string>{"b c", "a b", "ab c", "\xC4\xA0 a"}));
    const Tokenizer t = tokenizer::make_tokenizer(gguf::Reader::from_bytes(w.to_bytes(), "tiny.gguf"));
    CHECK(t.tokenize("abc") == ids({0, 4}));
    CHECK(t.tokenize("ab") == ids({3}));
    CHECK(t.tokenize("ab a") == ids({3, 7}));
    CHECK(t.detokenize(ids({3, 7})) == "ab a");
}
