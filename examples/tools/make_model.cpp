// genie-make-model: writes a synthetic GGUF model (random weights from a fixed-seed
// generator, a real vocabulary) for tests and benchmarks. The same arguments always
// give the same bytes: the generator is our own (splitmix64), not a library's.
//
//   genie-make-model --arch qwen3 --preset tiny --type q4_k_m --vocab-hf DIR -o out.gguf
//   genie-make-model --arch llama --preset tiny --type f16 --vocab-gguf VOCAB.gguf -o out.gguf
//   genie-make-model --arch gemma3 --preset gemma3-270m --type q8_0 --vocab-gguf VOCAB.gguf -o out.gguf
#include "gguf/gguf_reader.hpp"
#include "gguf/gguf_writer.hpp"
#include "quant/quant.hpp"
#include "tokenizer/hf_import.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

/// Written pages stay in the page cache in the write path's small folios (64 KiB on ext4),
/// which the kernel maps with 4 KiB pages; a file read cold is cached in 2 MiB folios
/// where the file system has them (the loader advises MADV_HUGEPAGE), and decode streams
/// its weights through fewer TLB misses (0.6B Q4_K_M tg128 about 5 % faster here,
/// docs/performance.md). So the written model is flushed and dropped from the cache: the
/// first load then reads it as any model file read after a reboot. Advice only.
void drop_from_page_cache(const std::string& path) {
#if defined(__linux__)
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    if (::fdatasync(fd) == 0) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
#else
    (void)path;
#endif
}

using genie::DType;
using genie::Error;
using genie::ErrorCode;

struct Shape {
    int64_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx;
    bool tied;
    int64_t sliding_window = 0;  ///< gemma3: attention.sliding_window
};

// Presets: "tiny" for tests; the real Qwen3-0.6B / 4B and Gemma 3 270M dimensions for
// benchmarks. gemma3 with "tiny" takes the gemma3-tiny shape: six layers, so that llama.cpp's
// default pattern makes layers 0-4 sliding-window layers and layer 5 global, and a window
// of 16 positions, so that a short prompt already runs past it.
const std::map<std::string, Shape> kPresets = {
    {"tiny", {256, 4, 8, 4, 32, 512, 4096, false}},
    {"qwen3-0.6b", {1024, 28, 16, 8, 128, 3072, 40960, true}},
    {"qwen3-4b", {2560, 36, 32, 8, 128, 9728, 40960, true}},
    {"gemma3-tiny", {256, 6, 4, 1, 64, 512, 4096, false, 16}},
    {"gemma3-270m", {640, 18, 4, 1, 256, 2048, 32768, true, 512}},
};

/// splitmix64: tiny, fast, and fully specified, so fixtures never change with a library.
struct Rng {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    /// Uniform in [-1, 1), exactly representable (24 random bits).
    float uniform() { return static_cast<float>(static_cast<int64_t>(next() >> 40) - (int64_t{1} << 23)) / 8388608.0f; }
};

uint64_t hash_name(const std::string& s) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

struct TensorPlan {
    std::string name;
    std::vector<int64_t> shape;
    DType type;
    float scale;   // weights uniform in [-scale, scale) (+ offset)
    float offset;  // e.g. 1 for norm weights
    bool permuted_embedding = false;  // output.weight: row t = token_embd row perm(t) + noise
};

/// Fills row-major [rows, row] floats of a tensor from its own stream.
void fill_values(uint64_t seed, const std::string& name, float scale, float offset, int64_t rows, int64_t row,
                 float* out) {
    Rng rng{seed ^ hash_name(name)};
    for (int64_t i = 0; i < rows * row; ++i) out[i] = offset + scale * rng.uniform();
}

/// llama.cpp's quantizer keeps a K-quant only for rows of whole 256-element super-blocks
/// and otherwise falls back (llama-quant.cpp): Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0
/// (the Gemma 3 270M's 640-wide rows).
DType fallback_for_row(DType t, int64_t n_in) {
    if (n_in % 256 == 0) return t;
    switch (t) {
        case DType::Q4_K: return DType::Q5_0;
        case DType::Q5_K: return DType::Q5_1;
        case DType::Q6_K: return DType::Q8_0;
        default: return t;
    }
}

