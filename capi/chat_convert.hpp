// Private to the C ABI (capi/*.cpp): the conversion of a genie_chat_request to the C++
// chat call, the stream that hands pieces to a genie_piece_callback, and the filling of a
// genie_chat_result, shared by genie_session_chat (genie_c.cpp) and genie_engine_chat
// (genie_engine_c.cpp).
#pragma once

#include <genie/chat.hpp>
#include <genie/constraint.hpp>
#include <genie/genie.h>
#include <genie/sampler.hpp>
#include <genie/session.hpp>
#include <genie/tokenizer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace genie::capi {

/// A genie_chat_request checked and converted (everything validated before generation).
struct ChatCall {
    std::vector<genie::ChatMessage> messages;
    genie::ChatOptions options;  // constraint not set: the caller builds it for its tokenizer
    genie::SamplerOptions sampler;
    genie_response_format response_format = GENIE_RESPONSE_FORMAT_NONE;
    std::string schema;   // GENIE_RESPONSE_FORMAT_JSON_SCHEMA (non-empty then), or a forced tool call's
    std::string grammar;  // GENIE_RESPONSE_FORMAT_GRAMMAR (non-empty then)
    genie::JsonConstraintOptions constraint_options;
    bool parse_tools = true;  // false for GENIE_TOOL_CHOICE_NONE

    /// The constraint cache key (kind + text); "" when unconstrained.
    std::string constraint_key() const;
    /// Builds the constraint of the call for `tokenizer` (nullptr when unconstrained).
    std::shared_ptr<const genie::JsonConstraint> build_constraint(const genie::Tokenizer& tokenizer) const;
};

/// Validates and converts *request (InvalidArgument naming the field).
ChatCall convert_chat_request(const genie_chat_request* request);

/// Hands pieces to a genie_piece_callback and remembers whether it asked to stop (finish
/// CANCELLED). The idle timeout and deadline are the generation loop's (finish Timeout).
class ChatStream {
public:
    using Clock = std::chrono::steady_clock;
    enum class Ended { No, Callback };

    ChatStream(genie_piece_callback callback, void* user) : callback_(callback), user_(user) {}

    /// The C++ callback; valid while *this lives.
    genie::PieceCallback callback();

    Ended ended = Ended::No;

private:
    genie_piece_callback callback_;
    void* user_;
};

/// Bytes of a genie_chat_result of `version` (version 1 ends after total_ms).
size_t chat_result_size(unsigned int version) noexcept;
/// Frees `n` tool calls of a genie_chat_result and the array (NULL is a no-op).
void free_tool_calls(genie_tool_call* calls, size_t n) noexcept;
/// Checks out->version, frees what it held and marks it failed until filled.
void begin_chat_result(genie_chat_result* out);
/// Fills *out (prepared by begin_chat_result; may be NULL) from a finished chat.
void fill_chat_result(genie_chat_result* out, const genie::ChatResult& chat, ChatStream::Ended ended,
                      ChatStream::Clock::time_point start, bool parse_tools);

}  // namespace genie::capi
