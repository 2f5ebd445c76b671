// Session: the KV cache, prefix reuse and the generate loop.
#include "backend/backend.hpp"
#include "backend/device.hpp"
#include "constraint/json_grammar.hpp"
#include "core/fault_injection.hpp"
#include "model/forward.hpp"
#include "model/memory_plan.hpp"
#include "model/model_impl.hpp"
#include "runtime/kv_file.hpp"
#include "runtime/ngram_lookup.hpp"
#include "runtime/output_filter.hpp"
#include "runtime/speculative.hpp"

#include <genie/error.hpp>
#include <genie/memory_plan.hpp>
#include <genie/session.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <optional>

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
    std::unique_ptr<Session> draft;  // speculative decoding's draft model and its KV cache

    Impl(const Model& m, const SessionOptions& o) : model(m), options(o) {
        const model::HParams& hp = m.impl().hparams;
        // The memory planner (lib/model/memory_plan) resolves context_length (0 and
        // kLargestContext) and checks the plan against the budget before anything is
        // allocated: OutOfMemory showing the plan and the largest context that fits.
        const MemoryPlan plan = plan_memory(m, options);  // InvalidArgument for bad options
        model::require_fits(plan, fmt::format("a session with a context of {} tokens", plan.context_length));
        options.context_length = plan.context_length;
        backend = backend::open_backend(m.impl().backend, {options.threads, m.impl().device_weights});
        backend::KvLayout layout{hp.n_layer, options.context_length, hp.n_head_kv, hp.head_dim_k, options.kv_type};
        m.impl().reader.file().check_unchanged();  // Io "model file changed on disk" (docs/reliability.md)
        detail::inject_alloc_failure("KV cache");   // tests only: an injected OutOfMemory
        cache = backend->create_kv_cache(layout);
        forward = std::make_unique<model::Forward>(m.impl(), *backend, *cache);
        if (options.draft_model) {
            runtime::check_same_vocabulary(m, *options.draft_model);
            SessionOptions draft_options;
            draft_options.context_length = options.context_length;
            draft_options.threads = options.draft_threads > 0 ? options.draft_threads : options.threads;
            draft_options.batch_size = options.batch_size;
            draft_options.kv_type = options.kv_type;
            draft = std::make_unique<Session>(*options.draft_model, draft_options);
        }
    }

    /// State of speculative decoding during one generate call (docs/speculative.md).
    struct Speculation {
        const SpeculativeOptions& options;
        std::optional<Sampler> draft_sampler;  // the draft's own draws (another seed: independent of the target's)
        runtime::Proposal proposal;
        std::vector<TokenId> history;      // prompt + output so far: what the proposals continue
        std::vector<float> verify_logits;  // [proposals + 1, n_vocab]
        std::vector<TokenId> ready;        // tokens decided by the last step, not yet emitted
        size_t ready_at = 0;               // next of `ready` to emit
        size_t ready_accepted = 0;         // ready[0, ready_accepted) were passed to sampler.accept already
        int32_t draft_length = 0;
        explicit Speculation(const SpeculativeOptions& o) : options(o), draft_length(o.draft_max) {}
    };

    /// One step after `next` (emitted, not yet evaluated): proposes, verifies the proposals
    /// and `next` in one forward pass and leaves the tokens it decided in spec.ready; false
    /// when there were too few proposals (the caller decodes `next` plainly).
    bool speculative_step(Speculation& spec, TokenId next, Sampler& sampler, GenerateResult& result) {
        const SpeculativeOptions& so = spec.options;
        const auto pos = static_cast<int32_t>(cached.size());
        const int32_t n = std::min({spec.draft_length, options.context_length - pos - 1, options.batch_size - 1});
        spec.proposal.clear();
        if (n <= 0) return false;
        spec.history.assign(cached.begin(), cached.end());
        spec.history.push_back(next);
        if (draft) {
            runtime::propose_from_draft(*draft, spec.history, *spec.draft_sampler, n, so.draft_p_min, spec.proposal);
        } else {
            runtime::lookup_proposals(spec.history, so.lookup_ngram, n, spec.proposal.tokens);
            spec.proposal.q.assign(spec.proposal.tokens.size(), {});  // point masses
        }
        const auto k = static_cast<int32_t>(spec.proposal.tokens.size());
        if (k == 0 || k < so.draft_min) return false;
        // The target sees next and the proposals at once: logits for every position.
        std::vector<TokenId>& batch = spec.history;  // reused: [next, proposals...]
        batch.assign(1, next);
        batch.insert(batch.end(), spec.proposal.tokens.begin(), spec.proposal.tokens.end());
        const int32_t n_vocab = model.impl().hparams.n_vocab;
        spec.verify_logits.resize(static_cast<size_t>(k + 1) * static_cast<size_t>(n_vocab));
        forward->run(batch, pos, spec.verify_logits.data(), k + 1);
        const runtime::Verdict verdict = runtime::verify(spec.verify_logits, n_vocab, spec.proposal, sampler);
        const auto a = static_cast<size_t>(verdict.accepted);
        // The target's cache keeps next and the kept proposals; the cells of the rejected
        // ones are overwritten by the next pass (attention reads cells < position only).
        cached.insert(cached.end(), batch.begin(), batch.begin() + static_cast<long>(a + 1));
        const auto row = spec.verify_logits.begin() + static_cast<long>(a * static_cast<size_t>(n_vocab));
        logits.assign(row, row + n_vocab);
        spec.ready.assign(spec.proposal.tokens.begin(), spec.proposal.tokens.begin() + static_cast<long>(a));
        spec.ready.push_back(verdict.next);
        spec.ready_at = 0;
        spec.ready_accepted = a;
        result.draft_tokens += k;
        result.accepted_draft_tokens += verdict.accepted;
        spec.draft_length = runtime::adapt_draft_length(so, spec.draft_length, k, verdict.accepted);
        return true;
    }

    /// Evaluates `tokens` as the whole sequence: reuses the cached prefix, runs the rest.
    /// Returns how many tokens were reused.
    int32_t evaluate(std::span<const TokenId> tokens) {
        if (tokens.empty()) throw Error(ErrorCode::InvalidArgument, "cannot evaluate an empty token sequence");
        model.impl().reader.file().check_unchanged();  // before any weight is read
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
                            const PieceCallback& on_piece, Clock::time_point start, bool start_in_reasoning = false) {
        if (opt.max_tokens < 0) throw Error(ErrorCode::InvalidArgument, "max_tokens must be >= 0");
        if (!(opt.deadline_s >= 0) || !(opt.idle_timeout_s >= 0))
            throw Error(ErrorCode::InvalidArgument, "deadline_s and idle_timeout_s must be >= 0 (0 = none)");
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
        // Like llama.cpp's CLI and server, the prompt enters the sampler's penalty window.
        for (TokenId t : prompt) sampler.accept(t);

        StreamingDetokenizer detok(tok);
        runtime::OutputFilter filter(opt.stop, opt.split_reasoning, start_in_reasoning);
        bool keep_going = true;
        // Hands filtered text to the caller; false when generation must end (stop string
        // matched or the callback said stop).
        auto deliver = [&](TokenId token, std::vector<runtime::Segment> segments) {
            for (auto& seg : segments) {
                (seg.kind == PieceKind::Reasoning ? result.reasoning : result.text) += seg.text;
                if (on_piece && keep_going && !on_piece(Piece{token, std::move(seg.text), seg.kind})) keep_going = false;
            }
            return keep_going && !filter.stopped();
        };
        Clock::time_point t_first{};
        std::optional<JsonMatcher> json;  // GenerateOptions::constraint
        std::vector<float> masked_logits;
        if (opt.constraint) {
            if (opt.constraint->vocab_size() != tok.vocab_size())
                throw Error(ErrorCode::InvalidArgument, "the JSON constraint was built for another vocabulary");
            json.emplace(opt.constraint);
        }
        // GenerateOptions::deadline_s / idle_timeout_s, checked after each delivered token.
        const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.deadline_s));
        const auto idle = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.idle_timeout_s));
        Clock::time_point last_token = start;
        // `arrived`: when the token was sampled (the time the callback takes is not idle time).
        auto timed_out = [&](Clock::time_point arrived) {
            const auto now = Clock::now();
            const bool late =
                (opt.deadline_s > 0 && now >= deadline) || (opt.idle_timeout_s > 0 && arrived - last_token > idle);
            last_token = now;
            return late;
        };
        // Speculative decoding: a draft model, else prompt lookup; never with a constraint.
        if (opt.speculative.draft_max < 0 || opt.speculative.draft_min < 0 || opt.speculative.lookup_ngram < 0 ||
            !(opt.speculative.draft_p_min >= 0.0f && opt.speculative.draft_p_min <= 1.0f))
            throw Error(ErrorCode::InvalidArgument,
                        "speculative options: draft_max, draft_min and lookup_ngram must be >= 0, draft_p_min in [0, 1]");
        std::optional<Speculation> spec;
        if (!json && opt.speculative.draft_max > 0 && (draft || opt.speculative.lookup_ngram > 0)) {
            spec.emplace(opt.speculative);
            if (draft) {
                SamplerOptions dso = sampler.options();
                dso.seed = dso.seed * 2654435761u + 1u;
                spec->draft_sampler.emplace(dso);
            }
        }
        result.finish_reason = FinishReason::Length;
        for (int32_t i = 0; i < opt.max_tokens; ++i) {
            if (cancel_requested.load()) {
                result.finish_reason = FinishReason::Cancelled;
                break;
            }
            TokenId next;
            bool accepted_already = false;
            if (spec && spec->ready_at < spec->ready.size()) {  // decided by the last speculative step
                accepted_already = spec->ready_at < spec->ready_accepted;
                next = spec->ready[spec->ready_at++];
            } else {
                next = json ? constraint::sample_constrained(*json, sampler, logits, masked_logits) : sampler.sample(logits);
            }
            if (next == kNoToken) {  // the constrained value is complete and the vocabulary has no EOG
                result.finish_reason = FinishReason::Stop;
                break;
            }
            if (!accepted_already) sampler.accept(next);
            if (i == 0) {
                t_first = Clock::now();
                result.timings.time_to_first_token_ms = ms_since(start);
            }
            if (opt.stop_on_eog && tok.is_eog(next)) {
                result.finish_reason = FinishReason::Stop;
                break;
            }
            result.tokens.push_back(next);
            const auto arrived = Clock::now();
            if (!deliver(next, filter.push(detok.push(next)))) {
                result.finish_reason = FinishReason::Stop;
                break;
            }
            if (timed_out(arrived)) {
                result.finish_reason = FinishReason::Timeout;
                break;
            }
            if (i + 1 == opt.max_tokens) break;  // Length; the last token is not evaluated
            if (spec && spec->ready_at < spec->ready.size()) continue;  // already evaluated
            if (static_cast<int32_t>(cached.size()) >= options.context_length) break;  // context full: Length
            if (cancel_requested.load()) {
                result.finish_reason = FinishReason::Cancelled;
                break;
            }
            if (spec && speculative_step(*spec, next, sampler, result)) continue;
            const TokenId one[1] = {next};
            forward->run(one, static_cast<int32_t>(cached.size()), logits.data());
            cached.push_back(next);
        }
        if (!filter.stopped()) {
            auto segments = filter.push(detok.flush());
            for (auto& seg : filter.finish()) segments.push_back(std::move(seg));
            deliver(kNoToken, std::move(segments));
        }
        // Trailing whitespace of the reasoning block (before </think>) is not part of it.
        while (!result.reasoning.empty() && std::isspace(static_cast<unsigned char>(result.reasoning.back())))
            result.reasoning.pop_back();
        result.completion_tokens = static_cast<int32_t>(result.tokens.size());
        if (result.completion_tokens > 0) {
            result.timings.decode_ms = ms_since(t_first);
            if (result.completion_tokens > 1 && result.timings.decode_ms > 0)
                result.timings.decode_tokens_per_s = (result.completion_tokens - 1) / (result.timings.decode_ms / 1000.0);
        }
        return result;
    }

    ChatResult chat(const PreparedChat& prepared, Sampler& sampler, const ChatOptions& options,
                    const PieceCallback& on_piece, Clock::time_point start) {
        ChatResult result;
        result.prompt = prepared.prompt;
        GenerateOptions go = options.generate;
        // A constrained answer is the JSON itself: no think block is split off (ask for
        // enable_thinking=false with a constraint so the template does not open one either).
        go.split_reasoning = !go.constraint;
        result.generation =
            generate(prepared.tokens, sampler, go, on_piece, start, prepared.starts_in_reasoning && go.split_reasoning);
        result.tool_calls = extract_tool_calls(result.generation.text);
        if (!options.tools_json.empty())
            result.rejected_tool_calls = check_tool_calls(result.tool_calls, options.tools_json, options.parallel_tool_calls);
        return result;
    }

    /// Tokenizes a prompt text as llama.cpp's tools do.
    std::vector<TokenId> tokenize_prompt(std::string_view prompt, bool add_special, bool parse_special) const {
        TokenizeOptions to;
        to.add_special = add_special;
        to.parse_special = parse_special;
        std::vector<TokenId> tokens = model.tokenizer().tokenize(prompt, to);
        if (tokens.empty()) throw Error(ErrorCode::InvalidArgument, "the prompt is empty (no tokens)");
        return tokens;
    }
};

