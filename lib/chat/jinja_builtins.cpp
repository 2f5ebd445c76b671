// Attribute access, methods, operators, filters, tests and globals. Behaviour follows jinja2
// 3.1 (filters.py, tests.py, sandbox.py's ImmutableSandboxedEnvironment) and Python's str,
// list and dict; deviations are listed in docs/chat.md.
#include "chat/jinja_builtins.hpp"

#include "chat/jinja_interpreter.hpp"
#include "chat/jinja_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <unordered_map>

namespace genie::chat::jinja {

namespace {

// ---- argument access -------------------------------------------------------------------

// Reads argument `index` (positional) or `name` (keyword) of a builtin; Undefined = not given.
Value arg(const CallArgs& a, size_t index, const char* name) {
    for (const auto& [k, v] : a.keyword)
        if (k == name) return v;
    if (index < a.positional.size()) return a.positional[index];
    return Value();
}
bool given(const Value& v) { return !v.is_undefined(); }

std::string str_arg(const Value& v, const char* what) {
    if (!v.is_string()) fail(std::string(what) + " must be a string, not '" + type_name(v) + "'");
    return v.as_string();
}
int64_t int_arg(const Value& v, const char* what) {
    if (!v.is_int() && !v.is_bool()) fail(std::string(what) + " must be an integer, not '" + type_name(v) + "'");
    return v.as_int();
}

Value make_callable(std::string name, NativeFunction f) {
    auto c = std::make_shared<Callable>();
    c->name = std::move(name);
    c->function = std::move(f);
    return Value::callable(std::move(c));
}

Value tuple2(Value a, Value b) {
    std::vector<Value> items;
    items.push_back(std::move(a));
    items.push_back(std::move(b));
    return Value::list(std::move(items), true);
}

// Codepoint offset of byte offset `byte` in s.
int64_t cp_index(const std::string& s, size_t byte) { return static_cast<int64_t>(text::length(std::string_view(s).substr(0, byte))); }

// Python index normalisation for [i]: negative counts from the end; nullopt = out of range.
std::optional<size_t> normalize_index(int64_t i, size_t n) {
    if (i < 0) i += static_cast<int64_t>(n);
    if (i < 0 || i >= static_cast<int64_t>(n)) return std::nullopt;
    return static_cast<size_t>(i);
}

// ---- string methods --------------------------------------------------------------------

std::vector<Value> split_whitespace(const std::string& s, int64_t maxsplit, bool from_right) {
    std::vector<uint32_t> cps = text::decode(s);
    std::vector<std::string> parts;
    if (!from_right) {
        size_t i = 0;
        while (i < cps.size()) {
            while (i < cps.size() && text::is_space(cps[i])) ++i;
            if (i >= cps.size()) break;
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
                size_t e = cps.size();
                while (e > i && text::is_space(cps[e - 1])) --e;
                parts.push_back(text::encode(cps.data() + i, cps.data() + e));
                break;
            }
            size_t j = i;
            while (j < cps.size() && !text::is_space(cps[j])) ++j;
            parts.push_back(text::encode(cps.data() + i, cps.data() + j));
            i = j;
        }
    } else {
        size_t i = cps.size();
        while (i > 0) {
            while (i > 0 && text::is_space(cps[i - 1])) --i;
            if (i == 0) break;
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
                size_t b = 0;
                while (b < i && text::is_space(cps[b])) ++b;
                parts.push_back(text::encode(cps.data() + b, cps.data() + i));
                break;
            }
            size_t j = i;
            while (j > 0 && !text::is_space(cps[j - 1])) --j;
            parts.push_back(text::encode(cps.data() + j, cps.data() + i));
            i = j;
        }
        std::reverse(parts.begin(), parts.end());
    }
    std::vector<Value> out;
    for (auto& p : parts) out.push_back(Value::string(std::move(p)));
    return out;
}

std::vector<Value> split_on(const std::string& s, const std::string& sep, int64_t maxsplit, bool from_right) {
    if (sep.empty()) fail("empty separator");
    std::vector<std::string> parts;
    if (!from_right) {
        size_t start = 0;
        while (true) {
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) break;
            const size_t at = s.find(sep, start);
            if (at == std::string::npos) break;
            parts.push_back(s.substr(start, at - start));
            start = at + sep.size();
        }
        parts.push_back(s.substr(start));
    } else {
        size_t end = s.size();
        while (true) {
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) break;
            if (end < sep.size()) break;
            const size_t at = s.rfind(sep, end - sep.size());
            if (at == std::string::npos) break;
            parts.push_back(s.substr(at + sep.size(), end - at - sep.size()));
            end = at;
        }
        parts.push_back(s.substr(0, end));
        std::reverse(parts.begin(), parts.end());
    }
    std::vector<Value> out;
    for (auto& p : parts) out.push_back(Value::string(std::move(p)));
    return out;
}

std::string replace_all(const std::string& s, const std::string& old, const std::string& with, int64_t count) {
    std::string out;
    if (old.empty()) {
        // Python inserts `with` before every character and at the end.
        const std::vector<uint32_t> cps = text::decode(s);
        int64_t done = 0;
        for (uint32_t cp : cps) {
            if (count < 0 || done < count) { out += with; ++done; }
            text::append(out, cp);
            check_string_size(out.size());
        }
        if (count < 0 || done < count) out += with;
        return out;
    }
    size_t start = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        const size_t at = s.find(old, start);
        if (at == std::string::npos) break;
        out.append(s, start, at - start);
        out += with;
        check_string_size(out.size());
        start = at + old.size();
        ++done;
    }
    out.append(s, start, std::string::npos);
    return out;
}

int64_t count_substring(const std::string& s, const std::string& sub) {
    if (sub.empty()) return static_cast<int64_t>(text::length(s)) + 1;
    int64_t n = 0;
    for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
    return n;
}

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
    auto one = [&](const Value& v) {
        const std::string a = str_arg(v, prefix ? "startswith() argument" : "endswith() argument");
        if (a.size() > s.size()) return false;
        return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
    };
    if (affix.is_list()) {
        for (const Value& v : affix.as_list().items)
            if (one(v)) return true;
        return false;
    }
    return one(affix);
}

// str.format with {}, {0}, {name} and {{ }} (no format specs).
std::string python_format(const std::string& fmt, const CallArgs& a) {
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        const char c = fmt[i];
        if (c == '{') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '{') { out += '{'; ++i; continue; }
            const size_t close = fmt.find('}', i);
            if (close == std::string::npos) fail("single '{' encountered in format string");
            const std::string field = fmt.substr(i + 1, close - i - 1);
            if (field.find_first_of(":!") != std::string::npos)
                fail("format specifications in str.format() are not supported", ErrorCode::Unsupported);
            Value v;
            if (field.empty()) {
                if (auto_index >= a.positional.size()) fail("replacement index out of range for str.format()");
                v = a.positional[auto_index++];
            } else if (std::all_of(field.begin(), field.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
                const size_t k = std::stoul(field);
                if (k >= a.positional.size()) fail("replacement index out of range for str.format()");
                v = a.positional[k];
            } else {
                bool found = false;
                for (const auto& [name, value] : a.keyword)
                    if (name == field) { v = value; found = true; }
                if (!found) fail("str.format(): missing keyword argument '" + field + "'");
            }
            out += to_str(v);
            i = close;
        } else if (c == '}') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
            out += '}';
        } else {
            out += c;
        }
        check_string_size(out.size());
    }
    return out;
}

