// Recursive descent over the token stream, following jinja2's parser.py precedence:
//   conditional (x if c else y) < or < and < not < comparison (chained, in, not in)
//   < + - < ~ < * / // % < ** < unary - + < postfix (. [] ()) and filters/tests (| is).
#include "chat/jinja_parser.hpp"

#include "chat/jinja_lexer.hpp"

#include <initializer_list>
#include <set>

namespace genie::chat::jinja {

namespace {

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

    std::shared_ptr<const Template> run() {
        auto tmpl = std::make_shared<Template>();
        tmpl->body = parse_body({});
        return tmpl;
    }

private:
    std::vector<Token> tokens_;
    size_t pos_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;

    struct DepthGuard {
        Parser& p;
        explicit DepthGuard(Parser& parser, const Token& at) : p(parser) {
            if (++p.depth_ > kMaxParseDepth)
                p.error(at, "the template nests expressions or blocks more than " + std::to_string(kMaxParseDepth) +
                                " levels deep");
        }
        ~DepthGuard() { --p.depth_; }
    };

    const Token& current() const { return tokens_[pos_]; }
    const Token& peek(size_t n = 1) const { return tokens_[std::min(pos_ + n, tokens_.size() - 1)]; }
    void advance() {
        if (pos_ + 1 < tokens_.size()) ++pos_;
    }

    [[noreturn]] void error(const Token& at, const std::string& message) const {
        TemplateError e;
        e.code = ErrorCode::Format;
        e.message = message;
        e.line = at.line;
        e.column = at.column;
        throw e;
    }

    static std::string describe(const Token& t) {
        switch (t.type) {
            case TokenType::Data: return "template text";
            case TokenType::VariableBegin: return "'{{'";
            case TokenType::VariableEnd: return "end of print statement '}}'";
            case TokenType::BlockBegin: return "'{%'";
            case TokenType::BlockEnd: return "end of statement block '%}'";
            case TokenType::Name: return "'" + t.value + "'";
            case TokenType::String: return "string literal";
            case TokenType::Integer: return "integer literal";
            case TokenType::Float: return "float literal";
            case TokenType::Operator: return "'" + t.value + "'";
            case TokenType::End: return "end of template";
        }
        return "token";
    }

    bool is_op(const char* op) const { return current().type == TokenType::Operator && current().value == op; }
    bool is_name(const char* name) const { return current().type == TokenType::Name && current().value == name; }
    bool skip_op(const char* op) {
        if (!is_op(op)) return false;
        advance();
        return true;
    }
    bool skip_name(const char* name) {
        if (!is_name(name)) return false;
        advance();
        return true;
    }
    void expect_op(const char* op) {
        if (!skip_op(op)) error(current(), std::string("expected '") + op + "', got " + describe(current()));
    }
    void expect_name(const char* name) {
        if (!skip_name(name)) error(current(), std::string("expected '") + name + "', got " + describe(current()));
    }
    std::string expect_identifier(const char* what) {
        if (current().type != TokenType::Name) error(current(), std::string("expected ") + what + ", got " + describe(current()));
        std::string v = current().value;
        advance();
        return v;
    }
    void expect_block_end() {
        if (current().type != TokenType::BlockEnd)
            error(current(), "expected end of statement block '%}', got " + describe(current()));
        advance();
    }

    ExprPtr make(ExprKind kind, const Token& at) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = at.line;
        e->column = at.column;
        return e;
    }

    // ---- statements ----------------------------------------------------------------

    // Parses until `{% <one of end_tags>`; leaves current() at that tag's name.
    Body parse_body(std::initializer_list<const char*> end_tags_list) {
        const std::vector<std::string> end_tags(end_tags_list.begin(), end_tags_list.end());
        Body body;
        while (true) {
            const Token& t = current();
            switch (t.type) {
                case TokenType::Data: {
                    auto s = std::make_unique<Stmt>();
                    s->kind = StmtKind::Text;
                    s->line = t.line;
                    s->column = t.column;
                    s->text = t.value;
                    body.push_back(std::move(s));
                    advance();
                    break;
                }
                case TokenType::VariableBegin: {
                    const Token begin = t;
                    advance();
                    auto s = std::make_unique<Stmt>();
                    s->kind = StmtKind::Print;
                    s->line = begin.line;
                    s->column = begin.column;
                    s->expr = parse_tuple(true, {});
                    if (current().type != TokenType::VariableEnd)
                        error(current(), "expected end of print statement '}}', got " + describe(current()));
                    advance();
                    body.push_back(std::move(s));
                    break;
                }
                case TokenType::BlockBegin: {
                    const Token begin = t;
                    advance();
                    if (current().type != TokenType::Name) error(current(), "expected a tag name after '{%', got " + describe(current()));
                    for (const auto& tag : end_tags)
                        if (current().value == tag) return body;
                    DepthGuard guard(*this, begin);
                    body.push_back(parse_statement(begin));
                    break;
                }
                case TokenType::End: {
                    if (!end_tags.empty()) {
                        std::string expected;
                        for (const auto& tag : end_tags) expected += (expected.empty() ? "'" : " or '") + tag + "'";
                        error(t, "unexpected end of template: expected " + expected + " (an unclosed block)");
                    }
                    return body;
                }
                default: error(t, "unexpected " + describe(t));
            }
        }
    }

