// GGUF writer: builds a GGUF v3 (or v2) file from metadata and tensors. Used by the
// tools (tokenizer converter, model generator) and by test fixtures.
#pragma once

#include "gguf/gguf_value.hpp"

#include <genie/types.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace genie::gguf {

class Reader;

class Writer {
public:
    /// Fills `size` bytes of tensor data at `dst` (lets huge tensors be generated
    /// while streaming to disk instead of being held in memory).
    using TensorFill = std::function<void(uint8_t* dst, size_t size)>;

    explicit Writer(uint32_t version = 3, uint32_t alignment = 32);

    /// Sets `key` (replacing an existing value in place, otherwise appending).
    /// `general.alignment` also changes the alignment used for tensor data.
    Writer& set(std::string key, Value value);
    bool remove(std::string_view key);
    const Value* find(std::string_view key) const noexcept;
    /// Copies every key of `reader` (in file order).
    Writer& copy_metadata(const Reader& reader);

    /// Adds a tensor. `shape` is ggml order (ne[0] first); ne[0] must be a multiple
    /// of the type's block size and `data.size()` must equal the tensor's byte size
    /// (genie::Error InvalidArgument otherwise). Tensor names are unique.
    Writer& add_tensor(std::string name, DType type, std::vector<int64_t> shape, std::vector<uint8_t> data);
    /// Same, with the bytes produced by `fill` while writing.
    Writer& add_tensor(std::string name, DType type, std::vector<int64_t> shape, TensorFill fill);
    /// Convenience: an F32 tensor from floats.
    Writer& add_tensor_f32(std::string name, std::vector<int64_t> shape, std::span<const float> values);

    size_t tensor_count() const noexcept { return tensors_.size(); }

    /// The whole file in memory.
    std::vector<uint8_t> to_bytes() const;
    /// Writes the file: first to `path` + ".tmp", then renamed, so a failure never
    /// leaves a half-written file at `path`. Throws genie::Error (Io).
    void write(const std::filesystem::path& path) const;

    /// Byte size of a tensor of `type` and `shape` (throws InvalidArgument on a bad shape).
    static uint64_t tensor_bytes(DType type, const std::vector<int64_t>& shape);

private:
    struct PendingTensor {
        std::string name;
        DType type;
        std::vector<int64_t> shape;
        uint64_t size_bytes;
        std::vector<uint8_t> data;
        TensorFill fill;
    };
    std::vector<uint8_t> header_bytes(std::vector<uint64_t>& offsets) const;
    void write_to(const std::function<void(const uint8_t*, size_t)>& sink) const;

    uint32_t version_;
    uint32_t alignment_;
    std::vector<KeyValue> metadata_;
    std::vector<PendingTensor> tensors_;
};

}  // namespace genie::gguf
