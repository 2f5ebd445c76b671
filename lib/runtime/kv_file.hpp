// KV persistence: a session's KV cells and tokens in a file (docs/kv-cache.md has the
// byte table), the model fingerprint that ties a file to its model, and the hash both use.
#pragma once

#include "backend/backend.hpp"
#include "model/model_impl.hpp"

#include <genie/types.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace genie::runtime {

/// XXH64 (Yann Collet's xxHash, 64-bit variant, as specified in xxhash_spec.md), streamed.
class Xxh64 {
public:
    explicit Xxh64(uint64_t seed = 0) noexcept;
    void update(const void* data, size_t size) noexcept;
    uint64_t digest() const noexcept;

private:
    uint64_t v_[4];
    uint64_t seed_;
    uint64_t total_ = 0;
    unsigned char buffer_[32];
    size_t buffered_ = 0;
};

/// One-shot XXH64.
uint64_t xxh64(const void* data, size_t size, uint64_t seed = 0) noexcept;

/// The model's 64-bit fingerprint: XXH64 over the hyper-parameters, the tensor directory
/// (names, types, shapes) and the XXH64 of every 16 MiB chunk of tensor data, the chunks
/// hashed on all hardware threads. Computed on the first call and cached in the model.
uint64_t model_fingerprint(const Model::Impl& model);

/// Format constants (docs/kv-cache.md).
inline constexpr char kKvFileMagic[8] = {'G', 'E', 'N', 'I', 'E', 'K', 'V', '\0'};
inline constexpr uint32_t kKvFileVersion = 1;
inline constexpr size_t kKvFileHeaderBytes = 80;

/// Writes the first tokens.size() cells of every layer of `cache`, and the tokens, to
/// `path` atomically: a temporary file in the same folder, fsync, rename over `path`,
/// fsync of the folder. Returns the file's size. Throws Io (message names the file).
uint64_t save_kv_file(const std::filesystem::path& path, const Model::Impl& model, const backend::KvCache& cache,
                      std::span<const TokenId> tokens);

/// Reads a file save_kv_file wrote, checks it against `model` and `cache` (fingerprint,
/// KV type and shape, tokens that fit the context and the vocabulary, checksums) and only
/// then writes its cells into `cache`. Returns the tokens. Throws NotFound/Io (file),
/// Format (not a KV file, unknown version, truncated, checksum mismatch), InvalidArgument
/// (another model, KV type or shape, more tokens than the context holds); every message
/// names the file and what differs. On error `cache` is unchanged.
std::vector<TokenId> load_kv_file(const std::filesystem::path& path, const Model::Impl& model,
                                  backend::KvCache& cache);

}  // namespace genie::runtime