    StmtPtr parse_statement(const Token& begin) {
        const Token tag = current();
        auto s = std::make_unique<Stmt>();
        s->line = begin.line;
        s->column = begin.column;
        const std::string& name = tag.value;
        advance();
        if (name == "if") {
            s->kind = StmtKind::If;
            while (true) {
                ExprPtr cond = parse_tuple(false, {});
                expect_block_end();
                Body b = parse_body({"elif", "else", "endif"});
                s->branches.emplace_back(std::move(cond), std::move(b));
                const std::string t = current().value;
                advance();
                if (t == "elif") continue;
                if (t == "else") {
                    expect_block_end();
                    s->else_body = parse_body({"endif"});
                    advance();
                }
                expect_block_end();
                break;
            }
        } else if (name == "for") {
            s->kind = StmtKind::For;
            s->target = parse_assign_target(false);
            expect_name("in");
            s->expr = parse_tuple(false, {"recursive"}, true);
            if (skip_name("if")) s->condition = parse_expression(true);
            if (skip_name("recursive")) s->recursive = true;
            expect_block_end();
            ++loop_depth_;
            s->body = parse_body({"endfor", "else"});
            --loop_depth_;
            if (current().value == "else") {
                advance();
                expect_block_end();
                s->else_body = parse_body({"endfor"});
            }
            advance();
            expect_block_end();
        } else if (name == "set") {
            s->target = parse_assign_target(true);
            if (skip_op("=")) {
                s->kind = StmtKind::Set;
                s->expr = parse_tuple(true, {});
                expect_block_end();
            } else {
                s->kind = StmtKind::SetBlock;
                if (s->target.kind != Target::Kind::Name && s->target.kind != Target::Kind::Attribute)
                    error(tag, "a block 'set' assigns to one name");
                s->filter = parse_block_filters(tag);
                expect_block_end();
                s->body = parse_body({"endset"});
                advance();
                expect_block_end();
            }
        } else if (name == "macro") {
            s->kind = StmtKind::Macro;
            s->name = expect_identifier("a macro name");
            parse_signature(*s);
            expect_block_end();
            const int saved = loop_depth_;
            loop_depth_ = 0;
            s->body = parse_body({"endmacro"});
            loop_depth_ = saved;
            advance();
            if (current().type == TokenType::Name) advance();  // {% endmacro name %}
            expect_block_end();
        } else if (name == "call") {
            s->kind = StmtKind::CallBlock;
            if (is_op("(")) parse_signature(*s);
            s->expr = parse_expression(true);
            if (s->expr->kind != ExprKind::Call) error(tag, "expected a call after 'call'");
            expect_block_end();
            const int saved = loop_depth_;
            loop_depth_ = 0;
            s->body = parse_body({"endcall"});
            loop_depth_ = saved;
            advance();
            expect_block_end();
        } else if (name == "filter") {
            s->kind = StmtKind::FilterBlock;
            s->filter = parse_filter_chain(make(ExprKind::Placeholder, tag), false);
            expect_block_end();
            s->body = parse_body({"endfilter"});
            advance();
            expect_block_end();
        } else if (name == "break" || name == "continue") {
            if (loop_depth_ == 0) error(tag, "'" + name + "' outside of a loop");
            s->kind = name == "break" ? StmtKind::Break : StmtKind::Continue;
            expect_block_end();
        } else if (name == "with") {
            s->kind = StmtKind::With;
            while (current().type != TokenType::BlockEnd) {
                if (!s->assignments.empty()) expect_op(",");
                Target t = parse_assign_target(false);
                expect_op("=");
                s->assignments.emplace_back(std::move(t), parse_expression(true));
            }
            expect_block_end();
            s->body = parse_body({"endwith"});
            advance();
            expect_block_end();
        } else if (name == "generation") {
            // Hugging Face's AssistantTracker tag: renders its body unchanged.
            s->kind = StmtKind::Scope;
            expect_block_end();
            s->body = parse_body({"endgeneration"});
            advance();
            expect_block_end();
        } else {
            error(tag, "unknown tag '" + name + "'");
        }
        return s;
    }