Value string_method(const Value& self, const std::string& name) {
    const std::string s = self.as_string();
    auto bind = [&](NativeFunction f) { return make_callable(name, std::move(f)); };
    if (name == "startswith" || name == "endswith") {
        const bool prefix = name == "startswith";
        return bind([s, prefix](Interpreter&, CallArgs& a) {
            if (a.positional.empty()) fail("startswith/endswith takes at least 1 argument");
            return Value::boolean(affix_match(s, a.positional[0], prefix));
        });
    }
    if (name == "split" || name == "rsplit") {
        const bool right = name == "rsplit";
        return bind([s, right](Interpreter&, CallArgs& a) {
            const Value sep = arg(a, 0, "sep");
            const Value maxsplit = arg(a, 1, "maxsplit");
            const int64_t m = given(maxsplit) ? int_arg(maxsplit, "maxsplit") : -1;
            if (!given(sep) || sep.is_none()) return Value::list(split_whitespace(s, m, right));
            return Value::list(split_on(s, str_arg(sep, "separator"), m, right));
        });
    }
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const bool left = name != "rstrip";
        const bool right = name != "lstrip";
        return bind([s, left, right](Interpreter&, CallArgs& a) {
            const Value chars = arg(a, 0, "chars");
            if (!given(chars) || chars.is_none()) return Value::string(text::strip(s, nullptr, left, right));
            const std::string c = str_arg(chars, "strip argument");
            return Value::string(text::strip(s, &c, left, right));
        });
    }
    if (name == "lower") return bind([s](Interpreter&, CallArgs&) { return Value::string(text::lower(s)); });
    if (name == "upper") return bind([s](Interpreter&, CallArgs&) { return Value::string(text::upper(s)); });
    if (name == "title") return bind([s](Interpreter&, CallArgs&) { return Value::string(text::title(s)); });
    if (name == "capitalize") return bind([s](Interpreter&, CallArgs&) { return Value::string(text::capitalize(s)); });
    if (name == "swapcase")
        return bind([s](Interpreter&, CallArgs&) {
            std::string out;
            for (uint32_t cp : text::decode(s)) text::append(out, text::is_cased_upper(cp) ? text::to_lower(cp) : text::to_upper(cp));
            return Value::string(std::move(out));
        });
    if (name == "replace")
        return bind([s](Interpreter&, CallArgs& a) {
            if (a.positional.size() < 2) fail("replace() takes at least 2 arguments");
            const Value count = arg(a, 2, "count");
            return Value::string(replace_all(s, str_arg(a.positional[0], "replace() argument 1"),
                                             str_arg(a.positional[1], "replace() argument 2"),
                                             given(count) ? int_arg(count, "count") : -1));
        });
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
        const bool right = name[0] == 'r';
        const bool raise = name.find("index") != std::string::npos;
        return bind([s, right, raise](Interpreter&, CallArgs& a) {
            if (a.positional.empty()) fail("find() takes at least 1 argument");
            const std::string sub = str_arg(a.positional[0], "find() argument");
            const size_t at = right ? s.rfind(sub) : s.find(sub);
            if (at == std::string::npos) {
                if (raise) fail("substring not found");
                return Value::integer(-1);
            }
            return Value::integer(cp_index(s, at));
        });
    }
    if (name == "count")
        return bind([s](Interpreter&, CallArgs& a) {
            if (a.positional.empty()) fail("count() takes at least 1 argument");
            return Value::integer(count_substring(s, str_arg(a.positional[0], "count() argument")));
        });
    if (name == "join")
        return bind([s](Interpreter&, CallArgs& a) {
            if (a.positional.empty()) fail("join() takes exactly one argument");
            std::string out;
            bool first = true;
            for (const Value& v : iterate(a.positional[0])) {
                if (!v.is_string()) fail("sequence item: expected str instance, " + type_name(v) + " found");
                if (!first) out += s;
                first = false;
                out += v.as_string();
                check_string_size(out.size());
            }
            return Value::string(std::move(out));
        });
    if (name == "format") return bind([s](Interpreter&, CallArgs& a) { return Value::string(python_format(s, a)); });
    if (name == "splitlines")
        return bind([s](Interpreter&, CallArgs&) {
            std::vector<Value> out;
            for (auto& line : text::splitlines(s)) out.push_back(Value::string(std::move(line)));
            return Value::list(std::move(out));
        });
    if (name == "removeprefix" || name == "removesuffix") {
        const bool prefix = name == "removeprefix";
        return bind([s, prefix](Interpreter&, CallArgs& a) {
            if (a.positional.empty()) fail("removeprefix/removesuffix takes exactly one argument");
            const std::string x = str_arg(a.positional[0], "argument");
            if (x.size() <= s.size()) {
                if (prefix && s.compare(0, x.size(), x) == 0) return Value::string(s.substr(x.size()));
                if (!prefix && s.compare(s.size() - x.size(), x.size(), x) == 0) return Value::string(s.substr(0, s.size() - x.size()));
            }
            return Value::string(s);
        });
    }
    using Pred = bool (*)(uint32_t);
    static const std::pair<const char*, Pred> predicates[] = {
        {"isdigit", [](uint32_t c) { return text::is_digit(c); }},
        {"isdecimal", [](uint32_t c) { return text::is_digit(c); }},
        {"isnumeric", [](uint32_t c) { return text::is_digit(c); }},
        {"isalpha", [](uint32_t c) { return text::is_alpha(c); }},
        {"isalnum", [](uint32_t c) { return text::is_alpha(c) || text::is_digit(c); }},
        {"isspace", [](uint32_t c) { return text::is_space(c); }},
    };
    for (const auto& [pname, pred] : predicates)
        if (name == pname)
            return bind([s, pred = pred](Interpreter&, CallArgs&) {
                const auto cps = text::decode(s);
                return Value::boolean(!cps.empty() && std::all_of(cps.begin(), cps.end(), pred));
            });
    if (name == "islower" || name == "isupper") {
        const bool want_lower = name == "islower";
        return bind([s, want_lower](Interpreter&, CallArgs&) {
            bool cased = false;
            for (uint32_t cp : text::decode(s)) {
                if (text::is_cased_upper(cp)) { if (want_lower) return Value::boolean(false); cased = true; }
                else if (text::is_cased_lower(cp)) { if (!want_lower) return Value::boolean(false); cased = true; }
            }
            return Value::boolean(cased);
        });
    }
    if (name == "zfill" || name == "ljust" || name == "rjust" || name == "center") {
        return bind([s, name](Interpreter&, CallArgs& a) {
            if (a.positional.empty()) fail(name + "() takes at least 1 argument");
            const int64_t width = int_arg(a.positional[0], "width");
            const int64_t len = static_cast<int64_t>(text::length(s));
            if (width <= len) return Value::string(s);
            if (width > (int64_t{1} << 24)) fail("padding width is too large");
            const auto pad = static_cast<size_t>(width - len);
            std::string fill = " ";
            if (a.positional.size() > 1) fill = str_arg(a.positional[1], "fill character");
            auto repeat = [&](size_t n) {
                std::string r;
                for (size_t i = 0; i < n; ++i) r += fill;
                return r;
            };
            if (name == "ljust") return Value::string(s + repeat(pad));
            if (name == "rjust") return Value::string(repeat(pad) + s);
            if (name == "zfill") {
                if (!s.empty() && (s[0] == '-' || s[0] == '+')) return Value::string(s.substr(0, 1) + std::string(pad, '0') + s.substr(1));
                return Value::string(std::string(pad, '0') + s);
            }
            const size_t left = pad / 2 + (pad & static_cast<size_t>(width) & 1);
            return Value::string(repeat(left) + s + repeat(pad - left));
        });
    }
    return Value::undefined("'str object' has no attribute '" + name + "'");
}

