// genie-cli bench: llama-bench-shaped throughput figures of one model.
//
// Definitions follow llama.cpp's tools/llama-bench:
//   ppN  evaluate N prompt tokens (BOS, then uniformly random ids) from an empty cache,
//        in forward passes of at most --batch tokens; t/s = N / time.
//   tgN  from an empty cache, generate N tokens one at a time (BOS first, then random
//        ids: the sampled token does not matter for speed); t/s = N / time.
//   "@ dD" (-d D): the same with D tokens already in the cache (a conversation's history:
//        attention reads them on every token); the depth is evaluated once, untimed, and
//        each run starts from it (the cache's common prefix is kept).
// Each test runs once unwarmed (a warm-up, as llama-bench does, unless --no-warmup) and
// then -r times; the table shows the mean and the sample standard deviation of the
// per-repetition rates. TTFT: a prompt of --ttft-prompt tokens through Session::generate
// with one greedy token (the time from the call to the first token, as Timings reports
// it). Peak RSS is getrusage's ru_maxrss at the end (mapped weight pages included, as for
// llama.cpp, which maps the file the same way). --kv-type picks the KV cache type (the
// default f16; llama-bench's -ctk / -ctv).
#include "commands.hpp"

#include "backend/cpu/kernels/kernels.hpp"
#include "gguf/gguf_reader.hpp"
#include "model/model_impl.hpp"
#if defined(GENIE_CLI_HAVE_CUDA)
#include "cuda/device.hpp"
#endif

#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>
#include <genie/version.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace genie::cli {
namespace {

using Clock = std::chrono::steady_clock;

void usage(std::FILE* out) {
    fmt::print(out,
               "usage: genie-cli bench -m MODEL.gguf [options]\n"
               "  -m, --model PATH       GGUF model\n"
               "  -p, --n-prompt N[,N]   prefill tests ppN (default 512; 0 = none)\n"
               "  -n, --n-gen N[,N]      decode tests tgN (default 128; 0 = none)\n"
               "  -d, --n-depth D[,D]    run the pp/tg tests with D tokens already in the cache (default 0)\n"
               "  -r, --repetitions R    timed runs per test (default 5)\n"
               "  -t, --threads T[,T]    CPU threads (default: all hardware threads)\n"
               "  -b, --batch-size B     tokens per forward pass in prefill (default 512)\n"
               "  --ttft-prompt N        time to first token for an N-token prompt (default 100; 0 = skip)\n"
               "  --backend B            cpu (default), cuda or auto (CUDA when the build and a device have it)\n"
               "  --kv-type T            KV cache type: f16 (default), f32 or q8_0 (llama-bench's -ctk / -ctv)\n"
               "  --no-warmup            skip the untimed warm-up run of each test\n"
               "  --json                 print one JSON object with every figure instead of the table\n"
               "  --spec-prompts FILE    speculative decoding against plain on a prompt set (see --spec-prompts --help)\n");
}

int64_t parse_int(std::string_view flag, std::string_view text) {
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value < 0)
        throw Error(ErrorCode::InvalidArgument, fmt::format("{} expects a non-negative integer, got '{}'", flag, text));
    return value;
}

