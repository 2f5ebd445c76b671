#include "gguf/gguf_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace genie::gguf {
namespace {

constexpr uint32_t kMaxArrayDepth = 8;  // nested arrays deeper than this are rejected (stack safety)

/// Reads little-endian values from the file with a bounds check on every read.
class Cursor {
public:
    Cursor(const MappedFile& file) : file_(file) {}

    uint64_t position() const noexcept { return pos_; }
    uint64_t remaining() const noexcept { return file_.size() - pos_; }

    [[noreturn]] void fail(uint64_t at, const std::string& what) const {
        throw Error(ErrorCode::Format, fmt::format("'{}': offset {}: {}", file_.name(), at, what));
    }

    void need(uint64_t bytes, std::string_view what) const {
        if (bytes > remaining())
            fail(pos_, fmt::format("truncated file: expected {} byte(s) for {}, but only {} remain (file size {})",
                                   bytes, what, remaining(), file_.size()));
    }

    template <class T>
    T read(std::string_view what) {
        need(sizeof(T), what);
        T value;
        std::memcpy(&value, file_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return value;
    }

    std::string read_string(std::string_view what) {
        const uint64_t at = pos_;
        const uint64_t length = read<uint64_t>(what);
        if (length > remaining())
            fail(at, fmt::format("{} has length {}, past the end of the file ({} byte(s) remain)", what, length,
                                 remaining()));
        std::string s(reinterpret_cast<const char*>(file_.data() + pos_), static_cast<size_t>(length));
        pos_ += length;
        return s;
    }

private:
    const MappedFile& file_;
    uint64_t pos_ = 0;
};

/// Smallest number of bytes one item of `type` occupies in the file (bounds counts before allocating).
uint64_t min_encoded_size(ValueType type) {
    switch (type) {
        case ValueType::UInt8: case ValueType::Int8: case ValueType::Bool: return 1;
        case ValueType::UInt16: case ValueType::Int16: return 2;
        case ValueType::UInt32: case ValueType::Int32: case ValueType::Float32: return 4;
        case ValueType::UInt64: case ValueType::Int64: case ValueType::Float64: return 8;
        case ValueType::String: return 8;
        case ValueType::Array: return 12;
    }
    return 1;
}

Value read_value(Cursor& in, ValueType type, const std::string& key, uint32_t depth) {
    switch (type) {
        case ValueType::UInt8: return in.read<uint8_t>("a uint8 value");
        case ValueType::Int8: return in.read<int8_t>("an int8 value");
        case ValueType::UInt16: return in.read<uint16_t>("a uint16 value");
        case ValueType::Int16: return in.read<int16_t>("an int16 value");
        case ValueType::UInt32: return in.read<uint32_t>("a uint32 value");
        case ValueType::Int32: return in.read<int32_t>("an int32 value");
        case ValueType::Float32: return in.read<float>("a float32 value");
        case ValueType::UInt64: return in.read<uint64_t>("a uint64 value");
        case ValueType::Int64: return in.read<int64_t>("an int64 value");
        case ValueType::Float64: return in.read<double>("a float64 value");
        case ValueType::Bool: {
            const uint64_t at = in.position();
            const uint8_t b = in.read<uint8_t>("a bool value");
            if (b > 1) in.fail(at, fmt::format("value of '{}': expected a bool (0 or 1), found {}", key, b));
            return b != 0;
        }
        case ValueType::String: return in.read_string(fmt::format("the string value of '{}'", key));
        case ValueType::Array: {
            const uint64_t at = in.position();
            if (depth >= kMaxArrayDepth)
                in.fail(at, fmt::format("value of '{}': arrays nested deeper than {} levels", key, kMaxArrayDepth));
            const uint32_t element_id = in.read<uint32_t>("an array element type");
            if (!is_valid_value_type(element_id))
                in.fail(at, fmt::format("value of '{}': expected an array element type 0..12, found {}", key,
                                        element_id));
            const auto element_type = static_cast<ValueType>(element_id);
            const uint64_t count_at = in.position();
            const uint64_t count = in.read<uint64_t>("an array length");
            if (count > in.remaining() / min_encoded_size(element_type))
                in.fail(count_at, fmt::format("array '{}' claims {} {} item(s), more than the {} remaining byte(s) "
                                              "can hold",
                                              key, count, value_type_name(element_type), in.remaining()));
            Array array;
            array.element_type = element_type;
            array.items.reserve(static_cast<size_t>(count));
            for (uint64_t i = 0; i < count; ++i) array.items.push_back(read_value(in, element_type, key, depth + 1));
            return Value(std::move(array));
        }
    }
    in.fail(in.position(), "internal: invalid value type");
}

uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

}  // namespace

int64_t TensorInfo::element_count() const noexcept {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string TensorInfo::shape_string() const { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Reader Reader::open(const std::filesystem::path& path) {
    Reader reader;
    reader.file_ = MappedFile::open(path);
    reader.parse();
    return reader;
}

Reader Reader::from_file(MappedFile file) {
    Reader reader;
    reader.file_ = std::move(file);
    reader.parse();
    return reader;
}

Reader Reader::from_bytes(std::vector<uint8_t> bytes, std::string name) {
    Reader reader;
    reader.file_ = MappedFile::from_bytes(std::move(bytes), std::move(name));
    reader.parse();
    return reader;
}

void Reader::parse() {
    Cursor in(file_);

    // ---- header ---------------------------------------------------------------
    if (file_.size() < 4)
        in.fail(0, fmt::format("not a GGUF file: expected the magic 'GGUF', but the file has only {} byte(s)",
                               file_.size()));
    if (std::memcmp(file_.data(), "GGUF", 4) != 0) {
        std::string found;
        for (int i = 0; i < 4; ++i) {
            const unsigned char c = file_.data()[i];
            found += (c >= 0x20 && c < 0x7f) ? std::string(1, static_cast<char>(c)) : fmt::format("\\x{:02x}", c);
        }
        in.fail(0, fmt::format("not a GGUF file: expected the magic 'GGUF', found '{}'", found));
    }
    in.read<uint32_t>("the magic");
    const uint64_t version_at = in.position();
    version_ = in.read<uint32_t>("the version");
    if (version_ != 2 && version_ != 3) {
        const bool swapped = (version_ & 0xffffu) == 0 && version_ != 0;
        throw Error(ErrorCode::Unsupported,
                    fmt::format("'{}': offset {}: unsupported GGUF version {}: expected 2 or 3{}", file_.name(),
                                version_at, version_,
                                swapped ? " (this looks like a big-endian GGUF, which is not supported)" : ""));
    }
    const uint64_t counts_at = in.position();
    const uint64_t n_tensors = in.read<uint64_t>("the tensor count");
    const uint64_t n_kv = in.read<uint64_t>("the metadata count");
    // Each tensor-info needs >= 8+4+4+8 bytes and each key/value >= 8+4+1: reject absurd counts before allocating.
    if (n_tensors > in.remaining() / 24)
        in.fail(counts_at, fmt::format("truncated or corrupt file: the tensor count {} needs at least {} bytes of "
                                      "tensor directory, but only {} remain (file size {})",
                                      n_tensors, n_tensors * 24, in.remaining(), file_.size()));
    if (n_kv > in.remaining() / 13)
        in.fail(counts_at + 8, fmt::format("truncated or corrupt file: the metadata count {} needs at least {} "
                                          "bytes, but only {} remain (file size {})",
                                          n_kv, n_kv * 13, in.remaining(), file_.size()));

    // ---- metadata -------------------------------------------------------------
    metadata_.reserve(static_cast<size_t>(n_kv));
    for (uint64_t i = 0; i < n_kv; ++i) {
        const uint64_t key_at = in.position();
        std::string key = in.read_string(fmt::format("the key of metadata entry {}", i));
        if (metadata_index_.count(key)) in.fail(key_at, fmt::format("duplicate metadata key '{}'", key));
        const uint64_t type_at = in.position();
        const uint32_t type_id = in.read<uint32_t>("a value type");
        if (!is_valid_value_type(type_id))
            in.fail(type_at, fmt::format("metadata '{}': expected a value type 0..12, found {}", key, type_id));
        Value value = read_value(in, static_cast<ValueType>(type_id), key, 0);
        if (key == "general.alignment") {
            const auto* a = std::get_if<uint32_t>(&value.storage());
            if (!a || *a == 0 || (*a & (*a - 1)) != 0)
                in.fail(type_at, fmt::format("general.alignment must be a uint32 power of two, found {} {}",
                                             value.type_description(), value.to_display()));
            alignment_ = *a;
        }
        metadata_index_.emplace(key, metadata_.size());
        metadata_.push_back({std::move(key), std::move(value)});
    }

    // ---- tensor directory -------------------------------------------------------
    tensors_.reserve(static_cast<size_t>(n_tensors));
    std::vector<uint64_t> info_offsets;
    for (uint64_t i = 0; i < n_tensors; ++i) {
        const uint64_t info_at = in.position();
        info_offsets.push_back(info_at);
        TensorInfo t;
        t.name = in.read_string(fmt::format("the name of tensor {}", i));
        if (t.name.size() > kMaxTensorName)
            in.fail(info_at, fmt::format("tensor name '{}' is {} bytes long: at most {} are allowed", t.name,
                                         t.name.size(), kMaxTensorName));
        if (tensor_index_.count(t.name)) in.fail(info_at, fmt::format("duplicate tensor name '{}'", t.name));
        const uint64_t dims_at = in.position();
        const uint32_t n_dims = in.read<uint32_t>("a tensor's dimension count");
        if (n_dims > kMaxDims)
            in.fail(dims_at, fmt::format("tensor '{}': expected at most {} dimensions, found {}", t.name, kMaxDims,
                                         n_dims));
        int64_t elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t dim_at = in.position();
            const uint64_t ne = in.read<uint64_t>("a tensor dimension");
            if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
                (ne != 0 && static_cast<uint64_t>(elements) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ne))
                in.fail(dim_at, fmt::format("tensor '{}': dimension {} = {} overflows the element count", t.name, d, ne));
            elements *= static_cast<int64_t>(ne);
            t.shape.push_back(static_cast<int64_t>(ne));
        }
        const uint64_t type_at = in.position();
        const uint32_t type_id = in.read<uint32_t>("a tensor type");
        const auto info = dtype_info(type_id);
        if (!info) in.fail(type_at, fmt::format("tensor '{}': unknown tensor type {}", t.name, type_id));
        t.type = static_cast<DType>(type_id);
        const int64_t row = t.shape.empty() ? 1 : t.shape[0];
        if (row % info->block_size != 0)
            in.fail(dims_at, fmt::format("tensor '{}': row length {} is not a multiple of {}'s block size {}", t.name,
                                         row, info->name, info->block_size));
        const uint64_t blocks = static_cast<uint64_t>(elements) / info->block_size;
        if (blocks > std::numeric_limits<uint64_t>::max() / info->block_bytes)
            in.fail(dims_at, fmt::format("tensor '{}': byte size overflows", t.name));
        t.size_bytes = blocks * info->block_bytes;
        const uint64_t offset_at = in.position();
        t.offset = in.read<uint64_t>("a tensor data offset");
        if (t.offset % alignment_ != 0)
            in.fail(offset_at, fmt::format("tensor '{}': data offset {} is not a multiple of the alignment {}", t.name,
                                           t.offset, alignment_));
        tensor_index_.emplace(t.name, tensors_.size());
        tensors_.push_back(std::move(t));
    }

    // ---- data section -----------------------------------------------------------
    data_offset_ = align_up(in.position(), alignment_);
    const uint64_t data_size = file_.size() > data_offset_ ? file_.size() - data_offset_ : 0;
    for (size_t i = 0; i < tensors_.size(); ++i) {
        TensorInfo& t = tensors_[i];
        if (t.size_bytes == 0) {
            t.data = file_.data() + std::min<uint64_t>(data_offset_, file_.size());
            continue;
        }
        if (t.offset > data_size || t.size_bytes > data_size - t.offset)
            in.fail(info_offsets[i],
                    fmt::format("tensor '{}': data [{}, {}) of the data section at {} extends past the end of the "
                                "file (size {}); expected the file to be at least {} bytes",
                                t.name, t.offset, t.offset + t.size_bytes, data_offset_, file_.size(),
                                data_offset_ + t.offset + t.size_bytes));
        t.data = file_.data() + data_offset_ + t.offset;
    }
    // Overlap check: sort by offset and compare neighbours.
    std::vector<size_t> order(tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
        const TensorInfo& prev = tensors_[order[k - 1]];
        const TensorInfo& cur = tensors_[order[k]];
        if (prev.size_bytes && cur.size_bytes && prev.offset + prev.size_bytes > cur.offset)
            in.fail(info_offsets[order[k]],
                    fmt::format("tensor '{}' (data at {}) overlaps tensor '{}' (data [{}, {}))", cur.name, cur.offset,
                                prev.name, prev.offset, prev.offset + prev.size_bytes));
    }
}

const Value* Reader::find(std::string_view key) const noexcept {
    auto it = metadata_index_.find(std::string(key));
    return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

const TensorInfo* Reader::find_tensor(std::string_view name) const noexcept {
    auto it = tensor_index_.find(std::string(name));
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& Reader::tensor(std::string_view name) const {
    if (const TensorInfo* t = find_tensor(name)) return *t;
    throw Error(ErrorCode::NotFound, fmt::format("'{}': tensor '{}' is missing", path(), name));
}

void Reader::fail_type(std::string_view key, std::string_view expected, const Value& value) const {
    throw Error(ErrorCode::Format, fmt::format("'{}': metadata '{}': expected {}, found {} {}", path(), key, expected,
                                               value.type_description(), value.to_display(4, 40)));
}

}  // namespace genie::gguf
