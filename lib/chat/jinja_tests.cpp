// Jinja tests (`x is name(args)`), as jinja2 3.1's tests.py.
#include "chat/jinja_builtin_support.hpp"

namespace genie::chat::jinja {

bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& a) {
    auto other = [&]() {
        if (a.positional.empty() && a.keyword.empty()) fail("test '" + name + "' needs an argument");
        return a.positional.empty() ? a.keyword[0].second : a.positional[0];
    };
    auto integer = [&](const Value& x) {
        if (!x.is_int() && !x.is_bool()) fail("test '" + name + "' needs an integer, not '" + type_name(x) + "'");
        return x.as_int();
    };
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "string") return v.is_string();
    if (name == "number") return v.is_number();
    if (name == "integer") return v.is_int();
    if (name == "float") return v.is_float();
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && v.as_bool();
    if (name == "false") return v.is_bool() && !v.as_bool();
    if (name == "mapping") return v.is_dict() && !v.is_namespace();
    if (name == "iterable") return v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace()) || v.is_undefined();
    if (name == "sequence") return v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace()) || v.is_undefined();
    if (name == "callable") return v.is_callable();
    if (name == "escaped") return false;
    if (name == "equalto" || name == "eq" || name == "==") return equals(v, other());
    if (name == "ne" || name == "!=") return !equals(v, other());
    if (name == "lt" || name == "<" || name == "lessthan") return less(v, other());
    if (name == "le" || name == "<=") return less(v, other()) || equals(v, other());
    if (name == "gt" || name == ">" || name == "greaterthan") return less(other(), v);
    if (name == "ge" || name == ">=") return less(other(), v) || equals(v, other());
    if (name == "in") return contains(other(), v);
    if (name == "sameas") {
        const Value o = other();
        if (v.identity() || o.identity()) return v.identity() == o.identity();
        return v.kind() == o.kind() && equals(v, o);
    }
    if (name == "odd") return (integer(v) % 2) != 0;
    if (name == "even") return (integer(v) % 2) == 0;
    if (name == "divisibleby") {
        const int64_t d = integer(other());
        if (d == 0) fail("integer division or modulo by zero");
        if (d == -1) return true;
        return integer(v) % d == 0;
    }
    if (name == "lower" || name == "upper") {
        if (!v.is_string()) return false;
        bool cased = false;
        for (uint32_t cp : text::decode(v.as_string())) {
            if (text::is_cased_upper(cp)) { if (name == "lower") return false; cased = true; }
            else if (text::is_cased_lower(cp)) { if (name == "upper") return false; cased = true; }
        }
        return cased;
    }
    if (name == "filter") {
        if (!v.is_string()) return false;
        const auto& t = filters();
        return t.count(v.as_string()) || v.as_string() == "d" || v.as_string() == "e";
    }
    if (name == "test") {
        static const char* const names[] = {"defined", "undefined", "none", "string", "number", "integer", "float",
                                            "boolean", "true", "false", "mapping", "iterable", "sequence", "callable",
                                            "escaped", "equalto", "eq", "ne", "lt", "le", "gt", "ge", "in", "sameas",
                                            "odd", "even", "divisibleby", "lower", "upper", "filter", "test"};
        if (!v.is_string()) return false;
        for (const char* n : names)
            if (v.as_string() == n) return true;
        return false;
    }
    (void)in;
    fail("no test named '" + name + "'", ErrorCode::Unsupported);
}

}  // namespace genie::chat::jinja
