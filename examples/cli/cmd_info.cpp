// genie-cli info MODEL.gguf: what a model file holds, without loading the weights.
#include "commands.hpp"

#include "backend/cpu/kernels/kernels.hpp"
#include "gguf/gguf_reader.hpp"
#include "model/hparams.hpp"

#if defined(GENIE_CLI_HAVE_CUDA)
#include "cuda/device.hpp"
#endif

#include <genie/error.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace genie::cli {
namespace {

std::string human_bytes(uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, units[u]);
}

std::string human_count(uint64_t n) {
    if (n >= 1000000000ull) return fmt::format("{:.2f}B", static_cast<double>(n) / 1e9);
    if (n >= 1000000ull) return fmt::format("{:.2f}M", static_cast<double>(n) / 1e6);
    if (n >= 1000ull) return fmt::format("{:.2f}K", static_cast<double>(n) / 1e3);
    return fmt::format("{}", n);
}

// llama.cpp's general.file_type values (LLAMA_FTYPE_*).
std::string file_type_name(uint32_t ftype) {
    static const std::map<uint32_t, std::string> names = {
        {0, "ALL_F32"},   {1, "MOSTLY_F16"},  {2, "MOSTLY_Q4_0"},   {3, "MOSTLY_Q4_1"},    {7, "MOSTLY_Q8_0"},
        {8, "MOSTLY_Q5_0"}, {9, "MOSTLY_Q5_1"}, {10, "MOSTLY_Q2_K"}, {11, "MOSTLY_Q3_K_S"}, {12, "MOSTLY_Q3_K_M"},
        {13, "MOSTLY_Q3_K_L"}, {14, "MOSTLY_Q4_K_S"}, {15, "MOSTLY_Q4_K_M"}, {16, "MOSTLY_Q5_K_S"},
        {17, "MOSTLY_Q5_K_M"}, {18, "MOSTLY_Q6_K"}, {32, "MOSTLY_BF16"}};
    auto it = names.find(ftype);
    return it == names.end() ? fmt::format("type {}", ftype) : it->second;
}

void usage() {
    fmt::print(stderr,
               "usage: genie-cli info MODEL.gguf [--all-metadata]\n"
               "       genie-cli info --system\n"
               "       genie-cli info --plan -m MODEL [-c N] [--kv-type f16|f32|q8_0] [-b N]\n"
               "                      [--backend auto|cpu|cuda] [--budget BYTES[K|M|G]]\n"
               "  prints architecture, hyper-parameters, tokenizer, chat template presence,\n"
               "  the tensor table and a one-line summary\n"
               "  --all-metadata   also list every metadata key with its value\n"
               "  --system         the machine instead: CPU, ISA features, the CPU kernel set the\n"
               "                   run-time dispatch picked, threads, CUDA devices\n"
               "  --plan           the memory plan (weights, KV cache, scratch, overhead, margin vs the\n"
               "                   budget; the largest context that fits) from the header only;\n"
               "                   -c 0: min(training, 4096) reduced to fit, -c -1: the largest that fits\n");
}

/// "model name" from /proc/cpuinfo (x86), or the implementer/part ids (aarch64).
std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line, implementer, part;
    while (std::getline(in, line)) {
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string key = line.substr(0, colon);
        while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
        std::string value = line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ') value.erase(0, 1);
        if (key == "model name" || key == "Hardware") return value;
        if (key == "CPU implementer" && implementer.empty()) implementer = value;
        if (key == "CPU part" && part.empty()) part = value;
    }
    if (!implementer.empty()) return fmt::format("implementer {} part {}", implementer, part);
    return "unknown";
}

/// The instruction-set features the kernels care about that this CPU reports.
std::vector<std::string> cpu_features() {
    std::vector<std::string> f;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
#define GENIE_FEATURE(name) \
    if (__builtin_cpu_supports(name)) f.emplace_back(name);
    GENIE_FEATURE("sse4.2") GENIE_FEATURE("avx") GENIE_FEATURE("avx2") GENIE_FEATURE("fma") GENIE_FEATURE("f16c")
    GENIE_FEATURE("avx512f") GENIE_FEATURE("avx512bw") GENIE_FEATURE("avx512vl") GENIE_FEATURE("avx512vnni")
    GENIE_FEATURE("avx512bf16") GENIE_FEATURE("avxvnni") GENIE_FEATURE("amx-tile") GENIE_FEATURE("amx-int8")
#undef GENIE_FEATURE
#elif defined(__aarch64__) && defined(__linux__)
    const unsigned long hw = getauxval(AT_HWCAP);
    if (hw & HWCAP_ASIMD) f.emplace_back("neon");
    if (hw & HWCAP_FPHP) f.emplace_back("fp16");
    if (hw & HWCAP_ASIMDDP) f.emplace_back("dotprod");
    if (hw & HWCAP_SVE) f.emplace_back("sve");
#if defined(HWCAP2_I8MM)
    if (getauxval(AT_HWCAP2) & HWCAP2_I8MM) f.emplace_back("i8mm");
#endif
#endif
    return f;
}