Value unsafe_method(const std::string& type, const std::string& name) {
    return make_callable(name, [type, name](Interpreter&, CallArgs&) -> Value {
        fail("access to attribute '" + name + "' of '" + type + "' object is unsafe (the template may not modify data)");
    });
}

Value dict_method(const Value& self, const std::string& name) {
    const auto d = self.dict_ptr();
    if (name == "items")
        return make_callable(name, [d](Interpreter&, CallArgs&) {
            std::vector<Value> out;
            for (const auto& [k, v] : d->entries) out.push_back(tuple2(k, v));
            return Value::list(std::move(out));
        });
    if (name == "keys" || name == "values") {
        const bool keys = name == "keys";
        return make_callable(name, [d, keys](Interpreter&, CallArgs&) {
            std::vector<Value> out;
            for (const auto& [k, v] : d->entries) out.push_back(keys ? k : v);
            return Value::list(std::move(out));
        });
    }
    if (name == "get")
        return make_callable(name, [d](Interpreter&, CallArgs& a) {
            if (a.positional.empty()) fail("get() takes at least 1 argument");
            const Value* v = d->find(a.positional[0]);
            if (v) return *v;
            return a.positional.size() > 1 ? a.positional[1] : Value::none();
        });
    if (name == "copy")
        return make_callable(name, [d](Interpreter&, CallArgs&) { return Value::dict(std::make_shared<Dict>(*d)); });
    if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" || name == "clear")
        return unsafe_method("dict", name);
    return Value();  // not a method: fall back to the item
}

Value list_method(const Value& self, const std::string& name) {
    if (name == "index" || name == "count") {
        const bool index = name == "index";
        return make_callable(name, [self, index](Interpreter&, CallArgs& a) {
            if (a.positional.empty()) fail(std::string(index ? "index" : "count") + "() takes at least 1 argument");
            int64_t n = 0;
            const auto& items = self.as_list().items;
            for (size_t i = 0; i < items.size(); ++i) {
                if (!equals(items[i], a.positional[0])) continue;
                if (index) return Value::integer(static_cast<int64_t>(i));
                ++n;
            }
            if (index) fail(to_repr(a.positional[0]) + " is not in list");
            return Value::integer(n);
        });
    }
    if (name == "copy") return make_callable(name, [self](Interpreter&, CallArgs&) { return Value::list(self.as_list().items); });
    static const char* const unsafe[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};
    for (const char* u : unsafe)
        if (name == u) return unsafe_method(self.is_tuple() ? "tuple" : "list", name);
    return Value::undefined("'" + type_name(self) + " object' has no attribute '" + name + "'");
}

}  // namespace

// ---- attribute / item access ---------------------------------------------------------

Value get_attribute(const Value& obj, const std::string& name) {
    switch (obj.kind()) {
        case Kind::Undefined: fail(obj.undefined_hint() + " (while reading its attribute '" + name + "')");
        case Kind::Dict: {
            if (obj.is_namespace()) {
                if (const Value* v = obj.as_dict().find(name)) return *v;
                return Value::undefined("'Namespace object' has no attribute '" + name + "'");
            }
            Value m = dict_method(obj, name);
            if (!m.is_undefined()) return m;
            if (const Value* v = obj.as_dict().find(name)) return *v;
            return Value::undefined("'dict object' has no attribute '" + name + "'");
        }
        case Kind::String: return string_method(obj, name);
        case Kind::List: return list_method(obj, name);
        case Kind::Callable:
            if (obj.as_callable().attributes)
                if (const Value* v = obj.as_callable().attributes->find(name)) return *v;
            return Value::undefined("'" + obj.as_callable().name + "' has no attribute '" + name + "'");
        default: return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
    }
}

Value get_item(const Value& obj, const Value& key) {
    switch (obj.kind()) {
        case Kind::Undefined: fail(obj.undefined_hint() + " (while reading its item " + to_repr(key) + ")");
        case Kind::Dict:
            if (!obj.is_namespace()) {
                if (const Value* v = obj.as_dict().find(key)) return *v;
                if (key.is_string()) {
                    Value m = dict_method(obj, key.as_string());
                    if (!m.is_undefined()) return m;
                }
                return Value::undefined("'dict object' has no attribute " + to_repr(key));
            }
            break;
        case Kind::List:
            if (key.is_int() || key.is_bool()) {
                const auto& items = obj.as_list().items;
                if (auto i = normalize_index(key.as_int(), items.size())) return items[*i];
                return Value::undefined(type_name(obj) + " object has no element " + to_repr(key));
            }
            break;
        case Kind::String:
            if (key.is_int() || key.is_bool()) {
                const auto cps = text::decode(obj.as_string());
                if (auto i = normalize_index(key.as_int(), cps.size())) return Value::string(text::encode(&cps[*i], &cps[*i] + 1));
                return Value::undefined("str object has no element " + to_repr(key));
            }
            break;
        default: break;
    }
    if (key.is_string()) return get_attribute(obj, key.as_string());
    return Value::undefined("'" + type_name(obj) + " object' has no item " + to_repr(key));
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
    if (obj.is_undefined()) fail(obj.undefined_hint() + " (while slicing it)");
    auto bound = [](const Value& v, const char* what) -> std::optional<int64_t> {
        if (v.is_undefined() || v.is_none()) return std::nullopt;
        return int_arg(v, what);
    };
    const int64_t st = bound(step, "slice step").value_or(1);
    if (st == 0) fail("slice step cannot be zero");
    auto pick = [&](int64_t n) {
        // Python's PySlice_AdjustIndices
        auto adjust = [&](std::optional<int64_t> v, int64_t def) {
            if (!v) return def;
            int64_t x = *v;
            if (x < 0) {
                x += n;
                if (x < 0) x = st < 0 ? -1 : 0;
            } else if (x >= n) {
                x = st < 0 ? n - 1 : n;
            }
            return x;
        };
        const int64_t b = adjust(bound(start, "slice start"), st < 0 ? n - 1 : 0);
        const int64_t e = adjust(bound(stop, "slice stop"), st < 0 ? -1 : n);
        std::vector<size_t> idx;
        if (st > 0)
            for (int64_t i = b; i < e; i += st) idx.push_back(static_cast<size_t>(i));
        else
            for (int64_t i = b; i > e; i += st) idx.push_back(static_cast<size_t>(i));
        return idx;
    };
    if (obj.is_string()) {
        const auto cps = text::decode(obj.as_string());
        std::string out;
        for (size_t i : pick(static_cast<int64_t>(cps.size()))) text::append(out, cps[i]);
        return Value::string(std::move(out));
    }
    if (obj.is_list()) {
        const auto& items = obj.as_list().items;
        std::vector<Value> out;
        for (size_t i : pick(static_cast<int64_t>(items.size()))) out.push_back(items[i]);
        return Value::list(std::move(out), obj.is_tuple());
    }
    fail("'" + type_name(obj) + "' object is not subscriptable");
}

