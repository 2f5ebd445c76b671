// Scoping follows jinja2: a `for` iteration, a macro call, a `with` block and a block
// capture ({% set %}...{% endset %}, {% filter %}, call-block bodies) each get a child scope,
// so `set` inside them does not leak out; `if` shares its enclosing scope; namespace()
// objects carry state out of loops.
#include "chat/jinja_interpreter.hpp"

#include "chat/jinja_builtins.hpp"

namespace genie::chat::jinja {

namespace {
// Nesting of evaluation (expressions, blocks, macro calls, recursive loops) — bounds the
// native stack. Templates the parser accepts nest at most kMaxParseDepth per expression.
constexpr int kMaxEvalDepth = 400;
}  // namespace

struct Interpreter::DepthGuard {
    Interpreter& in;
    explicit DepthGuard(Interpreter& interpreter) : in(interpreter) {
        if (++in.depth_ > kMaxEvalDepth) {
            --in.depth_;
            fail("the template recursed too deeply (more than " + std::to_string(kMaxEvalDepth) +
                 " nested evaluations: unbounded macro or loop recursion?)");
        }
    }
    ~DepthGuard() { --in.depth_; }
};

Interpreter::Interpreter(const Template& tmpl, RenderSettings settings) : template_(tmpl), settings_(settings) {}

Interpreter::~Interpreter() {
    // Namespaces may reference themselves (ns.self = ns); clearing them breaks every cycle.
    for (auto& ns : namespaces_) {
        ns->entries.clear();
        ns->string_index.clear();
    }
}

std::string Interpreter::render(const Dict& variables) {
    root_ = std::make_shared<Scope>();
    for (const auto& [k, v] : variables.entries)
        if (k.is_string()) root_->vars[k.as_string()] = v;
    std::string out;
    out_ = &out;
    exec_body(template_.body, root_);
    out_ = nullptr;
    root_.reset();
    return out;
}

void Interpreter::write(std::string_view s) {
    if (out_->size() + s.size() > settings_.max_output_bytes)
        fail("the rendered text would exceed the output size limit of " + std::to_string(settings_.max_output_bytes) +
             " bytes");
    out_->append(s);
}

void Interpreter::step() {
    if (++steps_ > settings_.max_steps) fail("the template exceeded the evaluation step limit");
}

std::string Interpreter::capture(const Body& body, const std::shared_ptr<Scope>& scope) {
    std::string buffer;
    std::string* saved = out_;
    out_ = &buffer;
    try {
        exec_body(body, scope);
    } catch (...) {
        out_ = saved;
        throw;
    }
    out_ = saved;
    return buffer;
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const std::shared_ptr<Scope>& scope) {
    for (const auto& s : body) {
        const Flow f = exec(*s, scope);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

namespace {
std::shared_ptr<Scope> child_of(const std::shared_ptr<Scope>& parent) {
    auto s = std::make_shared<Scope>();
    s->parent = parent;
    return s;
}

void attach_position(TemplateError& e, int line, int column) {
    if (e.line == 0) {
        e.line = line;
        e.column = column;
    }
}
}  // namespace

Interpreter::Flow Interpreter::exec(const Stmt& s, const std::shared_ptr<Scope>& scope) {
    step();
    try {
        switch (s.kind) {
            case StmtKind::Text: write(s.text); return Flow::Normal;
            case StmtKind::Print: {
                const Value v = eval(*s.expr, *scope);
                if (v.is_string()) write(v.as_string());
                else write(to_str(v));
                return Flow::Normal;
            }
            case StmtKind::If: {
                DepthGuard guard(*this);
                for (const auto& [cond, body] : s.branches)
                    if (truthy(eval(*cond, *scope))) return exec_body(body, scope);
                return exec_body(s.else_body, scope);
            }
            case StmtKind::For: {
                DepthGuard guard(*this);
                return exec_for(s, scope);
            }
            case StmtKind::Set: assign(s.target, eval(*s.expr, *scope), *scope); return Flow::Normal;
            case StmtKind::SetBlock: {
                DepthGuard guard(*this);
                Value v = Value::string(capture(s.body, child_of(scope)));
                if (s.filter) {
                    const Value saved = placeholder_;
                    placeholder_ = v;
                    v = eval(*s.filter, *scope);
                    placeholder_ = saved;
                }
                assign(s.target, v, *scope);
                return Flow::Normal;
            }
            case StmtKind::Macro: scope->vars[s.name] = define_macro(s, scope); return Flow::Normal;
            case StmtKind::CallBlock: {
                DepthGuard guard(*this);
                exec_call_block(s, scope);
                return Flow::Normal;
            }
            case StmtKind::FilterBlock: {
                DepthGuard guard(*this);
                const Value saved = placeholder_;
                placeholder_ = Value::string(capture(s.body, child_of(scope)));
                const Value v = eval(*s.filter, *scope);
                placeholder_ = saved;
                write(to_str(v));
                return Flow::Normal;
            }
            case StmtKind::Break: return Flow::Break;
            case StmtKind::Continue: return Flow::Continue;
            case StmtKind::With: {
                DepthGuard guard(*this);
                auto inner = child_of(scope);
                for (const auto& [target, expr] : s.assignments) assign(target, eval(*expr, *scope), *inner);
                return exec_body(s.body, inner);
            }
            case StmtKind::Scope: {
                DepthGuard guard(*this);
                return exec_body(s.body, scope);
            }
        }
    } catch (TemplateError& e) {
        attach_position(e, s.line, s.column);
        throw;
    }
    return Flow::Normal;
}

void Interpreter::assign(const Target& target, const Value& value, Scope& scope) {
    switch (target.kind) {
        case Target::Kind::Name: scope.vars[target.name] = value; return;
        case Target::Kind::Attribute: {
            const Value ns = lookup(target.name, scope);
            if (!ns.is_namespace()) fail("cannot assign attribute on non-namespace object '" + target.name + "'");
            ns.as_dict().set(Value::string(target.attribute), value);
            return;
        }
        case Target::Kind::Tuple: {
            const std::vector<Value> items = iterate(value);
            if (items.size() != target.items.size())
                fail("cannot unpack " + std::to_string(items.size()) + " values into " +
                     std::to_string(target.items.size()) + " names");
            for (size_t i = 0; i < items.size(); ++i) assign(target.items[i], items[i], scope);
            return;
        }
    }
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope) {
    const Value iterable = eval(*s.expr, *scope);
    run_loop(s, iterable, scope, 0);
    return Flow::Normal;
}

void Interpreter::run_loop(const Stmt& s, const Value& iterable, const std::shared_ptr<Scope>& scope, int loop_depth) {
    if (iterable.is_none()) fail("'NoneType' object is not iterable");
    std::vector<Value> items = iterate(iterable);
    if (s.condition) {
        std::vector<Value> kept;
        for (Value& item : items) {
            auto test_scope = child_of(scope);
            assign(s.target, item, *test_scope);
            if (truthy(eval(*s.condition, *test_scope))) kept.push_back(std::move(item));
        }
        items = std::move(kept);
    }
    if (items.empty()) {
        exec_body(s.else_body, child_of(scope));
        return;
    }
    const auto n = static_cast<int64_t>(items.size());
    auto attributes = std::make_shared<Dict>();
    auto loop = std::make_shared<Callable>();
    loop->name = "loop";
    loop->attributes = attributes;
    if (s.recursive) {
        loop->function = [this, &s, scope, loop_depth](Interpreter&, CallArgs& args) {
            if (args.positional.size() != 1) fail("loop() takes exactly one argument");
            DepthGuard guard(*this);
            std::string buffer;
            std::string* saved = out_;
            out_ = &buffer;
            try {
                run_loop(s, args.positional[0], scope, loop_depth + 1);
            } catch (...) {
                out_ = saved;
                throw;
            }
            out_ = saved;
            return Value::string(std::move(buffer));
        };
    } else {
        loop->function = [](Interpreter&, CallArgs&) -> Value {
            fail("the loop is not recursive: add 'recursive' to the for tag to call loop()");
        };
    }
    const Value loop_value = Value::callable(loop);
    auto set = [&](const char* key, Value v) { attributes->set(Value::string(key), std::move(v)); };
    auto changed_state = std::make_shared<std::optional<Value>>();
    auto changed = std::make_shared<Callable>();
    changed->name = "changed";
    changed->function = [changed_state](Interpreter&, CallArgs& args) {
        const Value current = Value::list(args.positional);
        if (*changed_state && equals(**changed_state, current)) return Value::boolean(false);
        *changed_state = current;
        return Value::boolean(true);
    };
    set("changed", Value::callable(changed));
    set("length", Value::integer(n));
    set("depth", Value::integer(loop_depth + 1));
    set("depth0", Value::integer(loop_depth));
    for (int64_t i = 0; i < n; ++i) {
        if (++iterations_ > settings_.max_loop_iterations)
            fail("the template exceeded the loop iteration limit of " + std::to_string(settings_.max_loop_iterations));
        auto body_scope = child_of(scope);
        const auto idx = static_cast<size_t>(i);
        assign(s.target, items[idx], *body_scope);
        set("index0", Value::integer(i));
        set("index", Value::integer(i + 1));
        set("revindex0", Value::integer(n - i - 1));
        set("revindex", Value::integer(n - i));
        set("first", Value::boolean(i == 0));
        set("last", Value::boolean(i == n - 1));
        set("previtem", i > 0 ? items[idx - 1] : Value::undefined("there is no previous item"));
        set("nextitem", i + 1 < n ? items[idx + 1] : Value::undefined("there is no next item"));
        auto cycle = std::make_shared<Callable>();
        cycle->name = "cycle";
        cycle->function = [i](Interpreter&, CallArgs& args) {
            if (args.positional.empty()) fail("no items for cycling given");
            return args.positional[static_cast<size_t>(i) % args.positional.size()];
        };
        set("cycle", Value::callable(cycle));
        body_scope->vars["loop"] = loop_value;
        const Flow f = exec_body(s.body, body_scope);
        if (f == Flow::Break) break;
    }
    loop->function = nullptr;  // the closure holds `scope`; drop it so no cycle outlives the loop
    loop->function = [](Interpreter&, CallArgs&) -> Value { fail("the loop has ended"); };
}

Value Interpreter::define_macro(const Stmt& s, const std::shared_ptr<Scope>& scope) {
    auto macro = std::make_shared<Callable>();
    macro->name = s.name;
    std::weak_ptr<Scope> weak_scope = scope;
    const Stmt* stmt = &s;
    macro->function = [this, stmt, weak_scope](Interpreter&, CallArgs& args) {
        DepthGuard guard(*this);
        std::shared_ptr<Scope> parent = weak_scope.lock();
        if (!parent) parent = root_;
        auto frame = child_of(parent);
        const size_t n_params = stmt->params.size();
        std::vector<bool> bound(n_params, false);
        std::vector<Value> varargs;
        for (size_t i = 0; i < args.positional.size(); ++i) {
            if (i < n_params) {
                frame->vars[stmt->params[i]] = args.positional[i];
                bound[i] = true;
            } else {
                varargs.push_back(args.positional[i]);
            }
        }
        auto kwargs = std::make_shared<Dict>();
        for (auto& [key, value] : args.keyword) {
            bool matched = false;
            for (size_t i = 0; i < n_params; ++i)
                if (stmt->params[i] == key) {
                    if (bound[i]) fail("macro '" + stmt->name + "' got multiple values for argument '" + key + "'");
                    frame->vars[key] = value;
                    bound[i] = true;
                    matched = true;
                }
            if (!matched) {
                if (key == "caller") frame->vars["caller"] = value;
                else kwargs->set(Value::string(key), value);
            }
        }
        for (size_t i = 0; i < n_params; ++i) {
            if (bound[i]) continue;
            if (stmt->defaults[i]) frame->vars[stmt->params[i]] = eval(*stmt->defaults[i], *frame);
            else frame->vars[stmt->params[i]] = Value::undefined("parameter '" + stmt->params[i] + "' was not provided");
        }
        frame->vars["varargs"] = Value::list(std::move(varargs), true);
        frame->vars["kwargs"] = Value::dict(kwargs);
        return Value::string(capture(stmt->body, frame));
    };
    return Value::callable(macro);
}

void Interpreter::exec_call_block(const Stmt& s, const std::shared_ptr<Scope>& scope) {
    const Expr& call_expr = *s.expr;
    const Value callee = eval(*call_expr.children[0], *scope);
    CallArgs args = eval_args(call_expr, *scope);
    auto caller = std::make_shared<Callable>();
    caller->name = "caller";
    std::weak_ptr<Scope> weak_scope = scope;
    const Stmt* stmt = &s;
    caller->function = [this, stmt, weak_scope](Interpreter&, CallArgs& caller_args) {
        DepthGuard guard(*this);
        std::shared_ptr<Scope> parent = weak_scope.lock();
        if (!parent) parent = root_;
        auto frame = child_of(parent);
        for (size_t i = 0; i < stmt->params.size(); ++i) {
            if (i < caller_args.positional.size()) frame->vars[stmt->params[i]] = caller_args.positional[i];
            else if (stmt->defaults[i]) frame->vars[stmt->params[i]] = eval(*stmt->defaults[i], *frame);
            else frame->vars[stmt->params[i]] = Value::undefined("parameter '" + stmt->params[i] + "' was not provided");
        }
        for (auto& [key, value] : caller_args.keyword) frame->vars[key] = value;
        return Value::string(capture(stmt->body, frame));
    };
    args.keyword.emplace_back("caller", Value::callable(caller));
    write(to_str(call(callee, args)));
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
    if (callee.is_undefined()) fail(callee.undefined_hint() + " (called as a function)");
    if (!callee.is_callable()) fail("'" + type_name(callee) + "' object is not callable");
    const Callable& c = callee.as_callable();
    if (!c.function) fail("'" + c.name + "' is not callable");
    DepthGuard guard(*this);
    return c.function(*this, args);
}

Value Interpreter::lookup(const std::string& name, const Scope& scope) const {
    for (const Scope* s = &scope; s; s = s->parent.get()) {
        const auto it = s->vars.find(name);
        if (it != s->vars.end()) return it->second;
    }
    if (auto g = global_function(name)) return *g;
    return Value::undefined("'" + name + "' is undefined");
}

CallArgs Interpreter::eval_args(const Expr& e, Scope& scope) {
    CallArgs args;
    args.positional.reserve(e.args.size());
    for (const auto& a : e.args) args.positional.push_back(eval(*a, scope));
    for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v, scope));
    return args;
}

bool Interpreter::compare(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return equals(a, b);
    if (op == "!=") return !equals(a, b);
    if (op == "<") return less(a, b);
    if (op == ">") return less(b, a);
    if (op == "<=") return less(a, b) || equals(a, b);
    if (op == ">=") return less(b, a) || equals(a, b);
    if (op == "in") return contains(b, a);
    return !contains(b, a);  // notin
}

Value Interpreter::eval(const Expr& e, Scope& scope) {
    step();
    DepthGuard guard(*this);
    try {
        return eval_inner(e, scope);
    } catch (TemplateError& err) {
        attach_position(err, e.line, e.column);
        throw;
    }
}

Value Interpreter::eval_inner(const Expr& e, Scope& scope) {
    switch (e.kind) {
        case ExprKind::Literal: return e.literal;
        case ExprKind::Name: return lookup(e.name, scope);
        case ExprKind::Placeholder: return placeholder_;
        case ExprKind::List:
        case ExprKind::Tuple: {
            std::vector<Value> items;
            items.reserve(e.children.size());
            for (const auto& c : e.children) items.push_back(eval(*c, scope));
            return Value::list(std::move(items), e.kind == ExprKind::Tuple);
        }
        case ExprKind::Dict: {
            auto d = std::make_shared<Dict>();
            for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
                Value key = eval(*e.children[i], scope);
                if (key.is_list() && !key.is_tuple()) fail("unhashable type: 'list'");
                if (key.is_dict()) fail("unhashable type: 'dict'");
                d->set(key, eval(*e.children[i + 1], scope));
            }
            return Value::dict(d);
        }
        case ExprKind::GetAttr: return get_attribute(eval(*e.children[0], scope), e.name);
        case ExprKind::GetItem: {
            const Value obj = eval(*e.children[0], scope);
            return get_item(obj, eval(*e.children[1], scope));
        }
        case ExprKind::Slice: {
            const Value obj = eval(*e.children[0], scope);
            Value parts[3];
            for (int i = 0; i < 3; ++i)
                if (e.children[static_cast<size_t>(i) + 1]) parts[i] = eval(*e.children[static_cast<size_t>(i) + 1], scope);
            return get_slice(obj, parts[0], parts[1], parts[2]);
        }
        case ExprKind::Call: {
            const Value callee = eval(*e.children[0], scope);
            CallArgs args = eval_args(e, scope);
            return call(callee, args);
        }
        case ExprKind::Filter: {
            const Value input = eval(*e.children[0], scope);
            CallArgs args = eval_args(e, scope);
            return apply_filter(*this, e.name, input, args);
        }
        case ExprKind::Test: {
            const Value input = eval(*e.children[0], scope);
            CallArgs args = eval_args(e, scope);
            const bool r = apply_test(*this, e.name, input, args);
            return Value::boolean(e.negated ? !r : r);
        }
        case ExprKind::Negate: return negate(eval(*e.children[0], scope));
        case ExprKind::Plus: {
            Value v = eval(*e.children[0], scope);
            if (!v.is_number()) fail("bad operand type for unary +: '" + type_name(v) + "'");
            return v.is_bool() ? Value::integer(v.as_int()) : v;
        }
        case ExprKind::Not: return Value::boolean(!truthy(eval(*e.children[0], scope)));
        case ExprKind::Binary: {
            const Value a = eval(*e.children[0], scope);
            const Value b = eval(*e.children[1], scope);
            return binary_op(e.op, a, b);
        }
        case ExprKind::And: {
            Value a = eval(*e.children[0], scope);
            return truthy(a) ? eval(*e.children[1], scope) : a;
        }
        case ExprKind::Or: {
            Value a = eval(*e.children[0], scope);
            return truthy(a) ? a : eval(*e.children[1], scope);
        }
        case ExprKind::Compare: {
            Value left = eval(*e.children[0], scope);
            for (size_t i = 0; i < e.compare_ops.size(); ++i) {
                Value right = eval(*e.children[i + 1], scope);
                if (!compare(e.compare_ops[i], left, right)) return Value::boolean(false);
                left = std::move(right);
            }
            return Value::boolean(true);
        }
        case ExprKind::Conditional: {
            if (truthy(eval(*e.children[1], scope))) return eval(*e.children[0], scope);
            if (e.children[2]) return eval(*e.children[2], scope);
            return Value::undefined("the conditional expression has no else branch");
        }
    }
    fail("internal error: unknown expression kind", ErrorCode::Internal);
}

}  // namespace genie::chat::jinja