int print_system() {
#if defined(__x86_64__)
    const char* arch = "x86_64";
#elif defined(__aarch64__)
    const char* arch = "aarch64";
#else
    const char* arch = "other";
#endif
    fmt::print("cpu:           {}\n", cpu_model_name());
    fmt::print("architecture:  {}\n", arch);
    std::string feats;
    for (const auto& f : cpu_features()) feats += (feats.empty() ? "" : " ") + f;
    fmt::print("cpu features:  {}\n", feats.empty() ? "(none detected)" : feats);
    std::string sets;
    for (const auto* s : genie::cpu::available_kernel_sets()) sets += fmt::format("{}{}", sets.empty() ? "" : " ", s->isa);
    fmt::print("kernel sets:   {} (available on this CPU, best last)\n", sets);
    const char* forced = std::getenv("GENIE_CPU_ISA");
    fmt::print("kernel set:    {}{}\n", genie::cpu::isa_description(),
               forced && *forced ? fmt::format(" (GENIE_CPU_ISA={})", forced) : std::string(" (dispatch: best available)"));
    const char* streams = std::getenv("GENIE_DECODE_STREAMS");
    fmt::print("decode walk:   {} per core{}\n", genie::cpu::decode_two_streams() ? "two weight streams" : "one weight stream",
               streams && *streams ? fmt::format(" (GENIE_DECODE_STREAMS={})", streams) : std::string(" (chosen for this CPU)"));
    cpu_set_t mask;
    CPU_ZERO(&mask);
    const int affinity = sched_getaffinity(0, sizeof(mask), &mask) == 0 ? CPU_COUNT(&mask) : 0;
    fmt::print("threads:       {} hardware, {} usable (affinity); sessions default to {}\n",
               std::thread::hardware_concurrency(), affinity, std::max(1u, std::thread::hardware_concurrency()));
#if defined(GENIE_CLI_HAVE_CUDA)
    const genie::cuda::DeviceQuery q = genie::cuda::query_devices();
    if (q.count == 0) {
        fmt::print("cuda:          built, no usable device ({})\n", q.error.empty() ? "none found" : q.error);
    } else {
        fmt::print("cuda:          built, {} device(s)\n", q.count);
        for (const auto& d : q.devices)
            fmt::print("  device {}:    {} (sm_{}{}, {:.1f} GiB{})\n", d.index, d.name, d.compute_major, d.compute_minor,
                       static_cast<double>(d.total_memory) / (1024.0 * 1024.0 * 1024.0), d.integrated ? ", integrated" : "");
    }
#else
    fmt::print("cuda:          not built\n");
#endif
    return 0;
}

}  // namespace

int cmd_info_plan(Args args);  // cmd_info_plan.cpp

