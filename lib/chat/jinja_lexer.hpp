// The Jinja lexer: template text -> tokens, with jinja2's whitespace rules as HF configures
// them (trim_blocks, lstrip_blocks, `-`/`+` on tags, one trailing newline dropped,
// \r\n and \r read as \n).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace genie::chat::jinja {

enum class TokenType {
    Data,           ///< literal template text (value)
    VariableBegin,  ///< {{
    VariableEnd,    ///< }}
    BlockBegin,     ///< {%
    BlockEnd,       ///< %}
    Name,           ///< identifier or keyword (value)
    String,         ///< string literal, escapes decoded (value)
    Integer,        ///< integer literal (integer)
    Float,          ///< float literal (number)
    Operator,       ///< punctuation / operator (value)
    End,            ///< end of the template
};

struct Token {
    TokenType type = TokenType::End;
    std::string value;
    int64_t integer = 0;
    double number = 0;
    int line = 1;    ///< 1-based
    int column = 1;  ///< 1-based, in bytes
};

/// Splits `source` into tokens. Throws TemplateError (ErrorCode::Format) with the line and
/// column of the problem (unterminated tag, comment or string; bad character; unbalanced
/// brackets).
std::vector<Token> tokenize(std::string_view source);

}  // namespace genie::chat::jinja
