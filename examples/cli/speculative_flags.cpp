// The speculative decoding flags of genie-cli run / chat / bench (docs/speculative.md).
#include "commands.hpp"
#include "load_progress.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <charconv>
#include <string>

namespace genie::cli {

const char* const kSpeculativeUsage =
    "  -md, --model-draft PATH  draft model for speculative decoding (same vocabulary)\n"
"  -td, --threads-draft N  CPU threads of the draft model (default: as -t)\n"
    "  --draft-max N           most tokens proposed per step (default 16; 0 = off)\n"
    "  --draft-min N           fewer proposals than this: decode one token plainly (default 0)\n"
    "  --draft-p-min P         stop drafting at a token the draft gives less than P (default 0.75)\n"
    "  --draft-adaptive        adapt the proposal length to the acceptance\n"
    "  --spec-lookup N         prompt lookup speculation with N-grams (no draft model; 0 = off)\n";

namespace {

int32_t to_int(std::string_view flag, std::string_view text) {
    int32_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size())
        throw Error(ErrorCode::InvalidArgument, fmt::format("{} expects an integer, got '{}'", flag, text));
    return v;
}

float to_float(std::string_view flag, std::string_view text) {
    try {
        size_t used = 0;
        const float v = std::stof(std::string(text), &used);
        if (used == text.size()) return v;
    } catch (const std::exception&) {
    }
    throw Error(ErrorCode::InvalidArgument, fmt::format("{} expects a number, got '{}'", flag, text));
}

}  // namespace

bool parse_speculative_flag(Args args, size_t& i, SpeculativeFlags& flags) {
    const std::string_view a = args[i];
    auto value = [&]() -> std::string_view {
        if (i + 1 >= args.size()) throw Error(ErrorCode::InvalidArgument, fmt::format("{} needs a value", a));
        return args[++i];
    };
    SpeculativeOptions& o = flags.options;
    if (a == "-md" || a == "--model-draft") flags.draft_path = value();
    else if (a == "-td" || a == "--threads-draft") flags.draft_threads = to_int(a, value());
    else if (a == "--draft-max" || a == "--draft") o.draft_max = to_int(a, value());
    else if (a == "--draft-min") o.draft_min = to_int(a, value());
    else if (a == "--draft-p-min") o.draft_p_min = to_float(a, value());
    else if (a == "--draft-adaptive") o.adaptive = true;
    else if (a == "--spec-lookup") o.lookup_ngram = to_int(a, value());
    else return false;
    return true;
}

void apply_speculative_flags(const SpeculativeFlags& flags, SessionOptions& session, GenerateOptions& generate) {
    if (!flags.draft_path.empty()) session.draft_model = load_with_progress(flags.draft_path);
    session.draft_threads = flags.draft_threads;
    generate.speculative = flags.options;
}

std::string speculative_summary(int64_t proposed, int64_t kept) {
    if (proposed <= 0) return "";
    return fmt::format("draft: {} proposed, {} kept ({:.1f} %)", proposed, kept, 100.0 * static_cast<double>(kept) / static_cast<double>(proposed));
}

}  // namespace genie::cli
