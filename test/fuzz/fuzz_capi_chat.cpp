// Fuzz target: the C ABI's request decoding, end to end. A genie_chat_request is built
// from the input with random fields, lengths, NULL pointers, invalid UTF-8 and NUL bytes,
// and run through genie_session_chat on stories260K (a real 260K-parameter model, loaded
// once; a 128-token session, so long conversations overflow). Also genie_model_tokenize /
// genie_model_detokenize / genie_model_apply_chat_template with the same bytes.
// Properties: every call returns a genie_status from the header's list (no crash, no
// exception escapes: an escaping exception would terminate the process); GENIE_OK comes
// with a result whose strings are valid, NUL-terminated and of the stated length, and a
// failed chat sets finish_reason ERROR and a non-empty genie_last_error().
#include "fuzz_support.hpp"

#include <genie/genie.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

genie_model* g_model = nullptr;
genie_session* g_session = nullptr;

void setup() {
    const std::string path = (genie_fuzz::testdata_dir() / "models" / "stories260K.gguf").string();
    if (genie_model_load(&g_model, path.c_str(), nullptr) != GENIE_OK) genie_fuzz::property_failed("model load", genie_last_error());
    genie_session_options so = GENIE_SESSION_OPTIONS_INIT;
    so.context_length = 128;
    so.threads = 1;
    if (genie_session_create(&g_session, g_model, &so) != GENIE_OK)
        genie_fuzz::property_failed("session create", genie_last_error());
}

void check_status(genie_status s) {
    if (s > 0 || s < GENIE_IO) genie_fuzz::property_failed("status outside the documented range");
    if (s != GENIE_OK && std::strlen(genie_last_error()) == 0) genie_fuzz::property_failed("error without a message");
}

void check_text(const char* text, size_t len, const char* what) {
    if (!text) genie_fuzz::property_failed(what);
    if (std::strlen(text) > len || text[len] != '\0') genie_fuzz::property_failed(what);
}

// A pointer+length field: usually the bytes, sometimes NULL with 0, NULL with a length
// (must be rejected), or a length shorter than the bytes.
struct Text {
    const char* ptr;
    size_t len;
};
Text pick_text(genie_fuzz::Input& in, std::string_view bytes) {
    switch (in.byte() & 7) {
        case 0: return {nullptr, 0};
        case 1: return {nullptr, bytes.size() + 1};
        case 2: return {bytes.data(), bytes.size() / 2};
        default: return {bytes.data(), bytes.size()};
    }
}