int cmd_info(Args args) {
    for (std::string_view a : args)
        if (a == "--plan") return cmd_info_plan(args);
    std::string path;
    bool all_metadata = false, system = false;
    for (std::string_view a : args) {
        if (a == "--all-metadata") all_metadata = true;
        else if (a == "--system") system = true;
        else if (a == "-h" || a == "--help") {
            usage();
            return 0;
        } else if (!a.empty() && a[0] == '-') {
            fmt::print(stderr, "genie-cli info: unknown option '{}'\n", a);
            usage();
            return 2;
        } else if (path.empty()) path = a;
        else {
            fmt::print(stderr, "genie-cli info: more than one model given ('{}')\n", a);
            return 2;
        }
    }
    if (system) {
        print_system();
        if (path.empty()) return 0;
        fmt::print("\n");
    }
    if (path.empty()) {
        usage();
        return 2;
    }

    const gguf::Reader r = gguf::Reader::open(path);
    const std::string arch = r.architecture();
    fmt::print("file:          {}\n", path);
    fmt::print("gguf version:  {} ({} metadata keys, {} tensors, alignment {})\n", r.version(), r.metadata().size(),
               r.tensors().size(), r.alignment());
    fmt::print("architecture:  {}\n", arch.empty() ? "(none)" : arch);
    if (auto name = r.get_optional<std::string>("general.name")) fmt::print("name:          {}\n", *name);
    if (auto ft = r.get_optional<uint32_t>("general.file_type")) fmt::print("file type:     {}\n", file_type_name(*ft));

    // The headline shape, then every hyper-parameter.
    if (!arch.empty()) {
        auto hp = [&](const char* key) -> std::string {
            auto v = r.get_optional<uint64_t>(arch + "." + key);
            return v ? fmt::format("{}", *v) : std::string("?");
        };
        const gguf::Value* tokens = r.find("tokenizer.ggml.tokens");
        const size_t vocab = tokens && tokens->array() ? tokens->array()->items.size() : 0;
        fmt::print("model:         {} layers, embedding {}, {} heads ({} kv), feed-forward {}, context {}, vocab {}\n",
                   hp("block_count"), hp("embedding_length"), hp("attention.head_count"),
                   r.contains(arch + ".attention.head_count_kv") ? hp("attention.head_count_kv") : hp("attention.head_count"),
                   hp("feed_forward_length"), hp("context_length"), vocab);
    }

    // Sliding-window attention (gemma3): which layers are local, their window and RoPE base.
    if (genie::model::is_supported_architecture(arch)) {
        try {
            const genie::model::HParams hp = genie::model::read_hparams(r);
            if (hp.n_swa > 0) {
                std::string pattern;
                int32_t local = 0;
                for (int32_t il = 0; il < hp.n_layer; ++il) {
                    pattern += hp.window(il) > 0 ? 'L' : 'G';
                    local += hp.window(il) > 0;
                }
                fmt::print("attention:     {} local layers (sliding window {}, RoPE base {:g}), {} global (RoPE base {:g}){}\n",
                           local, hp.n_swa, hp.rope_freq_base_swa, hp.n_layer - local, hp.rope_freq_base,
                           hp.swa_pattern > 0 ? fmt::format("; pattern period {}", hp.swa_pattern) : std::string());
                fmt::print("layer pattern: {} (L local, G global)\n", pattern);
            }
        } catch (const genie::Error& e) {
            fmt::print("attention:     (hyper-parameters not readable: {})\n", e.what());
        }
    }

    // Hyper-parameters: every "<arch>.*" key that holds a scalar (llama.cpp's naming).
    if (!arch.empty()) {
        fmt::print("hyper-parameters:\n");
        const std::string prefix = arch + ".";
        for (const auto& kv : r.metadata()) {
            if (kv.key.rfind(prefix, 0) != 0) continue;
            fmt::print("  {:<40} {}\n", kv.key.substr(prefix.size()), kv.value.to_display(8, 60));
        }
    }

    // Tokenizer.
    if (auto model = r.get_optional<std::string>("tokenizer.ggml.model")) {
        const gguf::Value* tokens = r.find("tokenizer.ggml.tokens");
        const gguf::Value* merges = r.find("tokenizer.ggml.merges");
        const size_t n_tokens = tokens && tokens->array() ? tokens->array()->items.size() : 0;
        std::string kind = *model == "llama" ? "SentencePiece (llama)" : *model == "gpt2" ? "byte-level BPE (gpt2)" : *model;
        fmt::print("tokenizer:     {}, {} tokens", kind, n_tokens);
        if (merges && merges->array()) fmt::print(", {} merges", merges->array()->items.size());
        if (auto pre = r.get_optional<std::string>("tokenizer.ggml.pre")) fmt::print(", pre-tokenizer '{}'", *pre);
        fmt::print("\n");
        for (const char* key : {"bos_token_id", "eos_token_id", "eot_token_id", "unknown_token_id",
                                "padding_token_id"}) {
            if (auto id = r.get_optional<int64_t>(std::string("tokenizer.ggml.") + key))
                fmt::print("  {:<20} {}\n", key, *id);
        }
    } else {
        fmt::print("tokenizer:     (none)\n");
    }
    const bool has_template = r.contains("tokenizer.chat_template");
    fmt::print("chat template: {}\n",
               has_template ? fmt::format("present ({} bytes)", r.get<std::string>("tokenizer.chat_template").size())
                            : std::string("absent"));

    if (all_metadata) {
        fmt::print("metadata:\n");
        for (const auto& kv : r.metadata())
            fmt::print("  {:<48} {:<16} {}\n", kv.key, kv.value.type_description(), kv.value.to_display(6, 60));
    }

    // Tensor table.
    size_t name_width = 4;
    for (const auto& t : r.tensors()) name_width = std::max(name_width, t.name.size());
    fmt::print("tensors:\n  {:<{}}  {:<7} {:<24} {:>12}\n", "name", name_width, "type", "shape", "bytes");
    uint64_t params = 0, tensor_bytes = 0;
    std::map<std::string, uint64_t> per_type;
    for (const auto& t : r.tensors()) {
        fmt::print("  {:<{}}  {:<7} {:<24} {:>12}\n", t.name, name_width, dtype_name(t.type), t.shape_string(),
                   t.size_bytes);
        params += static_cast<uint64_t>(t.element_count());
        tensor_bytes += t.size_bytes;
        per_type[std::string(dtype_name(t.type))] += 1;
    }
    std::string types;
    for (const auto& [name, count] : per_type) types += fmt::format("{}{}x{}", types.empty() ? "" : ", ", count, name);
    const double bpw = params ? 8.0 * static_cast<double>(tensor_bytes) / static_cast<double>(params) : 0.0;
    fmt::print("summary: {} parameters ({}), {} tensors ({}), tensor data {}, file {}, {:.2f} bits per weight\n",
               human_count(params), params, r.tensors().size(), types.empty() ? "none" : types,
               human_bytes(tensor_bytes), human_bytes(r.file_size()), bpw);
    return 0;
}

}  // namespace genie::cli