    // `| f(args) | g` after `{% set x` or `{% filter`.
    ExprPtr parse_block_filters(const Token& at) {
        ExprPtr node = make(ExprKind::Placeholder, at);
        if (!is_op("|")) return nullptr;
        return parse_filter_chain(std::move(node), true);
    }

    ExprPtr parse_filter_chain(ExprPtr input, bool starts_with_pipe) {
        ExprPtr node = std::move(input);
        bool first = true;
        while (true) {
            if (!(first && !starts_with_pipe)) {
                if (!skip_op("|")) break;
            }
            first = false;
            node = parse_filter(std::move(node));
        }
        return node;
    }

    // (a, b=default, ...) for macros and call blocks.
    void parse_signature(Stmt& s) {
        expect_op("(");
        while (!is_op(")")) {
            if (!s.params.empty()) expect_op(",");
            if (is_op(")")) break;
            s.params.push_back(expect_identifier("a parameter name"));
            if (skip_op("=")) s.defaults.push_back(parse_expression(true));
            else {
                if (!s.defaults.empty() && s.defaults.back())
                    error(current(), "a parameter without a default follows one with a default");
                s.defaults.push_back(nullptr);
            }
        }
        expect_op(")");
    }

    Target parse_assign_target(bool allow_namespace) {
        const Token at = current();
        if (allow_namespace && current().type == TokenType::Name && peek().type == TokenType::Operator &&
            peek().value == "." && peek(2).type == TokenType::Name) {
            Target t;
            t.kind = Target::Kind::Attribute;
            t.name = current().value;
            advance();
            advance();
            t.attribute = current().value;
            advance();
            return t;
        }
        const bool parenthesized = skip_op("(");
        Target tuple;
        tuple.kind = Target::Kind::Tuple;
        bool is_tuple = parenthesized;
        while (true) {
            if (current().type != TokenType::Name) error(current(), "expected a name to assign to, got " + describe(current()));
            Target t;
            t.name = current().value;
            advance();
            tuple.items.push_back(std::move(t));
            if (!skip_op(",")) break;
            is_tuple = true;
            if (current().type != TokenType::Name) break;
        }
        if (parenthesized) expect_op(")");
        if (!is_tuple) return std::move(tuple.items[0]);
        (void)at;
        return tuple;
    }

    // ---- expressions ---------------------------------------------------------------

