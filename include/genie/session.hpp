// libgenie: one conversation with a model — the KV cache and the generate loop.
#pragma once

#include <genie/chat.hpp>
#include <genie/constraint.hpp>
#include <genie/export.h>
#include <genie/model.hpp>
#include <genie/sampler.hpp>
#include <genie/tokenizer.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace genie {

/// Element type of the KV cache.
enum class KvType {
    F16,  ///< half precision (llama.cpp's default)
    F32,  ///< full precision
    /// INT8 with a scale per 32 elements of a head (ggml's Q8_0 blocks, llama.cpp's
    /// `-ctk q8_0 -ctv q8_0`): 34 bytes per 32 values, 0.53x the F16 cache. Needs a head
    /// size that is a multiple of 32 (Unsupported otherwise). docs/kv-cache.md.
    Q8_0,
};

/// SessionOptions::context_length: the largest context that fits the memory budget.
inline constexpr int32_t kLargestContext = -1;

/// Options of a Session.
struct SessionOptions {
    /// Tokens the KV cache holds. 0 = min(model's training context, 4096), reduced to what
    /// fits the memory budget (ModelOptions::memory_budget_bytes); kLargestContext = the
    /// largest context that fits the budget, at most the training context. An explicit
    /// length that does not fit is an OutOfMemory error showing the plan.
    int32_t context_length = 0;
    int32_t threads = 0;         ///< CPU threads; 0 = all hardware threads
    int32_t batch_size = 512;    ///< prompt tokens evaluated per forward pass
    KvType kv_type = KvType::F16;
    /// Speculative decoding's draft model (docs/speculative.md): a smaller model with the
    /// same vocabulary (checked here: InvalidArgument naming the first token that differs).
    /// The session keeps a second KV cache of context_length cells for it (same KV type and
    /// threads) and uses it in generate when GenerateOptions::speculative.draft_max > 0.
    std::optional<Model> draft_model;
    /// CPU threads of the draft model; 0 = `threads`. A small draft runs as fast on fewer
    /// threads and then waits less at each operation's barrier (llama.cpp's -td).
    int32_t draft_threads = 0;
};

/// Speculative decoding in one generate call (docs/speculative.md): proposed tokens are
/// verified by the model in one forward pass and kept up to the first the model would not
/// have produced. Greedy sampling gives the tokens plain decoding gives (up to the batch
/// kernels' float rounding: docs/speculative.md says what is guaranteed); with temperature
/// the rejection rule keeps the model's own distribution. Off with a constraint.
struct SpeculativeOptions {
    /// Most tokens proposed per step (llama-server's --draft-max); 0 turns speculation off.
    int32_t draft_max = 16;
    /// A step with fewer proposals than this decodes one token plainly (--draft-min).
    int32_t draft_min = 0;
    /// Draft model: stop proposing at a token the draft gives less than this probability
    /// (softmax of its logits; --draft-p-min). 0: always draft_max tokens.
    float draft_p_min = 0.75f;
    /// Adapt the proposal length to the acceptance: after a step that kept every proposal
    /// the next may propose 2 more (up to draft_max), after a rejection one more than were
    /// kept (at least draft_min, at least 1).
    bool adaptive = false;
    /// Prompt lookup (no draft model needed; used when the session has none): propose the
    /// tokens that followed the most recent earlier occurrence of the last `lookup_ngram`
    /// tokens of the prompt + output. 0: off.
    int32_t lookup_ngram = 0;
};

