#include "gguf/gguf_writer.hpp"

#include "gguf/gguf_reader.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

namespace genie::gguf {
namespace {

class ByteSink {
public:
    explicit ByteSink(std::vector<uint8_t>& out) : out_(out) {}
    template <class T>
    void put(T value) {
        const auto* p = reinterpret_cast<const uint8_t*>(&value);
        out_.insert(out_.end(), p, p + sizeof(T));
    }
    void put_string(const std::string& s) {
        put<uint64_t>(s.size());
        out_.insert(out_.end(), s.begin(), s.end());
    }
    void put_value(const Value& value) {
        std::visit(
            [&](const auto& v) {
                using V = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<V, std::string>) {
                    put_string(v);
                } else if constexpr (std::is_same_v<V, Array>) {
                    put<uint32_t>(static_cast<uint32_t>(v.element_type));
                    put<uint64_t>(v.items.size());
                    for (const Value& item : v.items) {
                        if (item.type() != v.element_type)
                            throw Error(ErrorCode::InvalidArgument,
                                        fmt::format("GGUF writer: array of {} holds a {} item",
                                                    value_type_name(v.element_type), value_type_name(item.type())));
                        put_value(item);
                    }
                } else if constexpr (std::is_same_v<V, bool>) {
                    put<uint8_t>(v ? 1 : 0);
                } else {
                    put<V>(v);
                }
            },
            value.storage());
    }

private:
    std::vector<uint8_t>& out_;
};

uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

}  // namespace

Writer::Writer(uint32_t version, uint32_t alignment) : version_(version), alignment_(alignment) {
    if (version != 2 && version != 3)
        throw Error(ErrorCode::InvalidArgument, fmt::format("GGUF writer: version must be 2 or 3, not {}", version));
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        throw Error(ErrorCode::InvalidArgument, fmt::format("GGUF writer: alignment {} is not a power of two", alignment));
    if (alignment != kDefaultAlignment) set("general.alignment", alignment);
}

Writer& Writer::set(std::string key, Value value) {
    if (key == "general.alignment") {
        const auto* a = std::get_if<uint32_t>(&value.storage());
        if (!a || *a == 0 || (*a & (*a - 1)) != 0)
            throw Error(ErrorCode::InvalidArgument, "GGUF writer: general.alignment must be a uint32 power of two");
        alignment_ = *a;
    }
    for (KeyValue& kv : metadata_) {
        if (kv.key == key) {
            kv.value = std::move(value);
            return *this;
        }
    }
    metadata_.push_back({std::move(key), std::move(value)});
    return *this;
}

bool Writer::remove(std::string_view key) {
    for (auto it = metadata_.begin(); it != metadata_.end(); ++it) {
        if (it->key == key) {
            if (key == "general.alignment") alignment_ = kDefaultAlignment;
            metadata_.erase(it);
            return true;
        }
    }
    return false;
}

const Value* Writer::find(std::string_view key) const noexcept {
    for (const KeyValue& kv : metadata_)
        if (kv.key == key) return &kv.value;
    return nullptr;
}

Writer& Writer::copy_metadata(const Reader& reader) {
    for (const KeyValue& kv : reader.metadata()) set(kv.key, kv.value);
    return *this;
}

uint64_t Writer::tensor_bytes(DType type, const std::vector<int64_t>& shape) {
    const auto info = dtype_info(static_cast<uint32_t>(type));
    if (!info || info->block_bytes == 0)
        throw Error(ErrorCode::InvalidArgument, fmt::format("GGUF writer: unknown tensor type {}", static_cast<uint32_t>(type)));
    if (shape.size() > kMaxDims)
        throw Error(ErrorCode::InvalidArgument, fmt::format("GGUF writer: {} dimensions, at most {}", shape.size(), kMaxDims));
    uint64_t elements = 1;
    for (int64_t d : shape) {
        if (d < 0) throw Error(ErrorCode::InvalidArgument, "GGUF writer: negative dimension");
        elements *= static_cast<uint64_t>(d);
    }
    const int64_t row = shape.empty() ? 1 : shape[0];
    if (row % info->block_size != 0)
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("GGUF writer: row length {} is not a multiple of {}'s block size {}", row, info->name,
                                info->block_size));
    return elements / info->block_size * info->block_bytes;
}

Writer& Writer::add_tensor(std::string name, DType type, std::vector<int64_t> shape, std::vector<uint8_t> data) {
    const uint64_t size = tensor_bytes(type, shape);
    if (data.size() != size)
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("GGUF writer: tensor '{}' needs {} bytes of data, got {}", name, size, data.size()));
    add_tensor(std::move(name), type, std::move(shape), TensorFill{});
    tensors_.back().data = std::move(data);
    return *this;
}

