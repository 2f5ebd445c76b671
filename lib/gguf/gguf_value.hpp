// GGUF metadata values: every scalar type, strings, and (nested) arrays.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace genie::gguf {

/// GGUF value type ids as stored in the file.
enum class ValueType : uint32_t {
    UInt8 = 0, Int8 = 1, UInt16 = 2, Int16 = 3, UInt32 = 4, Int32 = 5, Float32 = 6,
    Bool = 7, String = 8, Array = 9, UInt64 = 10, Int64 = 11, Float64 = 12,
};

/// "uint32", "string", "array" ...; "?" for an invalid id.
std::string_view value_type_name(ValueType type) noexcept;
bool is_valid_value_type(uint32_t id) noexcept;

class Value;

/// An array: one element type for all items (nested arrays are arrays of arrays).
struct Array {
    ValueType element_type = ValueType::UInt8;
    std::vector<Value> items;
};

/// One metadata value. Conversions via as<T>() are lenient where no information is
/// lost (an int32 of 5 reads as uint64 5; a float32 reads as double) and empty
/// otherwise (negative into unsigned, out of range, wrong kind).
class Value {
public:
    // Alternative index == ValueType id.
    using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                                 std::string, Array, uint64_t, int64_t, double>;

    Value() : storage_(uint8_t{0}) {}
    Value(uint8_t v) : storage_(v) {}
    Value(int8_t v) : storage_(v) {}
    Value(uint16_t v) : storage_(v) {}
    Value(int16_t v) : storage_(v) {}
    Value(uint32_t v) : storage_(v) {}
    Value(int32_t v) : storage_(v) {}
    Value(float v) : storage_(v) {}
    Value(bool v) : storage_(v) {}
    Value(std::string v) : storage_(std::move(v)) {}
    Value(const char* v) : storage_(std::string(v)) {}
    Value(std::string_view v) : storage_(std::string(v)) {}
    Value(Array v) : storage_(std::move(v)) {}
    Value(uint64_t v) : storage_(v) {}
    Value(int64_t v) : storage_(v) {}
    Value(double v) : storage_(v) {}

    /// An array of plain C++ values (element type deduced from T).
    template <class T>
    static Value array_of(const std::vector<T>& items);
    /// An array with an explicit element type (for nested arrays or empty arrays).
    static Value array(ValueType element_type, std::vector<Value> items);

    ValueType type() const noexcept { return static_cast<ValueType>(storage_.index()); }
    bool is_array() const noexcept { return type() == ValueType::Array; }
    bool is_string() const noexcept { return type() == ValueType::String; }
    const Storage& storage() const noexcept { return storage_; }

    /// The string, or nullptr when this is not a string.
    const std::string* string() const noexcept { return std::get_if<std::string>(&storage_); }
    /// The array, or nullptr when this is not an array.
    const Array* array() const noexcept { return std::get_if<Array>(&storage_); }

    /// Lossless conversion to T (integral, floating, bool or std::string); empty if impossible.
    template <class T>
    std::optional<T> as() const;

    /// Short human-readable rendering; arrays show at most `max_items` items.
    std::string to_display(size_t max_items = 8, size_t max_string = 60) const;

    /// "uint32", "array[string]", "array[array[int32]]" ...
    std::string type_description() const;

    bool operator==(const Value& other) const = default;

private:
    Storage storage_;
};

bool operator==(const Array& a, const Array& b);

/// One metadata entry.
struct KeyValue {
    std::string key;
    Value value;
};

template <class T>
constexpr ValueType value_type_of() {
    if constexpr (std::is_same_v<T, uint8_t>) return ValueType::UInt8;
    else if constexpr (std::is_same_v<T, int8_t>) return ValueType::Int8;
    else if constexpr (std::is_same_v<T, uint16_t>) return ValueType::UInt16;
    else if constexpr (std::is_same_v<T, int16_t>) return ValueType::Int16;
    else if constexpr (std::is_same_v<T, uint32_t>) return ValueType::UInt32;
    else if constexpr (std::is_same_v<T, int32_t>) return ValueType::Int32;
    else if constexpr (std::is_same_v<T, float>) return ValueType::Float32;
    else if constexpr (std::is_same_v<T, bool>) return ValueType::Bool;
    else if constexpr (std::is_same_v<T, std::string>) return ValueType::String;
    else if constexpr (std::is_same_v<T, uint64_t>) return ValueType::UInt64;
    else if constexpr (std::is_same_v<T, int64_t>) return ValueType::Int64;
    else if constexpr (std::is_same_v<T, double>) return ValueType::Float64;
    else static_assert(sizeof(T) == 0, "type has no GGUF value type");
}

template <class T>
Value Value::array_of(const std::vector<T>& items) {
    Array a;
    a.element_type = value_type_of<T>();
    a.items.reserve(items.size());
    for (const T& item : items) a.items.emplace_back(item);
    return Value(std::move(a));
}

template <class T>
std::optional<T> Value::as() const {
    if constexpr (std::is_same_v<T, std::string>) {
        if (auto s = string()) return *s;
        return std::nullopt;
    } else if constexpr (std::is_same_v<T, bool>) {
        if (auto b = std::get_if<bool>(&storage_)) return *b;
        return std::nullopt;
    } else if constexpr (std::is_integral_v<T>) {
        return std::visit(
            [](const auto& v) -> std::optional<T> {
                using V = std::decay_t<decltype(v)>;
                if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>) {
                    if (!std::in_range<T>(v)) return std::nullopt;
                    return static_cast<T>(v);
                } else {
                    return std::nullopt;
                }
            },
            storage_);
    } else if constexpr (std::is_floating_point_v<T>) {
        return std::visit(
            [](const auto& v) -> std::optional<T> {
                using V = std::decay_t<decltype(v)>;
                if constexpr (std::is_floating_point_v<V>) return static_cast<T>(v);
                else return std::nullopt;
            },
            storage_);
    } else {
        static_assert(sizeof(T) == 0, "unsupported conversion");
    }
}

}  // namespace genie::gguf
