// Compiles a JSON schema (the subset in include/genie/constraint.hpp) into Grammar nodes.
#include "constraint/json_grammar.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace genie::constraint {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, fmt::format("JSON schema: {}: {}", path.empty() ? "/" : path, what));
}

// JsonConstraintOptions::max_string_length: caps strings without a maxLength, and the keys
// of additional properties (longer than every property key, so a key that equals a seen
// property can always be extended instead of closed).
void apply_string_cap(Grammar& g, const JsonConstraintOptions& o) {
    if (o.max_string_length == 0) return;
    size_t longest = 0;
    for (Node& n : g.nodes) {
        if ((n.types & kString) && n.max_length == UINT32_MAX) n.max_length = std::max(o.max_string_length, n.min_length);
        for (const auto& p : n.properties) longest = std::max(longest, p.key.size());
    }
    g.key_limit = std::max<uint32_t>(o.max_string_length, static_cast<uint32_t>(longest + 1));
}

void check_options(const JsonConstraintOptions& o) {
    if (o.max_whitespace < 0 || o.max_whitespace > 64)
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("JsonConstraintOptions::max_whitespace must be in 0..64, not {}", o.max_whitespace));
    if (o.max_nesting < 1 || o.max_nesting > kMaxSchemaDepth)
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("JsonConstraintOptions::max_nesting must be in 1..{}, not {}", kMaxSchemaDepth, o.max_nesting));
}

uint16_t add_node(Grammar& g, Node n) {
    if (g.nodes.size() >= kNoNode) throw Error(ErrorCode::InvalidArgument, "JSON schema: too many schema nodes");
    g.nodes.push_back(std::move(n));
    return static_cast<uint16_t>(g.nodes.size() - 1);
}

void add_scalar_literals(Node& n) {
    if (n.types & kBoolean) {
        n.literals.emplace_back("true");
        n.literals.emplace_back("false");
    }
    if (n.types & kNull) n.literals.emplace_back("null");
}

// The node of any value: every type, its objects and arrays hold any values (nesting
// limited by the automaton).
uint16_t any_node(Grammar& g) {
    Node n;
    n.types = kAnyType;
    n.any = true;
    add_scalar_literals(n);
    const uint16_t id = add_node(g, std::move(n));
    g.nodes[id].additional = id;
    g.nodes[id].items = id;
    return id;
}

// The JSON-escaped form of a key, as written between the quotes.
std::string escaped_key(const std::string& key) {
    const std::string d = json(key).dump();
    return d.substr(1, d.size() - 2);
}

uint8_t type_bit(const json& t, const std::string& path) {
    if (!t.is_string()) fail(path, "'type' must be a string or an array of strings");
    const std::string s = t.get<std::string>();
    if (s == "object") return kObject;
    if (s == "array") return kArray;
    if (s == "string") return kString;
    if (s == "number") return kNumber;
    if (s == "integer") return kInteger;
    if (s == "boolean") return kBoolean;
    if (s == "null") return kNull;
    fail(path, fmt::format("unknown type '{}'", s));
}

uint8_t json_type_bits(const json& v) {
    if (v.is_object()) return kObject;
    if (v.is_array()) return kArray;
    if (v.is_string()) return kString;
    if (v.is_boolean()) return kBoolean;
    if (v.is_null()) return kNull;
    if (v.is_number_integer() || v.is_number_unsigned()) return kInteger | kNumber;
    if (v.is_number_float()) {
        const double d = v.get<double>();
        return static_cast<uint8_t>(kNumber | (d == static_cast<double>(static_cast<int64_t>(d)) ? kInteger : 0));
    }
    return 0;
}

uint32_t count_keyword(const json& j, const char* key, const std::string& path) {
    const json& v = j.at(key);
    if (!v.is_number_integer() && !v.is_number_unsigned()) fail(path, fmt::format("'{}' must be a non-negative integer", key));
    const int64_t x = v.get<int64_t>();
    if (x < 0) fail(path, fmt::format("'{}' must be a non-negative integer", key));
    return x >= UINT32_MAX ? UINT32_MAX - 1 : static_cast<uint32_t>(x);
}

struct Compiler {
    Grammar& g;
    uint16_t any = kNoNode;