// ---- operators ---------------------------------------------------------------------------

namespace {
[[noreturn]] void bad_operands(const char* op, const Value& a, const Value& b) {
    fail(std::string("unsupported operand type(s) for ") + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

Value repeat(const Value& seq, int64_t n) {
    if (n <= 0) return seq.is_string() ? Value::string("") : Value::list({}, seq.is_tuple());
    if (seq.is_string()) {
        const std::string& s = seq.as_string();
        check_string_size(s.size() * static_cast<size_t>(std::min<int64_t>(n, int64_t{1} << 40)));
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += s;
        return Value::string(std::move(out));
    }
    const auto& items = seq.as_list().items;
    charge(items.size() * static_cast<size_t>(std::min<int64_t>(n, int64_t{1} << 30)) * sizeof(Value));
    std::vector<Value> out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
    return Value::list(std::move(out), seq.is_tuple());
}

double floor_mod(double a, double b) {
    double m = std::fmod(a, b);
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
}
}  // namespace

Value negate(const Value& v) {
    if (v.is_float()) return Value::floating(-v.as_double());
    if (v.is_int() || v.is_bool()) {
        if (v.as_int() == std::numeric_limits<int64_t>::min()) fail("integer overflow");
        return Value::integer(-v.as_int());
    }
    fail("bad operand type for unary -: '" + type_name(v) + "'");
}

Value binary_op(BinaryOp op, const Value& a, const Value& b) {
    if (op == BinaryOp::Concat) return Value::string(to_str(a) + to_str(b));
    if (a.is_undefined() || b.is_undefined()) fail((a.is_undefined() ? a : b).undefined_hint() + " (used in arithmetic)");
    const bool numbers = a.is_number() && b.is_number();
    const bool floats = numbers && (a.is_float() || b.is_float());
    switch (op) {
        case BinaryOp::Add:
            if (numbers) {
                if (floats) return Value::floating(a.as_double() + b.as_double());
                int64_t r;
                if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow");
                return Value::integer(r);
            }
            if (a.is_string() && b.is_string()) {
                check_string_size(a.as_string().size() + b.as_string().size());
                return Value::string(a.as_string() + b.as_string());
            }
            if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
                std::vector<Value> items = a.as_list().items;
                items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
                return Value::list(std::move(items), a.is_tuple());
            }
            if (a.is_string() || b.is_string())
                fail("can only concatenate str (not \"" + type_name(a.is_string() ? b : a) + "\") to str");
            bad_operands("+", a, b);
        case BinaryOp::Subtract:
            if (!numbers) bad_operands("-", a, b);
            if (floats) return Value::floating(a.as_double() - b.as_double());
            {
                int64_t r;
                if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow");
                return Value::integer(r);
            }
        case BinaryOp::Multiply:
            if (numbers) {
                if (floats) return Value::floating(a.as_double() * b.as_double());
                int64_t r;
                if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow");
                return Value::integer(r);
            }
            if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
            if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
            bad_operands("*", a, b);
        case BinaryOp::Divide:
            if (!numbers) bad_operands("/", a, b);
            if (b.as_double() == 0) fail("division by zero");
            return Value::floating(a.as_double() / b.as_double());
        case BinaryOp::FloorDivide:
            if (!numbers) bad_operands("//", a, b);
            if (b.as_double() == 0) fail("integer division or modulo by zero");
            if (floats) return Value::floating(std::floor(a.as_double() / b.as_double()));
            {
                const int64_t x = a.as_int(), y = b.as_int();
                if (x == std::numeric_limits<int64_t>::min() && y == -1) fail("integer overflow");
                int64_t q = x / y;
                if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
                return Value::integer(q);
            }
        case BinaryOp::Modulo:
            if (a.is_string()) fail("printf-style '%' formatting is not supported; use the 'format' filter", ErrorCode::Unsupported);
            if (!numbers) bad_operands("%", a, b);
            if (b.as_double() == 0) fail("integer division or modulo by zero");
            if (floats) return Value::floating(floor_mod(a.as_double(), b.as_double()));
            {
                const int64_t x = a.as_int(), y = b.as_int();
                if (y == -1) return Value::integer(0);
                int64_t m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) m += y;
                return Value::integer(m);
            }
        case BinaryOp::Power:
            if (!numbers) bad_operands("**", a, b);
            if (!floats && b.as_int() >= 0) {
                int64_t result = 1, base = a.as_int(), e = b.as_int();
                while (e > 0) {
                    if (e & 1)
                        if (__builtin_mul_overflow(result, base, &result)) fail("integer overflow");
                    e >>= 1;
                    if (e > 0 && __builtin_mul_overflow(base, base, &base)) fail("integer overflow");
                }
                return Value::integer(result);
            }
            if (a.as_double() == 0 && b.as_double() < 0) fail("0.0 cannot be raised to a negative power");
            return Value::floating(std::pow(a.as_double(), b.as_double()));
        case BinaryOp::Concat: break;
    }
    fail("internal error: unknown operator", ErrorCode::Internal);
}

// ---- JSON --------------------------------------------------------------------------------

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

// ---- filters -------------------------------------------------------------------------------

namespace {

using FilterFn = Value (*)(Interpreter&, const Value&, CallArgs&);

// jinja2 make_attrgetter: "a.b.0" -> getitem per part (integers for digit parts).
Value attribute_path(const Value& item, const std::string& path) {
    Value cur = item;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        Value key;
        if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }) && part.size() < 18)
            key = Value::integer(std::stoll(part));
        else
            key = Value::string(part);
        if (cur.is_undefined()) return cur;
        cur = get_item(cur, key);
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return cur;
}

Value attribute_getter_value(const Value& item, const Value& attribute, const Value& default_value) {
    Value v = attribute.is_int() ? get_item(item, attribute) : attribute_path(item, to_str(attribute));
    if (v.is_undefined() && given(default_value)) return default_value;
    return v;
}

std::string soft_str(const Value& v) { return v.is_string() ? v.as_string() : to_str(v); }

Value sort_key(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.is_string()) return Value::string(text::lower(v.as_string()));
    return v;
}

std::vector<Value> rest_args(const CallArgs& a, size_t from) {
    if (from >= a.positional.size()) return {};
    return std::vector<Value>(a.positional.begin() + static_cast<std::ptrdiff_t>(from), a.positional.end());
}