/// Options of one Session::generate call.
struct GenerateOptions {
    int32_t max_tokens = 256;  ///< stop after this many new tokens (finish reason Length)
    bool stop_on_eog = true;   ///< stop at an end-of-generation token (not included in the text)
    /// For a text prompt: add BOS/EOS as the vocabulary asks (llama.cpp's add_special).
    bool add_special = true;
    /// For a text prompt: recognise control tokens written as text ("<|im_start|>").
    bool parse_special = true;
    /// Stop strings: generation ends when the output contains one. Text that may be the
    /// start of a stop string is held back until it is known not to be; the stop string
    /// itself is never emitted (finish reason Stop).
    std::vector<std::string> stop;
    /// Split a leading Qwen3-style "<think>...</think>" block off as reasoning: its pieces
    /// are tagged PieceKind::Reasoning (tags removed) and collected in GenerateResult::reasoning.
    bool split_reasoning = false;
    /// Constrained output (docs/constraints.md): when set, only tokens that keep the output
    /// a prefix of a value the constraint accepts are sampled, and once the value is
    /// complete only end-of-generation tokens (generation stops there; with no EOG token in
    /// the vocabulary it stops with finish reason Stop). Built for this model's tokenizer
    /// (InvalidArgument otherwise). The text is the raw output, so use it with no stop
    /// strings and split_reasoning off.
    std::shared_ptr<const JsonConstraint> constraint;
    /// Time limit of the whole call in seconds, from its start (prompt evaluation included);
    /// 0 = none. Checked after each token: once passed, generation ends with
    /// FinishReason::Timeout (the token that found it is delivered).
    double deadline_s = 0;
    /// Longest time between two tokens in seconds (for the first token: since the call
    /// began, so the prompt's evaluation counts); 0 = none. A longer gap ends generation
    /// with FinishReason::Timeout after that token is delivered.
    double idle_timeout_s = 0;
    /// Speculative decoding (used with SessionOptions::draft_model or lookup_ngram > 0).
    SpeculativeOptions speculative;
};

/// What a piece of output is.
enum class PieceKind {
    Content,    ///< the answer (speak it)
    Reasoning,  ///< thinking inside <think>...</think> (a voice assistant drops it)
};

/// One piece of streamed output. `text` is always complete UTF-8 (a character split
/// across tokens arrives with the token that completes it) and never special-token
/// text. `token` is the token that completed the text (kNoToken for text released at
/// the end, e.g. held back for a possible stop string).
struct Piece {
    TokenId token = kNoToken;
    std::string text;
    PieceKind kind = PieceKind::Content;
};

enum class FinishReason {
    Stop,       ///< an end-of-generation token, or the callback returned false
    Length,     ///< max_tokens reached, or the context is full
    Cancelled,  ///< Session::cancel() was called
    Timeout,    ///< GenerateOptions::deadline_s or idle_timeout_s passed
};

/// Milliseconds and rates of one generate call.
struct Timings {
    double load_ms = 0;            ///< the model's load time
    double prompt_eval_ms = 0;     ///< evaluating the (non-reused) prompt tokens
    double time_to_first_token_ms = 0;  ///< from the call to the first generated token
    double decode_ms = 0;          ///< generating the tokens after the first
    double prompt_tokens_per_s = 0;
    double decode_tokens_per_s = 0;
};

struct GenerateResult {
    std::string text;                ///< the generated content text (complete UTF-8; stop string removed)
    std::string reasoning;           ///< the reasoning text (split_reasoning), trimmed
    std::vector<TokenId> tokens;     ///< the generated tokens (an EOG token that stopped it excluded)
    FinishReason finish_reason = FinishReason::Stop;
    int32_t prompt_tokens = 0;       ///< tokens in the prompt
    int32_t reused_prompt_tokens = 0;  ///< prompt tokens found in the KV cache (not evaluated)
    int32_t completion_tokens = 0;   ///< == tokens.size()
    Timings timings;
    int32_t draft_tokens = 0;         ///< speculative decoding: tokens proposed
    int32_t accepted_draft_tokens = 0;  ///< speculative decoding: proposals kept (accepted / draft = acceptance rate)
};

/// Called with each new piece; return false to stop (finish reason Stop).
using PieceCallback = std::function<bool(const Piece&)>;

/// Options of Session::chat.
struct ChatOptions {
    GenerateOptions generate;              ///< max tokens, stop strings ... (split_reasoning is forced on)
    std::optional<bool> enable_thinking;   ///< Qwen3's switch; unset = the template's default
    std::string tools_json;                ///< JSON array of tool definitions (OpenAI shape), or ""
    /// With tools: more than one call per answer may be returned (else only the first).
    bool parallel_tool_calls = true;
    std::string extra_variables_json;      ///< JSON object of extra template variables, or ""
};

