// Converts Hugging Face tokenizer files to GGUF tokenizer metadata (byte-level BPE),
// the way llama.cpp's convert_hf_to_gguf.py writes them for Qwen2/3 and Llama 3.
#pragma once

#include "gguf/gguf_writer.hpp"

#include <cstdint>
#include <filesystem>
#include <string>

namespace genie::tokenizer {

struct HfImportOptions {
    /// `tokenizer.ggml.pre`; empty = detect from the files (tokenizer.json's split regex,
    /// or tokenizer_config.json's tokenizer_class). genie::Error Unsupported when it cannot.
    std::string pre;
    /// `general.name` / `general.architecture` to write (omitted when empty).
    std::string name;
    std::string architecture;
    /// BOS / EOS by token text, overriding tokenizer_config.json and config.json.
    std::string bos_token;
    std::string eos_token;
    /// Pad the vocabulary with "[PAD<i>]" unused tokens up to this size (0 = as the files say;
    /// config.json's vocab_size is used when present).
    uint32_t vocab_size = 0;
};

/// Reads `dir` (tokenizer.json, or vocab.json + merges.txt; tokenizer_config.json with its
/// added tokens; config.json when present) and returns a writer holding the GGUF
/// tokenizer metadata. Throws genie::Error (NotFound, Format, Unsupported).
gguf::Writer import_hf_tokenizer(const std::filesystem::path& dir, const HfImportOptions& options = {});

/// import_hf_tokenizer + write to `out` (a vocab-only GGUF, no tensors).
void convert_hf_tokenizer(const std::filesystem::path& dir, const std::filesystem::path& out,
                          const HfImportOptions& options = {});

}  // namespace genie::tokenizer
