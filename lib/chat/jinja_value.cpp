#include "chat/jinja_value.hpp"

#include "chat/jinja_text.hpp"

#include <cmath>

namespace genie::chat::jinja {

void fail(std::string message, ErrorCode code) {
    TemplateError e;
    e.code = code;
    e.message = std::move(message);
    throw e;
}

namespace {
thread_local Budget* t_budget = nullptr;
// Containers nest at most this deep in repr/==/<; deeper means a namespace cycle.
constexpr int kMaxNesting = 200;
void check_nesting(int depth) {
    if (depth > kMaxNesting) fail("values are nested too deeply (a namespace that contains itself?)");
}
}  // namespace

BudgetScope::BudgetScope(Budget& budget) : previous_(t_budget) { t_budget = &budget; }
BudgetScope::~BudgetScope() { t_budget = previous_; }

void charge(size_t bytes) {
    if (!t_budget) return;
    if (bytes > t_budget->bytes_left)
        fail("the template built more data than the render limit allows");
    t_budget->bytes_left -= bytes;
}

void check_string_size(size_t bytes) {
    if (t_budget && bytes > t_budget->max_string_bytes)
        fail("a string would exceed the output size limit of " + std::to_string(t_budget->max_string_bytes) +
             " bytes");
}

// ---- Dict ----------------------------------------------------------------------------

const Value* Dict::find(const std::string& key) const {
    const auto it = string_index.find(key);
    return it == string_index.end() ? nullptr : &entries[it->second].second;
}

const Value* Dict::find(const Value& key) const {
    if (key.is_string()) return find(key.as_string());
    for (const auto& [k, v] : entries)
        if (!k.is_string() && equals(k, key)) return &v;
    return nullptr;
}

void Dict::set(const Value& key, Value value) {
    if (key.is_string()) {
        const auto it = string_index.find(key.as_string());
        if (it != string_index.end()) { entries[it->second].second = std::move(value); return; }
        string_index.emplace(key.as_string(), entries.size());
    } else {
        for (auto& [k, v] : entries)
            if (!k.is_string() && equals(k, key)) { v = std::move(value); return; }
    }
    charge(sizeof(Value) * 2);
    entries.emplace_back(key, std::move(value));
}

// ---- Value ---------------------------------------------------------------------------

Value Value::undefined(std::string hint) {
    Value v;
    if (!hint.empty()) v.data_ = std::make_shared<const std::string>(std::move(hint));
    return v;
}
Value Value::none() { Value v; v.kind_ = Kind::None; return v; }
Value Value::boolean(bool b) { Value v; v.kind_ = Kind::Bool; v.data_ = b; return v; }
Value Value::integer(int64_t i) { Value v; v.kind_ = Kind::Int; v.data_ = i; return v; }
Value Value::floating(double d) { Value v; v.kind_ = Kind::Float; v.data_ = d; return v; }
Value Value::string(std::string s) {
    check_string_size(s.size());
    charge(s.size());
    Value v;
    v.kind_ = Kind::String;
    v.data_ = std::make_shared<const std::string>(std::move(s));
    return v;
}
Value Value::list(std::vector<Value> items, bool tuple) {
    charge(items.size() * sizeof(Value));
    Value v;
    v.kind_ = Kind::List;
    v.data_ = std::make_shared<const List>(List{std::move(items), tuple});
    return v;
}
Value Value::dict(std::shared_ptr<Dict> d) { Value v; v.kind_ = Kind::Dict; v.data_ = std::move(d); return v; }
Value Value::callable(std::shared_ptr<Callable> c) { Value v; v.kind_ = Kind::Callable; v.data_ = std::move(c); return v; }

int64_t Value::as_int() const { return kind_ == Kind::Bool ? (std::get<bool>(data_) ? 1 : 0) : std::get<int64_t>(data_); }
double Value::as_double() const {
    if (kind_ == Kind::Float) return std::get<double>(data_);
    return static_cast<double>(as_int());
}

std::string Value::undefined_hint() const {
    if (kind_ == Kind::Undefined && std::holds_alternative<std::shared_ptr<const std::string>>(data_))
        return *std::get<std::shared_ptr<const std::string>>(data_);
    return "the value is undefined";
}

const void* Value::identity() const noexcept {
    switch (kind_) {
        case Kind::String: return std::get<std::shared_ptr<const std::string>>(data_).get();
        case Kind::List: return std::get<std::shared_ptr<const List>>(data_).get();
        case Kind::Dict: return std::get<std::shared_ptr<Dict>>(data_).get();
        case Kind::Callable: return std::get<std::shared_ptr<Callable>>(data_).get();
        default: return nullptr;
    }
}

std::string type_name(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return "Undefined";
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "str";
        case Kind::List: return v.is_tuple() ? "tuple" : "list";
        case Kind::Dict: return v.is_namespace() ? "Namespace" : "dict";
        case Kind::Callable: return "function";
    }
    return "object";
}

