// genie-cli subcommands. Each returns the process exit code; stdout carries only the
// command's result (machine-readable where the issue says so), diagnostics go to stderr.
#pragma once

#include <genie/constraint.hpp>
#include <genie/model.hpp>

#include <memory>
#include <string>

#include <span>
#include <string_view>

namespace genie::cli {

using Args = std::span<const std::string_view>;  // arguments after the subcommand name

int cmd_info(Args args);
int cmd_run(Args args);
int cmd_chat(Args args);
int cmd_tokenize(Args args);
int cmd_detokenize(Args args);
int cmd_convert_tokenizer(Args args);
int cmd_bench(Args args);

/// The value of a --backend option: auto, cpu or cuda (genie::Error InvalidArgument else).
BackendKind parse_backend(std::string_view value);

/// The GBNF constraint of a --grammar-file option (genie::Error InvalidArgument when the
/// file cannot be read or the grammar does not compile).
std::shared_ptr<const JsonConstraint> grammar_from_file(const std::string& path, const Tokenizer& tokenizer);

}  // namespace genie::cli
