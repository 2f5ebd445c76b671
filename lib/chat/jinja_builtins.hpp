// Jinja builtins with jinja2's (and Python's) semantics: attribute/item access and methods,
// operators, filters, tests, global functions, and JSON (HF's tojson).
#pragma once

#include "chat/jinja_ast.hpp"
#include "chat/jinja_value.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace genie::chat::jinja {

class Interpreter;

/// `obj.name`: jinja2's getattr (attribute first — dict methods, str methods — then item).
Value get_attribute(const Value& obj, const std::string& name);
/// `obj[key]`: jinja2's getitem (item first, then attribute for string keys).
Value get_item(const Value& obj, const Value& key);
/// `obj[start:stop:step]` (Undefined parts = omitted).
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
/// Arithmetic and `~`.
Value binary_op(BinaryOp op, const Value& a, const Value& b);
Value negate(const Value& v);

/// Applies filter `name`. Throws TemplateError (Unsupported for an unknown filter).
Value apply_filter(Interpreter& in, const std::string& name, const Value& input, CallArgs& args);
/// Applies test `name`. Throws TemplateError (Unsupported for an unknown test).
bool apply_test(Interpreter& in, const std::string& name, const Value& input, CallArgs& args);
/// A global function (range, namespace, dict, raise_exception, strftime_now, cycler,
/// joiner), or nullopt.
std::optional<Value> global_function(const std::string& name);

/// JSON data -> Value (objects keep their key order).
Value from_json(const nlohmann::ordered_json& j);
/// Python json.dumps(v, ensure_ascii, indent, separators, sort_keys). indent < 0 = None;
/// `indent_text` (when set) is the indent string.
std::string dump_json(const Value& v, bool ensure_ascii, int indent, const std::string* indent_text,
                      const std::string& item_separator, const std::string& key_separator, bool sort_keys);

}  // namespace genie::chat::jinja