    bool is_tuple_end(const std::vector<std::string>& extra_end) const {
        const Token& t = current();
        if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || t.type == TokenType::End) return true;
        if (t.type == TokenType::Operator && t.value == ")") return true;
        if (t.type == TokenType::Name)
            for (const auto& e : extra_end)
                if (t.value == e) return true;
        return false;
    }

    // jinja2 parse_tuple: comma-separated expressions form a tuple.
    ExprPtr parse_tuple(bool with_conditional, std::vector<std::string> extra_end, bool stop_at_if = false,
                        bool explicit_parentheses = false) {
        const Token at = current();
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        if (stop_at_if) extra_end.push_back("if");
        while (true) {
            if (!items.empty()) expect_op(",");
            if (is_tuple_end(extra_end)) break;
            items.push_back(parse_expression(with_conditional));
            if (is_op(",")) is_tuple = true;
            else break;
        }
        if (!is_tuple) {
            if (!items.empty()) return std::move(items[0]);
            if (!explicit_parentheses) error(current(), "expected an expression, got " + describe(current()));
        }
        auto t = make(ExprKind::Tuple, at);
        t->children = std::move(items);
        return t;
    }

    ExprPtr parse_expression(bool with_conditional) {
        DepthGuard guard(*this, current());
        return with_conditional ? parse_conditional() : parse_or();
    }

    ExprPtr parse_conditional() {
        ExprPtr expr = parse_or();
        while (is_name("if")) {
            const Token at = current();
            advance();
            ExprPtr cond = parse_or();
            ExprPtr otherwise;
            if (skip_name("else")) otherwise = parse_conditional();
            auto c = make(ExprKind::Conditional, at);
            c->children.push_back(std::move(expr));
            c->children.push_back(std::move(cond));
            c->children.push_back(std::move(otherwise));
            expr = std::move(c);
        }
        return expr;
    }

    ExprPtr binary(ExprKind kind, const Token& at, ExprPtr l, ExprPtr r) {
        auto e = make(kind, at);
        e->children.push_back(std::move(l));
        e->children.push_back(std::move(r));
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (is_name("or")) {
            const Token at = current();
            advance();
            left = binary(ExprKind::Or, at, std::move(left), parse_and());
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (is_name("and")) {
            const Token at = current();
            advance();
            left = binary(ExprKind::And, at, std::move(left), parse_not());
        }
        return left;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            const Token at = current();
            advance();
            DepthGuard guard(*this, at);
            auto e = make(ExprKind::Not, at);
            e->children.push_back(parse_not());
            return e;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        const Token at = current();
        ExprPtr first = parse_math1();
        ExprPtr cmp;
        while (true) {
            std::string op;
            const Token& t = current();
            if (t.type == TokenType::Operator &&
                (t.value == "==" || t.value == "!=" || t.value == "<" || t.value == "<=" || t.value == ">" || t.value == ">=")) {
                op = t.value;
                advance();
            } else if (is_name("in")) {
                op = "in";
                advance();
            } else if (is_name("not") && peek().type == TokenType::Name && peek().value == "in") {
                op = "notin";
                advance();
                advance();
            } else {
                break;
            }
            if (!cmp) {
                cmp = make(ExprKind::Compare, at);
                cmp->children.push_back(std::move(first));
            }
            cmp->compare_ops.push_back(op);
            cmp->children.push_back(parse_math1());
        }
        return cmp ? std::move(cmp) : std::move(first);
    }

    ExprPtr arith(BinaryOp op, const Token& at, ExprPtr l, ExprPtr r) {
        auto e = binary(ExprKind::Binary, at, std::move(l), std::move(r));
        e->op = op;
        return e;
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (is_op("+") || is_op("-")) {
            const Token at = current();
            const BinaryOp op = at.value == "+" ? BinaryOp::Add : BinaryOp::Subtract;
            advance();
            left = arith(op, at, std::move(left), parse_concat());
        }
        return left;
    }

    ExprPtr parse_concat() {
        ExprPtr left = parse_math2();
        while (is_op("~")) {
            const Token at = current();
            advance();
            left = arith(BinaryOp::Concat, at, std::move(left), parse_math2());
        }
        return left;
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token at = current();
            const BinaryOp op = at.value == "*" ? BinaryOp::Multiply
                                : at.value == "/" ? BinaryOp::Divide
                                : at.value == "//" ? BinaryOp::FloorDivide
                                                   : BinaryOp::Modulo;
            advance();
            left = arith(op, at, std::move(left), parse_pow());
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (is_op("**")) {
            const Token at = current();
            advance();
            left = arith(BinaryOp::Power, at, std::move(left), parse_unary(true));
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        const Token at = current();
        DepthGuard guard(*this, at);
        ExprPtr node;
        if (is_op("-") || is_op("+")) {
            advance();
            node = make(at.value == "-" ? ExprKind::Negate : ExprKind::Plus, at);
            node->children.push_back(parse_unary(false));
        } else {
            node = parse_primary();
        }
        node = parse_postfix(std::move(node));
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    ExprPtr parse_primary() {
        const Token t = current();
        switch (t.type) {
            case TokenType::Name: {
                advance();
                if (t.value == "true" || t.value == "True") { auto e = make(ExprKind::Literal, t); e->literal = Value::boolean(true); return e; }
                if (t.value == "false" || t.value == "False") { auto e = make(ExprKind::Literal, t); e->literal = Value::boolean(false); return e; }
                if (t.value == "none" || t.value == "None") { auto e = make(ExprKind::Literal, t); e->literal = Value::none(); return e; }
                auto e = make(ExprKind::Name, t);
                e->name = t.value;
                return e;
            }
            case TokenType::String: {
                std::string s;
                while (current().type == TokenType::String) {
                    s += current().value;
                    advance();
                }
                auto e = make(ExprKind::Literal, t);
                e->literal = Value::string(std::move(s));
                return e;
            }
            case TokenType::Integer: {
                advance();
                auto e = make(ExprKind::Literal, t);
                e->literal = Value::integer(t.integer);
                return e;
            }
            case TokenType::Float: {
                advance();
                auto e = make(ExprKind::Literal, t);
                e->literal = Value::floating(t.number);
                return e;
            }
            case TokenType::Operator:
                if (t.value == "(") {
                    advance();
                    ExprPtr e = parse_tuple(true, {}, false, true);
                    expect_op(")");
                    return e;
                }
                if (t.value == "[") {
                    advance();
                    auto e = make(ExprKind::List, t);
                    while (!is_op("]")) {
                        if (!e->children.empty()) expect_op(",");
                        if (is_op("]")) break;
                        e->children.push_back(parse_expression(true));
                    }
                    expect_op("]");
                    return e;
                }
                if (t.value == "{") {
                    advance();
                    auto e = make(ExprKind::Dict, t);
                    while (!is_op("}")) {
                        if (!e->children.empty()) expect_op(",");
                        if (is_op("}")) break;
                        e->children.push_back(parse_expression(true));
                        expect_op(":");
                        e->children.push_back(parse_expression(true));
                    }
                    expect_op("}");
                    return e;
                }
                break;
            default: break;
        }
        error(t, "unexpected " + describe(t) + " in an expression");
    }

    ExprPtr parse_postfix(ExprPtr node) {
        while (true) {
            const Token at = current();
            if (is_op(".")) {
                advance();
                if (current().type == TokenType::Name) {
                    auto e = make(ExprKind::GetAttr, at);
                    e->name = current().value;
                    advance();
                    e->children.push_back(std::move(node));
                    node = std::move(e);
                } else if (current().type == TokenType::Integer) {
                    auto e = make(ExprKind::GetItem, at);
                    auto key = make(ExprKind::Literal, current());
                    key->literal = Value::integer(current().integer);
                    advance();
                    e->children.push_back(std::move(node));
                    e->children.push_back(std::move(key));
                    node = std::move(e);
                } else {
                    error(current(), "expected an attribute name after '.', got " + describe(current()));
                }
            } else if (is_op("[")) {
                advance();
                node = parse_subscript(std::move(node), at);
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr node, const Token& at) {
        ExprPtr parts[3];
        bool is_slice = false;
        if (!is_op(":")) parts[0] = parse_expression(true);
        if (skip_op(":")) {
            is_slice = true;
            if (!is_op("]") && !is_op(":")) parts[1] = parse_expression(true);
            if (skip_op(":"))
                if (!is_op("]")) parts[2] = parse_expression(true);
        }
        expect_op("]");
        auto e = make(is_slice ? ExprKind::Slice : ExprKind::GetItem, at);
        e->children.push_back(std::move(node));
        if (is_slice)
            for (auto& p : parts) e->children.push_back(std::move(p));
        else
            e->children.push_back(std::move(parts[0]));
        return e;
    }

    void parse_call_args(Expr& e) {
        expect_op("(");
        bool first = true;
        while (!is_op(")")) {
            if (!first) {
                expect_op(",");
                if (is_op(")")) break;
            }
            first = false;
            if (is_op("*") || is_op("**")) error(current(), "*args and **kwargs in calls are not supported");
            if (current().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == "=") {
                std::string key = current().value;
                advance();
                advance();
                e.kwargs.emplace_back(std::move(key), parse_expression(true));
            } else {
                if (!e.kwargs.empty()) error(current(), "a positional argument follows a keyword argument");
                e.args.push_back(parse_expression(true));
            }
        }
        expect_op(")");
    }

    ExprPtr parse_call(ExprPtr callee) {
        auto e = make(ExprKind::Call, current());
        e->children.push_back(std::move(callee));
        parse_call_args(*e);
        return e;
    }

    ExprPtr parse_filter(ExprPtr input) {
        const Token at = current();
        auto e = make(ExprKind::Filter, at);
        e->name = expect_identifier("a filter name");
        while (is_op(".") && peek().type == TokenType::Name) {  // dotted filter names
            advance();
            e->name += "." + current().value;
            advance();
        }
        e->children.push_back(std::move(input));
        if (is_op("(")) parse_call_args(*e);
        return e;
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        while (true) {
            if (is_op("|")) {
                advance();
                node = parse_filter(std::move(node));
            } else if (is_name("is")) {
                const Token at = current();
                advance();
                auto e = make(ExprKind::Test, at);
                e->negated = skip_name("not");
                e->name = expect_identifier("a test name");
                while (is_op(".") && peek().type == TokenType::Name) {
                    advance();
                    e->name += "." + current().value;
                    advance();
                }
                e->children.push_back(std::move(node));
                const Token& c = current();
                if (is_op("(")) {
                    parse_call_args(*e);
                } else if ((c.type == TokenType::Name || c.type == TokenType::String || c.type == TokenType::Integer ||
                            c.type == TokenType::Float || is_op("[") || is_op("{")) &&
                           !(c.type == TokenType::Name && (c.value == "else" || c.value == "or" || c.value == "and"))) {
                    if (is_name("is")) error(c, "you cannot chain multiple tests with 'is'");
                    e->args.push_back(parse_postfix(parse_primary()));
                }
                node = std::move(e);
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }
};

}  // namespace

std::shared_ptr<const Template> parse(std::string_view source) { return Parser(tokenize(source)).run(); }

}  // namespace genie::chat::jinja
