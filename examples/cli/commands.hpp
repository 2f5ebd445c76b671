// genie-cli subcommands. Each returns the process exit code; stdout carries only the
// command's result (machine-readable where the issue says so), diagnostics go to stderr.
#pragma once

#include <genie/constraint.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>

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

/// Speculative decoding flags shared by run, chat and bench (llama-server's names).
struct SpeculativeFlags {
    std::string draft_path;       ///< -md / --model-draft
    int32_t draft_threads = 0;    ///< -td / --threads-draft
    SpeculativeOptions options;   ///< --draft-max, --draft-min, --draft-p-min, --draft-adaptive, --spec-lookup
};
/// Usage lines of the speculative flags.
extern const char* const kSpeculativeUsage;
/// Consumes args[i] (and its value, advancing i) when it is a speculative flag; false
/// when it is another argument. Throws InvalidArgument for a missing or bad value.
bool parse_speculative_flag(Args args, size_t& i, SpeculativeFlags& flags);
/// Loads the draft model (when given) into `session` and copies the options to `generate`.
void apply_speculative_flags(const SpeculativeFlags& flags, SessionOptions& session, GenerateOptions& generate);
/// genie-cli bench --spec-prompts: plain against speculative decoding on a prompt set.
bool is_speculative_bench(Args args);
int cmd_bench_speculative(Args args);
/// "draft: 120 proposed, 96 kept (80.0 %)" or "" when nothing was proposed.
std::string speculative_summary(int64_t proposed, int64_t kept);

}  // namespace genie::cli
