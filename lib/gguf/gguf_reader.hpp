// GGUF reader: parses and validates the header, metadata and tensor directory of a
// GGUF v2/v3 file and gives bounds-checked access to tensor bytes in place (mmap).
//
// File layout (little-endian):
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv x  { string key | u32 value_type | value }
//   n_tensors x { string name | u32 n_dims | n_dims x u64 ne | u32 ggml_type | u64 offset }
//   padding to `general.alignment` (default 32) | tensor data (offsets relative to here)
// string = u64 length + bytes (no terminator); array = u32 element type + u64 count + items.
#pragma once

#include "core/mapped_file.hpp"
#include "gguf/gguf_value.hpp"

#include <genie/error.hpp>
#include <genie/types.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace genie::gguf {

inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr size_t kMaxDims = 4;          // GGML_MAX_DIMS
inline constexpr size_t kMaxTensorName = 63;   // GGML_MAX_NAME - 1 (names are NUL-terminated in ggml)

/// One entry of the tensor directory, validated against the file.
struct TensorInfo {
    std::string name;
    DType type = DType::F32;
    std::vector<int64_t> shape;  ///< ne[0] (contiguous, row length) first, as in ggml
    uint64_t offset = 0;         ///< relative to the data section
    uint64_t size_bytes = 0;     ///< bytes of tensor data
    const uint8_t* data = nullptr;  ///< in the mapping; valid while the Reader lives

    int64_t element_count() const noexcept;
    /// "[64, 512]" style.
    std::string shape_string() const;
    std::span<const uint8_t> bytes() const noexcept { return {data, size_bytes}; }
};

/// A parsed GGUF file. Construction validates everything or throws genie::Error
/// (Format for malformed bytes, Unsupported for versions/types this build cannot
/// handle, NotFound/Io for the file itself). Every message names the file, the byte
/// offset and what was expected. Immutable after construction: safe to share
/// across threads. Movable, not copyable.
class Reader {
public:
    static Reader open(const std::filesystem::path& path);
    /// Parses bytes held in memory (tests, fuzzing); `name` appears in errors.
    static Reader from_bytes(std::vector<uint8_t> bytes, std::string name = "<memory>");
    /// Parses a file already opened (MappedFile::open, or MappedFile::read for --no-mmap).
    static Reader from_file(MappedFile file);

    Reader(Reader&&) noexcept = default;
    Reader& operator=(Reader&&) noexcept = default;

    const std::string& path() const noexcept { return file_.name(); }
    uint32_t version() const noexcept { return version_; }
    uint32_t alignment() const noexcept { return alignment_; }
    uint64_t data_offset() const noexcept { return data_offset_; }
    uint64_t file_size() const noexcept { return file_.size(); }
    /// True when tensor bytes live in an mmap of the file (zero-copy).
    bool is_mapped() const noexcept { return file_.is_mapped(); }
    /// The bytes' owner (MappedFile::check_unchanged tells whether a mapped file changed).
    const MappedFile& file() const noexcept { return file_; }

    // ---- metadata -------------------------------------------------------------
    /// All key/value pairs in file order.
    const std::vector<KeyValue>& metadata() const noexcept { return metadata_; }
    /// The value of `key`, or nullptr.
    const Value* find(std::string_view key) const noexcept;
    bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }

    /// The value of `key` converted to T. Throws NotFound when missing, Format when
    /// the stored type cannot represent a T (message names key, expected and actual type).
    template <class T>
    T get(std::string_view key) const;
    /// Like get, but std::nullopt when the key is missing (still throws on a type mismatch).
    template <class T>
    std::optional<T> get_optional(std::string_view key) const;
    template <class T>
    T get_or(std::string_view key, T fallback) const {
        auto v = get_optional<T>(key);
        return v ? *v : fallback;
    }
    /// An array of T. Throws NotFound when missing, Format when not an array of
    /// values convertible to T.
    template <class T>
    std::vector<T> get_array(std::string_view key) const;

    /// The architecture (`general.architecture`), or "" when absent.
    std::string architecture() const { return get_or<std::string>("general.architecture", ""); }

    // ---- tensors --------------------------------------------------------------
    const std::vector<TensorInfo>& tensors() const noexcept { return tensors_; }
    const TensorInfo* find_tensor(std::string_view name) const noexcept;
    /// Throws NotFound naming the tensor and the file.
    const TensorInfo& tensor(std::string_view name) const;

private:
    Reader() = default;
    void parse();
    [[noreturn]] void fail_type(std::string_view key, std::string_view expected, const Value& value) const;

    MappedFile file_;
    uint32_t version_ = 0;
    uint32_t alignment_ = kDefaultAlignment;
    uint64_t data_offset_ = 0;
    std::vector<KeyValue> metadata_;
    std::unordered_map<std::string, size_t> metadata_index_;
    std::vector<TensorInfo> tensors_;
    std::unordered_map<std::string, size_t> tensor_index_;
};

namespace detail {
template <class T>
std::string_view cxx_type_name() {
    if constexpr (std::is_same_v<T, std::string>) return "string";
    else if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_floating_point_v<T>) return "a floating-point number";
    else if constexpr (std::is_unsigned_v<T>) return "a non-negative integer";
    else return "an integer";
}
}  // namespace detail

template <class T>
std::optional<T> Reader::get_optional(std::string_view key) const {
    const Value* value = find(key);
    if (!value) return std::nullopt;
    auto converted = value->as<T>();
    if (!converted) fail_type(key, detail::cxx_type_name<T>(), *value);
    return converted;
}

template <class T>
T Reader::get(std::string_view key) const {
    const Value* value = find(key);
    if (!value)
        throw Error(ErrorCode::NotFound, "'" + path() + "': metadata key '" + std::string(key) + "' is missing");
    auto converted = value->as<T>();
    if (!converted) fail_type(key, detail::cxx_type_name<T>(), *value);
    return *converted;
}

template <class T>
std::vector<T> Reader::get_array(std::string_view key) const {
    const Value* value = find(key);
    if (!value)
        throw Error(ErrorCode::NotFound, "'" + path() + "': metadata key '" + std::string(key) + "' is missing");
    const Array* array = value->array();
    if (!array) fail_type(key, "an array", *value);
    std::vector<T> out;
    out.reserve(array->items.size());
    for (const Value& item : array->items) {
        auto converted = item.as<T>();
        if (!converted) fail_type(key, std::string("an array of ") + std::string(detail::cxx_type_name<T>()), *value);
        out.push_back(std::move(*converted));
    }
    return out;
}

}  // namespace genie::gguf