std::vector<int32_t> parse_list(std::string_view flag, std::string_view text) {
    std::vector<int32_t> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = text.find(',', start);
        const std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        out.push_back(static_cast<int32_t>(parse_int(flag, item)));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

struct Stats {
    double mean = 0, sd = 0;
};

Stats stats(const std::vector<double>& v) {
    Stats s;
    if (v.empty()) return s;
    for (double x : v) s.mean += x;
    s.mean /= static_cast<double>(v.size());
    if (v.size() > 1) {
        double sq = 0;
        for (double x : v) sq += (x - s.mean) * (x - s.mean);
        s.sd = std::sqrt(sq / static_cast<double>(v.size() - 1));
    }
    return s;
}

std::string human_size(uint64_t bytes) {
    const double mib = static_cast<double>(bytes) / 1024.0 / 1024.0;
    return mib < 1024.0 ? fmt::format("{:.2f} MiB", mib) : fmt::format("{:.2f} GiB", mib / 1024.0);
}

std::string human_params(uint64_t n) {
    return n < 1000000000ull ? fmt::format("{:.2f} M", static_cast<double>(n) / 1e6)
                             : fmt::format("{:.2f} B", static_cast<double>(n) / 1e9);
}

// llama.cpp's general.file_type names, as llama-bench shows them in its model column.
std::string file_type_label(uint32_t ftype) {
    static const std::map<uint32_t, std::string> names = {
        {0, "all F32"}, {1, "F16"}, {2, "Q4_0"}, {3, "Q4_1"}, {7, "Q8_0"}, {8, "Q5_0"}, {9, "Q5_1"},
        {10, "Q2_K - Medium"}, {11, "Q3_K - Small"}, {12, "Q3_K - Medium"}, {13, "Q3_K - Large"},
        {14, "Q4_K - Small"}, {15, "Q4_K - Medium"}, {16, "Q5_K - Small"}, {17, "Q5_K - Medium"},
        {18, "Q6_K"}, {32, "BF16"}};
    auto it = names.find(ftype);
    return it == names.end() ? fmt::format("type {}", ftype) : it->second;
}

/// The bench table's backend column for a model on the CUDA backend: "CUDA (device name)".
std::string cuda_label() {
#if defined(GENIE_CLI_HAVE_CUDA)
    const genie::cuda::DeviceQuery q = genie::cuda::query_devices();
    if (!q.devices.empty()) return fmt::format("CUDA ({})", q.devices.front().name);
#endif
    return "CUDA";
}

uint64_t peak_rss_bytes() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<uint64_t>(ru.ru_maxrss) * 1024;  // Linux: KiB
}

/// How much of the model file's mapping is resident, and how much of that the kernel maps
/// with 2 MiB pages (/proc/self/smaps: Rss and FilePmdMapped of the file's mappings).
/// Decode streams the weights: on 4 KiB pages it misses the TLB every 4 KiB. A file read
/// cold sits in the page cache in 2 MiB folios (the loader advises MADV_HUGEPAGE); one
/// just written (downloaded, copied) stays in the small folios of the write path until
/// the page cache drops it, and decode is then slower (docs/performance.md).
struct MappedPages {
    uint64_t resident = 0, huge = 0;
    bool found = false;
};

MappedPages model_pages(const std::string& path) {
    MappedPages m;
#if defined(__linux__)
    std::error_code ec;
    const std::string want = std::filesystem::weakly_canonical(path, ec).string();
    std::FILE* f = std::fopen("/proc/self/smaps", "r");
    if (!f) return m;
    char line[4096];
    bool in_model = false;
    auto kib = [](const char* s) { return std::strtoull(s, nullptr, 10) * 1024; };
    while (std::fgets(line, sizeof line, f)) {
        const std::string_view l(line);
        // A mapping's header: "start-end perms offset dev inode   [path]".
        if (!l.empty() && std::isxdigit(static_cast<unsigned char>(l[0])) && l.find('-') < l.find(' ')) {
            const size_t slash = l.find('/');
            std::string_view name = slash == std::string_view::npos ? std::string_view{} : l.substr(slash);
            while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.remove_suffix(1);
            in_model = !want.empty() && name == want;
            m.found = m.found || in_model;
        } else if (in_model && l.starts_with("Rss:")) {
            m.resident += kib(line + 4);
        } else if (in_model && l.starts_with("FilePmdMapped:")) {
            m.huge += kib(line + 14);
        }
    }
    std::fclose(f);
#else
    (void)path;
#endif
    return m;
}

struct TestResult {
    std::string name;
    int32_t n_prompt = 0, n_gen = 0, n_depth = 0, threads = 0;
    std::vector<double> seconds;
    std::vector<double> rates() const {
        std::vector<double> r;
        for (double s : seconds) r.push_back(static_cast<double>(n_prompt + n_gen) / s);
        return r;
    }
};

/// BOS (when the vocabulary adds one) then random ids, as llama-bench builds its batches.
std::vector<TokenId> random_tokens(const Model& model, int32_t n, std::mt19937& rng) {
    std::uniform_int_distribution<int32_t> pick(0, model.info().n_vocab - 1);
    std::vector<TokenId> t(static_cast<size_t>(n));
    for (auto& id : t) id = pick(rng);
    if (n > 0 && model.tokenizer().adds_bos() && model.tokenizer().bos() != kNoToken) t[0] = model.tokenizer().bos();
    return t;
}

