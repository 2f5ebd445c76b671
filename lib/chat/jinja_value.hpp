// Jinja values with Python semantics: the data a chat template computes with.
// Lists and strings are immutable (the sandbox HF uses forbids list.append and friends);
// only namespace() objects are mutated (`{% set ns.x = ... %}`), so they are the only
// reference type whose sharing is observable.
#pragma once

#include <genie/error.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace genie::chat::jinja {

class Interpreter;
class Value;

/// An error raised while parsing or rendering. `line` is 0 until a position is attached.
struct TemplateError {
    ErrorCode code = ErrorCode::InvalidArgument;
    std::string message;
    int line = 0;
    int column = 0;
    bool raised = false;  ///< from raise_exception(): the message is the template's own
};

[[noreturn]] void fail(std::string message, ErrorCode code = ErrorCode::InvalidArgument);

/// Resource limits of one render. Every string and list a render builds is charged here
/// (through the Value factories), so no template can build unbounded data, however it loops.
struct Budget {
    size_t max_string_bytes = 0;  ///< longest string (also the output limit)
    size_t bytes_left = 0;        ///< all strings and list slots built, together
};

/// Installs a budget for the current thread while alive (renders are synchronous).
class BudgetScope {
public:
    explicit BudgetScope(Budget& budget);
    ~BudgetScope();
    BudgetScope(const BudgetScope&) = delete;
    BudgetScope& operator=(const BudgetScope&) = delete;

private:
    Budget* previous_;
};

/// Charges `bytes` to the current budget (no-op without one); fails when it is spent.
void charge(size_t bytes);
/// Fails when a string of `bytes` would exceed the longest-string limit.
void check_string_size(size_t bytes);

struct List {
    std::vector<Value> items;
    bool is_tuple = false;
};

/// A Python dict: insertion-ordered; string keys are indexed.
struct Dict {
    std::vector<std::pair<Value, Value>> entries;
    std::unordered_map<std::string, size_t> string_index;
    bool is_namespace = false;

    const Value* find(const Value& key) const;
    const Value* find(const std::string& key) const;
    void set(const Value& key, Value value);
};

/// Arguments of a call: positional, then keyword (in source order).
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

using NativeFunction = std::function<Value(Interpreter&, CallArgs&)>;

/// A function value: a global (range, namespace ...), a bound method, a macro, `loop`.
struct Callable {
    std::string name;
    NativeFunction function;
    std::shared_ptr<Dict> attributes;  ///< readable attributes (loop.index ...), may be null
};

enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

class Value {
public:
    Value() = default;  // Undefined
    static Value undefined(std::string hint = {});
    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value floating(double d);
    static Value string(std::string s);
    static Value list(std::vector<Value> items, bool tuple = false);
    static Value dict(std::shared_ptr<Dict> d);
    static Value callable(std::shared_ptr<Callable> c);

    Kind kind() const noexcept { return kind_; }
    bool is_undefined() const noexcept { return kind_ == Kind::Undefined; }
    bool is_none() const noexcept { return kind_ == Kind::None; }
    bool is_bool() const noexcept { return kind_ == Kind::Bool; }
    bool is_int() const noexcept { return kind_ == Kind::Int; }
    bool is_float() const noexcept { return kind_ == Kind::Float; }
    bool is_number() const noexcept { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
    bool is_string() const noexcept { return kind_ == Kind::String; }
    bool is_list() const noexcept { return kind_ == Kind::List; }
    bool is_tuple() const noexcept { return kind_ == Kind::List && as_list().is_tuple; }
    bool is_dict() const noexcept { return kind_ == Kind::Dict; }
    bool is_namespace() const noexcept { return kind_ == Kind::Dict && as_dict().is_namespace; }
    bool is_callable() const noexcept { return kind_ == Kind::Callable; }

    bool as_bool() const { return std::get<bool>(data_); }
    int64_t as_int() const;  ///< Int or Bool
    double as_double() const;  ///< Int, Bool or Float
    const std::string& as_string() const { return *std::get<std::shared_ptr<const std::string>>(data_); }
    const List& as_list() const { return *std::get<std::shared_ptr<const List>>(data_); }
    Dict& as_dict() const { return *std::get<std::shared_ptr<Dict>>(data_); }
    const std::shared_ptr<Dict>& dict_ptr() const { return std::get<std::shared_ptr<Dict>>(data_); }
    Callable& as_callable() const { return *std::get<std::shared_ptr<Callable>>(data_); }
    /// Why an undefined value is undefined ("'x' is undefined"), for error messages.
    std::string undefined_hint() const;
    /// Identity of the shared object (for `is sameas`), null for scalars.
    const void* identity() const noexcept;

private:
    Kind kind_ = Kind::Undefined;
    std::variant<std::monostate, bool, int64_t, double, std::shared_ptr<const std::string>,
                 std::shared_ptr<const List>, std::shared_ptr<Dict>, std::shared_ptr<Callable>>
        data_;
};

/// Python's type name, for messages ("str", "int", "dict", "NoneType" ...).
std::string type_name(const Value& v);
/// Python truthiness (Undefined is false).
bool truthy(const Value& v);
/// Python `==` (Undefined equals only Undefined).
bool equals(const Value& a, const Value& b);
/// Python `<`: numbers, strings, lists/tuples of the same kind; anything else fails.
bool less(const Value& a, const Value& b);
/// Python `str(v)` (what `{{ v }}` prints; Undefined prints nothing).
std::string to_str(const Value& v);
/// Python `repr(v)`.
std::string to_repr(const Value& v);
/// `x in container` (substring, element, key); fails for non-containers.
bool contains(const Value& container, const Value& item);
/// Python len(); Undefined has length 0; fails for scalars.
int64_t length(const Value& v);
/// The items `for x in v` visits: list items, dict keys, string characters; Undefined is
/// empty; anything else fails.
std::vector<Value> iterate(const Value& v);

}  // namespace genie::chat::jinja
