// genie-cli info --plan -m MODEL [-c N] [--kv-type f16|f32|q8_0] [-b N] [--backend auto|cpu|cuda]
//                [--budget BYTES[K|M|G]]: the memory plan of running MODEL with a context of
// N tokens (include/genie/memory_plan.hpp), from the GGUF header only: no weights are read.
// -c 0 (default): min(training context, 4096) reduced to what fits; -c -1: the largest that fits.
// Exit code 0 when the plan fits the budget, 1 when it does not.
#include "commands.hpp"

#include <genie/error.hpp>
#include <genie/memory_plan.hpp>

#include <fmt/format.h>

#include <charconv>
#include <string>

namespace genie::cli {

namespace {

uint64_t parse_bytes(std::string_view s) {
    uint64_t scale = 1;
    if (!s.empty()) {
        switch (s.back()) {
            case 'K': case 'k': scale = uint64_t{1} << 10; break;
            case 'M': case 'm': scale = uint64_t{1} << 20; break;
            case 'G': case 'g': scale = uint64_t{1} << 30; break;
            default: break;
        }
        if (scale != 1) s.remove_suffix(1);
    }
    uint64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size())
        throw Error(ErrorCode::InvalidArgument, fmt::format("--budget: '{}' is not a byte count", s));
    return v * scale;
}

int32_t parse_int(std::string_view opt, std::string_view s) {
    int32_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size())
        throw Error(ErrorCode::InvalidArgument, fmt::format("{}: '{}' is not an integer", opt, s));
    return v;
}

}  // namespace

BackendKind parse_backend(std::string_view value) {
    if (value == "auto") return BackendKind::Auto;
    if (value == "cpu") return BackendKind::Cpu;
    if (value == "cuda") return BackendKind::Cuda;
    throw Error(ErrorCode::InvalidArgument, fmt::format("--backend: '{}' (auto, cpu or cuda)", value));
}

int cmd_info_plan(Args args) {
    std::string path;
    ModelOptions mo;
    SessionOptions so;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        auto value = [&]() -> std::string_view {
            if (i + 1 >= args.size()) throw Error(ErrorCode::InvalidArgument, fmt::format("{} needs a value", a));
            return args[++i];
        };
        if (a == "--plan") continue;
        if (a == "-m" || a == "--model") path = value();
        else if (a == "-c" || a == "--ctx-size") so.context_length = parse_int(a, value());
        else if (a == "-b" || a == "--batch-size") so.batch_size = parse_int(a, value());
        else if (a == "--budget") mo.memory_budget_bytes = parse_bytes(value());
        else if (a == "--kv-type") {
            const std::string_view t = value();
            if (t == "f16") so.kv_type = KvType::F16;
            else if (t == "f32") so.kv_type = KvType::F32;
            else if (t == "q8_0") so.kv_type = KvType::Q8_0;
            else throw Error(ErrorCode::InvalidArgument, fmt::format("--kv-type: '{}' (f16, f32 or q8_0)", t));
        } else if (a == "--backend") mo.backend = parse_backend(value());
        else if (!a.empty() && a[0] != '-' && path.empty()) path = a;
        else throw Error(ErrorCode::InvalidArgument, fmt::format("genie-cli info --plan: unknown argument '{}'", a));
    }
    if (path.empty()) throw Error(ErrorCode::InvalidArgument, "genie-cli info --plan: no model given (-m MODEL)");
    const MemoryPlan plan = plan_memory(path, mo, so);
    fmt::print("{}\n", plan.to_string());
    return plan.fits() ? 0 : 1;
}

}  // namespace genie::cli
