// Compiles a JSON schema (the subset in include/genie/constraint.hpp) into Grammar nodes.
#include "constraint/json_grammar.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

namespace genie::constraint {
namespace {

using nlohmann::json;

// `path` is the JSON pointer of the schema node (written "#/properties/x"), or of the
// keyword at fault ("#/properties/x/not").
[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, fmt::format("JSON schema: #{}: {}", path, what));
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

const std::set<std::string>& annotations() {
    static const std::set<std::string> a = {"title",    "description", "$schema",    "$id",       "$comment",
                                            "default",  "examples",    "deprecated", "readOnly",  "writeOnly",
                                            "$anchor",  "$defs",       "definitions", "contentMediaType",
                                            "contentEncoding"};
    return a;
}

const std::set<std::string>& supported() {
    static const std::set<std::string> s = {
        "type",      "enum",       "const",       "properties", "required",         "additionalProperties",
        "items",     "prefixItems", "additionalItems", "minItems", "maxItems",       "minLength",
        "maxLength", "pattern",    "format",      "minimum",    "maximum",          "exclusiveMinimum",
        "exclusiveMaximum", "$ref", "allOf",      "anyOf",      "oneOf"};
    return s;
}

bool has_constraints(const json& j) {
    for (const auto& [key, value] : j.items())
        if (!annotations().count(key)) return true;
    return false;
}

constexpr size_t kMaxAlternatives = 64;

struct Compiler {
    Grammar& g;
    const json& root;
    uint16_t any = kNoNode;
    std::map<std::string, uint16_t> refs;

    const json& resolve(const std::string& ref, const std::string& path) {
        if (ref.empty() || ref[0] != '#')
            fail(path + "/$ref", fmt::format("only local references ('#/...') are supported, not '{}'", ref));
        if (ref.size() == 1) return root;
        try {
            return root.at(json::json_pointer(ref.substr(1)));
        } catch (const json::exception&) {
            fail(path + "/$ref", fmt::format("'{}' does not resolve", ref));
        }
    }

    // A reference, compiled once: recursive schemas refer back to the node being built.
    uint16_t ref_node(const std::string& ref, const std::string& path, int depth) {
        if (auto it = refs.find(ref); it != refs.end()) return it->second;
        const json& target = resolve(ref, path);
        const uint16_t id = add_node(g, Node{});
        refs[ref] = id;
        const uint16_t body = compile(target, ref.substr(1), depth + 1);
        Node copy = g.nodes[body];
        g.nodes[id] = std::move(copy);
        return id;
    }

    // `j` with a top-level $ref replaced by its target (siblings merged in).
    json deref(json j, const std::string& path, int guard = 0) {
        while (j.is_object() && j.contains("$ref")) {
            if (++guard > 32) fail(path, "'$ref' chain is too long (or cyclic inside allOf)");
            if (!j["$ref"].is_string()) fail(path + "/$ref", "'$ref' must be a string");
            json target = resolve(j["$ref"].get<std::string>(), path);
            j.erase("$ref");
            j = has_constraints(j) ? merge(target, j, path) : target;
        }
        return j;
    }

    // allOf of two schemas as one schema (anyOf-free at the top).
    json merge(const json& a, const json& b, const std::string& path) {
        if (a.is_boolean()) {
            if (!a.get<bool>()) fail(path, "allOf: a component is 'false' (no value)");
            return b;
        }
        if (b.is_boolean()) {
            if (!b.get<bool>()) fail(path, "allOf: a component is 'false' (no value)");
            return a;
        }
        json r = a;
        for (const auto& [key, v] : b.items()) {
            if (!r.contains(key)) {
                r[key] = v;
                continue;
            }
            json& x = r[key];
            if (x == v || annotations().count(key)) continue;
            if (key == "type") {
                auto names = [](const json& t) {
                    std::set<std::string> out;
                    if (t.is_string()) out.insert(t.get<std::string>());
                    else if (t.is_array())
                        for (const auto& e : t)
                            if (e.is_string()) out.insert(e.get<std::string>());
                    return out;
                };
                std::set<std::string> na = names(x), nb = names(v), both;
                if (na.count("number")) na.insert("integer");
                if (nb.count("number")) nb.insert("integer");
                for (const auto& n : na)
                    if (nb.count(n)) both.insert(n);
                if (both.empty()) fail(path, "allOf: the components' types do not overlap");
                x = json(std::vector<std::string>(both.begin(), both.end()));
            } else if (key == "properties") {
                if (!x.is_object() || !v.is_object()) fail(path, "'properties' must be an object");
                for (const auto& [pk, pv] : v.items())
                    x[pk] = x.contains(pk) && x[pk] != pv ? json{{"allOf", json::array({x[pk], pv})}} : pv;
            } else if (key == "required") {
                for (const auto& n : v)
                    if (std::find(x.begin(), x.end(), n) == x.end()) x.push_back(n);
            } else if (key == "additionalProperties" || key == "items" || key == "additionalItems") {
                if (x.is_boolean() && !x.get<bool>()) continue;
                if (v.is_boolean()) x = v.get<bool>() ? x : v;
                else x = x.is_boolean() ? v : json{{"allOf", json::array({x, v})}};
            } else if (key == "minLength" || key == "minItems" || key == "minimum" || key == "exclusiveMinimum") {
                if (x.is_number() && v.is_number() && v.get<double>() > x.get<double>()) x = v;
            } else if (key == "maxLength" || key == "maxItems" || key == "maximum" || key == "exclusiveMaximum") {
                if (x.is_number() && v.is_number() && v.get<double>() < x.get<double>()) x = v;
            } else if (key == "enum") {
                json both = json::array();
                for (const auto& e : x)
                    if (std::find(v.begin(), v.end(), e) != v.end()) both.push_back(e);
                if (both.empty()) fail(path, "allOf: the components' enums have no common value");
                x = both;
            } else {
                fail(path, fmt::format("allOf: the components' '{}' differ (cannot combine them)", key));
            }
        }
        return r;
    }