std::vector<Value> select_items(Interpreter& in, const Value& input, CallArgs& a, bool by_attribute, bool keep_if) {
    std::vector<Value> out;
    std::string attribute;
    size_t test_index = 0;
    if (by_attribute) {
        if (a.positional.empty()) fail("selectattr/rejectattr needs an attribute name");
        attribute = to_str(a.positional[0]);
        test_index = 1;
    }
    const bool has_test = a.positional.size() > test_index;
    std::string test_name = has_test ? str_arg(a.positional[test_index], "test name") : std::string();
    for (const Value& item : iterate(input)) {
        const Value subject = by_attribute ? attribute_path(item, attribute) : item;
        bool r;
        if (has_test) {
            CallArgs test_args;
            test_args.positional = rest_args(a, test_index + 1);
            r = apply_test(in, test_name, subject, test_args);
        } else {
            r = truthy(subject);
        }
        if (r == keep_if) out.push_back(item);
    }
    return out;
}

double to_number_or(const Value& v, bool& ok) {
    ok = true;
    if (v.is_number()) return v.as_double();
    if (v.is_string()) {
        std::string s = text::strip(v.as_string(), nullptr, true, true);
        s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
        std::string lower = text::lower(s);
        if (lower == "nan" || lower == "+nan" || lower == "-nan") return std::nan("");
        if (lower == "inf" || lower == "+inf" || lower == "infinity" || lower == "+infinity") return HUGE_VAL;
        if (lower == "-inf" || lower == "-infinity") return -HUGE_VAL;
        if (!s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.' || s[0] == '-' || s[0] == '+')) {
            char* end = nullptr;
            const double d = std::strtod(s.c_str(), &end);
            if (end && *end == '\0' && lower.find('x') == std::string::npos && lower.find('n') == std::string::npos) return d;
        }
    }
    ok = false;
    return 0;
}

