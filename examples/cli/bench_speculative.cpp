// genie-cli bench with speculative flags: plain against speculative decoding on a prompt
// set (docs/speculative.md). Each prompt of the file (one per line; "\n" in a line is a
// newline) is a user message rendered with the model's chat template; per repetition the
// plain run and the speculative run alternate, each from an empty cache. Rates are
// Timings::decode_tokens_per_s (tokens after the first / time after the first token, the
// draft's own prompt evaluation included), so the speculative figure is the effective rate.
#include "commands.hpp"
#include "load_progress.hpp"

#include "backend/cpu/kernels/kernels.hpp"

#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <fstream>
#include <string>
#include <vector>

namespace genie::cli {
namespace {

void usage(std::FILE* out) {
    fmt::print(out,
               "usage: genie-cli bench -m MODEL.gguf --spec-prompts FILE (-md DRAFT.gguf | --spec-lookup N) [options]\n"
               "  --spec-prompts FILE    one user message per line (\"\\n\" = newline); plain vs speculative\n"
               "  -n, --n-gen N          tokens per answer (default 128)\n"
               "  -r, --repetitions R    runs per prompt and mode, alternating (default 1)\n"
               "  -t, --threads T        CPU threads (default: all)\n"
               "  --temp T               temperature (default 0); --seed S (default 42)\n"
               "  --json                 one JSON object instead of the table\n"
               "{}",
               kSpeculativeUsage);
}

int32_t int_value(std::string_view flag, std::string_view text) {
    int32_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size() || v < 0)
        throw Error(ErrorCode::InvalidArgument, fmt::format("{} expects a non-negative integer, got '{}'", flag, text));
    return v;
}

std::vector<std::string> read_prompts(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error(ErrorCode::InvalidArgument, fmt::format("--spec-prompts: cannot read '{}'", path));
    std::vector<std::string> prompts;
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        std::string text;
        for (size_t i = 0; i < line.size(); ++i) {
            if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == 'n') {
                text += '\n';
                ++i;
            } else {
                text += line[i];
            }
        }
        prompts.push_back(std::move(text));
    }
    if (prompts.empty()) throw Error(ErrorCode::InvalidArgument, fmt::format("--spec-prompts: '{}' has no prompts", path));
    return prompts;
}

ChatMessage make_user_message(const std::string& text) {
    ChatMessage m;
    m.role = "user";
    m.content = text;
    return m;
}

struct Totals {
    double tokens = 0, ms = 0;
    int64_t proposed = 0, kept = 0;
    double rate() const { return ms > 0 ? tokens / (ms / 1000.0) : 0.0; }
};

}  // namespace

bool is_speculative_bench(Args args) {
    for (const std::string_view a : args)
        if (a == "--spec-prompts") return true;
    return false;
}

