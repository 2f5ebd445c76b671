// genie-cli run: generate a continuation of a prompt. stdout carries only the
// generated text (or token ids with --ids); timings go to stderr with --verbose.
#include "commands.hpp"
#include "load_progress.hpp"

#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <cstdio>
#include <string>

namespace genie::cli {
namespace {

void usage(std::FILE* out) {
    fmt::print(out,
               "usage: genie-cli run -m MODEL.gguf -p PROMPT [options]\n"
               "  -m, --model PATH     GGUF model\n"
               "  -p, --prompt TEXT    prompt text (BOS added as the vocabulary asks; special tokens parsed)\n"
               "  -n, --n-predict N    tokens to generate (default 128)\n"
               "  --temp T             temperature (default 0 = greedy)\n"
               "  --top-k K, --top-p P, --min-p P, --seed S   sampling (used when --temp > 0)\n"
               "  -c, --ctx-size N     context length (default: min(training context, 4096))\n"
               "  -t, --threads N      CPU threads (default: all)\n"
               "  --ids                print the generated token ids instead of text\n"
               "  --ignore-eos         do not stop at end-of-generation tokens\n"
               "  --grammar-file PATH  constrain the output to a GBNF grammar (llama.cpp's format; rule 'root')\n"
               "  --verbose            print timings to stderr\n"
               "{}",
               kSpeculativeUsage);
}

template <class T>
T parse_number(std::string_view flag, std::string_view text) {
    T value{};
    if constexpr (std::is_floating_point_v<T>) {
        try {
            size_t used = 0;
            value = static_cast<T>(std::stod(std::string(text), &used));
            if (used != text.size()) throw std::invalid_argument("trailing");
        } catch (const std::exception&) {
            throw Error(ErrorCode::InvalidArgument, fmt::format("{} expects a number, got '{}'", flag, text));
        }
    } else {
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || ptr != text.data() + text.size())
            throw Error(ErrorCode::InvalidArgument, fmt::format("{} expects an integer, got '{}'", flag, text));
    }
    return value;
}

}  // namespace

std::shared_ptr<const JsonConstraint> grammar_from_file(const std::string& path, const Tokenizer& tokenizer) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorCode::InvalidArgument, fmt::format("--grammar-file: cannot read '{}'", path));
    std::ostringstream text;
    text << in.rdbuf();
    return JsonConstraint::from_grammar(text.str(), tokenizer);
}

int cmd_run(Args args) {
    std::string model_path, prompt, grammar_file;
    bool have_prompt = false, ids = false, verbose = false;
    SamplerOptions sampling;
    SessionOptions session_options;
    GenerateOptions gen;
    gen.max_tokens = 128;
    SpeculativeFlags speculative;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (parse_speculative_flag(args, i, speculative)) continue;
        auto value = [&]() -> std::string_view {
            if (i + 1 >= args.size()) throw Error(ErrorCode::InvalidArgument, fmt::format("{} needs a value", a));
            return args[++i];
        };
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else if (a == "-m" || a == "--model") model_path = value();
        else if (a == "-p" || a == "--prompt") {
            prompt = value();
            have_prompt = true;
        } else if (a == "-n" || a == "--n-predict") gen.max_tokens = parse_number<int32_t>(a, value());
        else if (a == "--temp") sampling.temperature = parse_number<float>(a, value());
        else if (a == "--top-k") sampling.top_k = parse_number<int32_t>(a, value());
        else if (a == "--top-p") sampling.top_p = parse_number<float>(a, value());
        else if (a == "--min-p") sampling.min_p = parse_number<float>(a, value());
        else if (a == "--seed") sampling.seed = parse_number<uint32_t>(a, value());
        else if (a == "-c" || a == "--ctx-size") session_options.context_length = parse_number<int32_t>(a, value());
        else if (a == "-t" || a == "--threads") session_options.threads = parse_number<int32_t>(a, value());
        else if (a == "--ids") ids = true;
        else if (a == "--ignore-eos") gen.stop_on_eog = false;
        else if (a == "--grammar-file") grammar_file = value();
        else if (a == "--verbose") verbose = true;
        else {
            fmt::print(stderr, "genie-cli run: unknown argument '{}'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (model_path.empty() || !have_prompt) {
        usage(stderr);
        return 2;
    }
    if (gen.max_tokens < 0) throw Error(ErrorCode::InvalidArgument, "-n must be >= 0");

    const Model model = load_with_progress(model_path);
    if (!grammar_file.empty()) gen.constraint = grammar_from_file(grammar_file, model.tokenizer());
    apply_speculative_flags(speculative, session_options, gen);
    Session session(model, session_options);
    Sampler sampler(sampling);
    bool first = true;
    const GenerateResult result = session.generate(prompt, sampler, gen, [&](const Piece& piece) {
        if (ids) {
            if (piece.token != kNoToken) {
                fmt::print("{}{}", first ? "" : " ", piece.token);
                first = false;
            }
        } else {
            fmt::print("{}", piece.text);
        }
        std::fflush(stdout);
        return true;
    });
    if (ids || !result.text.empty()) fmt::print("\n");
    std::fflush(stdout);
    if (verbose) {
        const Timings& t = result.timings;
        const char* reason = result.finish_reason == FinishReason::Stop     ? "stop"
                             : result.finish_reason == FinishReason::Length ? "length"
                             : result.finish_reason == FinishReason::Timeout ? "timeout"
                                                                             : "cancelled";
        fmt::print(stderr,
                   "load: {:.1f} ms | prompt: {} tokens ({} reused) in {:.1f} ms, {:.1f} t/s | first token: {:.1f} ms | "
                   "generated: {} tokens, {:.1f} t/s | finish: {}\n",
                   t.load_ms, result.prompt_tokens, result.reused_prompt_tokens, t.prompt_eval_ms, t.prompt_tokens_per_s,
                   t.time_to_first_token_ms, result.completion_tokens, t.decode_tokens_per_s, reason);
        if (const std::string d = speculative_summary(result.draft_tokens, result.accepted_draft_tokens); !d.empty())
            fmt::print(stderr, "{}\n", d);
    }
    return 0;
}

}  // namespace genie::cli
