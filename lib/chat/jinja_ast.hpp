// The syntax tree of a parsed Jinja template. Immutable after parsing; shared by renders.
#pragma once

#include "chat/jinja_value.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace genie::chat::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
    Literal,      ///< literal
    Name,         ///< name
    List,         ///< children = items
    Tuple,        ///< children = items
    Dict,         ///< children = key, value, key, value ...
    GetAttr,      ///< children[0].name
    GetItem,      ///< children[0][children[1]]
    Slice,        ///< children[0][children[1]:children[2]:children[3]] (null = omitted)
    Call,         ///< children[0](args, kwargs)
    Filter,       ///< children[0] | name(args, kwargs)
    Test,         ///< children[0] is [not] name(args, kwargs)
    Negate,       ///< -children[0]
    Plus,         ///< +children[0]
    Not,          ///< not children[0]
    Binary,       ///< children[0] op children[1]
    And,          ///< children[0] and children[1]
    Or,           ///< children[0] or children[1]
    Compare,      ///< children[0] ops[0] children[1] ops[1] children[2] ...
    Conditional,  ///< children[0] if children[1] else children[2] (null = undefined)
    Placeholder,  ///< the input of a block filter ({% filter %}, {% set x | f %})
};

enum class BinaryOp { Add, Subtract, Multiply, Divide, FloorDivide, Modulo, Power, Concat };

struct Expr {
    ExprKind kind = ExprKind::Literal;
    int line = 0;
    int column = 0;
    Value literal;
    std::string name;
    BinaryOp op = BinaryOp::Add;
    bool negated = false;
    std::vector<ExprPtr> children;
    std::vector<std::string> compare_ops;  ///< "==", "!=", "<", "<=", ">", ">=", "in", "notin"
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

/// What an assignment writes to: a name, `ns.attr`, or a tuple of names to unpack into.
struct Target {
    enum class Kind { Name, Attribute, Tuple } kind = Kind::Name;
    std::string name;  ///< the variable (Name), the namespace variable (Attribute)
    std::string attribute;
    std::vector<Target> items;
};

enum class StmtKind { Text, Print, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, Break, Continue, With, Scope };

struct Stmt {
    StmtKind kind = StmtKind::Text;
    int line = 0;
    int column = 0;
    std::string text;                               ///< Text
    ExprPtr expr;                                   ///< Print, Set, For (iterable), CallBlock (the call)
    std::vector<std::pair<ExprPtr, Body>> branches;  ///< If: (condition, body) for if and each elif
    Body body;                                      ///< For, SetBlock, Macro, CallBlock, FilterBlock, With, Scope
    Body else_body;                                 ///< If, For
    Target target;                                  ///< For, Set, SetBlock
    ExprPtr condition;                              ///< For: the `if` filter
    bool recursive = false;                         ///< For
    std::string name;                               ///< Macro
    std::vector<std::string> params;                ///< Macro, CallBlock (caller's parameters)
    std::vector<ExprPtr> defaults;                  ///< one per param, null = required
    ExprPtr filter;                                 ///< SetBlock, FilterBlock: chain over a Placeholder
    std::vector<std::pair<Target, ExprPtr>> assignments;  ///< With
};

/// A parsed template.
struct Template {
    Body body;
};

}  // namespace genie::chat::jinja
