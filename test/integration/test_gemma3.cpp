// Gemma 3 (lib/model: hparams, forward): the hyper-parameters as llama.cpp's loader reads
// them (sliding-window pattern, RoPE bases, attention scale, soft-capping), and on the
// gemma3-tiny fixture (window 16) what the window does to the logits: nothing while the
// whole context fits in it, something once it does not; prompt batches and one-token
// decode steps agree; final_logit_softcapping bounds the logits. Parity with llama.cpp
// itself is test_golden.cpp's (gemma3-tiny goldens) and test_gemma3_270m.cpp's.
#include "support/test_support.hpp"

#include "gguf/gguf_reader.hpp"
#include "gguf/gguf_writer.hpp"
#include "model/hparams.hpp"

#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

using namespace genie;

namespace {

std::filesystem::path fixture(const std::string& name) { return test::fixture_dir() / (name + ".gguf"); }

/// A copy of a fixture with `edit` applied to its metadata (tensors copied when `tensors`).
std::filesystem::path edited(const std::string& name, const std::string& tag, const std::function<void(gguf::Writer&)>& edit,
                             bool tensors) {
    const auto reader = gguf::Reader::open(fixture(name));
    gguf::Writer w;
    w.copy_metadata(reader);
    if (tensors)
        for (const auto& t : reader.tensors())
            w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.size_bytes));
    edit(w);
    const auto path = test::temp_path(name + "-" + tag);
    w.write(path);
    return path;
}

model::HParams hparams_with(const std::function<void(gguf::Writer&)>& edit) {
    const auto path = edited("gemma3-tiny-q4_k_m", "hp", edit, false);
    const auto reader = gguf::Reader::open(path);
    model::HParams hp = model::read_hparams(reader);
    std::filesystem::remove(path);
    return hp;
}

std::vector<bool> swa_flags(const model::HParams& hp) {
    std::vector<bool> v;
    for (int32_t il = 0; il < hp.n_layer; ++il) v.push_back(hp.window(il) > 0);
    return v;
}

std::vector<TokenId> long_prompt(const Model& m) {
    return m.tokenizer().tokenize("Once upon a time, in a small village by the sea, there lived a little girl named Lily. "
                                  "Every morning she walked to the beach with her dog and looked for shells.");
}

}  // namespace

TEST_CASE("gemma3: hyper-parameters as llama.cpp reads them", "[gemma3]") {
    if (!std::filesystem::exists(fixture("gemma3-tiny-q4_k_m")))
        FAIL("gemma3-tiny-q4_k_m.gguf is missing: the ctest fixture 'fixtures' generates it (scripts/make-fixtures)");
    const model::HParams hp = hparams_with([](gguf::Writer&) {});
    CHECK(hp.recipe.qk_norm);
    CHECK(hp.recipe.post_norms);
    CHECK(hp.recipe.scale_embeddings);
    CHECK(hp.recipe.ffn == model::FfnActivation::Geglu);
    CHECK(hp.recipe.rope_mode == model::RopeMode::Neox);
    // default pattern 6: layers 0-4 local, 5 global; window 16; local RoPE base 10000
    CHECK(swa_flags(hp) == std::vector<bool>{true, true, true, true, true, false});
    CHECK(hp.n_swa == 16);
    CHECK(hp.window(0) == 16);
    CHECK(hp.window(5) == 0);
    CHECK(hp.rope_freq_base == 1000000.0f);
    CHECK(hp.rope_freq_base_swa == 10000.0f);
    CHECK(hp.q_scale_before_attention);
    CHECK(hp.attention_scale == 1.0f / std::sqrt(64.0f));
    CHECK(hp.final_logit_softcapping == 0.0f);

    CHECK(swa_flags(hparams_with([](gguf::Writer& w) { w.set("gemma3.attention.sliding_window_pattern", uint32_t{3}); })) ==
          std::vector<bool>{true, true, false, true, true, false});
    CHECK(swa_flags(hparams_with([](gguf::Writer& w) { w.set("gemma3.attention.sliding_window_pattern", uint32_t{0}); })) ==
          std::vector<bool>(6, true));
    const std::vector<bool> flags = {false, true, false, true, true, true};
    CHECK(swa_flags(hparams_with([&](gguf::Writer& w) {
              w.set("gemma3.attention.sliding_window_pattern", gguf::Value::array_of(flags));
          })) == flags);
    CHECK_THROWS_AS(hparams_with([](gguf::Writer& w) {
                        w.set("gemma3.attention.sliding_window_pattern", gguf::Value::array_of(std::vector<bool>{true, false}));
                    }),
                    Error);
    CHECK(hparams_with([](gguf::Writer& w) { w.set("gemma3.rope.freq_base_swa", 5000.0f); }).rope_freq_base_swa == 5000.0f);
    // Without a sliding window every layer is global.
    const model::HParams global = hparams_with([](gguf::Writer& w) { w.remove("gemma3.attention.sliding_window"); });
    CHECK(swa_flags(global) == std::vector<bool>(6, false));
    CHECK(hparams_with([](gguf::Writer& w) { w.set("gemma3.final_logit_softcapping", 30.0f); }).final_logit_softcapping ==
          30.0f);
    // The 62-layer 27B: 1 / sqrt(n_embd / n_head) instead of 1 / sqrt(key_length).
    const model::HParams big = hparams_with([](gguf::Writer& w) {
        w.set("gemma3.block_count", uint32_t{62});
        w.set("gemma3.embedding_length", uint32_t{5376});
        w.set("gemma3.attention.head_count", uint32_t{32});
        w.set("gemma3.attention.head_count_kv", uint32_t{16});
        w.set("gemma3.attention.key_length", uint32_t{128});
        w.set("gemma3.attention.value_length", uint32_t{128});
        w.set("gemma3.rope.dimension_count", uint32_t{128});
    });
    CHECK(big.attention_scale == 1.0f / std::sqrt(168.0f));
}