bool truthy(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined:
        case Kind::None: return false;
        case Kind::Bool: return v.as_bool();
        case Kind::Int: return v.as_int() != 0;
        case Kind::Float: return v.as_double() != 0.0;
        case Kind::String: return !v.as_string().empty();
        case Kind::List: return !v.as_list().items.empty();
        case Kind::Dict: return v.is_namespace() || !v.as_dict().entries.empty();
        case Kind::Callable: return true;
    }
    return false;
}

namespace {

bool equals_at(const Value& a, const Value& b, int depth) {
    check_nesting(depth);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Kind::Undefined:
        case Kind::None: return true;
        case Kind::String: return a.as_string() == b.as_string();
        case Kind::List: {
            const List& x = a.as_list();
            const List& y = b.as_list();
            if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
            for (size_t i = 0; i < x.items.size(); ++i)
                if (!equals_at(x.items[i], y.items[i], depth + 1)) return false;
            return true;
        }
        case Kind::Dict: {
            if (a.is_namespace() || b.is_namespace()) return a.identity() == b.identity();
            const Dict& x = a.as_dict();
            const Dict& y = b.as_dict();
            if (x.entries.size() != y.entries.size()) return false;
            for (const auto& [k, v] : x.entries) {
                const Value* other = y.find(k);
                if (!other || !equals_at(v, *other, depth + 1)) return false;
            }
            return true;
        }
        default: return a.identity() == b.identity();
    }
}

bool less_at(const Value& a, const Value& b, int depth) {
    check_nesting(depth);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 order = codepoint order
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        const auto& x = a.as_list().items;
        const auto& y = b.as_list().items;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (equals_at(x[i], y[i], depth + 1)) continue;
            return less_at(x[i], y[i], depth + 1);
        }
        return x.size() < y.size();
    }
    fail("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

void repr_into(std::string& out, const Value& v, bool top, int depth) {
    check_nesting(depth);
    switch (v.kind()) {
        case Kind::Undefined: break;
        case Kind::None: out += "None"; break;
        case Kind::Bool: out += v.as_bool() ? "True" : "False"; break;
        case Kind::Int: out += std::to_string(v.as_int()); break;
        case Kind::Float: out += text::float_repr(v.as_double()); break;
        case Kind::String:
            if (top) out += v.as_string();
            else out += text::string_repr(v.as_string());
            break;
        case Kind::List: {
            const List& l = v.as_list();
            out += l.is_tuple ? '(' : '[';
            for (size_t i = 0; i < l.items.size(); ++i) {
                if (i) out += ", ";
                repr_into(out, l.items[i], false, depth + 1);
            }
            if (l.is_tuple && l.items.size() == 1) out += ',';
            out += l.is_tuple ? ')' : ']';
            break;
        }
        case Kind::Dict: {
            const Dict& d = v.as_dict();
            if (d.is_namespace) out += "<Namespace ";
            out += '{';
            bool first = true;
            for (const auto& [k, x] : d.entries) {
                if (!first) out += ", ";
                first = false;
                repr_into(out, k, false, depth + 1);
                out += ": ";
                repr_into(out, x, false, depth + 1);
            }
            out += '}';
            if (d.is_namespace) out += '>';
            break;
        }
        case Kind::Callable: out += "<function " + v.as_callable().name + ">"; break;
    }
    check_string_size(out.size());
}

}  // namespace

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }
bool less(const Value& a, const Value& b) { return less_at(a, b, 0); }

std::string to_str(const Value& v) {
    std::string out;
    repr_into(out, v, true, 0);
    return out;
}

std::string to_repr(const Value& v) {
    std::string out;
    repr_into(out, v, false, 0);
    return out;
}

bool contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case Kind::Undefined: return false;
        case Kind::String:
            if (!item.is_string())
                fail("'in <string>' requires string as left operand, not " + type_name(item));
            return container.as_string().find(item.as_string()) != std::string::npos;
        case Kind::List:
            for (const Value& x : container.as_list().items)
                if (equals(x, item)) return true;
            return false;
        case Kind::Dict: return container.as_dict().find(item) != nullptr;
        default: fail("argument of type '" + type_name(container) + "' is not iterable");
    }
}

int64_t length(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return 0;
        case Kind::String: return static_cast<int64_t>(text::length(v.as_string()));
        case Kind::List: return static_cast<int64_t>(v.as_list().items.size());
        case Kind::Dict: return static_cast<int64_t>(v.as_dict().entries.size());
        default: fail("object of type '" + type_name(v) + "' has no len()");
    }
}

std::vector<Value> iterate(const Value& v) {
    std::vector<Value> out;
    switch (v.kind()) {
        case Kind::Undefined: break;
        case Kind::String:
            for (uint32_t cp : text::decode(v.as_string())) {
                std::string s;
                text::append(s, cp);
                out.push_back(Value::string(std::move(s)));
            }
            break;
        case Kind::List: out = v.as_list().items; break;
        case Kind::Dict:
            if (v.is_namespace()) fail("'Namespace' object is not iterable");
            out.reserve(v.as_dict().entries.size());
            for (const auto& entry : v.as_dict().entries) out.push_back(entry.first);
            break;
        default: fail("'" + type_name(v) + "' object is not iterable");
    }
    charge(out.size() * sizeof(Value));
    return out;
}

}  // namespace genie::chat::jinja
