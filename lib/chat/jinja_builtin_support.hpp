// Helpers shared by the Jinja builtins (jinja_methods.cpp, jinja_operators.cpp, jinja_json.cpp,
// jinja_filters.cpp, jinja_tests.cpp, jinja_globals.cpp): argument access and the pieces
// more than one builtin group uses. Private to lib/chat.
#pragma once

#include "chat/jinja_builtins.hpp"
#include "chat/jinja_interpreter.hpp"
#include "chat/jinja_text.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace genie::chat::jinja {

// ---- argument access -------------------------------------------------------------------

// Reads argument `index` (positional) or `name` (keyword) of a builtin; Undefined = not given.
inline Value arg(const CallArgs& a, size_t index, const char* name) {
    for (const auto& [k, v] : a.keyword)
        if (k == name) return v;
    if (index < a.positional.size()) return a.positional[index];
    return Value();
}
inline bool given(const Value& v) { return !v.is_undefined(); }

inline std::string str_arg(const Value& v, const char* what) {
    if (!v.is_string()) fail(std::string(what) + " must be a string, not '" + type_name(v) + "'");
    return v.as_string();
}
inline int64_t int_arg(const Value& v, const char* what) {
    if (!v.is_int() && !v.is_bool()) fail(std::string(what) + " must be an integer, not '" + type_name(v) + "'");
    return v.as_int();
}

inline Value make_callable(std::string name, NativeFunction f) {
    auto c = std::make_shared<Callable>();
    c->name = std::move(name);
    c->function = std::move(f);
    return Value::callable(std::move(c));
}

inline Value tuple2(Value a, Value b) {
    std::vector<Value> items;
    items.push_back(std::move(a));
    items.push_back(std::move(b));
    return Value::list(std::move(items), true);
}

// Codepoint offset of byte offset `byte` in s.
inline int64_t cp_index(const std::string& s, size_t byte) { return static_cast<int64_t>(text::length(std::string_view(s).substr(0, byte))); }

// Python index normalisation for [i]: negative counts from the end; nullopt = out of range.
inline std::optional<size_t> normalize_index(int64_t i, size_t n) {
    if (i < 0) i += static_cast<int64_t>(n);
    if (i < 0 || i >= static_cast<int64_t>(n)) return std::nullopt;
    return static_cast<size_t>(i);
}

/// Python's str.replace(old, new, count); count < 0 = all (jinja_methods.cpp; the `replace`
/// filter uses it too).
std::string replace_all(const std::string& s, const std::string& old, const std::string& with, int64_t count);

/// A filter: (interpreter, input, arguments) -> result.
using FilterFn = Value (*)(Interpreter&, const Value&, CallArgs&);
/// The filter table by name (jinja_filters.cpp; the `filter` test looks names up in it).
const std::unordered_map<std::string, FilterFn>& filters();

}  // namespace genie::chat::jinja