TEST_CASE("gemma3: the sliding window hides what lies before it, and only that", "[gemma3]") {
    if (!std::filesystem::exists(fixture("gemma3-tiny-q4_k_m")))
        FAIL("gemma3-tiny-q4_k_m.gguf is missing: the ctest fixture 'fixtures' generates it (scripts/make-fixtures)");
    // The same weights with a window as wide as the context: every layer sees everything.
    const auto wide_path = edited("gemma3-tiny-q4_k_m", "wide", [](gguf::Writer& w) {
        w.set("gemma3.attention.sliding_window", uint32_t{4096});
    }, true);
    const Model narrow = Model::load(fixture("gemma3-tiny-q4_k_m"));
    const Model wide = Model::load(wide_path);
    SessionOptions so;
    so.context_length = 128;
    so.threads = 2;
    Session a(narrow, so), b(wide, so);
    const std::vector<TokenId> tokens = long_prompt(narrow);
    REQUIRE(tokens.size() > 30);
    // 16 tokens fit the window: the same numbers bit for bit (the local layers' RoPE base is
    // the same in both files).
    const std::vector<TokenId> head(tokens.begin(), tokens.begin() + 16);
    auto copy = [](std::span<const float> s) { return std::vector<float>(s.begin(), s.end()); };
    const std::vector<float> la = copy(a.evaluate(head));
    const std::vector<float> lb = copy(b.evaluate(head));
    CHECK(la == lb);
    // Past the window the local layers of `narrow` no longer see the first tokens.
    const std::vector<float> ma = copy(a.evaluate(tokens));
    const std::vector<float> mb = copy(b.evaluate(tokens));
    double diff = 0;
    for (size_t i = 0; i < ma.size(); ++i) diff = std::max(diff, std::fabs(static_cast<double>(ma[i]) - mb[i]));
    CHECK(diff > 0.05);
    std::filesystem::remove(wide_path);
}

TEST_CASE("gemma3: a prompt in one batch and token by token give the same logits", "[gemma3]") {
    if (!std::filesystem::exists(fixture("gemma3-tiny-f32")))
        FAIL("gemma3-tiny-f32.gguf is missing: the ctest fixture 'fixtures' generates it (scripts/make-fixtures)");
    const Model model = Model::load(fixture("gemma3-tiny-f32"));
    const std::vector<TokenId> tokens = long_prompt(model);
    for (const KvType kv : {KvType::F32, KvType::F16}) {
        INFO("kv " << static_cast<int>(kv));
        SessionOptions so;
        so.context_length = 128;
        so.threads = 2;
        so.kv_type = kv;
        Session one(model, so), steps(model, so);
        const auto first = one.evaluate(tokens);
        const std::vector<float> all(first.begin(), first.end());
        std::vector<float> last;
        for (size_t n = 1; n <= tokens.size(); ++n) {  // each call decodes one new token (prefix reused)
            const auto l = steps.evaluate(std::span<const TokenId>(tokens.data(), n));
            last.assign(l.begin(), l.end());
        }
        so.batch_size = 7;  // prompt blocks that start inside and outside the window
        Session small_batches(model, so);
        const auto lb = small_batches.evaluate(tokens);
        double d_steps = 0, d_batches = 0;
        for (size_t i = 0; i < all.size(); ++i) {
            d_steps = std::max(d_steps, std::fabs(static_cast<double>(all[i]) - last[i]));
            d_batches = std::max(d_batches, std::fabs(static_cast<double>(all[i]) - lb[i]));
        }
        // F32 weights: summation order only (one-row and many-row matmul kernels); the F16
        // cache rounds q and the probabilities (docs/parity.md's F16 tolerance).
        const double tol = kv == KvType::F32 ? 1e-3 : 5e-2;
        CHECK(d_steps <= tol);
        CHECK(d_batches <= tol);
    }
}

TEST_CASE("gemma3: final_logit_softcapping bounds the logits to cap * tanh(logit / cap)", "[gemma3]") {
    if (!std::filesystem::exists(fixture("gemma3-tiny-q4_k_m")))
        FAIL("gemma3-tiny-q4_k_m.gguf is missing: the ctest fixture 'fixtures' generates it (scripts/make-fixtures)");
    const auto capped_path = edited("gemma3-tiny-q4_k_m", "cap", [](gguf::Writer& w) {
        w.set("gemma3.final_logit_softcapping", 3.0f);
    }, true);
    const Model plain = Model::load(fixture("gemma3-tiny-q4_k_m"));
    const Model capped = Model::load(capped_path);
    SessionOptions so;
    so.context_length = 64;
    so.threads = 2;
    Session a(plain, so), b(capped, so);
    const std::vector<TokenId> tokens = long_prompt(plain);
    const auto la = a.evaluate(tokens);
    const auto lb = b.evaluate(tokens);
    double worst = 0, largest = 0;
    for (size_t i = 0; i < la.size(); ++i) {
        largest = std::max(largest, std::fabs(static_cast<double>(la[i])));
        worst = std::max(worst, std::fabs(3.0 * std::tanh(la[i] / 3.0) - lb[i]));
        REQUIRE(std::fabs(lb[i]) <= 3.0f);
    }
    CHECK(largest > 3.0);  // the cap is doing something
    CHECK(worst < 1e-5);
    std::filesystem::remove(capped_path);
}