    // The alternatives of a schema with allOf / anyOf / oneOf / $ref at the top, each free of
    // them (at the top): allOf distributes over anyOf.
    std::vector<json> expand(const json& in, const std::string& path, int depth) {
        if (depth > kMaxSchemaDepth) fail(path, fmt::format("the schema nests deeper than {} levels", kMaxSchemaDepth));
        json j = deref(in, path);
        if (!j.is_object()) return {j};
        std::vector<json> out{json::object()};
        auto cross = [&](const std::vector<json>& alts) {
            std::vector<json> next;
            for (const json& x : out)
                for (const json& y : alts) {
                    next.push_back(merge(x, y, path));
                    if (next.size() > kMaxAlternatives)
                        fail(path, fmt::format("allOf/anyOf expand to more than {} alternatives", kMaxAlternatives));
                }
            out = std::move(next);
        };
        json rest = j;
        for (const char* key : {"allOf", "anyOf", "oneOf"}) rest.erase(key);
        cross({rest});
        if (j.contains("allOf")) {
            const json& all = j["allOf"];
            if (!all.is_array() || all.empty()) fail(path + "/allOf", "'allOf' must be a non-empty array");
            for (size_t i = 0; i < all.size(); ++i) cross(expand(all[i], path + "/allOf/" + std::to_string(i), depth + 1));
        }
        for (const char* key : {"anyOf", "oneOf"}) {
            if (!j.contains(key)) continue;
            const json& any_of = j[key];
            if (!any_of.is_array() || any_of.empty()) fail(path + "/" + key, fmt::format("'{}' must be a non-empty array", key));
            std::vector<json> alts;
            for (size_t i = 0; i < any_of.size(); ++i)
                for (json& x : expand(any_of[i], path + "/" + key + "/" + std::to_string(i), depth + 1)) alts.push_back(std::move(x));
            cross(alts);
        }
        return out;
    }