DType weight_type(const std::string& type, const std::string& name, int64_t layer, int64_t n_layer, bool is_output) {
    if (type == "f32") return DType::F32;
    if (type == "f16") return DType::F16;
    if (type == "bf16") return DType::BF16;
    if (type == "q8_0") return DType::Q8_0;
    if (type == "q4_0") return DType::Q4_0;
    if (type == "q4_1") return DType::Q4_1;
    if (type == "q5_0") return DType::Q5_0;
    if (type == "q5_1") return DType::Q5_1;
    if (type == "q4_k") return DType::Q4_K;
    if (type == "q5_k") return DType::Q5_K;
    if (type == "q6_k") return DType::Q6_K;
    if (type == "q4_k_m") {
        // llama.cpp's Q4_K_M: output (or tied embeddings) Q6_K; attn_v and ffn_down Q6_K in
        // the layers use_more_bits() picks; everything else Q4_K.
        auto more_bits = [&](int64_t i) { return i < n_layer / 8 || i >= 7 * n_layer / 8 || (i - n_layer / 8) % 3 == 2; };
        if (is_output) return DType::Q6_K;
        if ((name.find("attn_v.") != std::string::npos || name.find("ffn_down.") != std::string::npos) && more_bits(layer))
            return DType::Q6_K;
        return DType::Q4_K;
    }
    throw Error(ErrorCode::InvalidArgument, fmt::format("unknown --type '{}'", type));
}

uint32_t file_type(const std::string& type) {
    static const std::map<std::string, uint32_t> ids = {{"f32", 0},  {"f16", 1},  {"q4_0", 2}, {"q4_1", 3},
                                                        {"q8_0", 7}, {"q5_0", 8}, {"q5_1", 9}, {"q4_k", 15},
                                                        {"q4_k_m", 15}, {"q5_k", 17}, {"q6_k", 18}, {"bf16", 32}};
    return ids.at(type);
}

void usage() {
    fmt::print(stderr,
               "usage: genie-make-model --arch llama|qwen2|qwen3|gemma3 --preset tiny|qwen3-0.6b|qwen3-4b|gemma3-tiny|gemma3-270m\n"
               "         --type f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k|q4_k_m\n"
               "         (--vocab-hf DIR | --vocab-gguf FILE) [--seed N] [--layers N] -o OUT.gguf\n");
}

}  // namespace

