// JSON for the Jinja builtins: JSON data -> Value, and Value -> text as Python's json.dumps
// (HF's tojson).
#include "chat/jinja_builtin_support.hpp"

#include <algorithm>

namespace genie::chat::jinja {

Value from_json(const nlohmann::ordered_json& j) {
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null: return Value::none();
        case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const auto u = j.get<uint64_t>();
            if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return Value::floating(static_cast<double>(u));
            return Value::integer(static_cast<int64_t>(u));
        }
        case nlohmann::ordered_json::value_t::number_float: return Value::floating(j.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            std::vector<Value> items;
            items.reserve(j.size());
            for (const auto& x : j) items.push_back(from_json(x));
            return Value::list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            auto d = std::make_shared<Dict>();
            for (const auto& [k, v] : j.items()) d->set(Value::string(k), from_json(v));
            return Value::dict(d);
        }
        default: return Value::none();
    }
}

namespace {

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
    out += '"';
    for (uint32_t cp : text::decode(s)) {
        switch (cp) {
            case '"': out += "\\\""; continue;
            case '\\': out += "\\\\"; continue;
            case '\n': out += "\\n"; continue;
            case '\r': out += "\\r"; continue;
            case '\t': out += "\\t"; continue;
            case '\b': out += "\\b"; continue;
            case '\f': out += "\\f"; continue;
            default: break;
        }
        char buf[16];
        if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
            if (cp >= 0x10000) {
                const uint32_t v = cp - 0x10000;
                std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            } else {
                std::snprintf(buf, sizeof buf, "\\u%04x", cp);
            }
            out += buf;
        } else {
            text::append(out, cp);
        }
    }
    out += '"';
}

struct JsonWriter {
    bool ensure_ascii;
    bool indented;
    std::string indent_unit;
    std::string item_separator;
    std::string key_separator;
    bool sort_keys;
    std::string out;

    void newline(int level) {
        out += '\n';
        for (int i = 0; i < level; ++i) out += indent_unit;
    }

    void write(const Value& v, int level) {
        if (level > 200) fail("the value is nested too deeply for tojson");
        check_string_size(out.size());
        switch (v.kind()) {
            case Kind::None: out += "null"; return;
            case Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
            case Kind::Int: out += std::to_string(v.as_int()); return;
            case Kind::Float: {
                const double d = v.as_double();
                if (std::isnan(d)) out += "NaN";
                else if (std::isinf(d)) out += d < 0 ? "-Infinity" : "Infinity";
                else out += text::float_repr(d);
                return;
            }
            case Kind::String: json_string(out, v.as_string(), ensure_ascii); return;
            case Kind::List: {
                const auto& items = v.as_list().items;
                if (items.empty()) { out += "[]"; return; }
                out += '[';
                for (size_t i = 0; i < items.size(); ++i) {
                    if (i) out += item_separator;
                    if (indented) newline(level + 1);
                    write(items[i], level + 1);
                }
                if (indented) newline(level);
                out += ']';
                return;
            }
            case Kind::Dict: {
                if (v.is_namespace()) break;
                std::vector<std::pair<std::string, const Value*>> entries;
                for (const auto& [k, x] : v.as_dict().entries) {
                    std::string key;
                    if (k.is_string()) key = k.as_string();
                    else if (k.is_bool()) key = k.as_bool() ? "true" : "false";
                    else if (k.is_int()) key = std::to_string(k.as_int());
                    else if (k.is_float()) key = text::float_repr(k.as_double());
                    else if (k.is_none()) key = "null";
                    else fail("keys must be str, int, float, bool or None, not " + type_name(k));
                    entries.emplace_back(std::move(key), &x);
                }
                if (sort_keys)
                    std::stable_sort(entries.begin(), entries.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
                if (entries.empty()) { out += "{}"; return; }
                out += '{';
                for (size_t i = 0; i < entries.size(); ++i) {
                    if (i) out += item_separator;
                    if (indented) newline(level + 1);
                    json_string(out, entries[i].first, ensure_ascii);
                    out += key_separator;
                    write(*entries[i].second, level + 1);
                }
                if (indented) newline(level);
                out += '}';
                return;
            }
            default: break;
        }
        fail("Object of type " + type_name(v) + " is not JSON serializable");
    }
};

}  // namespace

std::string dump_json(const Value& v, bool ensure_ascii, int indent, const std::string* indent_text,
                      const std::string& item_separator, const std::string& key_separator, bool sort_keys) {
    JsonWriter w{ensure_ascii, indent >= 0 || indent_text != nullptr, "", item_separator, key_separator, sort_keys, {}};
    if (indent_text) w.indent_unit = *indent_text;
    else if (indent > 0) w.indent_unit = std::string(static_cast<size_t>(indent), ' ');
    w.write(v, 0);
    return std::move(w.out);
}

}  // namespace genie::chat::jinja
