// The Jinja parser: tokens -> syntax tree, with jinja2's grammar and operator precedence.
#pragma once

#include "chat/jinja_ast.hpp"

#include <memory>
#include <string_view>

namespace genie::chat::jinja {

/// Nesting limit for expressions and blocks together; deeper templates are rejected
/// (ErrorCode::Format) so that parsing and rendering never exhaust the stack.
inline constexpr int kMaxParseDepth = 128;

/// Parses a whole template. Throws TemplateError (ErrorCode::Format, with line and column).
std::shared_ptr<const Template> parse(std::string_view source);

}  // namespace genie::chat::jinja