    uint16_t compile(const json& j, const std::string& path, int depth) {
        if (depth > kMaxSchemaDepth) fail(path, fmt::format("the schema nests deeper than {} levels", kMaxSchemaDepth));
        if (j.is_boolean()) {
            if (!j.get<bool>()) fail(path, "the schema 'false' accepts no value");
            return any;
        }
        if (!j.is_object()) fail(path, "a schema must be an object or a boolean");
        static const std::set<std::string> annotations = {"title", "description", "$schema", "$id", "$comment",
                                                          "default", "examples", "format", "deprecated", "readOnly",
                                                          "writeOnly"};
        static const std::set<std::string> supported = {"type", "enum", "const", "properties", "required",
                                                        "additionalProperties", "items", "minItems", "maxItems",
                                                        "minLength", "maxLength"};
        bool object_kw = false, array_kw = false, string_kw = false;
        for (const auto& [key, value] : j.items()) {
            if (annotations.count(key)) continue;
            if (!supported.count(key)) fail(path, fmt::format("unsupported keyword '{}'", key));
            if (key == "properties" || key == "required" || key == "additionalProperties") object_kw = true;
            if (key == "items" || key == "minItems" || key == "maxItems") array_kw = true;
            if (key == "minLength" || key == "maxLength") string_kw = true;
        }
        Node n;
        if (j.contains("type")) {
            const json& t = j["type"];
            if (t.is_array()) {
                if (t.empty()) fail(path, "'type' must not be an empty array");
                for (const auto& x : t) n.types |= type_bit(x, path);
            } else {
                n.types = type_bit(t, path);
            }
        } else if (object_kw || array_kw || string_kw) {
            // Without 'type', the keywords say which type is meant (as llama.cpp reads them).
            n.types = static_cast<uint8_t>((object_kw ? kObject : 0) | (array_kw ? kArray : 0) | (string_kw ? kString : 0));
        } else {
            n.types = kAnyType;
        }
        if (j.contains("enum") || j.contains("const")) {
            std::vector<json> values;
            if (j.contains("const")) values.push_back(j["const"]);
            if (j.contains("enum")) {
                const json& e = j["enum"];
                if (!e.is_array()) fail(path, "'enum' must be an array");
                if (e.empty()) fail(path, "'enum' must not be empty");
                for (const auto& v : e)
                    if (!j.contains("const") || v == j["const"]) values.push_back(v);
            }
            n.is_enum = true;
            std::set<std::string> seen;
            for (const auto& v : values) {
                if (!(json_type_bits(v) & n.types)) continue;
                std::string text = v.dump();
                if (seen.insert(text).second) n.literals.push_back(std::move(text));
            }
            if (n.literals.empty()) fail(path, "no value of 'enum'/'const' has an allowed type");
            if (n.literals.size() > kMaxLiterals)
                fail(path, fmt::format("'enum' has more than {} values", kMaxLiterals));
            return add_node(g, std::move(n));
        }
        if (n.types & kObject) compile_object(j, n, path, depth);
        if (n.types & kArray) {
            n.items = any;
            if (j.contains("items")) {
                if (j["items"].is_array()) fail(path, "'items' as an array (tuple validation) is not supported");
                n.items = compile(j["items"], path + "/items", depth + 1);
            }
            if (j.contains("minItems")) n.min_items = count_keyword(j, "minItems", path);
            if (j.contains("maxItems")) n.max_items = count_keyword(j, "maxItems", path);
            if (n.min_items > n.max_items) fail(path, "minItems is greater than maxItems");
        }
        if (n.types & kString) {
            if (j.contains("minLength")) n.min_length = count_keyword(j, "minLength", path);
            if (j.contains("maxLength")) n.max_length = count_keyword(j, "maxLength", path);
            if (n.min_length > n.max_length) fail(path, "minLength is greater than maxLength");
        }
        add_scalar_literals(n);
        return add_node(g, std::move(n));
    }

    void compile_object(const json& j, Node& n, const std::string& path, int depth) {
        n.additional = any;
        if (j.contains("additionalProperties")) {
            const json& a = j["additionalProperties"];
            if (a.is_boolean()) n.additional = a.get<bool>() ? any : kNoNode;
            else n.additional = compile(a, path + "/additionalProperties", depth + 1);
        }
        if (j.contains("properties")) {
            const json& p = j["properties"];
            if (!p.is_object()) fail(path, "'properties' must be an object");
            for (const auto& [key, value] : p.items()) {
                if (value.is_boolean() && !value.get<bool>()) continue;  // a property that must not appear
                if (n.properties.size() >= kMaxProperties)
                    fail(path, fmt::format("more than {} properties", kMaxProperties));
                n.properties.push_back(Property{escaped_key(key), compile(value, path + "/properties/" + key, depth + 1)});
            }
        }
        if (j.contains("required")) {
            const json& r = j["required"];
            if (!r.is_array()) fail(path, "'required' must be an array of strings");
            for (const auto& name : r) {
                if (!name.is_string()) fail(path, "'required' must be an array of strings");
                const std::string key = escaped_key(name.get<std::string>());
                size_t i = 0;
                while (i < n.properties.size() && n.properties[i].key != key) ++i;
                if (i == n.properties.size()) {
                    if (n.additional == kNoNode)
                        fail(path, fmt::format("required property '{}' is not allowed (not in 'properties', "
                                               "additionalProperties is false)",
                                               name.get<std::string>()));
                    if (n.properties.size() >= kMaxProperties)
                        fail(path, fmt::format("more than {} properties", kMaxProperties));
                    n.properties.push_back(Property{key, n.additional});
                }
                n.required |= uint64_t{1} << i;
            }
        }
    }
};

}  // namespace

Grammar compile_schema(std::string_view schema_json, const JsonConstraintOptions& options) {
    check_options(options);
    json j;
    try {
        j = json::parse(schema_json);
    } catch (const json::exception& e) {
        throw Error(ErrorCode::InvalidArgument, fmt::format("JSON schema: not valid JSON: {}", e.what()));
    }
    Grammar g;
    g.max_whitespace = options.max_whitespace;
    g.max_nesting = options.max_nesting;
    Compiler c{g};
    c.any = any_node(g);
    g.root = c.compile(j, "", 0);
    apply_string_cap(g, options);
    return g;
}

Grammar any_grammar(bool object_only, const JsonConstraintOptions& options) {
    check_options(options);
    Grammar g;
    g.max_whitespace = options.max_whitespace;
    g.max_nesting = options.max_nesting;
    const uint16_t any = any_node(g);
    apply_string_cap(g, options);
    if (!object_only) {
        g.root = any;
        return g;
    }
    Node n;
    n.types = kObject;
    n.additional = any;
    n.items = any;
    g.root = add_node(g, std::move(n));
    return g;
}

}  // namespace genie::constraint
