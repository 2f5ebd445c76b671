// genie-cli chat: an interactive conversation using the model's own chat template.
// Each line on stdin is a user turn; the answer streams to stdout. Commands: /reset
// (forget the conversation), /exit. Reasoning (<think>) is shown dimmed on a terminal,
// or hidden with --hide-reasoning. Prompts and timings go to stderr.
#include "commands.hpp"
#include "load_progress.hpp"

#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

namespace genie::cli {
namespace {

void usage(std::FILE* out) {
    fmt::print(out,
               "usage: genie-cli chat -m MODEL.gguf [options]\n"
               "  -m, --model PATH        GGUF model (its tokenizer.chat_template is used; ChatML when absent)\n"
               "  -s, --system TEXT       system message\n"
               "  -n, --n-predict N       max tokens per answer (default 512)\n"
               "  --temp T                temperature (default 0.7; 0 = greedy)\n"
               "  --top-k K, --top-p P, --min-p P, --seed S\n"
               "  -c, --ctx-size N        context length (default: min(training context, 4096))\n"
               "  -t, --threads N         CPU threads (default: all)\n"
               "  --think | --no-think    Qwen3 enable_thinking on / off (default: the template's)\n"
               "  --hide-reasoning        do not print reasoning\n"
               "  --grammar-file PATH     constrain each answer to a GBNF grammar (rule 'root'; thinking off)\n"
               "  --verbose               print timings after each answer (stderr)\n"
               "{}"
               "stdin: one user message per line; /reset clears the conversation, /exit quits\n",
               kSpeculativeUsage);
}

}  // namespace

int cmd_chat(Args args) {
    std::string model_path, system, grammar_file;
    bool hide_reasoning = false, verbose = false;
    SamplerOptions sampling;
    sampling.temperature = 0.7f;
    SessionOptions session_options;
    ChatOptions chat;
    chat.generate.max_tokens = 512;
    SpeculativeFlags speculative;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (parse_speculative_flag(args, i, speculative)) continue;
        auto value = [&]() -> std::string {
            if (i + 1 >= args.size()) throw Error(ErrorCode::InvalidArgument, fmt::format("{} needs a value", a));
            return std::string(args[++i]);
        };
        auto number = [&](auto parse) {
            const std::string v = value();
            try {
                return parse(v);
            } catch (const std::exception&) {
                throw Error(ErrorCode::InvalidArgument, fmt::format("{} expects a number, got '{}'", a, v));
            }
        };
        auto to_int = [](const std::string& v) { return std::stoi(v); };
        auto to_float = [](const std::string& v) { return std::stof(v); };
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else if (a == "-m" || a == "--model") model_path = value();
        else if (a == "-s" || a == "--system") system = value();
        else if (a == "-n" || a == "--n-predict") chat.generate.max_tokens = number(to_int);
        else if (a == "--temp") sampling.temperature = number(to_float);
        else if (a == "--top-k") sampling.top_k = number(to_int);
        else if (a == "--top-p") sampling.top_p = number(to_float);
        else if (a == "--min-p") sampling.min_p = number(to_float);
        else if (a == "--seed") sampling.seed = static_cast<uint32_t>(number([](const std::string& v) { return std::stoul(v); }));
        else if (a == "-c" || a == "--ctx-size") session_options.context_length = number(to_int);
        else if (a == "-t" || a == "--threads") session_options.threads = number(to_int);
        else if (a == "--think") chat.enable_thinking = true;
        else if (a == "--no-think") chat.enable_thinking = false;
        else if (a == "--hide-reasoning") hide_reasoning = true;
        else if (a == "--grammar-file") grammar_file = value();
        else if (a == "--verbose") verbose = true;
        else {
            fmt::print(stderr, "genie-cli chat: unknown argument '{}'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (model_path.empty()) {
        usage(stderr);
        return 2;
    }
    const bool tty = ::isatty(STDOUT_FILENO) != 0;
    const bool prompt_user = ::isatty(STDIN_FILENO) != 0;
    const Model model = load_with_progress(model_path);
    if (!grammar_file.empty()) {
        chat.generate.constraint = grammar_from_file(grammar_file, model.tokenizer());
        chat.enable_thinking = false;  // the constrained answer is the grammar's text itself
    }
    apply_speculative_flags(speculative, session_options, chat.generate);
    Session session(model, session_options);
    Sampler sampler(sampling);
    std::vector<ChatMessage> history;
    if (!system.empty()) {
        ChatMessage m;
        m.role = "system";
        m.content = system;
        history.push_back(std::move(m));
    }
    const size_t base = history.size();
    std::string line;
    for (;;) {
        if (prompt_user) fmt::print(stderr, "> ");
        if (!std::getline(std::cin, line)) break;
        if (line == "/exit" || line == "/quit") break;
        if (line == "/reset") {
            history.resize(base);
            session.reset();
            fmt::print(stderr, "(conversation cleared)\n");
            continue;
        }
        if (line.empty()) continue;
        history.push_back({.role = "user", .content = line});
        bool in_reasoning = false;
        const ChatResult r = session.chat(history, sampler, chat, [&](const Piece& p) {
            if (p.kind == PieceKind::Reasoning) {
                if (hide_reasoning) return true;
                if (tty && !in_reasoning) fmt::print("\x1b[2m");
                in_reasoning = true;
            } else if (in_reasoning) {
                if (tty) fmt::print("\x1b[0m");
                fmt::print("\n");
                in_reasoning = false;
            }
            fmt::print("{}", p.text);
            std::fflush(stdout);
            return true;
        });
        if (in_reasoning && tty) fmt::print("\x1b[0m");
        fmt::print("\n");
        std::fflush(stdout);
        ChatMessage answer{.role = "assistant", .content = r.generation.text};
        history.push_back(std::move(answer));
        if (verbose) {
            const Timings& t = r.generation.timings;
            fmt::print(stderr, "[prompt {} tokens ({} reused), first token {:.1f} ms, {} tokens at {:.1f} t/s{}]\n",
                       r.generation.prompt_tokens, r.generation.reused_prompt_tokens, t.time_to_first_token_ms,
                       r.generation.completion_tokens, t.decode_tokens_per_s,
                       r.tool_calls.empty() ? "" : fmt::format(", tool call '{}'", r.tool_calls.front().name));
            if (const std::string d = speculative_summary(r.generation.draft_tokens, r.generation.accepted_draft_tokens);
                !d.empty())
                fmt::print(stderr, "[{}]\n", d);
        }
    }
    return 0;
}

}  // namespace genie::cli