int main(int argc, char** argv) {
    std::string arch, preset = "tiny", type = "f32", vocab_hf, vocab_gguf, out;
    uint64_t seed = 1;
    int64_t layers = 0;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            auto value = [&]() -> std::string {
                if (i + 1 >= argc) throw Error(ErrorCode::InvalidArgument, a + " needs a value");
                return argv[++i];
            };
            if (a == "--arch") arch = value();
            else if (a == "--preset") preset = value();
            else if (a == "--type") type = value();
            else if (a == "--vocab-hf") vocab_hf = value();
            else if (a == "--vocab-gguf") vocab_gguf = value();
            else if (a == "--seed") seed = std::stoull(value());
            else if (a == "--layers") layers = std::stoll(value());
            else if (a == "-o") out = value();
            else {
                usage();
                return 2;
            }
        }
        if (arch.empty() || out.empty() || (vocab_hf.empty() == vocab_gguf.empty()) || !kPresets.count(preset)) {
            usage();
            return 2;
        }
        if (arch != "llama" && arch != "qwen2" && arch != "qwen3" && arch != "gemma3")
            throw Error(ErrorCode::InvalidArgument, "--arch must be llama, qwen2, qwen3 or gemma3");
        const bool gemma = arch == "gemma3";
        if (gemma && preset == "tiny") preset = "gemma3-tiny";
        if (gemma != (preset.rfind("gemma3-", 0) == 0))
            throw Error(ErrorCode::InvalidArgument, fmt::format("--preset {} does not go with --arch {}", preset, arch));
        Shape s = kPresets.at(preset);
        if (layers > 0) s.n_layer = layers;
        if (arch == "qwen3" && preset == "tiny") s.head_dim = 64;  // head_dim != n_embd / n_head, as in real Qwen3
        if (arch == "qwen3" || (preset != "tiny" && !gemma)) s.tied = true;

        // ---- vocabulary and metadata
        genie::gguf::Writer w;
        int64_t n_vocab = 0;
        if (!vocab_hf.empty()) {
            genie::tokenizer::HfImportOptions o;
            o.vocab_size = 151936;  // Qwen2/2.5/3 embedding rows (tokens padded with unused entries)
            w = genie::tokenizer::import_hf_tokenizer(vocab_hf, o);
        } else {
            const auto vocab = genie::gguf::Reader::open(vocab_gguf);
            for (const auto& kv : vocab.metadata())
                if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);
        }
        n_vocab = static_cast<int64_t>(w.find("tokenizer.ggml.tokens")->array()->items.size());
        w.remove("general.architecture");
        w.set("general.architecture", arch);
        w.set("general.name", fmt::format("genie synthetic {} {} {}", arch, preset, type));
        w.set("general.file_type", file_type(type));
        const std::string a = arch + ".";
        w.set(a + "context_length", static_cast<uint32_t>(s.n_ctx));
        w.set(a + "embedding_length", static_cast<uint32_t>(s.n_embd));
        w.set(a + "block_count", static_cast<uint32_t>(s.n_layer));
        w.set(a + "feed_forward_length", static_cast<uint32_t>(s.n_ff));
        w.set(a + "attention.head_count", static_cast<uint32_t>(s.n_head));
        w.set(a + "attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
        if (s.head_dim != s.n_embd / s.n_head) {
            w.set(a + "attention.key_length", static_cast<uint32_t>(s.head_dim));
            w.set(a + "attention.value_length", static_cast<uint32_t>(s.head_dim));
        }
        w.set(a + "attention.layer_norm_rms_epsilon", arch == "llama" ? 1e-5f : 1e-6f);
        w.set(a + "rope.freq_base", arch == "llama" ? 10000.0f : 1000000.0f);
        w.set(a + "rope.dimension_count", static_cast<uint32_t>(s.head_dim));
        if (s.sliding_window > 0) w.set(a + "attention.sliding_window", static_cast<uint32_t>(s.sliding_window));

        // ---- tensors: uniform weights scaled so activations keep their size; the output
        // projection is 4x larger so logits are well separated (a robust greedy argmax).
        const int64_t q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;
        auto mat_scale = [](int64_t n_in) { return std::sqrt(3.0f / static_cast<float>(n_in)); };
        std::vector<TensorPlan> plan;
        auto add = [&](std::string name, std::vector<int64_t> shape, float scale, float offset, int64_t layer,
                       bool is_output = false) {
            const DType t =
                shape.size() == 1 ? DType::F32 : fallback_for_row(weight_type(type, name, layer, s.n_layer, is_output), shape[0]);
            plan.push_back({std::move(name), std::move(shape), t, scale, offset});
        };
        add("token_embd.weight", {s.n_embd, n_vocab}, 1.0f, 0.0f, -1, s.tied);
        add("output_norm.weight", {s.n_embd}, 0.1f, 1.0f, -1);
        // A separate output projection that is a permuted copy of the embeddings (plus noise):
        // random projections give logits whose top two are often a hair apart, and such ties
        // are broken differently by any two correct implementations; this one makes the next
        // token follow a random permutation of the current one by a clear margin, so greedy
        // parity is meaningful, while the logits still carry every layer's arithmetic.
        if (!s.tied) {
            add("output.weight", {s.n_embd, n_vocab}, 0.25f, 0.0f, -1, true);
            plan.back().permuted_embedding = true;
        }
        for (int64_t i = 0; i < s.n_layer; ++i) {
            const std::string p = fmt::format("blk.{}.", i);
            add(p + "attn_norm.weight", {s.n_embd}, 0.1f, 1.0f, i);
            add(p + "attn_q.weight", {s.n_embd, q_dim}, mat_scale(s.n_embd), 0.0f, i);
            add(p + "attn_k.weight", {s.n_embd, kv_dim}, mat_scale(s.n_embd), 0.0f, i);
            add(p + "attn_v.weight", {s.n_embd, kv_dim}, mat_scale(s.n_embd), 0.0f, i);
            if (arch == "qwen2") {
                add(p + "attn_q.bias", {q_dim}, 0.1f, 0.0f, i);
                add(p + "attn_k.bias", {kv_dim}, 0.1f, 0.0f, i);
                add(p + "attn_v.bias", {kv_dim}, 0.1f, 0.0f, i);
            }
            if (arch == "qwen3" || gemma) {
                add(p + "attn_q_norm.weight", {s.head_dim}, 0.1f, 1.0f, i);
                add(p + "attn_k_norm.weight", {s.head_dim}, 0.1f, 1.0f, i);
            }
            add(p + "attn_output.weight", {q_dim, s.n_embd}, mat_scale(q_dim), 0.0f, i);
            if (gemma) {  // Gemma's norms as llama.cpp's converter stores them (1 already added)
                add(p + "post_attention_norm.weight", {s.n_embd}, 0.1f, 1.0f, i);
                add(p + "post_ffw_norm.weight", {s.n_embd}, 0.1f, 1.0f, i);
            }
            add(p + "ffn_norm.weight", {s.n_embd}, 0.1f, 1.0f, i);
            add(p + "ffn_gate.weight", {s.n_embd, s.n_ff}, mat_scale(s.n_embd), 0.0f, i);
            add(p + "ffn_up.weight", {s.n_embd, s.n_ff}, mat_scale(s.n_embd), 0.0f, i);
            add(p + "ffn_down.weight", {s.n_ff, s.n_embd}, mat_scale(s.n_ff), 0.0f, i);
        }
        const TensorPlan embd_plan = plan.front();
        for (const TensorPlan& t : plan) {
            // Each tensor has its own stream (seed ^ hash(name)): changing one tensor's type
            // or adding a tensor never changes another tensor's values.
            w.add_tensor(t.name, t.type, t.shape, [t, seed, embd_plan](uint8_t* dst, size_t size) {
                const int64_t row = t.shape[0];
                const int64_t rows = t.shape.size() > 1 ? t.shape[1] : 1;
                const size_t row_bytes = genie::quant::row_bytes(t.type, row);
                std::vector<float> values(static_cast<size_t>(rows * row));
                fill_values(seed, t.name, t.scale, t.offset, rows, row, values.data());
                if (t.permuted_embedding) {
                    std::vector<float> embd(values.size());
                    fill_values(seed, embd_plan.name, embd_plan.scale, embd_plan.offset, rows, row, embd.data());
                    // perm(t) = (7919 t + 1) mod n_vocab: 7919 is prime and divides neither 32000 nor 151936.
                    for (int64_t r = 0; r < rows; ++r) {
                        const int64_t src = (7919 * r + 1) % rows;
                        for (int64_t i = 0; i < row; ++i) values[static_cast<size_t>(r * row + i)] += embd[static_cast<size_t>(src * row + i)];
                    }
                }
                for (int64_t r = 0; r < rows; ++r)
                    genie::quant::quantize_row(t.type, values.data() + r * row, dst + static_cast<size_t>(r) * row_bytes, row);
                (void)size;
            });
        }
        w.write(out);
        drop_from_page_cache(out);
        fmt::print(stderr, "genie-make-model: wrote {} ({} tensors)\n", out, w.tensor_count());
        return 0;
    } catch (const std::exception& e) {
        fmt::print(stderr, "genie-make-model: error: {}\n", e.what());
        return 1;
    }
}