/// The session's cache holding exactly `depth` (the history) before a timed run: what
/// follows it is dropped, the history itself evaluated only when the cache lacks it.
void to_depth(Session& s, const std::vector<TokenId>& depth) {
    if (depth.empty()) {
        s.reset();
        return;
    }
    s.evaluate(depth);
}

/// depth + tokens: the cached depth, then `tokens` in one evaluate (forward passes of at
/// most the batch size).
double time_prompt(Session& s, const std::vector<TokenId>& depth, std::span<const TokenId> tokens) {
    to_depth(s, depth);
    std::vector<TokenId> all(depth);
    all.insert(all.end(), tokens.begin(), tokens.end());
    const auto t0 = Clock::now();
    s.evaluate(all);
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

double time_gen(Session& s, const std::vector<TokenId>& depth, std::span<const TokenId> tokens) {
    to_depth(s, depth);
    std::vector<TokenId> all(depth);
    all.reserve(depth.size() + tokens.size());
    const auto t0 = Clock::now();
    // Each call evaluates exactly one new token (the rest is the cached prefix).
    for (const TokenId t : tokens) {
        all.push_back(t);
        s.evaluate(all);
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int cmd_bench(Args args) {
    if (is_speculative_bench(args)) return cmd_bench_speculative(args);
    std::string model_path;
    std::vector<int32_t> prompts{512}, gens{128}, depths{0}, threads_list{0};
    int32_t reps = 5, batch = 512, ttft_prompt = 100;
    bool warmup = true, json_out = false;
    BackendKind backend_kind = BackendKind::Cpu;
    KvType kv_type = KvType::F16;
    std::string kv_label = "f16";
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        auto value = [&]() -> std::string_view {
            if (i + 1 >= args.size()) throw Error(ErrorCode::InvalidArgument, fmt::format("{} needs a value", a));
            return args[++i];
        };
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else if (a == "-m" || a == "--model") model_path = value();
        else if (a == "-p" || a == "--n-prompt") prompts = parse_list(a, value());
        else if (a == "-n" || a == "--n-gen") gens = parse_list(a, value());
        else if (a == "-d" || a == "--n-depth") depths = parse_list(a, value());
        else if (a == "-t" || a == "--threads") threads_list = parse_list(a, value());
        else if (a == "-r" || a == "--repetitions") reps = static_cast<int32_t>(parse_int(a, value()));
        else if (a == "-b" || a == "--batch-size") batch = static_cast<int32_t>(parse_int(a, value()));
        else if (a == "--ttft-prompt") ttft_prompt = static_cast<int32_t>(parse_int(a, value()));
        else if (a == "--backend") backend_kind = parse_backend(value());
        else if (a == "--kv-type") {
            kv_label = std::string(value());
            if (kv_label == "f16") kv_type = KvType::F16;
            else if (kv_label == "f32") kv_type = KvType::F32;
            else if (kv_label == "q8_0") kv_type = KvType::Q8_0;
            else throw Error(ErrorCode::InvalidArgument, fmt::format("--kv-type: '{}' (f16, f32 or q8_0)", kv_label));
        } else if (a == "--no-warmup") warmup = false;
        else if (a == "--json") json_out = true;
        else {
            fmt::print(stderr, "genie-cli bench: unknown argument '{}'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (model_path.empty()) {
        usage(stderr);
        return 2;
    }
    if (reps < 1) throw Error(ErrorCode::InvalidArgument, "-r must be >= 1");
    if (batch < 1) throw Error(ErrorCode::InvalidArgument, "-b must be >= 1");
    prompts.erase(std::remove(prompts.begin(), prompts.end(), 0), prompts.end());
    gens.erase(std::remove(gens.begin(), gens.end(), 0), gens.end());
    const int32_t hw = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
    for (auto& t : threads_list)
        if (t == 0) t = hw;

    std::string type_label;
    {
        const gguf::Reader r = gguf::Reader::open(model_path);
        if (auto ft = r.get_optional<uint32_t>("general.file_type")) type_label = file_type_label(*ft);
    }
    const auto t_load = Clock::now();
    const Model model = Model::load(model_path, ModelOptions{backend_kind, {}});
    const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_load).count();
    const ModelInfo& info = model.info();
    const std::string model_label =
        fmt::format("{} {} {}", info.architecture,
                    info.parameter_count >= 1000000000ull ? fmt::format("{:.1f}B", static_cast<double>(info.parameter_count) / 1e9)
                    : info.parameter_count >= 1000000ull  ? fmt::format("{:.0f}M", static_cast<double>(info.parameter_count) / 1e6)
                                                          : fmt::format("{:.0f}K", static_cast<double>(info.parameter_count) / 1e3),
                    type_label.empty() ? "(no file type)" : type_label);
    const std::string isa = genie::cpu::isa_description();
    const std::string backend = model.impl().backend == BackendKind::Cuda ? cuda_label() : fmt::format("CPU ({})", isa);

    const int32_t max_depth = *std::max_element(depths.begin(), depths.end());
    int32_t need = ttft_prompt + 1;
    for (int32_t p : prompts) need = std::max(need, max_depth + p);
    for (int32_t n : gens) need = std::max(need, max_depth + n);
    const int32_t ctx = std::max(need, 16);

    std::mt19937 rng(1234);
    std::vector<TestResult> results;
    struct Ttft {
        int32_t threads = 0;
        std::vector<double> ms;
    };
    std::vector<Ttft> ttfts;
    for (int32_t threads : threads_list) {
        SessionOptions so;
        so.threads = threads;
        so.context_length = ctx;
        so.batch_size = batch;
        so.kv_type = kv_type;
        Session session(model, so);
        for (int32_t d : depths) {
            // The history: BOS and random ids, as the tests' own tokens; a test's tokens
            // then continue it (no second BOS).
            const std::vector<TokenId> depth = random_tokens(model, d, rng);
            auto tokens = [&](int32_t n) {
                auto t = random_tokens(model, n, rng);
                if (d > 0 && n > 0) t[0] = std::uniform_int_distribution<int32_t>(0, info.n_vocab - 1)(rng);
                return t;
            };
            const std::string at = d > 0 ? fmt::format(" @ d{}", d) : "";
            for (int32_t p : prompts) {
                TestResult t{fmt::format("pp{}{}", p, at), p, 0, d, threads, {}};
                if (warmup) time_prompt(session, depth, tokens(p));
                for (int32_t r = 0; r < reps; ++r) t.seconds.push_back(time_prompt(session, depth, tokens(p)));
                results.push_back(std::move(t));
            }
            for (int32_t n : gens) {
                TestResult t{fmt::format("tg{}{}", n, at), 0, n, d, threads, {}};
                if (warmup) time_gen(session, depth, tokens(1));
                for (int32_t r = 0; r < reps; ++r) t.seconds.push_back(time_gen(session, depth, tokens(n)));
                results.push_back(std::move(t));
            }
        }
        if (ttft_prompt > 0) {
            Ttft tt{threads, {}};
            Sampler greedy(SamplerOptions{});
            GenerateOptions go;
            go.max_tokens = 1;
            go.stop_on_eog = false;
            for (int32_t r = 0; r < reps + (warmup ? 1 : 0); ++r) {
                session.reset();
                const auto prompt = random_tokens(model, ttft_prompt, rng);
                const GenerateResult res = session.generate(prompt, greedy, go);
                if (r > 0 || !warmup) tt.ms.push_back(res.timings.time_to_first_token_ms);
            }
            ttfts.push_back(std::move(tt));
        }
    }
    const uint64_t rss = peak_rss_bytes();
    const MappedPages pages = model_pages(model_path);

    if (json_out) {
        nlohmann::json j;
        j["genie_version"] = GENIE_VERSION_STRING;
        j["model"] = {{"path", model_path},
                      {"type", model_label},
                      {"architecture", info.architecture},
                      {"size_bytes", info.weight_bytes},
                      {"decode_bytes", info.decode_bytes},
                      {"file_bytes", info.file_size},
                      {"params", info.parameter_count}};
        j["backend"] = backend;
        j["isa"] = isa;
        j["batch_size"] = batch;
        j["kv_type"] = kv_label;
        j["repetitions"] = reps;
        j["load_ms"] = load_ms;
        j["peak_rss_bytes"] = rss;
        if (pages.found) j["weights_pages"] = {{"resident_bytes", pages.resident}, {"huge_page_bytes", pages.huge}};
        nlohmann::json tests = nlohmann::json::array();
        for (const TestResult& t : results) {
            const Stats s = stats(t.rates());
            std::vector<double> ns;
            for (double sec : t.seconds) ns.push_back(sec * 1e9);
            tests.push_back({{"test", t.name},
                             {"n_prompt", t.n_prompt},
                             {"n_gen", t.n_gen},
                             {"n_depth", t.n_depth},
                             {"threads", t.threads},
                             {"samples_ns", ns},
                             {"samples_ts", t.rates()},
                             {"avg_ts", s.mean},
                             {"stddev_ts", s.sd}});
        }
        j["tests"] = tests;
        nlohmann::json tj = nlohmann::json::array();
        for (const Ttft& t : ttfts) {
            const Stats s = stats(t.ms);
            tj.push_back({{"prompt_tokens", ttft_prompt}, {"threads", t.threads}, {"samples_ms", t.ms}, {"avg_ms", s.mean},
                          {"stddev_ms", s.sd}});
        }
        j["ttft"] = tj;
        fmt::print("{}\n", j.dump(2));
        return 0;
    }

    // The markdown table, column widths as llama-bench prints them.
    const std::vector<std::string> head{"model", "size", "params", "backend", "threads", "test", "t/s"};
    std::vector<std::vector<std::string>> rows;
    for (const TestResult& t : results) {
        const Stats s = stats(t.rates());
        rows.push_back({model_label, human_size(info.weight_bytes), human_params(info.parameter_count), backend,
                        fmt::format("{}", t.threads), t.name, fmt::format("{:.2f} ± {:.2f}", s.mean, s.sd)});
    }
    std::vector<size_t> width(head.size());
    auto display_width = [](const std::string& s) {  // "±" is 2 bytes, 1 column
        size_t n = 0;
        for (unsigned char c : s) n += (c & 0xC0) != 0x80;
        return n;
    };
    for (size_t c = 0; c < head.size(); ++c) {
        width[c] = head[c].size();
        for (const auto& r : rows) width[c] = std::max(width[c], display_width(r[c]));
    }
    const bool right[] = {false, true, true, false, true, true, true};
    auto cell = [&](const std::string& s, size_t c) {
        const std::string pad(width[c] - display_width(s), ' ');
        return right[c] ? pad + s : s + pad;
    };
    std::string line = "|";
    for (size_t c = 0; c < head.size(); ++c) line += " " + cell(head[c], c) + " |";
    fmt::print("{}\n", line);
    line = "|";
    for (size_t c = 0; c < head.size(); ++c)
        line += " " + (right[c] ? std::string(width[c] - 1, '-') + ":" : std::string(width[c], '-')) + " |";
    fmt::print("{}\n", line);
    for (const auto& r : rows) {
        line = "|";
        for (size_t c = 0; c < head.size(); ++c) line += " " + cell(r[c], c) + " |";
        fmt::print("{}\n", line);
    }
    fmt::print("\n");
    for (const Ttft& t : ttfts) {
        const Stats s = stats(t.ms);
        fmt::print("ttft: {} prompt tokens, {} threads: {:.2f} ± {:.2f} ms\n", ttft_prompt, t.threads, s.mean, s.sd);
    }
    fmt::print("load: {:.1f} ms\n", load_ms);
    fmt::print("peak rss: {:.1f} MiB\n", static_cast<double>(rss) / 1024.0 / 1024.0);
    if (pages.found && pages.resident > 0)
        fmt::print("weights on 2 MiB pages: {:.1f} % of {:.1f} MiB mapped\n", 100.0 * static_cast<double>(pages.huge) / static_cast<double>(pages.resident),
                   static_cast<double>(pages.resident) / 1024.0 / 1024.0);
    if (kv_type != KvType::F16) fmt::print("kv cache: {}\n", kv_label);
    fmt::print("build: genie {} ({}), {} repetitions\n", GENIE_VERSION_STRING, isa, reps);
    return 0;
}

}  // namespace genie::cli
