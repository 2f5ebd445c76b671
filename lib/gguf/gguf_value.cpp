#include "gguf/gguf_value.hpp"

#include <fmt/format.h>

namespace genie::gguf {

std::string_view value_type_name(ValueType type) noexcept {
    switch (type) {
        case ValueType::UInt8: return "uint8";
        case ValueType::Int8: return "int8";
        case ValueType::UInt16: return "uint16";
        case ValueType::Int16: return "int16";
        case ValueType::UInt32: return "uint32";
        case ValueType::Int32: return "int32";
        case ValueType::Float32: return "float32";
        case ValueType::Bool: return "bool";
        case ValueType::String: return "string";
        case ValueType::Array: return "array";
        case ValueType::UInt64: return "uint64";
        case ValueType::Int64: return "int64";
        case ValueType::Float64: return "float64";
    }
    return "?";
}

bool is_valid_value_type(uint32_t id) noexcept { return id <= static_cast<uint32_t>(ValueType::Float64); }

bool operator==(const Array& a, const Array& b) { return a.element_type == b.element_type && a.items == b.items; }

Value Value::array(ValueType element_type, std::vector<Value> items) {
    return Value(Array{element_type, std::move(items)});
}

namespace {

std::string quote(const std::string& s, size_t max_chars) {
    std::string out = "\"";
    size_t shown = 0;
    for (char c : s) {
        if (shown++ == max_chars) {
            out += "...";
            break;
        }
        switch (c) {
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
                else out += c;
        }
    }
    return out + "\"";
}

}  // namespace

std::string Value::to_display(size_t max_items, size_t max_string) const {
    return std::visit(
        [&](const auto& v) -> std::string {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::string>) {
                return quote(v, max_string);
            } else if constexpr (std::is_same_v<V, Array>) {
                std::string out = "[";
                for (size_t i = 0; i < v.items.size() && i < max_items; ++i) {
                    if (i) out += ", ";
                    out += v.items[i].to_display(max_items, max_string);
                }
                if (v.items.size() > max_items) out += fmt::format(", ... ({} items)", v.items.size());
                return out + "]";
            } else if constexpr (std::is_same_v<V, bool>) {
                return v ? "true" : "false";
            } else if constexpr (std::is_same_v<V, uint8_t> || std::is_same_v<V, int8_t>) {
                return fmt::format("{}", static_cast<int>(v));
            } else {
                return fmt::format("{}", v);
            }
        },
        storage_);
}

std::string Value::type_description() const {
    if (const Array* a = array()) {
        if (a->element_type == ValueType::Array && !a->items.empty())
            return "array[" + a->items.front().type_description() + "]";
        return "array[" + std::string(value_type_name(a->element_type)) + "]";
    }
    return std::string(value_type_name(type()));
}

}  // namespace genie::gguf