Session::Session(const Model& model, const SessionOptions& options) : impl_(std::make_unique<Impl>(model, options)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

GenerateResult Session::generate(std::string_view prompt, Sampler& sampler, const GenerateOptions& options,
                                 const PieceCallback& on_piece) {
    const auto start = Clock::now();
    const std::vector<TokenId> tokens = impl_->tokenize_prompt(prompt, options.add_special, options.parse_special);
    return impl_->generate(tokens, sampler, options, on_piece, start);
}

GenerateResult Session::generate(std::span<const TokenId> prompt, Sampler& sampler, const GenerateOptions& options,
                                 const PieceCallback& on_piece) {
    return impl_->generate(prompt, sampler, options, on_piece, Clock::now());
}

ChatResult Session::chat(std::span<const ChatMessage> messages, Sampler& sampler, const ChatOptions& options,
                         const PieceCallback& on_piece) {
    const auto start = Clock::now();
    return impl_->chat(prepare_chat(impl_->model, messages, options), sampler, options, on_piece, start);
}

ChatResult Session::chat(const PreparedChat& prepared, Sampler& sampler, const ChatOptions& options,
                         const PieceCallback& on_piece) {
    return impl_->chat(prepared, sampler, options, on_piece, Clock::now());
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
    if (impl_->draft) impl_->draft->reset();
}
int32_t Session::context_length() const noexcept { return impl_->options.context_length; }
size_t Session::kv_bytes() const noexcept { return impl_->cache->layout().bytes(); }
size_t Session::scratch_bytes() const noexcept {
    return impl_->logits.capacity() * sizeof(float) + impl_->forward->workspace_bytes();
}
const Model& Session::model() const noexcept { return impl_->model; }

uint64_t Session::save_state(const std::filesystem::path& path) const {
    return runtime::save_kv_file(path, impl_->model.impl(), *impl_->cache, impl_->cached);
}

void Session::load_state(const std::filesystem::path& path) {
    std::vector<TokenId> tokens = runtime::load_kv_file(path, impl_->model.impl(), *impl_->cache);
    impl_->cached = std::move(tokens);
    impl_->logits.clear();
}

}  // namespace genie