Value filter_int(Interpreter&, const Value& v, CallArgs& a) {
    const Value def = arg(a, 0, "default");
    const Value base_v = arg(a, 1, "base");
    const int64_t base = given(base_v) ? int_arg(base_v, "base") : 10;
    if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
    if (v.is_string()) {
        std::string s = text::strip(v.as_string(), nullptr, true, true);
        std::string digits = s;
        digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
        if (!digits.empty() && base >= 2 && base <= 36) {
            errno = 0;
            char* end = nullptr;
            const long long r = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
            if (end && *end == '\0' && errno == 0 && digits.find_first_of(" \t") == std::string::npos) return Value::integer(r);
        }
    }
    bool ok = false;
    const double d = to_number_or(v, ok);
    if (ok && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value::integer(static_cast<int64_t>(d));
    return given(def) ? def : Value::integer(0);
}

Value filter_float(Interpreter&, const Value& v, CallArgs& a) {
    bool ok = false;
    const double d = to_number_or(v, ok);
    if (ok) return Value::floating(d);
    const Value def = arg(a, 0, "default");
    return given(def) ? def : Value::floating(0.0);
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

// Python %-formatting for the `format` filter: %s %r %d %i %f %x %% with flags/width/precision.
std::string percent_format(const std::string& fmt, const CallArgs& a) {
    std::string out;
    size_t next = 0;
    Value mapping;
    if (a.positional.size() == 1 && a.positional[0].is_dict()) mapping = a.positional[0];
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') { out += fmt[i]; continue; }
        if (++i >= fmt.size()) fail("incomplete format");
        if (fmt[i] == '%') { out += '%'; continue; }
        Value v;
        bool have = false;
        if (fmt[i] == '(') {
            const size_t close = fmt.find(')', i);
            if (close == std::string::npos) fail("incomplete format key");
            const std::string key = fmt.substr(i + 1, close - i - 1);
            const Value* found = mapping.is_dict() ? mapping.as_dict().find(key) : nullptr;
            if (!found) {
                for (const auto& [k, x] : a.keyword)
                    if (k == key) { v = x; have = true; }
                if (!have) fail("format key '" + key + "' not found");
            } else {
                v = *found;
                have = true;
            }
            i = close + 1;
        }
        std::string spec = "%";
        while (i < fmt.size() && std::strchr("-+ #0123456789.", fmt[i])) spec += fmt[i++];
        if (i >= fmt.size()) fail("incomplete format");
        const char conv = fmt[i];
        if (!have) {
            if (next >= a.positional.size()) fail("not enough arguments for format string");
            v = a.positional[next++];
        }
        if (spec.size() > 12) fail("format specification is too long");
        char buf[512];
        switch (conv) {
            case 's':
            case 'r': {
                const std::string s = conv == 's' ? soft_str(v) : to_repr(v);
                std::snprintf(buf, sizeof buf, (spec + "s").c_str(), "");
                // width/precision on strings: apply by hand to keep long strings intact
                if (spec == "%") out += s;
                else {
                    int width = 0;
                    bool left = spec.find('-') != std::string::npos;
                    const size_t dot = spec.find('.');
                    std::string digits = spec.substr(1, dot == std::string::npos ? std::string::npos : dot - 1);
                    digits.erase(std::remove_if(digits.begin(), digits.end(), [](char c) { return c < '0' || c > '9'; }), digits.end());
                    if (!digits.empty()) width = std::min(std::atoi(digits.c_str()), 4096);
                    std::string body = s;
                    if (dot != std::string::npos) {
                        const auto cps = text::decode(s);
                        const size_t p = static_cast<size_t>(std::min(std::atoi(spec.c_str() + dot + 1), 1 << 20));
                        if (p < cps.size()) body = text::encode(cps.data(), cps.data() + p);
                    }
                    const auto len = static_cast<int>(text::length(body));
                    const std::string pad(static_cast<size_t>(std::max(0, width - len)), ' ');
                    out += left ? body + pad : pad + body;
                }
                break;
            }
            case 'd':
            case 'i':
            case 'x':
            case 'X':
            case 'o': {
                bool ok = false;
                const double d = to_number_or(v, ok);
                if (!ok || !v.is_number()) fail("%" + std::string(1, conv) + " format: a number is required, not " + type_name(v));
                const long long n = v.is_float() ? static_cast<long long>(d) : v.as_int();
                std::snprintf(buf, sizeof buf, (spec + "ll" + (conv == 'i' ? 'd' : conv)).c_str(), n);
                out += buf;
                break;
            }
            case 'f':
            case 'F':
            case 'e':
            case 'E':
            case 'g':
            case 'G': {
                if (!v.is_number()) fail(std::string("%") + conv + " format: a real number is required, not " + type_name(v));
                std::snprintf(buf, sizeof buf, (spec + conv).c_str(), v.as_double());
                out += buf;
                break;
            }
            default: fail(std::string("unsupported format character '") + conv + "'");
        }
        check_string_size(out.size());
    }
    return out;
}

const std::unordered_map<std::string, FilterFn>& filters() {
    static const std::unordered_map<std::string, FilterFn> table = {
        {"trim", [](Interpreter&, const Value& v, CallArgs& a) {
             const Value chars = arg(a, 0, "chars");
             if (given(chars) && !chars.is_none()) {
                 const std::string c = to_str(chars);
                 return Value::string(text::strip(soft_str(v), &c, true, true));
             }
             return Value::string(text::strip(soft_str(v), nullptr, true, true));
         }},
        {"tojson", [](Interpreter&, const Value& v, CallArgs& a) {
             // HF: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
             const Value ensure_ascii = arg(a, 0, "ensure_ascii");
             const Value indent = arg(a, 1, "indent");
             const Value separators = arg(a, 2, "separators");
             const Value sort_keys = arg(a, 3, "sort_keys");
             int indent_n = -1;
             std::string indent_text;
             bool use_text = false;
             if (indent.is_string()) { indent_text = indent.as_string(); use_text = true; }
             else if (given(indent) && !indent.is_none()) indent_n = static_cast<int>(std::clamp<int64_t>(int_arg(indent, "indent"), -1, 1024));
             if (indent_n < 0 && given(indent) && !indent.is_none() && !use_text) { use_text = true; }  // negative: ""
             const bool indented = use_text || indent_n >= 0;
             std::string item_sep = indented ? "," : ", ";
             std::string key_sep = ": ";
             if (given(separators) && !separators.is_none()) {
                 const auto parts = iterate(separators);
                 if (parts.size() != 2) fail("tojson: separators must be a pair (item_separator, key_separator)");
                 item_sep = str_arg(parts[0], "item separator");
                 key_sep = str_arg(parts[1], "key separator");
             }
             return Value::string(dump_json(v, truthy(ensure_ascii), indent_n, use_text ? &indent_text : nullptr, item_sep,
                                            key_sep, truthy(sort_keys)));
         }},
        {"length", [](Interpreter&, const Value& v, CallArgs&) { return Value::integer(length(v)); }},
        {"count", [](Interpreter&, const Value& v, CallArgs&) { return Value::integer(length(v)); }},
        {"items", [](Interpreter&, const Value& v, CallArgs&) {
             if (v.is_undefined()) return Value::list({});
             if (!v.is_dict() || v.is_namespace()) fail("can only get item pairs from a mapping");
             std::vector<Value> out;
             for (const auto& [k, x] : v.as_dict().entries) out.push_back(tuple2(k, x));
             return Value::list(std::move(out));
         }},
        {"selectattr", [](Interpreter& in, const Value& v, CallArgs& a) { return Value::list(select_items(in, v, a, true, true)); }},
        {"rejectattr", [](Interpreter& in, const Value& v, CallArgs& a) { return Value::list(select_items(in, v, a, true, false)); }},
        {"select", [](Interpreter& in, const Value& v, CallArgs& a) { return Value::list(select_items(in, v, a, false, true)); }},
        {"reject", [](Interpreter& in, const Value& v, CallArgs& a) { return Value::list(select_items(in, v, a, false, false)); }},
        {"map", [](Interpreter& in, const Value& v, CallArgs& a) {
             std::vector<Value> out;
             const Value attribute = arg(a, 99, "attribute");
             if (given(attribute)) {
                 const Value def = arg(a, 99, "default");
                 for (const Value& item : iterate(v)) out.push_back(attribute_getter_value(item, attribute, def));
                 return Value::list(std::move(out));
             }
             if (a.positional.empty()) fail("map() needs a filter name or attribute=");
             const std::string name = str_arg(a.positional[0], "filter name");
             CallArgs rest;
             rest.positional = rest_args(a, 1);
             rest.keyword = a.keyword;
             for (const Value& item : iterate(v)) {
                 CallArgs copy = rest;
                 out.push_back(apply_filter(in, name, item, copy));
             }
             return Value::list(std::move(out));
         }},
        {"join", [](Interpreter&, const Value& v, CallArgs& a) {
             const Value sep = arg(a, 0, "d");
             const Value attribute = arg(a, 1, "attribute");
             const std::string d = given(sep) ? soft_str(sep) : std::string();
             std::string out;
             bool first = true;
             for (const Value& item : iterate(v)) {
                 if (!first) out += d;
                 first = false;
                 out += soft_str(given(attribute) ? attribute_getter_value(item, attribute, Value()) : item);
                 check_string_size(out.size());
             }
             return Value::string(std::move(out));
         }},
        {"first", [](Interpreter&, const Value& v, CallArgs&) {
             if (v.is_list()) return v.as_list().items.empty() ? Value::undefined("no first item, sequence was empty") : v.as_list().items.front();
             const auto items = iterate(v);
             return items.empty() ? Value::undefined("no first item, sequence was empty") : items.front();
         }},
        {"last", [](Interpreter&, const Value& v, CallArgs&) {
             if (v.is_list()) return v.as_list().items.empty() ? Value::undefined("no last item, sequence was empty") : v.as_list().items.back();
             const auto items = iterate(v);
             return items.empty() ? Value::undefined("no last item, sequence was empty") : items.back();
         }},
        {"list", [](Interpreter&, const Value& v, CallArgs&) { return Value::list(iterate(v)); }},
        {"lower", [](Interpreter&, const Value& v, CallArgs&) { return Value::string(text::lower(soft_str(v))); }},
        {"upper", [](Interpreter&, const Value& v, CallArgs&) { return Value::string(text::upper(soft_str(v))); }},
        {"capitalize", [](Interpreter&, const Value& v, CallArgs&) { return Value::string(text::capitalize(soft_str(v))); }},
        {"title", [](Interpreter&, const Value& v, CallArgs&) {
             // jinja2 do_title: words start after '-', whitespace, '(', '{', '[', '<'
             std::string out;
             bool word_start = true;
             for (uint32_t cp : text::decode(soft_str(v))) {
                 const bool delimiter = cp == '-' || text::is_space(cp) || cp == '(' || cp == '{' || cp == '[' || cp == '<';
                 if (delimiter) { text::append(out, cp); word_start = true; continue; }
                 text::append(out, word_start ? text::to_upper(cp) : text::to_lower(cp));
                 word_start = false;
             }
             return Value::string(std::move(out));
         }},
        {"replace", [](Interpreter&, const Value& v, CallArgs& a) {
             const Value old = arg(a, 0, "old");
             const Value with = arg(a, 1, "new");
             const Value count = arg(a, 2, "count");
             if (!given(old) || !given(with)) fail("replace needs the old and new strings");
             return Value::string(replace_all(soft_str(v), soft_str(old), soft_str(with),
                                              given(count) && !count.is_none() ? int_arg(count, "count") : -1));
         }},
        {"default", [](Interpreter&, const Value& v, CallArgs& a) {
             const Value def = arg(a, 0, "default_value");
             const bool boolean = truthy(arg(a, 1, "boolean"));
             if (v.is_undefined() || (boolean && !truthy(v))) return given(def) ? def : Value::string("");
             return v;
         }},
        {"string", [](Interpreter&, const Value& v, CallArgs&) { return v.is_string() ? v : Value::string(to_str(v)); }},
        {"safe", [](Interpreter&, const Value& v, CallArgs&) { return v.is_string() ? v : Value::string(to_str(v)); }},
        {"int", filter_int},
        {"float", filter_float},
        {"abs", [](Interpreter&, const Value& v, CallArgs&) {
             if (v.is_float()) return Value::floating(std::fabs(v.as_double()));
             if (v.is_int() || v.is_bool()) {
                 if (v.as_int() == std::numeric_limits<int64_t>::min()) fail("integer overflow");
                 return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
             }
             fail("bad operand type for abs(): '" + type_name(v) + "'");
         }},
        {"round", [](Interpreter&, const Value& v, CallArgs& a) {
             const Value precision_v = arg(a, 0, "precision");
             const Value method_v = arg(a, 1, "method");
             const int64_t precision = given(precision_v) ? std::clamp<int64_t>(int_arg(precision_v, "precision"), -300, 300) : 0;
             const std::string method = given(method_v) ? to_str(method_v) : "common";
             if (!v.is_number()) fail("round: a number is required, not '" + type_name(v) + "'");
             const double scale = std::pow(10.0, static_cast<double>(precision));
             if (method == "common") {
                 if (!v.is_float()) return Value::integer(v.as_int());
                 return Value::floating(std::nearbyint(v.as_double() * scale) / scale);
             }
             if (method == "floor") return Value::floating(std::floor(v.as_double() * scale) / scale);
             if (method == "ceil") return Value::floating(std::ceil(v.as_double() * scale) / scale);
             fail("method must be 'common', 'ceil' or 'floor'");
         }},
        {"escape", [](Interpreter&, const Value& v, CallArgs&) { return Value::string(html_escape(soft_str(v))); }},
        {"forceescape", [](Interpreter&, const Value& v, CallArgs&) { return Value::string(html_escape(soft_str(v))); }},
        {"indent", [](Interpreter&, const Value& v, CallArgs& a) {
             const Value width = arg(a, 0, "width");
             const bool first = truthy(arg(a, 1, "first"));
             const bool blank = truthy(arg(a, 2, "blank"));
             std::string indention;
             if (width.is_string()) indention = width.as_string();
             else if (given(width)) indention = std::string(static_cast<size_t>(std::clamp<int64_t>(int_arg(width, "width"), 0, 4096)), ' ');
             else indention = "    ";
             const std::string s = soft_str(v) + "\n";
             const std::vector<std::string> lines = text::splitlines(s);
             std::string rv;
             if (blank) {
                 for (size_t i = 0; i < lines.size(); ++i) {
                     if (i) rv += "\n" + indention;
                     rv += lines[i];
                     check_string_size(rv.size());
                 }
             } else {
                 rv = lines.empty() ? std::string() : lines[0];
                 for (size_t i = 1; i < lines.size(); ++i) {
                     rv += "\n";
                     if (!lines[i].empty()) rv += indention;
                     rv += lines[i];
                     check_string_size(rv.size());
                 }
             }
             if (first) rv = indention + rv;
             return Value::string(std::move(rv));
         }},
        {"wordcount", [](Interpreter&, const Value& v, CallArgs&) {
             int64_t n = 0;
             bool in_word = false;
             for (uint32_t cp : text::decode(soft_str(v))) {
                 const bool w = cp == '_' || text::is_digit(cp) || text::is_alpha(cp) || (cp >= 0x80 && !text::is_space(cp) && cp != 0xA0);
                 if (w && !in_word) ++n;
                 in_word = w;
             }
             return Value::integer(n);
         }},
        {"reverse", [](Interpreter&, const Value& v, CallArgs&) {
             if (v.is_string()) {
                 auto cps = text::decode(v.as_string());
                 std::reverse(cps.begin(), cps.end());
                 return Value::string(text::encode(cps));
             }
             auto items = iterate(v);
             std::reverse(items.begin(), items.end());
             return Value::list(std::move(items));
         }},
        {"sort", [](Interpreter&, const Value& v, CallArgs& a) {
             const bool reverse = truthy(arg(a, 0, "reverse"));
             const bool case_sensitive = truthy(arg(a, 1, "case_sensitive"));
             const Value attribute = arg(a, 2, "attribute");
             std::vector<Value> items = iterate(v);
             std::vector<std::pair<Value, size_t>> keyed;
             for (size_t i = 0; i < items.size(); ++i)
                 keyed.emplace_back(sort_key(given(attribute) ? attribute_getter_value(items[i], attribute, Value()) : items[i], case_sensitive), i);
             std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
                 return reverse ? less(y.first, x.first) : less(x.first, y.first);
             });
             std::vector<Value> out;
             for (const auto& k : keyed) out.push_back(items[k.second]);
             return Value::list(std::move(out));
         }},
        {"unique", [](Interpreter&, const Value& v, CallArgs& a) {
             const bool case_sensitive = truthy(arg(a, 0, "case_sensitive"));
             const Value attribute = arg(a, 1, "attribute");
             std::vector<Value> out, seen;
             for (const Value& item : iterate(v)) {
                 const Value key = sort_key(given(attribute) ? attribute_getter_value(item, attribute, Value()) : item, case_sensitive);
                 bool dup = false;
                 for (const Value& s : seen)
                     if (equals(s, key)) { dup = true; break; }
                 if (dup) continue;
                 seen.push_back(key);
                 out.push_back(item);
             }
             return Value::list(std::move(out));
         }},
        {"dictsort", [](Interpreter&, const Value& v, CallArgs& a) {
             const bool case_sensitive = truthy(arg(a, 0, "case_sensitive"));
             const Value by = arg(a, 1, "by");
             const bool reverse = truthy(arg(a, 2, "reverse"));
             const bool by_value = given(by) && to_str(by) == "value";
             if (given(by) && !by_value && to_str(by) != "key") fail("you can only sort by either 'key' or 'value'");
             if (!v.is_dict()) fail("dictsort: a mapping is required");
             std::vector<Value> pairs;
             for (const auto& [k, x] : v.as_dict().entries) pairs.push_back(tuple2(k, x));
             std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
                 const Value kx = sort_key(x.as_list().items[by_value ? 1 : 0], case_sensitive);
                 const Value ky = sort_key(y.as_list().items[by_value ? 1 : 0], case_sensitive);
                 return reverse ? less(ky, kx) : less(kx, ky);
             });
             return Value::list(std::move(pairs));
         }},
        {"batch", [](Interpreter&, const Value& v, CallArgs& a) {
             const int64_t n = int_arg(arg(a, 0, "linecount"), "linecount");
             if (n <= 0) fail("batch size must be positive");
             const Value fill = arg(a, 1, "fill_with");
             std::vector<Value> out, cur;
             for (const Value& item : iterate(v)) {
                 cur.push_back(item);
                 if (static_cast<int64_t>(cur.size()) == n) { out.push_back(Value::list(std::move(cur))); cur.clear(); }
             }
             if (!cur.empty()) {
                 if (given(fill) && !fill.is_none())
                     while (static_cast<int64_t>(cur.size()) < n) cur.push_back(fill);
                 out.push_back(Value::list(std::move(cur)));
             }
             return Value::list(std::move(out));
         }},
        {"sum", [](Interpreter&, const Value& v, CallArgs& a) {
             const Value attribute = arg(a, 0, "attribute");
             const Value start = arg(a, 1, "start");
             Value total = given(start) ? start : Value::integer(0);
             for (const Value& item : iterate(v))
                 total = binary_op(BinaryOp::Add, total, given(attribute) ? attribute_getter_value(item, attribute, Value()) : item);
             return total;
         }},
        {"min", [](Interpreter&, const Value& v, CallArgs& a) {
             const bool cs = truthy(arg(a, 0, "case_sensitive"));
             const Value attribute = arg(a, 1, "attribute");
             const auto items = iterate(v);
             if (items.empty()) return Value::undefined("no smallest item, sequence was empty");
             size_t best = 0;
             auto key = [&](size_t i) { return sort_key(given(attribute) ? attribute_getter_value(items[i], attribute, Value()) : items[i], cs); };
             for (size_t i = 1; i < items.size(); ++i)
                 if (less(key(i), key(best))) best = i;
             return items[best];
         }},
        {"max", [](Interpreter&, const Value& v, CallArgs& a) {
             const bool cs = truthy(arg(a, 0, "case_sensitive"));
             const Value attribute = arg(a, 1, "attribute");
             const auto items = iterate(v);
             if (items.empty()) return Value::undefined("no largest item, sequence was empty");
             size_t best = 0;
             auto key = [&](size_t i) { return sort_key(given(attribute) ? attribute_getter_value(items[i], attribute, Value()) : items[i], cs); };
             for (size_t i = 1; i < items.size(); ++i)
                 if (less(key(best), key(i))) best = i;
             return items[best];
         }},
        {"center", [](Interpreter&, const Value& v, CallArgs& a) {
             const Value width = arg(a, 0, "width");
             const int64_t w = given(width) ? std::clamp<int64_t>(int_arg(width, "width"), 0, 1 << 20) : 80;
             const std::string s = soft_str(v);
             const auto len = static_cast<int64_t>(text::length(s));
             if (w <= len) return Value::string(s);
             const auto pad = static_cast<size_t>(w - len);
             const size_t left = pad / 2 + (pad & static_cast<size_t>(w) & 1);
             return Value::string(std::string(left, ' ') + s + std::string(pad - left, ' '));
         }},
        {"format", [](Interpreter&, const Value& v, CallArgs& a) { return Value::string(percent_format(soft_str(v), a)); }},
        {"attr", [](Interpreter&, const Value& v, CallArgs& a) {
             return get_attribute(v, str_arg(arg(a, 0, "name"), "attribute name"));
         }},
        {"pprint", [](Interpreter&, const Value& v, CallArgs&) { return Value::string(to_repr(v)); }},
    };
    return table;
}

}  // namespace