int cmd_bench_speculative(Args args) {
    std::string model_path, prompts_path;
    int32_t n_gen = 128, reps = 1;
    bool json_out = false;
    SamplerOptions sampling;
    SessionOptions session_options;
    SpeculativeFlags speculative;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        auto value = [&]() -> std::string_view {
            if (i + 1 >= args.size()) throw Error(ErrorCode::InvalidArgument, fmt::format("{} needs a value", a));
            return args[++i];
        };
        if (parse_speculative_flag(args, i, speculative)) continue;
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else if (a == "-m" || a == "--model") model_path = value();
        else if (a == "--spec-prompts") prompts_path = value();
        else if (a == "-n" || a == "--n-gen") n_gen = int_value(a, value());
        else if (a == "-r" || a == "--repetitions") reps = int_value(a, value());
        else if (a == "-t" || a == "--threads") session_options.threads = int_value(a, value());
        else if (a == "--temp") sampling.temperature = std::stof(std::string(value()));
        else if (a == "--seed") sampling.seed = static_cast<uint32_t>(int_value(a, value()));
        else if (a == "--json") json_out = true;
        else {
            fmt::print(stderr, "genie-cli bench: unknown argument '{}'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (model_path.empty() || (speculative.draft_path.empty() && speculative.options.lookup_ngram <= 0)) {
        usage(stderr);
        return 2;
    }
    const std::vector<std::string> prompts = read_prompts(prompts_path);
    const Model model = load_with_progress(model_path);
    SessionOptions spec_options = session_options;
    ChatOptions plain_chat, spec_chat;
    plain_chat.generate.max_tokens = spec_chat.generate.max_tokens = n_gen;
    plain_chat.generate.speculative.draft_max = 0;
    apply_speculative_flags(speculative, spec_options, spec_chat.generate);
    Session plain(model, session_options);
    Session spec(model, spec_options);

    Totals plain_total, spec_total;
    int identical = 0, runs = 0;
    nlohmann::json rows = nlohmann::json::array();
    if (!json_out)
        fmt::print("| prompt | tokens | plain t/s | speculative t/s | ratio | kept / proposed |{}\n",
                   sampling.temperature <= 0 ? " same tokens |" : "");
    for (size_t p = 0; p < prompts.size(); ++p) {
        const std::vector<ChatMessage> messages{make_user_message(prompts[p])};
        for (int32_t r = 0; r < reps; ++r) {
            Sampler s1(sampling), s2(sampling);
            plain.reset();
            spec.reset();
            const GenerateResult a = plain.chat(messages, s1, plain_chat).generation;
            const GenerateResult b = spec.chat(messages, s2, spec_chat).generation;
            const double a_tokens = std::max(0, a.completion_tokens - 1), b_tokens = std::max(0, b.completion_tokens - 1);
            plain_total.tokens += a_tokens;
            plain_total.ms += a.timings.decode_ms;
            spec_total.tokens += b_tokens;
            spec_total.ms += b.timings.decode_ms;
            spec_total.proposed += b.draft_tokens;
            spec_total.kept += b.accepted_draft_tokens;
            const bool same = a.tokens == b.tokens;
            identical += same ? 1 : 0;
            ++runs;
            const double ratio = a.timings.decode_tokens_per_s > 0 ? b.timings.decode_tokens_per_s / a.timings.decode_tokens_per_s : 0;
            if (json_out) {
                rows.push_back({{"prompt", p}, {"rep", r}, {"plain_tokens", a.completion_tokens}, {"spec_tokens", b.completion_tokens},
                                {"plain_tps", a.timings.decode_tokens_per_s}, {"spec_tps", b.timings.decode_tokens_per_s},
                                {"proposed", b.draft_tokens}, {"kept", b.accepted_draft_tokens}, {"same_tokens", same}});
            } else {
                fmt::print("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {} / {} |{}\n", p, b.completion_tokens,
                           a.timings.decode_tokens_per_s, b.timings.decode_tokens_per_s, ratio, b.accepted_draft_tokens,
                           b.draft_tokens, sampling.temperature <= 0 ? (same ? " yes |" : " NO |") : "");
            }
            std::fflush(stdout);
        }
    }
    const double acceptance = spec_total.proposed > 0 ? static_cast<double>(spec_total.kept) / static_cast<double>(spec_total.proposed) : 0;
    if (json_out) {
        nlohmann::json j{{"isa", genie::cpu::isa_description()},
                         {"temperature", sampling.temperature},
                         {"n_gen", n_gen},
                         {"draft_max", speculative.options.draft_max},
                         {"draft_p_min", speculative.options.draft_p_min},
                         {"lookup_ngram", speculative.options.lookup_ngram},
                         {"plain_tps", plain_total.rate()},
                         {"spec_tps", spec_total.rate()},
                         {"acceptance", acceptance},
                         {"identical_runs", identical},
                         {"runs", runs},
                         {"rows", rows}};
        fmt::print("{}\n", j.dump());
    } else {
        fmt::print("all: plain {:.2f} t/s, speculative {:.2f} t/s (effective), {:.2f}x; acceptance {:.1f} % ({} / {}); "
                   "ISA {}{}\n",
                   plain_total.rate(), spec_total.rate(), plain_total.rate() > 0 ? spec_total.rate() / plain_total.rate() : 0.0,
                   100.0 * acceptance, spec_total.kept, spec_total.proposed, genie::cpu::isa_description(),
                   sampling.temperature <= 0 ? fmt::format("; identical tokens in {} of {} runs", identical, runs) : "");
    }
    return 0;
}

}  // namespace genie::cli
