// Renders a parsed template: statements, expressions, scopes, macros, loops, limits.
#pragma once

#include "chat/jinja_ast.hpp"
#include "chat/jinja_value.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace genie::chat::jinja {

/// Limits and environment of one render.
struct RenderSettings {
    size_t max_output_bytes = size_t{16} << 20;
    uint64_t max_loop_iterations = 1'000'000;  ///< all loops of the render together
    uint64_t max_steps = 50'000'000;           ///< expressions and statements evaluated
    std::optional<int64_t> now_unix_seconds;   ///< for strftime_now; unset = now
};

/// A variable scope. Loop iterations, macro calls and block captures open a child scope;
/// `if` does not (as in jinja2).
struct Scope {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Scope> parent;
};

class Interpreter {
public:
    Interpreter(const Template& tmpl, RenderSettings settings);
    ~Interpreter();

    /// Renders with `variables` as the top-level names. Throws TemplateError.
    std::string render(const Dict& variables);

    /// Calls a callable value (macro, builtin, bound method); fails for anything else.
    Value call(const Value& callee, CallArgs& args);
    const RenderSettings& settings() const { return settings_; }
    /// Remembers a namespace so render() can break reference cycles through it at the end.
    void track_namespace(const std::shared_ptr<Dict>& ns) { namespaces_.push_back(ns); }

private:
    enum class Flow { Normal, Break, Continue };
    struct DepthGuard;

    const Template& template_;
    RenderSettings settings_;
    std::string* out_ = nullptr;
    std::shared_ptr<Scope> root_;
    int depth_ = 0;
    uint64_t steps_ = 0;
    uint64_t iterations_ = 0;
    Value placeholder_;
    std::vector<std::shared_ptr<Dict>> namespaces_;

    void write(std::string_view s);
    void step();
    Flow exec_body(const Body& body, const std::shared_ptr<Scope>& scope);
    Flow exec(const Stmt& s, const std::shared_ptr<Scope>& scope);
    Flow exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope);
    void run_loop(const Stmt& s, const Value& iterable, const std::shared_ptr<Scope>& scope, int loop_depth);
    void exec_call_block(const Stmt& s, const std::shared_ptr<Scope>& scope);
    Value define_macro(const Stmt& s, const std::shared_ptr<Scope>& scope);
    std::string capture(const Body& body, const std::shared_ptr<Scope>& scope);
    void assign(const Target& target, const Value& value, Scope& scope);

    Value eval(const Expr& e, Scope& scope);
    Value eval_inner(const Expr& e, Scope& scope);
    Value lookup(const std::string& name, const Scope& scope) const;
    CallArgs eval_args(const Expr& e, Scope& scope);
    bool compare(const std::string& op, const Value& a, const Value& b);
};

}  // namespace genie::chat::jinja