Writer& Writer::add_tensor(std::string name, DType type, std::vector<int64_t> shape, TensorFill fill) {
    if (name.empty() || name.size() > kMaxTensorName)
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("GGUF writer: tensor name '{}' must be 1..{} bytes", name, kMaxTensorName));
    for (const PendingTensor& t : tensors_)
        if (t.name == name) throw Error(ErrorCode::InvalidArgument, fmt::format("GGUF writer: duplicate tensor '{}'", name));
    const uint64_t size = tensor_bytes(type, shape);
    tensors_.push_back({std::move(name), type, std::move(shape), size, {}, std::move(fill)});
    return *this;
}

Writer& Writer::add_tensor_f32(std::string name, std::vector<int64_t> shape, std::span<const float> values) {
    std::vector<uint8_t> bytes(values.size_bytes());
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return add_tensor(std::move(name), DType::F32, std::move(shape), std::move(bytes));
}

std::vector<uint8_t> Writer::header_bytes(std::vector<uint64_t>& offsets) const {
    std::vector<uint8_t> out;
    ByteSink sink(out);
    static constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
    out.reserve(4096);
    out.insert(out.end(), kMagic, kMagic + 4);
    sink.put<uint32_t>(version_);
    sink.put<uint64_t>(tensors_.size());
    sink.put<uint64_t>(metadata_.size());
    for (const KeyValue& kv : metadata_) {
        sink.put_string(kv.key);
        sink.put<uint32_t>(static_cast<uint32_t>(kv.value.type()));
        sink.put_value(kv.value);
    }
    offsets.clear();
    uint64_t offset = 0;
    for (const PendingTensor& t : tensors_) {
        sink.put_string(t.name);
        sink.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
        for (int64_t d : t.shape) sink.put<uint64_t>(static_cast<uint64_t>(d));
        sink.put<uint32_t>(static_cast<uint32_t>(t.type));
        sink.put<uint64_t>(offset);
        offsets.push_back(offset);
        offset = align_up(offset + t.size_bytes, alignment_);
    }
    out.resize(align_up(out.size(), alignment_), 0);
    return out;
}

void Writer::write_to(const std::function<void(const uint8_t*, size_t)>& sink) const {
    std::vector<uint64_t> offsets;
    const std::vector<uint8_t> header = header_bytes(offsets);
    sink(header.data(), header.size());
    uint64_t written = 0;
    std::vector<uint8_t> scratch;
    static const uint8_t zeros[64] = {};
    for (size_t i = 0; i < tensors_.size(); ++i) {
        const PendingTensor& t = tensors_[i];
        for (uint64_t pad = offsets[i] - written; pad > 0;) {
            const size_t n = static_cast<size_t>(std::min<uint64_t>(pad, sizeof zeros));
            sink(zeros, n);
            pad -= n;
        }
        if (t.fill) {
            scratch.assign(static_cast<size_t>(t.size_bytes), 0);
            t.fill(scratch.data(), scratch.size());
            sink(scratch.data(), scratch.size());
        } else {
            sink(t.data.data(), t.data.size());
        }
        written = offsets[i] + t.size_bytes;
    }
    // Pad the end so the data section is a whole number of alignment units (as ggml writes it).
    for (uint64_t pad = align_up(written, alignment_) - written; pad > 0;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(pad, sizeof zeros));
        sink(zeros, n);
        pad -= n;
    }
}

std::vector<uint8_t> Writer::to_bytes() const {
    std::vector<uint8_t> out;
    write_to([&](const uint8_t* p, size_t n) { out.insert(out.end(), p, p + n); });
    return out;
}

void Writer::write(const std::filesystem::path& path) const {
    const std::filesystem::path tmp = path.string() + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw Error(ErrorCode::Io, fmt::format("'{}': cannot create: {}", tmp.string(), std::strerror(errno)));
    bool ok = true;
    try {
        write_to([&](const uint8_t* p, size_t n) {
            if (ok && std::fwrite(p, 1, n, f) != n) ok = false;
        });
    } catch (...) {
        std::fclose(f);
        std::filesystem::remove(tmp);
        throw;
    }
    if (std::fclose(f) != 0) ok = false;
    if (!ok) {
        std::error_code ec;
        std::filesystem::remove(tmp, ec);
        throw Error(ErrorCode::Io, fmt::format("'{}': write failed", path.string()));
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        throw Error(ErrorCode::Io, fmt::format("'{}': cannot rename from {}: {}", path.string(), tmp.string(), ec.message()));
    }
}

}  // namespace genie::gguf