    uint16_t compile(const json& j, const std::string& path, int depth) {
        if (depth > kMaxSchemaDepth) fail(path, fmt::format("the schema nests deeper than {} levels", kMaxSchemaDepth));
        if (j.is_boolean()) {
            if (!j.get<bool>()) fail(path, "the schema 'false' accepts no value");
            return any;
        }
        if (!j.is_object()) fail(path, "a schema must be an object or a boolean");
        bool object_kw = false, array_kw = false, string_kw = false, number_kw = false;
        for (const auto& [key, value] : j.items()) {
            if (annotations().count(key)) continue;
            if (!supported().count(key)) fail(path + "/" + key, fmt::format("unsupported keyword '{}'", key));
            if (key == "properties" || key == "required" || key == "additionalProperties") object_kw = true;
            if (key == "items" || key == "prefixItems" || key == "additionalItems" || key == "minItems" || key == "maxItems")
                array_kw = true;
            if (key == "minLength" || key == "maxLength" || key == "pattern") string_kw = true;
            if (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" || key == "exclusiveMaximum") number_kw = true;
        }
        const bool only_ref = j.contains("$ref") && j.size() == 1 + static_cast<size_t>(std::count_if(j.items().begin(), j.items().end(), [](const auto& kv) {
                                                      return annotations().count(kv.key()) > 0;
                                                  }));
        if (only_ref) {
            if (!j["$ref"].is_string()) fail(path + "/$ref", "'$ref' must be a string");
            return ref_node(j["$ref"].get<std::string>(), path, depth);
        }
        const bool pure_any_of = (j.contains("anyOf") != j.contains("oneOf")) && !j.contains("allOf") && !j.contains("$ref") &&
                                 [&] {
                                     json rest = j;
                                     rest.erase("anyOf");
                                     rest.erase("oneOf");
                                     return !has_constraints(rest);
                                 }();
        if (pure_any_of) {
            const char* key = j.contains("anyOf") ? "anyOf" : "oneOf";
            const json& alts = j[key];
            if (!alts.is_array() || alts.empty()) fail(path + "/" + key, fmt::format("'{}' must be a non-empty array", key));
            if (alts.size() > kMaxAlternatives)
                fail(path + "/" + key, fmt::format("more than {} alternatives", kMaxAlternatives));
            if (alts.size() == 1) return compile(alts[0], path + "/" + key + "/0", depth + 1);
            Node n;
            for (size_t i = 0; i < alts.size(); ++i)
                n.alternatives.push_back(compile(alts[i], path + "/" + key + "/" + std::to_string(i), depth + 1));
            return add_node(g, std::move(n));
        }
        if (j.contains("$ref") || j.contains("allOf") || j.contains("anyOf") || j.contains("oneOf")) {
            const std::vector<json> alts = expand(j, path, depth);
            if (alts.size() == 1) return compile(alts[0], path, depth + 1);
            Node n;
            for (size_t i = 0; i < alts.size(); ++i) n.alternatives.push_back(compile(alts[i], path, depth + 1));
            return add_node(g, std::move(n));
        }
        Node n;
        if (j.contains("type")) {
            const json& t = j["type"];
            if (t.is_array()) {
                if (t.empty()) fail(path + "/type", "'type' must not be an empty array");
                for (const auto& x : t) n.types |= type_bit(x, path + "/type");
            } else {
                n.types = type_bit(t, path + "/type");
            }
        } else if (object_kw || array_kw || string_kw || number_kw) {
            // Without 'type', the keywords say which type is meant (as llama.cpp reads them).
            n.types = static_cast<uint8_t>((object_kw ? kObject : 0) | (array_kw ? kArray : 0) | (string_kw ? kString : 0) |
                                           (number_kw ? kNumber : 0));
        } else {
            n.types = kAnyType;
        }
        if (j.contains("enum") || j.contains("const")) {
            std::vector<json> values;
            if (j.contains("const")) values.push_back(j["const"]);
            if (j.contains("enum")) {
                const json& e = j["enum"];
                if (!e.is_array()) fail(path + "/enum", "'enum' must be an array");
                if (e.empty()) fail(path + "/enum", "'enum' must not be empty");
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
                fail(path + "/enum", fmt::format("'enum' has more than {} values", kMaxLiterals));
            return add_node(g, std::move(n));
        }
        if (n.types & kObject) compile_object(j, n, path, depth);
        if (n.types & kArray) compile_array(j, n, path, depth);
        if (n.types & kString) compile_string(j, n, path);
        if (n.types & (kNumber | kInteger)) compile_bounds(j, n, path);
        add_scalar_literals(n);
        return add_node(g, std::move(n));
    }

    void compile_array(const json& j, Node& n, const std::string& path, int depth) {
        n.items = any;
        const json* prefix = nullptr;
        const json* rest = nullptr;
        if (j.contains("prefixItems")) {
            prefix = &j["prefixItems"];
            if (!prefix->is_array()) fail(path + "/prefixItems", "'prefixItems' must be an array");
            if (j.contains("items")) rest = &j["items"];
        } else if (j.contains("items") && j["items"].is_array()) {  // draft 2019 tuple form
            prefix = &j["items"];
            if (j.contains("additionalItems")) rest = &j["additionalItems"];
        } else if (j.contains("items")) {
            rest = &j["items"];
        }
        const std::string prefix_path = path + (j.contains("prefixItems") ? "/prefixItems/" : "/items/");
        if (prefix)
            for (size_t i = 0; i < prefix->size(); ++i)
                n.prefix_items.push_back(compile((*prefix)[i], prefix_path + std::to_string(i), depth + 1));
        if (j.contains("minItems")) n.min_items = count_keyword(j, "minItems", path);
        if (j.contains("maxItems")) n.max_items = count_keyword(j, "maxItems", path);
        if (rest) {
            if (rest->is_boolean() && !rest->get<bool>()) n.max_items = std::min<uint32_t>(n.max_items, static_cast<uint32_t>(n.prefix_items.size()));
            else n.items = compile(*rest, path + (j.contains("prefixItems") || !prefix ? "/items" : "/additionalItems"), depth + 1);
        }
        if (n.min_items > n.max_items) fail(path, "minItems is greater than maxItems (or than the tuple's length)");
    }

    void compile_string(const json& j, Node& n, const std::string& path) {
        if (j.contains("minLength")) n.min_length = count_keyword(j, "minLength", path);
        if (j.contains("maxLength")) n.max_length = count_keyword(j, "maxLength", path);
        if (n.min_length > n.max_length) fail(path, "minLength is greater than maxLength");
        std::string pattern, where;
        if (j.contains("pattern")) {
            if (!j["pattern"].is_string()) fail(path + "/pattern", "'pattern' must be a string");
            pattern = j["pattern"].get<std::string>();
            where = "/pattern";
        }
        if (j.contains("format")) {
            if (!j["format"].is_string()) fail(path + "/format", "'format' must be a string");
            const std::string f = format_pattern(j["format"].get<std::string>());
            if (!f.empty()) {
                if (!pattern.empty()) fail(path, "'pattern' together with an enforced 'format' is not supported");
                pattern = f;
                where = "/format";
            }
        }
        if (where.empty()) return;
        if (j.contains("minLength") || j.contains("maxLength"))
            fail(path, "minLength/maxLength together with 'pattern'/'format' is not supported");
        try {
            g.dfas.push_back(compile_regex(pattern));
        } catch (const std::invalid_argument& e) {
            fail(path + where, e.what());
        }
        n.dfa = static_cast<int32_t>(g.dfas.size() - 1);
    }

    void compile_bounds(const json& j, Node& n, const std::string& path) {
        constexpr long double kInf = std::numeric_limits<long double>::infinity();
        n.lo = -kInf;
        n.hi = kInf;
        auto number = [&](const char* key) -> long double {
            const json& v = j[key];
            if (!v.is_number()) fail(path + "/" + key, fmt::format("'{}' must be a number", key));
            return v.is_number_float() ? static_cast<long double>(v.get<double>())
                   : v.is_number_unsigned() ? static_cast<long double>(v.get<uint64_t>())
                                            : static_cast<long double>(v.get<int64_t>());
        };
        bool any_bound = false;
        if (j.contains("minimum")) n.lo = number("minimum"), any_bound = true;
        if (j.contains("maximum")) n.hi = number("maximum"), any_bound = true;
        for (const char* key : {"exclusiveMinimum", "exclusiveMaximum"}) {
            if (!j.contains(key)) continue;
            const bool is_min = key[9] == 'M' && key[10] == 'i';
            const json& v = j[key];
            any_bound = true;
            if (v.is_boolean()) {  // draft 4: a flag on minimum / maximum
                if (v.get<bool>()) (is_min ? n.lo_open : n.hi_open) = true;
                continue;
            }
            const long double x = number(key);
            if (is_min && (x > n.lo || x == n.lo)) n.lo = x, n.lo_open = true;
            if (!is_min && (x < n.hi || x == n.hi)) n.hi = x, n.hi_open = true;
        }
        if (!any_bound) return;
        n.bounded = true;
        const long double top = std::pow(10.0L, static_cast<long double>(kMaxIntDigits));
        if (!(n.types & kNumber)) {  // integers: closed integer bounds
            long double lo = std::ceil(n.lo), hi = std::floor(n.hi);
            if (n.lo_open && lo == n.lo) lo += 1;
            if (n.hi_open && hi == n.hi) hi -= 1;
            n.lo = std::max(lo, -(top - 1));
            n.hi = std::min(hi, top - 1);
            n.lo_open = n.hi_open = false;
            if (n.lo > n.hi) fail(path, "no integer (of at most 15 digits) lies between the bounds");
            return;
        }
        if (n.lo > n.hi || (n.lo == n.hi && (n.lo_open || n.hi_open)) || n.lo >= top || n.hi <= -top)
            fail(path, "no number (of at most 15 integer digits) lies between the bounds");
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
            if (!p.is_object()) fail(path + "/properties", "'properties' must be an object");
            for (const auto& [key, value] : p.items()) {
                if (value.is_boolean() && !value.get<bool>()) continue;  // a property that must not appear
                if (n.properties.size() >= kMaxProperties)
                    fail(path + "/properties", fmt::format("more than {} properties", kMaxProperties));
                n.properties.push_back(Property{escaped_key(key), compile(value, path + "/properties/" + key, depth + 1)});
            }
        }
        if (j.contains("required")) {
            const json& r = j["required"];
            if (!r.is_array()) fail(path + "/required", "'required' must be an array of strings");
            for (const auto& name : r) {
                if (!name.is_string()) fail(path + "/required", "'required' must be an array of strings");
                const std::string key = escaped_key(name.get<std::string>());
                size_t i = 0;
                while (i < n.properties.size() && n.properties[i].key != key) ++i;
                if (i == n.properties.size()) {
                    if (n.additional == kNoNode)
                        fail(path + "/required", fmt::format("required property '{}' is not allowed (not in 'properties', "
                                                             "additionalProperties is false)",
                                                             name.get<std::string>()));
                    if (n.properties.size() >= kMaxProperties)
                        fail(path + "/properties", fmt::format("more than {} properties", kMaxProperties));
                    n.properties.push_back(Property{key, n.additional});
                }
                n.required |= uint64_t{1} << i;
            }
        }
    }

    // Which nodes admit a finite value (a $ref cycle may not), and how many automaton frames
    // one needs at least. Alternatives, optional properties and items that admit none are
    // removed, so the automaton never starts a value it cannot finish.
    void finalize() {
        const size_t count = g.nodes.size();
        std::vector<char> finite(count, 0);
        std::vector<int> frames(count, 1000);
        auto item_at = [&](const Node& n, size_t i) { return i < n.prefix_items.size() ? n.prefix_items[i] : n.items; };
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t id = 0; id < count; ++id) {
                const Node& n = g.nodes[id];
                int best = 1000;
                if (!n.alternatives.empty()) {
                    for (uint16_t a : n.alternatives)
                        if (finite[a]) best = std::min(best, frames[a]);
                } else if (n.is_enum || (n.types & (kString | kNumber | kInteger | kBoolean | kNull))) {
                    best = 1;
                } else {
                    if (n.types & kObject) {
                        int need = 0;
                        bool ok = true;
                        for (size_t i = 0; i < n.properties.size(); ++i)
                            if (n.required & (uint64_t{1} << i)) {
                                ok = ok && finite[n.properties[i].node];
                                need = std::max(need, frames[n.properties[i].node]);
                            }
                        if (ok) best = std::min(best, 1 + need);
                    }
                    if (n.types & kArray) {
                        int need = 0;
                        bool ok = true;
                        for (size_t i = 0; i < n.min_items && ok; ++i) {
                            const uint16_t it = item_at(n, i);
                            ok = it != kNoNode && finite[it];
                            if (ok) need = std::max(need, frames[it]);
                        }
                        if (ok) best = std::min(best, 1 + need);
                    }
                }
                if (best < 1000 && (!finite[id] || best < frames[id])) {
                    finite[id] = 1;
                    frames[id] = best;
                    changed = true;
                }
            }
        }
        if (!finite[g.root]) fail("", "the schema admits no finite value (a $ref cycle with no way out)");
        for (size_t id = 0; id < count; ++id) {
            Node& n = g.nodes[id];
            n.min_frames = static_cast<uint8_t>(std::min(frames[id], 255));
            std::erase_if(n.alternatives, [&](uint16_t a) { return !finite[a]; });
            if (n.additional != kNoNode && !finite[n.additional]) n.additional = kNoNode;
            std::vector<Property> props;
            uint64_t required = 0;
            for (size_t i = 0; i < n.properties.size(); ++i) {
                const bool req = n.required & (uint64_t{1} << i);
                if (!finite[n.properties[i].node]) {
                    if (req) n.types &= static_cast<uint8_t>(~kObject);
                    continue;
                }
                if (req) required |= uint64_t{1} << props.size();
                props.push_back(n.properties[i]);
            }
            n.properties = std::move(props);
            n.required = required;
            for (size_t i = 0; i < n.prefix_items.size(); ++i)
                if (!finite[n.prefix_items[i]]) {
                    n.max_items = std::min<uint32_t>(n.max_items, static_cast<uint32_t>(i));
                    break;
                }
            if (n.items != kNoNode && !finite[n.items])
                n.max_items = std::min<uint32_t>(n.max_items, static_cast<uint32_t>(n.prefix_items.size()));
            if (n.min_items > n.max_items) n.types &= static_cast<uint8_t>(~kArray);
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
    Compiler c{g, j, kNoNode, {}};
    c.any = any_node(g);
    g.root = c.compile(j, "", 0);
    c.finalize();
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
