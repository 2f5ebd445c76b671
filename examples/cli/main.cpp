// genie-cli: the example command-line front end of libgenie.
#include "commands.hpp"

#include <genie/error.hpp>
#include <genie/version.h>

#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

namespace {

struct Command {
    std::string_view name;
    int (*run)(genie::cli::Args);
    std::string_view summary;
};

constexpr Command kCommands[] = {
    {"info", genie::cli::cmd_info, "info MODEL.gguf [--all-metadata] [--system]: model summary and tensor table"},
    {"run", genie::cli::cmd_run, "run -m MODEL.gguf -p PROMPT [-n N] [--temp T] [--threads T] [--ids]: generate text"},
    {"chat", genie::cli::cmd_chat, "chat -m MODEL.gguf [-s SYSTEM] [--no-think] [--hide-reasoning]: interactive chat"},
    {"tokenize", genie::cli::cmd_tokenize, "tokenize -m MODEL.gguf (-p TEXT | --file PATH): token ids on one line"},
    {"detokenize", genie::cli::cmd_detokenize, "detokenize -m MODEL.gguf IDS...: the text of token ids"},
    {"convert-tokenizer", genie::cli::cmd_convert_tokenizer,
     "convert-tokenizer HF_DIR -o OUT.gguf: Hugging Face tokenizer files to a GGUF vocab"},
    {"bench", genie::cli::cmd_bench,
     "bench -m MODEL.gguf [-p N,..] [-n N,..] [-d D,..] [-r R] [-t T] [--ttft-prompt N] [--kv-type T] [--json]: llama-bench-style speed table"},
};

void print_usage(std::FILE* out) {
    fmt::print(out, "genie-cli {} - libgenie command-line tool\n\nusage: genie-cli COMMAND [ARGS...]\n\ncommands:\n",
               GENIE_VERSION_STRING);
    for (const Command& c : kCommands) fmt::print(out, "  {}\n", c.summary);
    fmt::print(out, "  --version: print the version\n");
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string_view> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
        print_usage(args.empty() ? stderr : stdout);
        return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
        fmt::print("genie-cli {}\n", GENIE_VERSION_STRING);
        return 0;
    }
    for (const Command& c : kCommands) {
        if (c.name != args[0]) continue;
        try {
            return c.run(genie::cli::Args(args).subspan(1));
        } catch (const genie::Error& e) {
            fmt::print(stderr, "genie-cli {}: error [{}]: {}\n", c.name, genie::error_code_name(e.code()), e.what());
            return 1;
        } catch (const std::exception& e) {
            fmt::print(stderr, "genie-cli {}: error: {}\n", c.name, e.what());
            return 1;
        }
    }
    fmt::print(stderr, "genie-cli: unknown command '{}'\n\n", args[0]);
    print_usage(stderr);
    return 2;
}