Value apply_filter(Interpreter& in, const std::string& name, const Value& input, CallArgs& args) {
    const auto& table = filters();
    std::string key = name;
    if (key == "d") key = "default";
    else if (key == "e") key = "escape";
    const auto it = table.find(key);
    if (it == table.end()) fail("no filter named '" + name + "'", ErrorCode::Unsupported);
    return it->second(in, input, args);
}

// ---- tests ---------------------------------------------------------------------------------

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

// ---- globals ---------------------------------------------------------------------------------

namespace {

Value global_range(Interpreter&, CallArgs& a) {
    int64_t start = 0, stop = 0, step = 1;
    const auto& p = a.positional;
    if (p.size() == 1) stop = int_arg(p[0], "range() argument");
    else if (p.size() == 2 || p.size() == 3) {
        start = int_arg(p[0], "range() argument");
        stop = int_arg(p[1], "range() argument");
        if (p.size() == 3) step = int_arg(p[2], "range() argument");
    } else {
        fail("range expected 1 to 3 arguments");
    }
    if (step == 0) fail("range() arg 3 must not be zero");
    // jinja2's sandbox refuses ranges longer than MAX_RANGE (100000)
    const long double n = step > 0 ? std::ceil((static_cast<long double>(stop) - start) / step)
                                   : std::ceil((static_cast<long double>(start) - stop) / -step);
    if (n > 100000) fail("range too big: the sandbox blocks ranges larger than 100000 items");
    std::vector<Value> out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(Value::integer(i));
    return Value::list(std::move(out));
}

void fill_from_args(Dict& d, const CallArgs& a, const char* what) {
    for (const Value& p : a.positional) {
        if (!p.is_dict()) fail(std::string(what) + "() positional argument must be a mapping");
        for (const auto& [k, v] : p.as_dict().entries) d.set(k, v);
    }
    for (const auto& [k, v] : a.keyword) d.set(Value::string(k), v);
}

Value global_namespace(Interpreter& in, CallArgs& a) {
    auto d = std::make_shared<Dict>();
    d->is_namespace = true;
    fill_from_args(*d, a, "namespace");
    in.track_namespace(d);
    return Value::dict(d);
}

Value global_dict(Interpreter&, CallArgs& a) {
    auto d = std::make_shared<Dict>();
    fill_from_args(*d, a, "dict");
    return Value::dict(d);
}

Value global_raise(Interpreter&, CallArgs& a) {
    TemplateError e;
    e.code = ErrorCode::InvalidArgument;
    e.message = a.positional.empty() ? std::string() : to_str(a.positional[0]);
    e.raised = true;
    throw e;
}

Value global_strftime(Interpreter& in, CallArgs& a) {
    if (a.positional.empty()) fail("strftime_now() takes exactly one argument");
    const std::string fmt = str_arg(a.positional[0], "format");
    if (fmt.size() > 256) fail("strftime_now(): the format is too long");
    const std::time_t now = in.settings().now_unix_seconds ? static_cast<std::time_t>(*in.settings().now_unix_seconds)
                                                           : std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[1024];
    const size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
    return Value::string(std::string(buf, n));
}

Value global_cycler(Interpreter&, CallArgs& a) {
    auto items = std::make_shared<std::vector<Value>>(a.positional);
    if (items->empty()) fail("cycler() needs at least one item");
    auto pos = std::make_shared<size_t>(0);
    auto c = std::make_shared<Callable>();
    c->name = "cycler";
    c->attributes = std::make_shared<Dict>();
    std::weak_ptr<Dict> attrs = c->attributes;
    c->attributes->set(Value::string("current"), (*items)[0]);
    c->attributes->set(Value::string("next"), make_callable("next", [items, pos, attrs](Interpreter&, CallArgs&) {
        const Value v = (*items)[*pos];
        *pos = (*pos + 1) % items->size();
        if (auto d = attrs.lock()) d->set(Value::string("current"), (*items)[*pos]);
        return v;
    }));
    c->attributes->set(Value::string("reset"), make_callable("reset", [items, pos, attrs](Interpreter&, CallArgs&) {
        *pos = 0;
        if (auto d = attrs.lock()) d->set(Value::string("current"), (*items)[0]);
        return Value::none();
    }));
    return Value::callable(c);
}

Value global_joiner(Interpreter&, CallArgs& a) {
    const std::string sep = a.positional.empty() ? std::string(", ") : to_str(a.positional[0]);
    auto used = std::make_shared<bool>(false);
    return make_callable("joiner", [sep, used](Interpreter&, CallArgs&) {
        if (!*used) { *used = true; return Value::string(""); }
        return Value::string(sep);
    });
}

}  // namespace

std::optional<Value> global_function(const std::string& name) {
    static const std::unordered_map<std::string, NativeFunction> table = {
        {"range", global_range},     {"namespace", global_namespace},       {"dict", global_dict},
        {"raise_exception", global_raise}, {"strftime_now", global_strftime}, {"cycler", global_cycler},
        {"joiner", global_joiner},
    };
    const auto it = table.find(name);
    if (it == table.end()) return std::nullopt;
    return make_callable(name, it->second);
}

}  // namespace genie::chat::jinja