/// Result of Session::chat: the generation plus what was parsed out of it.
struct ChatResult {
    GenerateResult generation;       ///< text = the answer without reasoning; reasoning separate
    /// Tool calls found in the answer (extract_tool_calls); with ChatOptions::tools_json, only
    /// calls of offered tools whose arguments follow the tool's schema (check_tool_calls).
    std::vector<ToolCall> tool_calls;
    /// Calls found in the answer but not accepted (ToolCall::error says why); their text
    /// stays in the answer's content.
    std::vector<ToolCall> rejected_tool_calls;
    std::string prompt;              ///< the rendered prompt (for logs and tests)
};

/// A chat ready to generate from (prepare_chat): what every front end (Session::chat,
/// Engine, genie-server, the C ABI, Python) generates from, so they all render alike.
struct PreparedChat {
    std::string prompt;            ///< the rendered prompt
    /// Its tokens: BOS as the vocabulary asks unless the template wrote it (llama.cpp's
    /// rule), control tokens written as text recognised.
    std::vector<TokenId> tokens;
    /// The prompt ends inside a "<think>" block the template opened itself (DeepSeek-R1,
    /// QwQ): the answer starts as reasoning.
    bool starts_in_reasoning = false;
};

/// Renders `messages` with the model's chat template (`tokenizer.chat_template`, parsed
/// once per Model and shared by every caller; ChatML when the GGUF has none), with the
/// vocabulary's BOS/EOS texts and ChatOptions' thinking switch, tools and extra variables.
/// Throws Format/InvalidArgument for a template that fails to parse or render.
GENIE_API std::string render_chat(const Model& model, std::span<const ChatMessage> messages,
                                  const ChatOptions& options = {}, bool add_generation_prompt = true);

/// Renders `messages` for the assistant's answer (render_chat with the generation prompt)
/// and tokenizes the prompt. Throws like render_chat, InvalidArgument for a prompt of no
/// tokens. Thread-safe (the Model is shared read-only).
GENIE_API PreparedChat prepare_chat(const Model& model, std::span<const ChatMessage> messages,
                                    const ChatOptions& options = {});

/// One conversation: owns a KV cache and generates text. The cache persists between
/// generate calls: a prompt that starts with what the cache holds (previous prompt +
/// generated tokens) evaluates only the new suffix. Not thread-safe except cancel().
class GENIE_API Session {
public:
    /// Throws genie::Error: InvalidArgument (bad options), OutOfMemory (KV allocation).
    explicit Session(const Model& model, const SessionOptions& options = {});
    Session(Session&&) noexcept;
    Session& operator=(Session&&) noexcept;
    ~Session();

    /// Tokenizes `prompt` and generates. The callback runs on the calling thread.
    /// Throws ContextOverflow if the prompt does not fit the context (the cache is then
    /// left as it was), InvalidArgument for bad options.
    GenerateResult generate(std::string_view prompt, Sampler& sampler, const GenerateOptions& options = {},
                            const PieceCallback& on_piece = {});
    /// Same with prompt tokens (add_special / parse_special are ignored).
    GenerateResult generate(std::span<const TokenId> prompt, Sampler& sampler, const GenerateOptions& options = {},
                            const PieceCallback& on_piece = {});

    /// Renders `messages` with the model's chat template (ChatML when the GGUF has none),
    /// generates the assistant's answer and parses it: reasoning split off, tool calls
    /// extracted. Prefix reuse applies: a follow-up turn that repeats the conversation
    /// evaluates only its new tokens. Throws like generate, and Format/InvalidArgument
    /// for a template that fails to render.
    ChatResult chat(std::span<const ChatMessage> messages, Sampler& sampler, const ChatOptions& options = {},
                    const PieceCallback& on_piece = {});
    /// The same with a prompt prepare_chat made (with the same ChatOptions) for this
    /// session's model: generates, splits reasoning and extracts tool calls.
    ChatResult chat(const PreparedChat& prepared, Sampler& sampler, const ChatOptions& options = {},
                    const PieceCallback& on_piece = {});

