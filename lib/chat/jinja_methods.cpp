// Attribute and item access (obj.name, obj[key], obj[a:b:c]) and the str / dict / list methods
// they reach, as jinja2 3.1's ImmutableSandboxedEnvironment and Python's str, list and dict.
#include "chat/jinja_builtin_support.hpp"

#include <algorithm>
#include <cstring>

namespace genie::chat::jinja {

namespace {

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

}  // namespace

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

namespace {

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
    const std::string& s = self.as_string();  // the callables below capture copies
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
    const auto& d = self.dict_ptr();  // the callables below capture copies
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

}  // namespace genie::chat::jinja
