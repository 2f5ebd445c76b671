// Jinja filters (`x | name(args)`), as jinja2 3.1's filters.py.
#include "chat/jinja_builtin_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace genie::chat::jinja {

namespace {

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

}  // namespace

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

Value apply_filter(Interpreter& in, const std::string& name, const Value& input, CallArgs& args) {
    const auto& table = filters();
    std::string key = name;
    if (key == "d") key = "default";
    else if (key == "e") key = "escape";
    const auto it = table.find(key);
    if (it == table.end()) fail("no filter named '" + name + "'", ErrorCode::Unsupported);
    return it->second(in, input, args);
}

}  // namespace genie::chat::jinja