    /// Evaluates `tokens` after what the cache holds (prefix reuse applies to the cache
    /// contents: pass the whole sequence) and returns the logits of the last token.
    std::span<const float> evaluate(std::span<const TokenId> tokens);

    /// Asks a running generate to stop; it returns within one token with finish reason
    /// Cancelled. Callable from any thread; a no-op when nothing runs.
    void cancel() noexcept;

    /// Logits of the last evaluated token (n_vocab floats); empty before any evaluation.
    std::span<const float> last_logits() const noexcept;
    /// The tokens the KV cache holds, in order.
    std::span<const TokenId> cached_tokens() const noexcept;
    /// Empties the KV cache.
    void reset() noexcept;

    int32_t context_length() const noexcept;
    const Model& model() const noexcept;
    /// Bytes of the KV cache (allocated for the whole context at construction).
    size_t kv_bytes() const noexcept;
    /// Bytes of activation scratch and logits the session holds (grows with the largest
    /// batch evaluated). Not synchronised: do not call while a call on the session runs.
    size_t scratch_bytes() const noexcept;

    /// Saves the tokens the KV cache holds and their K/V cells (only the used cells, not
    /// the whole context) to `path` atomically: a temporary file in the same folder, fsync,
    /// rename, fsync of the folder — a reader sees the old file or the new one, never a mix.
    /// The file is tied to the model (a fingerprint of its tensor data, computed on the
    /// first save/load of a Model and cached), the KV type and the KV shape. Format and
    /// guarantees: docs/kv-cache.md. Returns the file's size in bytes. Throws Io / NotFound
    /// (the folder). Not while a generate runs on this session.
    uint64_t save_state(const std::filesystem::path& path) const;
    /// Replaces the KV cache's contents with a file save_state wrote (in any process, from a
    /// session with the same model, KV type and shape; the context must hold its tokens).
    /// Afterwards cached_tokens() are the file's tokens and last_logits() is empty: the next
    /// generate/evaluate with a prompt that extends them evaluates only the new tokens (and
    /// the last cached one again for its logits). Throws NotFound / Io (the file), Format
    /// (not a KV file, unknown version, truncated, corrupt: checksums), InvalidArgument
    /// (another model, KV type or shape, more tokens than the context); the message names
    /// the file and what differs. On error the session is unchanged.
    void load_state(const std::filesystem::path& path);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// A folder of saved session states (Session::save_state files) under caller keys, e.g.
/// conversation ids, kept within a size budget by evicting the least recently used entry
/// (stored or restored). Keys are any strings: each maps to a file name made of its safe
/// characters and a hash of the whole key. Thread-safe within a process; processes sharing
/// a folder see whole files only (atomic writes). docs/kv-cache.md.
class GENIE_API KvCacheDir {
public:
    /// Creates `dir` when missing. max_bytes = 0: no limit. Throws Io.
    KvCacheDir(std::filesystem::path dir, uint64_t max_bytes);
    KvCacheDir(KvCacheDir&&) noexcept;
    KvCacheDir& operator=(KvCacheDir&&) noexcept;
    ~KvCacheDir();

    /// Saves `session`'s state under `key` (replacing an older one), then evicts the least
    /// recently used entries until the entries fit max_bytes. Returns false, keeping nothing
    /// under `key`, when this state alone is larger than max_bytes. Throws InvalidArgument
    /// (empty key), Io.
    bool store(std::string_view key, const Session& session);
    /// Loads `key`'s state into `session` and marks it recently used. Returns false when
    /// there is no entry, or it does not fit this session (another model, KV type or shape,
    /// too many tokens: the entry is kept), or it is corrupt (the entry is deleted); the
    /// session is then unchanged. Throws InvalidArgument (empty key), Io.
    bool restore(std::string_view key, Session& session);
    /// Deletes `key`'s entry; false when there was none.
    bool remove(std::string_view key);
    /// The file that holds `key`'s entry (which may not exist).
    std::filesystem::path path_for(std::string_view key) const;
    /// Bytes of all entries in the folder.
    uint64_t size_bytes() const;
    uint64_t max_bytes() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace genie