int on_piece(void* user, genie_piece_kind kind, const char* utf8, size_t len) {
    auto* budget = static_cast<int*>(user);
    if (kind != GENIE_PIECE_CONTENT && kind != GENIE_PIECE_REASONING) genie_fuzz::property_failed("piece kind");
    if (len == 0 || !utf8) genie_fuzz::property_failed("empty piece");
    return --*budget < 0 ? 1 : 0;  // sometimes cancel from the callback
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const bool ready = (setup(), true);
    (void)ready;
    if (size > 4096) return 0;
    genie_fuzz::Input in(data, size);
    const uint8_t mode = in.byte();

    // Fields: role and content of up to 4 messages, a schema, tools, stop strings.
    std::vector<std::string> roles, contents;
    const size_t n_messages = in.byte() % 5;
    for (size_t i = 0; i < n_messages; ++i) {
        roles.emplace_back(in.until('\xff'));
        contents.emplace_back(in.until('\xff'));
    }
    const std::string schema(in.until('\xff'));
    const std::string tools(in.until('\xff'));
    std::vector<std::string> stops;
    const size_t n_stop = in.byte() % 3;
    for (size_t i = 0; i < n_stop; ++i) stops.emplace_back(in.until('\xff'));

    std::vector<genie_chat_turn> turns(n_messages);
    for (size_t i = 0; i < n_messages; ++i) {
        const Text t = pick_text(in, contents[i]);
        turns[i].role = (in.byte() % 16 == 0) ? nullptr : roles[i].c_str();  // c_str stops at a NUL: fine
        turns[i].content = t.ptr;
        turns[i].content_len = t.len;
    }
    std::vector<const char*> stop_ptrs;
    for (const auto& s : stops) stop_ptrs.push_back(in.byte() % 16 == 0 ? nullptr : s.c_str());

    genie_chat_request rq = GENIE_CHAT_REQUEST_INIT;
    if (mode & 0x80) rq.version = in.byte();
    rq.messages = (n_messages == 0 && (mode & 1)) ? nullptr : turns.data();
    rq.n_messages = n_messages;
    rq.max_tokens = static_cast<int32_t>(in.byte() % 8) - 1;  // -1 must be rejected
    genie_sampler_options so = GENIE_SAMPLER_OPTIONS_INIT;
    if (mode & 2) {
        so.temperature = static_cast<float>(static_cast<int8_t>(in.byte())) / 16.0f;
        so.top_k = static_cast<int8_t>(in.byte());
        so.top_p = static_cast<float>(in.byte()) / 200.0f;
        so.min_p = static_cast<float>(in.byte()) / 200.0f;
        so.seed = in.u32();
        so.typical_p = static_cast<float>(in.byte()) / 200.0f;
        so.penalty_last_n = static_cast<int8_t>(in.byte());
        so.repeat_penalty = static_cast<float>(in.byte()) / 64.0f;
        so.frequency_penalty = static_cast<float>(static_cast<int8_t>(in.byte())) / 32.0f;
        so.presence_penalty = static_cast<float>(static_cast<int8_t>(in.byte())) / 32.0f;
        if (in.byte() % 4 == 0) so.version = 99;
        rq.sampler = &so;
    }
    rq.response_format = static_cast<genie_response_format>(in.byte() % 4);  // 3 is unknown
    const Text st = pick_text(in, schema);
    rq.json_schema = st.ptr;
    rq.json_schema_len = st.len;
    rq.think = static_cast<genie_think>(in.byte() % 4);  // 3 is unknown
    rq.stop = (stops.empty() && (mode & 4)) ? nullptr : stop_ptrs.data();
    rq.n_stop = stops.size();
    const Text tt = pick_text(in, tools);
    if (mode & 8) {
        rq.tools_json = tt.ptr;
        rq.tools_json_len = tt.len;
    }

    genie_session_reset(g_session);  // each input starts from an empty cache (deterministic)
    genie_chat_result result = GENIE_CHAT_RESULT_INIT;
    int budget = in.byte() % 8;
    const genie_status s = genie_session_chat(g_session, &rq, (mode & 16) ? on_piece : nullptr, &budget, &result);
    check_status(s);
    if (std::getenv("GENIE_FUZZ_VERBOSE"))
        std::fprintf(stderr, "chat: status %d finish %d text '%s' error '%s'\n", s, result.finish_reason,
                     result.text ? result.text : "", s == GENIE_OK ? "" : genie_last_error());
    if (s == GENIE_OK) {
        check_text(result.text, result.text_len, "result.text");
        check_text(result.reasoning, result.reasoning_len, "result.reasoning");
        if (result.n_tool_calls && (!result.tool_name || !result.tool_arguments)) genie_fuzz::property_failed("tool call");
        if (result.finish_reason == GENIE_FINISH_ERROR) genie_fuzz::property_failed("OK with finish ERROR");
    } else if (result.finish_reason != GENIE_FINISH_ERROR) {
        genie_fuzz::property_failed("failure without finish ERROR");
    }
    genie_chat_result_clear(&result);

    // The same bytes through the other text entry points.
    if (!contents.empty()) {
        const Text t = pick_text(in, contents[0]);
        genie_token* tokens = nullptr;
        size_t count = 0;
        genie_status ts = genie_model_tokenize(&tokens, &count, g_model, t.ptr, t.len, in.byte() % 5);
        check_status(ts);
        if (ts == GENIE_OK) {
            char* text = nullptr;
            size_t len = 0;
            check_status(genie_model_detokenize(&text, &len, g_model, tokens, count, in.byte() % 8));
            genie_string_free(text);
        }
        genie_tokens_free(tokens);
        std::vector<genie_chat_message> msgs;
        for (size_t i = 0; i < n_messages; ++i) msgs.push_back({turns[i].role, contents[i].c_str()});
        char* prompt = nullptr;
        size_t plen = 0;
        const genie_status ps = genie_model_apply_chat_template(&prompt, &plen, g_model, msgs.data(), msgs.size(), mode & 32);
        check_status(ps);
        if (ps == GENIE_OK) check_text(prompt, plen, "apply_chat_template text");
        genie_string_free(prompt);
    }
    return 0;
}
