// JsonConstraint / JsonMatcher: the public face of the JSON constraint, the per-state
// mask cache, and the sampling step the generate loop uses.
#include "constraint/json_grammar.hpp"

#include <genie/error.hpp>
#include <genie/sampler.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

namespace genie {

using constraint::Mask;

namespace {

// The cache key of a state: its bytes, with counters that cannot change the mask replaced
// by a sentinel. A token adds at most trie.max_depth characters or array items, so a count
// at least that far below its maximum (and at or above its minimum) behaves the same as
// any other such count: long strings and arrays with limits share their masks.
void state_key(const constraint::Grammar& g, const constraint::TokenTrie& trie, const constraint::State& s, std::string& out) {
    constraint::State k;
    k.copy_from(s);
    const uint32_t reach = trie.max_depth;
    auto far = [&](uint32_t count, uint32_t min, uint32_t max) {
        return count >= min && (max == UINT32_MAX || (max > count && max - count > reach));
    };
    for (uint8_t i = 0; i < k.size; ++i) {
        constraint::Frame& f = k.frames[i];
        if (f.node == constraint::kNoNode || f.kind == constraint::FrameKind::Sequence) continue;
        const constraint::Node& n = g.nodes[f.node];
        switch (f.kind) {
        case constraint::FrameKind::String:
            if (far(f.count, n.min_length, n.max_length)) f.count = UINT32_MAX;
            break;
        case constraint::FrameKind::Array:
            if (far(f.count, std::max<uint32_t>(n.min_items, static_cast<uint32_t>(n.prefix_items.size())), n.max_items))
                f.count = UINT32_MAX;
            break;
        case constraint::FrameKind::Object:
            if (g.key_limit && far(f.count, 0, g.key_limit)) f.count = UINT32_MAX;
            break;
        default: break;
        }
    }
    out.push_back(static_cast<char>(k.size));
    out.append(k.key());
}

// The cache key of a state set: its states' keys, sorted (the set's order does not matter).
std::string cache_key(const constraint::Grammar& g, const constraint::TokenTrie& trie, const constraint::StateSet& s) {
    if (s.n == 1) {
        std::string key;
        state_key(g, trie, s.states[0], key);
        return key;
    }
    std::vector<std::string> keys(s.n);
    for (uint32_t i = 0; i < s.n; ++i) state_key(g, trie, s.states[i], keys[i]);
    std::sort(keys.begin(), keys.end());
    std::string key;
    for (const auto& k : keys) key += k;
    return key;
}

}  // namespace

std::shared_ptr<const Mask> JsonConstraint::Impl::mask(const constraint::StateSet& s) const {
    const std::string key_bytes = cache_key(grammar, trie, s);
    const std::string_view key = key_bytes;
    {
        std::lock_guard<std::mutex> lock(mutex);
        const auto it = index.find(key);
        if (it != index.end()) {
            lru.splice(lru.begin(), lru, it->second);
            return it->second->second;
        }
    }
    thread_local std::vector<constraint::StateSet> scratch;
    auto m = std::make_shared<Mask>();
    constraint::compute_mask(grammar, trie, s, *m, scratch);
    if (options.mask_cache_entries == 0) return m;
    std::lock_guard<std::mutex> lock(mutex);
    if (index.find(key) == index.end()) {
        lru.emplace_front(std::string(key), m);
        index.emplace(lru.front().first, lru.begin());
        while (lru.size() > options.mask_cache_entries) {
            index.erase(lru.back().first);
            lru.pop_back();
        }
    }
    return m;
}

JsonConstraint::JsonConstraint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JsonConstraint::~JsonConstraint() = default;

std::shared_ptr<const JsonConstraint> JsonConstraint::any_object(const Tokenizer& tokenizer,
                                                                 const JsonConstraintOptions& options) {
    return std::shared_ptr<const JsonConstraint>(
        new JsonConstraint(std::make_unique<Impl>(tokenizer, options, constraint::any_grammar(true, options))));
}

std::shared_ptr<const JsonConstraint> JsonConstraint::any_value(const Tokenizer& tokenizer,
                                                                const JsonConstraintOptions& options) {
    return std::shared_ptr<const JsonConstraint>(
        new JsonConstraint(std::make_unique<Impl>(tokenizer, options, constraint::any_grammar(false, options))));
}

std::shared_ptr<const JsonConstraint> JsonConstraint::from_schema(std::string_view schema_json,
                                                                  const Tokenizer& tokenizer,
                                                                  const JsonConstraintOptions& options) {
    return std::shared_ptr<const JsonConstraint>(
        new JsonConstraint(std::make_unique<Impl>(tokenizer, options, constraint::compile_schema(schema_json, options))));
}

std::shared_ptr<const JsonConstraint> JsonConstraint::from_grammar(std::string_view gbnf, const Tokenizer& tokenizer,
                                                                   const JsonConstraintOptions& options,
                                                                   std::string_view root_rule) {
    return std::shared_ptr<const JsonConstraint>(
        new JsonConstraint(std::make_unique<Impl>(tokenizer, options, constraint::compile_gbnf(gbnf, root_rule))));
}

bool json_matches_schema(std::string_view schema_json, std::string_view json_text) {
    JsonConstraintOptions options;
    options.max_whitespace = 64;
    options.max_nesting = 16;
    const constraint::Grammar g = constraint::compile_schema(schema_json, options);
    // The automaton bounds whitespace per gap; the value is re-read compactly first.
    const nlohmann::json value = nlohmann::json::parse(json_text.begin(), json_text.end(), nullptr, false);
    if (value.is_discarded()) return false;
    return constraint::accepts(g, value.dump());
}

size_t JsonConstraint::vocab_size() const noexcept { return impl_->trie.vocab_size; }
const Tokenizer& JsonConstraint::tokenizer() const noexcept { return impl_->tokenizer; }
const JsonConstraintOptions& JsonConstraint::options() const noexcept { return impl_->options; }

struct JsonMatcher::State {
    std::shared_ptr<const JsonConstraint> constraint;
    constraint::StateSet st;
    std::string text;
    std::shared_ptr<const Mask> mask;  // of `st`, when computed
};

JsonMatcher::JsonMatcher(std::shared_ptr<const JsonConstraint> c) : state_(std::make_unique<State>()) {
    if (!c) throw Error(ErrorCode::InvalidArgument, "JsonMatcher needs a constraint (got null)");
    state_->constraint = std::move(c);
    state_->st.push() = state_->constraint->impl().grammar.initial();
}
JsonMatcher::JsonMatcher(const JsonMatcher& o) : state_(std::make_unique<State>(*o.state_)) {}
JsonMatcher& JsonMatcher::operator=(const JsonMatcher& o) {
    if (this != &o) *state_ = *o.state_;
    return *this;
}
JsonMatcher::JsonMatcher(JsonMatcher&&) noexcept = default;
JsonMatcher& JsonMatcher::operator=(JsonMatcher&&) noexcept = default;
JsonMatcher::~JsonMatcher() = default;

bool JsonMatcher::accept_text(std::string_view bytes) {
    const auto& g = state_->constraint->impl().grammar;
    if (bytes.empty()) return true;
    thread_local constraint::StateSet a, b;
    a.assign(state_->st);
    for (char c : bytes) {
        if (!g.advance(a, static_cast<uint8_t>(c), b)) return false;
        std::swap(a, b);
    }
    state_->st.assign(a);
    state_->text.append(bytes);
    const uint32_t budget = state_->constraint->options().close_after_bytes;
    if (budget && state_->text.size() >= budget)
        for (uint32_t i = 0; i < state_->st.n; ++i) constraint::Grammar::set_closing(state_->st.states[i]);
    state_->mask.reset();
    return true;
}

bool JsonMatcher::accept_token(TokenId id) {
    const auto& impl = state_->constraint->impl();
    if (id < 0 || static_cast<size_t>(id) >= impl.trie.vocab_size) return false;
    if (impl.tokenizer.is_eog(id)) return is_complete();
    const std::string& piece = impl.trie.pieces[static_cast<size_t>(id)];
    if (piece.empty()) return false;
    return accept_text(piece);
}

bool JsonMatcher::is_complete() const noexcept { return state_->constraint->impl().grammar.complete(state_->st); }

const std::vector<uint64_t>& JsonMatcher::mask_bits() {
    if (!state_->mask) state_->mask = state_->constraint->impl().mask(state_->st);
    return *state_->mask;
}

bool JsonMatcher::allows(TokenId id) {
    if (id < 0 || static_cast<size_t>(id) >= state_->constraint->vocab_size()) return false;
    const auto& m = mask_bits();
    return (m[static_cast<size_t>(id) >> 6] >> (static_cast<size_t>(id) & 63)) & 1;
}

size_t JsonMatcher::apply(std::span<float> logits) {
    const auto& m = mask_bits();
    const size_t n = std::min(logits.size(), state_->constraint->vocab_size());
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    size_t allowed = 0;
    for (size_t w = 0; w * 64 < n; ++w) {
        const uint64_t bits = m[w];
        const size_t end = std::min(n, w * 64 + 64);
        if (bits == ~uint64_t{0} && end - w * 64 == 64) {  // all allowed (most words inside a string)
            allowed += 64;
            continue;
        }
        if (bits == 0) {
            std::fill(logits.begin() + static_cast<std::ptrdiff_t>(w * 64), logits.begin() + static_cast<std::ptrdiff_t>(end),
                      kNegInf);
            continue;
        }
        for (size_t i = w * 64; i < end; ++i) {
            if ((bits >> (i & 63)) & 1) ++allowed;
            else logits[i] = kNegInf;
        }
    }
    for (size_t i = n; i < logits.size(); ++i) logits[i] = kNegInf;
    return allowed;
}

const std::string& JsonMatcher::text() const noexcept { return state_->text; }

void JsonMatcher::reset() {
    state_->st.clear();
    state_->st.push() = state_->constraint->impl().grammar.initial();
    state_->text.clear();
    state_->mask.reset();
}

const JsonConstraint& JsonMatcher::constraint() const noexcept { return *state_->constraint; }

namespace constraint {

TokenId sample_constrained(JsonMatcher& matcher, Sampler& sampler, std::span<const float> logits,
                           std::vector<float>& scratch) {
    scratch.assign(logits.begin(), logits.end());
    if (matcher.apply(scratch) == 0) return kNoToken;
    TokenId next = sampler.sample(scratch);
    if (!matcher.allows(next)) {
        // The draw can land on a masked token only through rounding; take the best allowed one.
        next = kNoToken;
        for (size_t i = 0; i < scratch.size(); ++i)
            if (matcher.allows(static_cast<TokenId>(i)) && (next == kNoToken || scratch[i] > scratch[static_cast<size_t>(next)]))
                next = static_cast<TokenId>(i);
    }
    if (!matcher.accept_token(next))
        throw Error(ErrorCode::Internal, fmt::format("JSON constraint: allowed token {} was rejected", next));
    return next;
}

}  // namespace constraint
}  // namespace genie
