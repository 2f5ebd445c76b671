// Session: the KV cache, prefix reuse and the generate loop.
#include "backend/backend.hpp"
#include "model/forward.hpp"
#include "model/model_impl.hpp"

#include <genie/error.hpp>
#include <genie/session.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>

namespace genie {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
}  // namespace

struct Session::Impl {
    Model model;
    SessionOptions options;
    std::unique_ptr<backend::Backend> backend;
    std::unique_ptr<backend::KvCache> cache;
    std::unique_ptr<model::Forward> forward;
    std::vector<TokenId> cached;  // tokens whose K/V are in the cache, in position order
    std::vector<float> logits;
    std::atomic<bool> cancel_requested{false};

    Impl(const Model& m, const SessionOptions& o) : model(m), options(o) {
        const model::HParams& hp = m.impl().hparams;
        if (options.context_length < 0) throw Error(ErrorCode::InvalidArgument, "context_length must be >= 0");
        if (options.batch_size <= 0) throw Error(ErrorCode::InvalidArgument, "batch_size must be > 0");
        if (options.context_length == 0) options.context_length = std::min(hp.n_ctx_train, 4096);
        backend = backend::make_cpu_backend(options.threads);
        backend::KvLayout layout{hp.n_layer, options.context_length, hp.n_head_kv, hp.head_dim_k, options.kv_type};
        cache = backend->create_kv_cache(layout);
        forward = std::make_unique<model::Forward>(m.impl(), *backend, *cache);
    }

    /// Evaluates `tokens` as the whole sequence: reuses the cached prefix, runs the rest.
    /// Returns how many tokens were reused.
    int32_t evaluate(std::span<const TokenId> tokens) {
        if (tokens.empty()) throw Error(ErrorCode::InvalidArgument, "cannot evaluate an empty token sequence");
        if (static_cast<int64_t>(tokens.size()) > options.context_length)
            throw Error(ErrorCode::ContextOverflow,
                        fmt::format("the prompt has {} tokens but the context holds {}", tokens.size(), options.context_length));
        const int32_t n_vocab = model.impl().hparams.n_vocab;
        for (TokenId t : tokens)
            if (t < 0 || t >= n_vocab)
                throw Error(ErrorCode::InvalidArgument, fmt::format("token id {} is outside the vocabulary [0, {})", t, n_vocab));
        size_t common = 0;
        while (common < cached.size() && common < tokens.size() && cached[common] == tokens[common]) ++common;
        // The last token must be evaluated to get its logits.
        if (common == tokens.size()) --common;
        cached.resize(common);
        logits.resize(static_cast<size_t>(n_vocab));
        for (size_t at = common; at < tokens.size();) {
            const size_t count = std::min(tokens.size() - at, static_cast<size_t>(options.batch_size));
            forward->run(tokens.subspan(at, count), static_cast<int32_t>(at), logits.data());
            cached.insert(cached.end(), tokens.begin() + static_cast<long>(at), tokens.begin() + static_cast<long>(at + count));
            at += count;
        }
        return static_cast<int32_t>(common);
    }

    GenerateResult generate(std::span<const TokenId> prompt, Sampler& sampler, const GenerateOptions& opt,
                            const PieceCallback& on_piece, Clock::time_point start) {
        if (opt.max_tokens < 0) throw Error(ErrorCode::InvalidArgument, "max_tokens must be >= 0");
        cancel_requested.store(false);
        GenerateResult result;
        result.prompt_tokens = static_cast<int32_t>(prompt.size());
        result.timings.load_ms = model.load_time_ms();
        const Tokenizer& tok = model.tokenizer();

        const auto t_prompt = Clock::now();
        result.reused_prompt_tokens = evaluate(prompt);
        result.timings.prompt_eval_ms = ms_since(t_prompt);
        const int32_t evaluated = result.prompt_tokens - result.reused_prompt_tokens;
        if (result.timings.prompt_eval_ms > 0)
            result.timings.prompt_tokens_per_s = evaluated / (result.timings.prompt_eval_ms / 1000.0);

        StreamingDetokenizer detok(tok);
        Clock::time_point t_first{};
        result.finish_reason = FinishReason::Length;
        for (int32_t i = 0; i < opt.max_tokens; ++i) {
            if (cancel_requested.load()) {
                result.finish_reason = FinishReason::Cancelled;
                break;
            }
            const TokenId next = sampler.sample(logits);
            sampler.accept(next);
            if (i == 0) {
                t_first = Clock::now();
                result.timings.time_to_first_token_ms = ms_since(start);
            }
            if (opt.stop_on_eog && tok.is_eog(next)) {
                result.finish_reason = FinishReason::Stop;
                break;
            }
            result.tokens.push_back(next);
            Piece piece{next, detok.push(next)};
            result.text += piece.text;
            if (on_piece && !on_piece(piece)) {
                result.finish_reason = FinishReason::Stop;
                break;
            }
            if (i + 1 == opt.max_tokens) break;  // Length; the last token is not evaluated
            if (static_cast<int32_t>(cached.size()) >= options.context_length) break;  // context full: Length
            if (cancel_requested.load()) {
                result.finish_reason = FinishReason::Cancelled;
                break;
            }
            const TokenId one[1] = {next};
            forward->run(one, static_cast<int32_t>(cached.size()), logits.data());
            cached.push_back(next);
        }
        const std::string tail = detok.flush();
        if (!tail.empty()) {
            result.text += tail;
            if (on_piece) on_piece(Piece{kNoToken, tail});
        }
        result.completion_tokens = static_cast<int32_t>(result.tokens.size());
        if (result.completion_tokens > 0) {
            result.timings.decode_ms = ms_since(t_first);
            if (result.completion_tokens > 1 && result.timings.decode_ms > 0)
                result.timings.decode_tokens_per_s = (result.completion_tokens - 1) / (result.timings.decode_ms / 1000.0);
        }
        return result;
    }
};

Session::Session(const Model& model, const SessionOptions& options) : impl_(std::make_unique<Impl>(model, options)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

GenerateResult Session::generate(std::string_view prompt, Sampler& sampler, const GenerateOptions& options,
                                 const PieceCallback& on_piece) {
    const auto start = Clock::now();
    TokenizeOptions to;
    to.add_special = options.add_special;
    to.parse_special = options.parse_special;
    const std::vector<TokenId> tokens = impl_->model.tokenizer().tokenize(prompt, to);
    if (tokens.empty()) throw Error(ErrorCode::InvalidArgument, "the prompt is empty (no tokens)");
    return impl_->generate(tokens, sampler, options, on_piece, start);
}

GenerateResult Session::generate(std::span<const TokenId> prompt, Sampler& sampler, const GenerateOptions& options,
                                 const PieceCallback& on_piece) {
    return impl_->generate(prompt, sampler, options, on_piece, Clock::now());
}

std::span<const float> Session::evaluate(std::span<const TokenId> tokens) {
    impl_->evaluate(tokens);
    return impl_->logits;
}

void Session::cancel() noexcept { impl_->cancel_requested.store(true); }
std::span<const float> Session::last_logits() const noexcept { return impl_->logits; }
std::span<const TokenId> Session::cached_tokens() const noexcept { return impl_->cached; }
void Session::reset() noexcept {
    impl_->cached.clear();
    impl_->logits.clear();
}
int32_t Session::context_length() const noexcept { return impl_->options.context_length; }
const Model& Session::model() const noexcept { return impl_->model; }

}  // namespace genie
