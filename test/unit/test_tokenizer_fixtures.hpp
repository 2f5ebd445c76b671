// Shared by the tokenizer tests: which vocabulary each test-vector set uses, and the
// Qwen3 / Llama 3 GGUF vocabularies converted from the Hugging Face files at test time
// (once per test process).
#pragma once

#include "support/test_support.hpp"
#include "tokenizer/hf_import.hpp"

#include <genie/tokenizer.hpp>

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unistd.h>

namespace genie::test {

/// Converts ../shared/testdata/tokenizer/<hf_dir> into fixture_dir()/<name>.gguf. Each
/// process writes its own file and renames it into place, so parallel tests never see
/// a half-written file.
inline std::filesystem::path converted_vocab(const std::string& hf_dir, const std::string& name,
                                             const tokenizer::HfImportOptions& options = {}) {
    static std::mutex mutex;
    static std::map<std::string, std::filesystem::path> done;
    std::lock_guard lock(mutex);
    if (auto it = done.find(name); it != done.end()) return it->second;
    const auto final_path = fixture_dir() / (name + ".gguf");
    const auto tmp = temp_path(name + "-convert");
    tokenizer::convert_hf_tokenizer(testdata_dir() / "tokenizer" / hf_dir, tmp, options);
    std::filesystem::rename(tmp, final_path);
    done[name] = final_path;
    return final_path;
}

/// The Qwen3 vocabulary (151669 tokens), as a Qwen3 GGUF has it.
inline std::filesystem::path qwen3_vocab_path() {
    tokenizer::HfImportOptions o;
    o.architecture = "qwen3";
    o.name = "Qwen3 tokenizer";
    o.bos_token = "<|endoftext|>";  // what config.json's bos_token_id gives real Qwen3 GGUFs
    return converted_vocab("qwen", "tokenizer-qwen3", o);
}

/// The Llama 3 vocabulary (128256 tokens).
inline std::filesystem::path llama3_vocab_path() {
    tokenizer::HfImportOptions o;
    o.architecture = "llama";
    o.name = "Llama 3 tokenizer";
    return converted_vocab("llama3", "tokenizer-llama3", o);
}

/// The GGUF vocabulary that a vector set `name` (vectors/ggml-vocab-<name>.gguf.*) is
/// checked against, or nullopt when the vocabulary is not available.
inline std::optional<std::filesystem::path> vocab_for_vectors(const std::string& name) {
    if (name == "qwen2") return qwen3_vocab_path();
    if (name == "llama-bpe") return llama3_vocab_path();
    const auto p = testdata_dir() / "tokenizer" / "vocab" / ("ggml-vocab-" + name + ".gguf");
    if (std::filesystem::exists(p)) return p;
    return std::nullopt;
}

/// Loads (and caches per process) the tokenizer of a vector set.
inline const Tokenizer& tokenizer_for(const std::string& name) {
    static std::mutex mutex;
    static std::map<std::string, Tokenizer> cache;
    {
        std::lock_guard lock(mutex);
        if (auto it = cache.find(name); it != cache.end()) return it->second;
    }
    auto path = vocab_for_vectors(name);
    if (!path) throw std::runtime_error("no vocabulary for " + name);
    Tokenizer t = Tokenizer::load(*path);
    std::lock_guard lock(mutex);
    return cache.emplace(name, std::move(t)).first->second;
}

}  // namespace genie::test
