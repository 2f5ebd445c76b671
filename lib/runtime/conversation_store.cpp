// Engine's kept sessions: conversations by id (LRU) and spare one-off sessions.
#include "runtime/conversation_store.hpp"

#include <algorithm>

namespace genie::runtime {

namespace {
size_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}
}  // namespace

bool ConversationStore::idle(std::string_view id) const {
    if (id.empty()) return true;
    auto it = named_.find(id);
    return it == named_.end() || !it->second->in_use;
}

bool ConversationStore::evict_one(SessionList& to_free) {
    if (!spares_.empty()) {
        auto oldest = std::min_element(spares_.begin(), spares_.end(),
                                       [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
        if ((*oldest)->session) to_free.push_back(std::move((*oldest)->session));
        spares_.erase(oldest);
        return true;
    }
    auto victim = named_.end();
    for (auto it = named_.begin(); it != named_.end(); ++it)
        if (!it->second->in_use && (victim == named_.end() || it->second->last_used < victim->second->last_used))
            victim = it;
    if (victim == named_.end()) return false;
    if (victim->second->session) to_free.push_back(std::move(victim->second->session));
    named_.erase(victim);
    return true;
}

std::shared_ptr<Conversation> ConversationStore::take(const std::string& id, std::span<const TokenId> prompt,
                                                      SessionList& to_free) {
    std::shared_ptr<Conversation> conv;
    if (!id.empty()) {
        if (auto it = named_.find(id); it != named_.end()) {
            conv = it->second;
        } else {
            while (kept() >= max_kept_ && evict_one(to_free)) {
            }  // all running: exceed the count for now
            conv = std::make_shared<Conversation>();
            conv->id = id;
            named_.emplace(id, conv);
        }
    } else if (!spares_.empty()) {
        // The spare with the longest common prefix; the most recently used among equals.
        auto best = spares_.begin();
        size_t best_len = 0;
        for (auto it = spares_.begin(); it != spares_.end(); ++it) {
            const size_t len = (*it)->session ? common_prefix((*it)->session->cached_tokens(), prompt) : 0;
            if (len > best_len || (len == best_len && (*it)->last_used > (*best)->last_used)) {
                best = it;
                best_len = len;
            }
        }
        conv = *best;
        spares_.erase(best);
    } else {
        conv = std::make_shared<Conversation>();
    }
    conv->in_use = true;
    return conv;
}

void ConversationStore::give_back(const std::shared_ptr<Conversation>& conv, bool usable, SessionList& to_free) {
    Conversation& c = *conv;
    c.in_use = false;
    c.last_used = ++tick_;
    bool keep = false;
    if (!c.id.empty()) {
        auto it = named_.find(c.id);
        keep = it != named_.end() && it->second == conv;
    } else if (keep_spares_ && usable && c.session) {
        if (kept() >= max_kept_ && !spares_.empty()) evict_one(to_free);  // the oldest spare makes room
        keep = kept() < max_kept_;
        if (keep) spares_.push_back(conv);
    }
    if (c.session && (!keep || !usable)) {
        to_free.push_back(std::move(c.session));
        c.kv_bytes = c.scratch_bytes = 0;
    } else if (c.session) {
        c.kv_bytes = c.session->kv_bytes();
        c.scratch_bytes = c.session->scratch_bytes();
    }
}

void ConversationStore::drop_unusable(const std::function<bool(const Conversation&)>& unusable, SessionList& to_free) {
    for (auto& [id, c] : named_)
        if (!c->in_use && c->session && unusable(*c)) {
            to_free.push_back(std::move(c->session));
            c->kv_bytes = c->scratch_bytes = 0;
        }
    for (auto it = spares_.begin(); it != spares_.end();) {
        if ((*it)->session && unusable(**it)) {
            to_free.push_back(std::move((*it)->session));
            it = spares_.erase(it);
        } else {
            ++it;
        }
    }
}

uint64_t ConversationStore::trim(int32_t keep_idle, SessionList& to_free) {
    std::vector<std::shared_ptr<Conversation>> idle;
    for (auto& [id, c] : named_)
        if (!c->in_use && c->session) idle.push_back(c);
    for (auto& c : spares_) idle.push_back(c);
    std::sort(idle.begin(), idle.end(), [](const auto& a, const auto& b) { return a->last_used > b->last_used; });
    uint64_t released = 0;
    for (size_t i = static_cast<size_t>(std::max(keep_idle, 0)); i < idle.size(); ++i) {
        Conversation& c = *idle[i];
        released += c.kv_bytes + c.scratch_bytes;
        if (c.session) to_free.push_back(std::move(c.session));
        c.kv_bytes = c.scratch_bytes = 0;
        if (c.id.empty())
            spares_.erase(std::find(spares_.begin(), spares_.end(), idle[i]));
        else
            named_.erase(c.id);
    }
    return released;
}

void ConversationStore::forget(std::string_view id, SessionList& to_free) {
    auto it = named_.find(id);
    if (it == named_.end()) return;
    if (!it->second->in_use && it->second->session) to_free.push_back(std::move(it->second->session));
    named_.erase(it);  // a running one is freed by give_back()
}

void ConversationStore::clear(SessionList& to_free) {
    for (auto& [id, c] : named_)
        if (!c->in_use && c->session) to_free.push_back(std::move(c->session));
    for (auto& c : spares_)
        if (c->session) to_free.push_back(std::move(c->session));
    named_.clear();
    spares_.clear();
}

int32_t ConversationStore::conversations_with_session() const {
    int32_t n = 0;
    for (const auto& [id, c] : named_)
        if (c->session) ++n;
    return n;
}

void ConversationStore::for_each(const std::function<void(const Conversation&)>& f) const {
    for (const auto& [id, c] : named_) f(*c);
    for (const auto& c : spares_) f(*c);
}

}  // namespace genie::runtime
