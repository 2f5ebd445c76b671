// Jinja global functions (range, namespace, dict, raise_exception, strftime_now, cycler, joiner).
#include "chat/jinja_builtin_support.hpp"

#include <ctime>

namespace genie::chat::jinja {

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
