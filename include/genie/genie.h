/* libgenie C ABI (C99). Opaque handles, genie_<object>_<verb> names, out-parameters
 * first, integer status codes (0 = OK, negative = error) and a thread-local
 * genie_last_error(). No exception, abort or exit ever crosses this boundary.
 *
 * Conventions that hold for every function below unless its comment says otherwise:
 *  - A function returning genie_status returns GENIE_OK (0) on success and a negative
 *    code on failure; on failure genie_last_error() holds a message and every
 *    out-parameter is left at a safe "empty" value (NULL, 0), never garbage.
 *  - A NULL handle or NULL required pointer gives GENIE_INVALID_ARGUMENT.
 *  - Strings are UTF-8 given as pointer + length in bytes; a NULL pointer with length 0
 *    is the empty string. Returned strings are NUL-terminated as well.
 *  - Options are versioned structs: set them with GENIE_X_OPTIONS_INIT or
 *    genie_x_options_init(&opts, GENIE_X_OPTIONS_VERSION) before changing fields; a NULL
 *    options pointer means "all defaults". A struct whose `version` is 0 or newer than
 *    this library knows is rejected with GENIE_INVALID_ARGUMENT.
 *  - Ownership is written next to each function: "caller frees with X" means the caller
 *    owns the result; "borrowed" means the library owns it and says until when it lives.
 *  - Thread-safety: a genie_model may be used from any number of threads at once. A
 *    genie_session and a genie_sampler are used by one call at a time (a second
 *    concurrent call gets GENIE_BUSY), except genie_session_cancel (any thread).
 */
#ifndef GENIE_GENIE_H
#define GENIE_GENIE_H

#include "genie/export.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a function signature or struct layout changes incompatibly. */
#define GENIE_ABI_VERSION 2

/* Result of every fallible function. Same values as genie::ErrorCode. */
typedef enum genie_status {
    GENIE_OK = 0,
    GENIE_INVALID_ARGUMENT = -1,
    GENIE_NOT_FOUND = -2,
    GENIE_FORMAT = -3,
    GENIE_UNSUPPORTED = -4,
    GENIE_OUT_OF_MEMORY = -5,
    GENIE_CONTEXT_OVERFLOW = -6,
    GENIE_CANCELLED = -7,
    GENIE_BUSY = -8,
    GENIE_NOT_LOADED = -9,
    GENIE_DEVICE = -10,
    GENIE_INTERNAL = -11,
    GENIE_IO = -12
} genie_status;

/* A token id: 0 <= id < n_vocab. */
typedef int32_t genie_token;

/* "No token" (e.g. the piece that flushes held-back bytes at the end of a generation). */
#define GENIE_NO_TOKEN (-1)

/* Opaque handles. */
typedef struct genie_model genie_model;     /* a loaded GGUF model (immutable, thread-safe) */
typedef struct genie_session genie_session; /* one conversation: KV cache + generate loop */
typedef struct genie_sampler genie_sampler; /* picks the next token from logits */

/* ---- library ------------------------------------------------------------------------ */

/* The library's ABI version (GENIE_ABI_VERSION it was built with). Thread-safe. */
GENIE_API int genie_abi_version(void);

/* The library version, e.g. "0.1.0". Static storage; never NULL; do not free. */
GENIE_API const char *genie_version(void);

/* Stable upper-case name of a status, e.g. "FORMAT"; "UNKNOWN" for a value that is not
 * a genie_status. Static storage; never NULL; do not free. */
GENIE_API const char *genie_status_name(genie_status status);

/* The message of the last failed libgenie call on the calling thread ("" if none yet).
 * Successful calls leave it unchanged. Borrowed: valid until the next failing libgenie
 * call on this thread; never NULL; do not free. */
GENIE_API const char *genie_last_error(void);

/* Empties the calling thread's last-error message. */
GENIE_API void genie_error_clear(void);

/* Severity of a log message. */
typedef enum genie_log_level {
    GENIE_LOG_ERROR = 0,
    GENIE_LOG_WARN = 1,
    GENIE_LOG_INFO = 2,
    GENIE_LOG_DEBUG = 3
} genie_log_level;

/* Receives log messages. `message` is borrowed for the duration of the call (one line,
 * no trailing newline). May be called from any thread that runs a libgenie function. */
typedef void (*genie_log_callback)(void *user, genie_log_level level, const char *message);

/* Installs (or, with NULL, removes) the process-wide log callback. By default nothing is
 * logged. Messages: every failed call (ERROR, the same text as genie_last_error()) and
 * model loads / session creation (INFO). Thread-safe. Always returns GENIE_OK. */
GENIE_API genie_status genie_log_set(genie_log_callback callback, void *user);

/* Frees a string returned by libgenie ("caller frees with genie_string_free"). NULL is a
 * no-op. */
GENIE_API void genie_string_free(char *text);

/* Frees a token array returned by libgenie ("caller frees with genie_tokens_free"). NULL
 * is a no-op. */
GENIE_API void genie_tokens_free(genie_token *tokens);

/* ---- model -------------------------------------------------------------------------- */

/* Compute backend. */
typedef enum genie_backend {
    GENIE_BACKEND_AUTO = 0, /* CUDA when a device is present and the build has it, else CPU */
    GENIE_BACKEND_CPU = 1,  /* always available */
    GENIE_BACKEND_CUDA = 2  /* GENIE_UNSUPPORTED / GENIE_DEVICE when unavailable */
} genie_backend;

#define GENIE_MODEL_OPTIONS_VERSION 2
/* Options of genie_model_load. Version 1 has only `version` and `backend` (a caller built
 * against it keeps working: the library reads no field past the version it was given). */
typedef struct genie_model_options {
    unsigned int version;  /* GENIE_MODEL_OPTIONS_VERSION */
    genie_backend backend; /* compute backend; default GENIE_BACKEND_AUTO */
    /* Since version 2. */
    int use_mmap;          /* 1 (default): weights used in place from a read-only mmap of the file
                              (the file must not be truncated or rewritten while loaded: calls then
                              fail with GENIE_IO); 0: read into memory at load, immune to changes of
                              the file, more resident memory (docs/reliability.md) */
    uint64_t memory_budget_bytes; /* bytes the model and a session may use; 0 (default) = what
                                     is free now (MemAvailable / cudaMemGetInfo). Over budget:
                                     GENIE_OUT_OF_MEMORY naming the plan */
} genie_model_options;
#define GENIE_MODEL_OPTIONS_INIT { GENIE_MODEL_OPTIONS_VERSION, GENIE_BACKEND_AUTO, 1, 0 }

/* Sets *opts to the defaults of `version` (GENIE_MODEL_OPTIONS_VERSION). Equal to
 * GENIE_MODEL_OPTIONS_INIT. GENIE_INVALID_ARGUMENT for NULL or an unknown version. */
GENIE_API genie_status genie_model_options_init(genie_model_options *opts, unsigned int version);

/* Loads and validates the GGUF file at `path` (NUL-terminated, UTF-8). `opts` may be NULL.
 * *out receives the model; caller frees with genie_model_free. Errors: NOT_FOUND (file),
 * FORMAT (corrupt GGUF, missing/misshapen tensor), UNSUPPORTED (architecture, quant type).
 * Sessions keep the model alive: genie_model_free may be called while they exist. */
GENIE_API genie_status genie_model_load(genie_model **out, const char *path, const genie_model_options *opts);

/* Releases the caller's reference to a model. NULL is a no-op. */
GENIE_API void genie_model_free(genie_model *model);

#define GENIE_MODEL_INFO_VERSION 2
/* Facts about a loaded model, read from its GGUF metadata. Version 1 ends after
 * `load_time_ms` (a caller built against it keeps working: nothing past it is written). */
typedef struct genie_model_info {
    unsigned int version;         /* set by the caller: GENIE_MODEL_INFO_VERSION */
    const char *architecture;     /* "llama", "qwen2", "qwen3", "gemma3"; borrowed, lives as long as the model */
    const char *name;             /* general.name or ""; borrowed, lives as long as the model */
    uint64_t parameter_count;
    uint64_t file_size;           /* bytes */
    uint64_t weight_bytes;        /* bytes of tensor data */
    int32_t n_vocab;
    int32_t n_ctx_train;          /* context length the model was trained with */
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim;
    int32_t n_ff;
    genie_token bos;              /* GENIE_NO_TOKEN when the vocabulary has none */
    genie_token eos;              /* GENIE_NO_TOKEN when the vocabulary has none */
    double load_time_ms;          /* how long genie_model_load took */
    /* Since version 2. */
    uint64_t decode_bytes;        /* bytes of tensor data one decoded token reads (all but the
                                     unread rows of an untied token-embedding table): decode's
                                     roofline is memory bandwidth / decode_bytes tokens/s */
} genie_model_info;
#define GENIE_MODEL_INFO_INIT { GENIE_MODEL_INFO_VERSION, NULL, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, 0.0, 0 }

/* Fills *out (whose `version` the caller set, e.g. with GENIE_MODEL_INFO_INIT). */
GENIE_API genie_status genie_model_get_info(genie_model_info *out, const genie_model *model);

/* *out = non-zero when `token` ends a generation (EOS, EOT, <|im_end|> ...), 0 otherwise
 * (also for ids out of range). */
GENIE_API genie_status genie_model_token_is_eog(int *out, const genie_model *model, genie_token token);

/* *out = the GGUF's `tokenizer.chat_template` (NUL-terminated), or "" when it has none.
 * Borrowed: lives as long as the model. */
GENIE_API genie_status genie_model_chat_template(const char **out, const genie_model *model);

/* Flags of genie_model_tokenize (bitwise or). */
#define GENIE_TOKENIZE_ADD_SPECIAL 1u   /* add BOS/EOS as the vocabulary asks */
#define GENIE_TOKENIZE_PARSE_SPECIAL 2u /* recognise control tokens written as text ("<|im_start|>") */

/* Tokenizes `text_len` bytes of `text` (any bytes; invalid UTF-8 is handled as llama.cpp
 * does). *out_tokens receives an array of *out_count ids (NULL when the count is 0);
 * caller frees with genie_tokens_free. */
GENIE_API genie_status genie_model_tokenize(genie_token **out_tokens, size_t *out_count, const genie_model *model,
                                            const char *text, size_t text_len, unsigned int flags);

/* Flags of genie_model_detokenize (bitwise or). */
#define GENIE_DETOKENIZE_REMOVE_SPECIAL 1u /* drop a leading BOS / trailing EOS the vocabulary adds */
#define GENIE_DETOKENIZE_RENDER_SPECIAL 2u /* render control tokens as their text */

/* The text of `count` tokens (llama.cpp's llama_detokenize; invalid UTF-8 in the result is
 * replaced by U+FFFD). *out_text receives a NUL-terminated string of *out_len bytes
 * (out_len may be NULL); caller frees with genie_string_free. INVALID_ARGUMENT for an id
 * out of range. */
GENIE_API genie_status genie_model_detokenize(char **out_text, size_t *out_len, const genie_model *model,
                                              const genie_token *tokens, size_t count, unsigned int flags);

/* ---- sampler ------------------------------------------------------------------------ */

#define GENIE_SAMPLER_OPTIONS_VERSION 1
/* Options of a sampler; llama.cpp's chain order: penalties -> top-k -> typical -> top-p
 * -> min-p -> temperature -> seeded draw. temperature <= 0 is greedy. */
typedef struct genie_sampler_options {
    unsigned int version;    /* GENIE_SAMPLER_OPTIONS_VERSION */
    float temperature;       /* <= 0: greedy (default 0) */
    int32_t top_k;           /* <= 0: off (default 40) */
    float top_p;             /* >= 1: off (default 0.95) */
    float min_p;             /* <= 0: off (default 0.05) */
    uint32_t seed;           /* seed of the random draw; same seed, same draws (default 42) */
    float typical_p;         /* >= 1: off (default 1) */
    int32_t penalty_last_n;  /* accepted tokens the penalties look at; <= 0: off (default 64) */
    float repeat_penalty;    /* 1: off (default 1) */
    float frequency_penalty; /* 0: off (default 0) */
    float presence_penalty;  /* 0: off (default 0) */
    /* Logit bias (first in the chain): logit[tokens[i]] += values[i] for i < n_logit_bias;
     * -INFINITY bans a token. Both arrays are read (copied) by genie_sampler_create. */
    const genie_token *logit_bias_tokens;
    const float *logit_bias_values;
    size_t n_logit_bias;
} genie_sampler_options;
#define GENIE_SAMPLER_OPTIONS_INIT \
    { GENIE_SAMPLER_OPTIONS_VERSION, 0.0f, 40, 0.95f, 0.05f, 42u, 1.0f, 64, 1.0f, 0.0f, 0.0f, NULL, NULL, 0 }

/* Sets *opts to the defaults (equal to GENIE_SAMPLER_OPTIONS_INIT). */
GENIE_API genie_status genie_sampler_options_init(genie_sampler_options *opts, unsigned int version);

/* Creates a sampler. `opts` may be NULL (greedy). Caller frees with genie_sampler_free. */
GENIE_API genie_status genie_sampler_create(genie_sampler **out, const genie_sampler_options *opts);

/* Frees a sampler. NULL is a no-op. Must not be called while the sampler is in use. */
GENIE_API void genie_sampler_free(genie_sampler *sampler);

/* Restores the initial state (RNG from the seed, empty penalty window). */
GENIE_API genie_status genie_sampler_reset(genie_sampler *sampler);

/* *out = the token chosen from `count` logits (one per vocabulary entry). */
GENIE_API genie_status genie_sampler_sample(genie_token *out, genie_sampler *sampler, const float *logits,
                                            size_t count);

/* Tells the sampler `token` was accepted (feeds the penalty window). */
GENIE_API genie_status genie_sampler_accept(genie_sampler *sampler, genie_token token);

/* ---- session ------------------------------------------------------------------------ */

/* Element type of the KV cache. */
typedef enum genie_kv_type {
    GENIE_KV_F16 = 0, /* llama.cpp's default */
    GENIE_KV_F32 = 1,
    GENIE_KV_Q8_0 = 2 /* INT8, a scale per 32 values (ggml Q8_0); head size a multiple of 32, else
                         UNSUPPORTED at genie_session_create (docs/kv-cache.md) */
} genie_kv_type;

#define GENIE_SESSION_OPTIONS_VERSION 1
/* Options of genie_session_create. */
typedef struct genie_session_options {
    unsigned int version;   /* GENIE_SESSION_OPTIONS_VERSION */
    int32_t context_length; /* tokens the KV cache holds; 0 = min(training context, 4096) */
    int32_t threads;        /* CPU threads; 0 = all hardware threads */
    int32_t batch_size;     /* prompt tokens per forward pass (default 512) */
    genie_kv_type kv_type;  /* default GENIE_KV_F16 */
} genie_session_options;
#define GENIE_SESSION_OPTIONS_INIT { GENIE_SESSION_OPTIONS_VERSION, 0, 0, 512, GENIE_KV_F16 }

/* Sets *opts to the defaults (equal to GENIE_SESSION_OPTIONS_INIT). */
GENIE_API genie_status genie_session_options_init(genie_session_options *opts, unsigned int version);

/* Creates a session on `model` (which it keeps alive). `opts` may be NULL. Caller frees
 * with genie_session_free. Errors: INVALID_ARGUMENT (options), OUT_OF_MEMORY (KV cache). */
GENIE_API genie_status genie_session_create(genie_session **out, genie_model *model,
                                            const genie_session_options *opts);

/* Frees a session. NULL is a no-op. Must not be called while a call on it runs. */
GENIE_API void genie_session_free(genie_session *session);

#define GENIE_GENERATE_OPTIONS_VERSION 1
/* Options of one generation. Boolean fields: 0 = false, non-zero = true. */
typedef struct genie_generate_options {
    unsigned int version; /* GENIE_GENERATE_OPTIONS_VERSION */
    int32_t max_tokens;   /* stop after this many new tokens (GENIE_FINISH_LENGTH); default 256 */
    int stop_on_eog;      /* stop at an end-of-generation token (not in the text); default 1 */
    int add_special;      /* text prompt: add BOS/EOS as the vocabulary asks; default 1 */
    int parse_special;    /* text prompt: recognise control tokens written as text; default 1 */
    /* Stop strings (n_stop NUL-terminated UTF-8 strings, read during the call): generation
     * ends when the output contains one; it is not part of the text. Default none. */
    const char *const *stop;
    size_t n_stop;
} genie_generate_options;
#define GENIE_GENERATE_OPTIONS_INIT { GENIE_GENERATE_OPTIONS_VERSION, 256, 1, 1, 1, NULL, 0 }

/* Sets *opts to the defaults (equal to GENIE_GENERATE_OPTIONS_INIT). */
GENIE_API genie_status genie_generate_options_init(genie_generate_options *opts, unsigned int version);

/* Why a generation ended. */
typedef enum genie_finish_reason {
    GENIE_FINISH_STOP = 0,      /* an end-of-generation token or a stop string (genie_session_generate:
                                   also the callback returning non-zero) */
    GENIE_FINISH_LENGTH = 1,    /* max_tokens reached, or the context is full */
    GENIE_FINISH_CANCELLED = 2, /* genie_session_cancel was called (genie_session_chat: also the
                                   callback returning non-zero) */
    GENIE_FINISH_ERROR = 3,     /* the call failed: see its status and genie_last_error() */
    GENIE_FINISH_TIMEOUT = 4    /* genie_session_chat: the idle timeout or the deadline passed */
} genie_finish_reason;

#define GENIE_GENERATE_RESULT_VERSION 1
/* The outcome of a generation. Initialise with GENIE_GENERATE_RESULT_INIT; release what it
 * owns with genie_generate_result_clear (it may be reused afterwards). */
typedef struct genie_generate_result {
    unsigned int version;         /* set by the caller: GENIE_GENERATE_RESULT_VERSION */
    char *text;                   /* generated text, NUL-terminated, complete UTF-8; owned by the result */
    size_t text_len;              /* bytes of text */
    genie_token *tokens;          /* generated tokens (a stopping EOG excluded); owned by the result */
    size_t n_tokens;
    genie_finish_reason finish_reason;
    int32_t prompt_tokens;        /* tokens in the prompt */
    int32_t reused_prompt_tokens; /* prompt tokens found in the KV cache (not evaluated) */
    int32_t completion_tokens;    /* == n_tokens */
    double load_ms;               /* the model's load time */
    double prompt_eval_ms;        /* evaluating the non-reused prompt tokens */
    double time_to_first_token_ms;/* from the call to the first generated token */
    double decode_ms;             /* generating the tokens after the first */
    double prompt_tokens_per_s;
    double decode_tokens_per_s;
} genie_generate_result;
#define GENIE_GENERATE_RESULT_INIT \
    { GENIE_GENERATE_RESULT_VERSION, NULL, 0, NULL, 0, GENIE_FINISH_STOP, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 }

/* Frees the text and tokens of *result and zeroes its other fields (version kept). NULL
 * is a no-op. */
GENIE_API void genie_generate_result_clear(genie_generate_result *result);

/* Receives each generated piece: `utf8` holds `len` bytes of complete UTF-8 (never part of
 * a character; may be empty when a token only began a character; not NUL-terminated),
 * `token` the token that completed it, or GENIE_NO_TOKEN for the final flush of held-back
 * bytes. Return 0 to continue, non-zero to stop (finish reason GENIE_FINISH_STOP). Called
 * on the thread that called genie_session_generate, before it returns. It must not call
 * functions on the same session or sampler (genie_session_cancel excepted).
 * (genie_session_chat takes a genie_piece_callback instead, which reports a piece kind.) */
typedef int (*genie_generate_callback)(void *user, const char *utf8, size_t len, genie_token token);

/* Tokenizes `prompt` (prompt_len bytes) and generates after it, reusing the longest prefix
 * the KV cache holds. `out` (may be NULL) receives the result: pass a result set with
 * GENIE_GENERATE_RESULT_INIT or cleared; any text it held is freed first; caller releases
 * it with genie_generate_result_clear. `opts` may be NULL; `callback` may be NULL.
 * Errors: CONTEXT_OVERFLOW (the prompt does not fit; the cache is left as it was),
 * INVALID_ARGUMENT (empty prompt, bad options), BUSY (the session or sampler is in use).
 * On failure out->finish_reason is GENIE_FINISH_ERROR. A cancelled generation returns
 * GENIE_OK with finish reason GENIE_FINISH_CANCELLED. */
GENIE_API genie_status genie_session_generate(genie_generate_result *out, genie_session *session,
                                              const char *prompt, size_t prompt_len, genie_sampler *sampler,
                                              const genie_generate_options *opts, genie_generate_callback callback,
                                              void *user);

/* Same with prompt tokens (add_special / parse_special are ignored). */
GENIE_API genie_status genie_session_generate_tokens(genie_generate_result *out, genie_session *session,
                                                     const genie_token *prompt, size_t prompt_count,
                                                     genie_sampler *sampler, const genie_generate_options *opts,
                                                     genie_generate_callback callback, void *user);

/* One message of a conversation. */
typedef struct genie_chat_message {
    const char *role;    /* "system", "user", "assistant", "tool"; NUL-terminated */
    const char *content; /* NUL-terminated UTF-8; NULL = no content (None) */
} genie_chat_message;

/* Renders `count` messages with the model's chat template (the GGUF's
 * tokenizer.chat_template, or ChatML when it has none), adding the header of the
 * assistant's turn when add_generation_prompt is non-zero. *out_text receives the prompt
 * (NUL-terminated, *out_len bytes; out_len may be NULL); caller frees with
 * genie_string_free. Errors: FORMAT (template does not parse), INVALID_ARGUMENT (the
 * template raised), UNSUPPORTED (a Jinja feature this build lacks). */
GENIE_API genie_status genie_model_apply_chat_template(char **out_text, size_t *out_len, const genie_model *model,
                                                       const genie_chat_message *messages, size_t count,
                                                       int add_generation_prompt);

/* ---- chat -------------------------------------------------------------------------- */

/* One message of a genie_session_chat request. */
typedef struct genie_chat_turn {
    const char *role;    /* "system", "user", "assistant", "tool"; NUL-terminated; several
                            "system" messages are allowed (the template decides what it does
                            with them) */
    const char *content; /* content_len bytes of UTF-8, not necessarily NUL-terminated; NULL
                            with content_len 0 is the empty string */
    size_t content_len;
} genie_chat_turn;

/* What the answer must look like. */
typedef enum genie_response_format {
    GENIE_RESPONSE_FORMAT_NONE = 0,        /* free text */
    GENIE_RESPONSE_FORMAT_JSON_OBJECT = 1, /* any JSON object (genie::JsonConstraint::any_object) */
    GENIE_RESPONSE_FORMAT_JSON_SCHEMA = 2, /* a JSON value following json_schema
                                              (genie::JsonConstraint::from_schema; docs/constraints.md) */
    GENIE_RESPONSE_FORMAT_GRAMMAR = 3      /* text the GBNF grammar `grammar` derives from its rule
                                              "root" (genie::JsonConstraint::from_grammar; request
                                              version 2) */
} genie_response_format;

/* Whether the answer must be a tool call (request version 2). */
typedef enum genie_tool_choice {
    GENIE_TOOL_CHOICE_AUTO = 0,     /* the model decides; calls of tools that were not offered, or
                                       with arguments that do not follow the tool's schema, are not
                                       calls (the text stays the answer's content) */
    GENIE_TOOL_CHOICE_NONE = 1,     /* no tool calls are parsed from the answer */
    GENIE_TOOL_CHOICE_REQUIRED = 2, /* the answer is constrained to a call of one of the tools, each
                                       with its own parameters schema (genie::tool_call_schema) */
    GENIE_TOOL_CHOICE_FUNCTION = 3  /* the answer is constrained to a call of tool_choice_function */
} genie_tool_choice;

/* The fields of a message beyond role and content (request version 2), in an array
 * parallel to genie_chat_request::messages, so that tool calls and their results can go
 * back into the conversation. Every field may be NULL (= absent). */
typedef struct genie_chat_turn_extra {
    const char *tool_calls_json; /* an assistant message: the calls it made, a JSON array in the
                                    OpenAI shape ([{"id", "type": "function", "function": {"name",
                                    "arguments"}}]); NUL-terminated */
    const char *tool_call_id;    /* a "tool" message: the id of the call it answers */
    const char *name;            /* the tool's (or participant's) name */
} genie_chat_turn_extra;

/* One tool call of a genie_chat_result (version 2). Owned by the result. */
typedef struct genie_tool_call {
    char *id;        /* the id the model gave, else "call_<index>"; NUL-terminated */
    char *name;      /* the tool's name */
    char *arguments; /* its arguments as JSON text ("{}" when none) */
    char *error;     /* rejected calls: why they are not calls; NULL for accepted ones */
} genie_tool_call;

/* Qwen3-style thinking switch (the template's `enable_thinking`). */
typedef enum genie_think {
    GENIE_THINK_DEFAULT = 0, /* the template's default; with a JSON response format: off */
    GENIE_THINK_ON = 1,
    GENIE_THINK_OFF = 2
} genie_think;

#define GENIE_CHAT_REQUEST_VERSION 2
/* A genie_session_chat request. Set it with GENIE_CHAT_REQUEST_INIT or
 * genie_chat_request_init(&req, GENIE_CHAT_REQUEST_VERSION), then fill in the messages.
 * Everything it points to is read during the call only. Version 1 ends after
 * tools_json_len (a caller built against it keeps working: the library reads no field past
 * the version it was given). */
typedef struct genie_chat_request {
    unsigned int version;             /* GENIE_CHAT_REQUEST_VERSION */
    const genie_chat_turn *messages;  /* n_messages messages (at least one) */
    size_t n_messages;
    int32_t max_tokens;               /* new tokens at most, reasoning included (finish LENGTH); default 256 */
    const genie_sampler_options *sampler; /* NULL = GENIE_SAMPLER_OPTIONS_INIT (greedy); a
                                             fresh sampler is made from it for each call */
    genie_response_format response_format; /* default GENIE_RESPONSE_FORMAT_NONE */
    const char *json_schema;          /* GENIE_RESPONSE_FORMAT_JSON_SCHEMA: the schema's JSON text */
    size_t json_schema_len;           /* bytes of json_schema */
    genie_think think;                /* default GENIE_THINK_DEFAULT */
    /* Stop strings (n_stop NUL-terminated UTF-8 strings): the answer ends before the first
     * one it contains (finish STOP); the stop string is not part of the text. Default none. */
    const char *const *stop;
    size_t n_stop;
    /* Per-token idle timeout in ms (0 = none): more than this between two tokens (the
     * first: since the call began, prompt included; the callback's time not counted) ends
     * the call with finish TIMEOUT (C++ GenerateOptions::idle_timeout_s). */
    uint32_t idle_timeout_ms;
    /* Total deadline in ms from the call's start (0 = none): once passed, the call ends
     * with finish TIMEOUT. */
    uint32_t deadline_ms;
    /* Optional JSON array of tool definitions (OpenAI shape) given to the template as
     * `tools`; NULL with tools_json_len 0 = none. Tool calls found in the answer are
     * reported in genie_chat_result. */
    const char *tools_json;
    size_t tools_json_len;
    /* Since version 2. */
    const genie_chat_turn_extra *message_extras; /* NULL, or n_messages entries parallel to
                                                    messages (tool_calls, tool_call_id, name) */
    genie_tool_choice tool_choice;    /* default GENIE_TOOL_CHOICE_AUTO; REQUIRED / FUNCTION need
                                         tools_json and override response_format */
    const char *tool_choice_function; /* GENIE_TOOL_CHOICE_FUNCTION: the tool's name (NUL-terminated) */
    int parallel_tool_calls;          /* -1 (default): every call of an AUTO answer is returned, a
                                         forced answer is one call; 1: a forced answer may also be an
                                         array of calls; 0: only the first call is returned */
    const char *grammar;              /* GENIE_RESPONSE_FORMAT_GRAMMAR: a GBNF grammar (llama.cpp's
                                         format, start rule "root") */
    size_t grammar_len;               /* bytes of grammar */
} genie_chat_request;
#define GENIE_CHAT_REQUEST_INIT                                                                                      \
    { GENIE_CHAT_REQUEST_VERSION, NULL, 0, 256, NULL, GENIE_RESPONSE_FORMAT_NONE, NULL, 0, GENIE_THINK_DEFAULT, NULL, \
      0, 0u, 0u, NULL, 0, NULL, GENIE_TOOL_CHOICE_AUTO, NULL, -1, NULL, 0 }

/* Sets *req to the defaults of `version` (GENIE_CHAT_REQUEST_VERSION). Equal to
 * GENIE_CHAT_REQUEST_INIT. GENIE_INVALID_ARGUMENT for NULL or an unknown version. */
GENIE_API genie_status genie_chat_request_init(genie_chat_request *req, unsigned int version);

/* What a piece of chat output is. */
typedef enum genie_piece_kind {
    GENIE_PIECE_CONTENT = 0,  /* the answer */
    GENIE_PIECE_REASONING = 1 /* thinking inside <think>...</think> (tags removed) */
} genie_piece_kind;

/* Receives each piece of a chat answer: `len` (> 0) bytes of complete UTF-8 (a character
 * split across tokens arrives whole with the token that completes it), never the text of
 * a special/control token, not NUL-terminated. Return 0 to continue, non-zero to cancel
 * (finish reason GENIE_FINISH_CANCELLED).
 * Thread: always called on the thread that called genie_session_chat, synchronously,
 * before that call returns; never from another thread. It must not call functions on the
 * same session (genie_session_cancel excepted). */
typedef int (*genie_piece_callback)(void *user, genie_piece_kind kind, const char *utf8, size_t len);

#define GENIE_CHAT_RESULT_VERSION 2
/* The outcome of genie_session_chat. Initialise with GENIE_CHAT_RESULT_INIT; release what
 * it owns with genie_chat_result_clear (it may be reused afterwards). The strings are
 * malloc'ed like every libgenie string: a caller may take one (set the field to NULL) and
 * free it later with genie_string_free. Version 1 ends after total_ms (the library writes
 * no field past the version the caller set). */
typedef struct genie_chat_result {
    unsigned int version;         /* set by the caller: GENIE_CHAT_RESULT_VERSION */
    char *text;                   /* the answer (content pieces, reasoning excluded), NUL-terminated */
    size_t text_len;
    char *reasoning;              /* the reasoning text (trimmed), "" when none */
    size_t reasoning_len;
    size_t n_tool_calls;          /* tool calls found in the answer */
    char *tool_name;              /* the first tool call's name; NULL when n_tool_calls is 0 */
    char *tool_arguments;         /* its arguments as JSON text ("{}" when none); NULL when none */
    genie_finish_reason finish_reason; /* STOP, LENGTH, CANCELLED, TIMEOUT, or ERROR on failure */
    int32_t prompt_tokens;        /* tokens of the rendered conversation */
    int32_t reused_prefix_tokens; /* of those, found in the KV cache (not evaluated) */
    int32_t completion_tokens;    /* generated tokens, reasoning included */
    double time_to_first_token_ms;/* from the call to the first generated token */
    double prefill_ms;            /* evaluating the non-reused prompt tokens */
    double prefill_tokens_per_s;
    double decode_ms;             /* generating the tokens after the first */
    double decode_tokens_per_s;
    double total_ms;              /* the whole call */
    /* Since version 2. */
    genie_tool_call *tool_calls;  /* all n_tool_calls calls, in the order of the answer; NULL when none */
    size_t n_rejected_tool_calls; /* calls found in the answer but not accepted (a tool that was
                                     not offered, arguments that do not follow its schema, or a
                                     second call with parallel_tool_calls 0); their text stays in
                                     the answer */
    genie_tool_call *rejected_tool_calls; /* with `error` set; NULL when none */
} genie_chat_result;
#define GENIE_CHAT_RESULT_INIT                                                                                        \
    { GENIE_CHAT_RESULT_VERSION, NULL, 0, NULL, 0, 0, NULL, NULL, GENIE_FINISH_STOP, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, \
      0.0, NULL, 0, NULL }

/* Frees the strings of *result and zeroes its other fields (version kept). NULL is a no-op. */
GENIE_API void genie_chat_result_clear(genie_chat_result *result);

/* Renders request->messages with the model's chat template (the GGUF's
 * tokenizer.chat_template, or ChatML when it has none; BOS not added twice), generates
 * the assistant's answer and streams it to `callback` (may be NULL) as CONTENT and
 * REASONING pieces (a leading <think>...</think> block is split off), reusing the longest
 * prefix the KV cache holds. Then finds tool calls in the answer.
 *
 * Argument order: this function follows the order written in its specification
 * (`out` last), an exception to the out-parameters-first rule of this header.
 * `out` (may be NULL) must be set with GENIE_CHAT_RESULT_INIT or cleared; anything it held
 * is freed first; the caller releases it with genie_chat_result_clear.
 *
 * Finish reasons: STOP (end-of-generation token, stop string, or a JSON value complete),
 * LENGTH (max_tokens or the context is full), CANCELLED (genie_session_cancel from any
 * thread, or the callback returned non-zero), TIMEOUT (idle timeout or deadline). These
 * all return GENIE_OK with the text produced so far. Timeouts are checked each time a
 * piece is produced (after it was delivered), so the call ends at the first piece after
 * the limit; a forward pass (the prompt's evaluation, or one token) that is running is not
 * interrupted, and a token that yields no text yet (part of a character, held back for a
 * possible stop string) is checked at the next piece.
 * With a JSON response format only tokens that keep the answer a prefix of an accepted
 * value are sampled: on STOP the text is a complete value, on LENGTH/CANCELLED/TIMEOUT a
 * prefix of one.
 * Errors (out->finish_reason = GENIE_FINISH_ERROR): INVALID_ARGUMENT (bad request:
 * version, no messages, NULL role, negative max_tokens, an invalid or unsupported JSON
 * schema — all before anything is generated), CONTEXT_OVERFLOW (the conversation does not
 * fit; the cache is left as it was), FORMAT/INVALID_ARGUMENT/UNSUPPORTED (the template
 * failed), BUSY (another call runs on the session). */
GENIE_API genie_status genie_session_chat(genie_session *session, const genie_chat_request *request,
                                          genie_piece_callback callback, void *user, genie_chat_result *out);

/* Asks a running generation on `session` to stop; it returns within one token with
 * GENIE_FINISH_CANCELLED. Callable from any thread; a no-op when nothing runs (a cancel
 * that arrives before a generation starts is ignored). The session must stay alive. */
GENIE_API genie_status genie_session_cancel(genie_session *session);

/* Evaluates `count` tokens as the whole sequence (the cached prefix is reused) and gives
 * the logits of the last one: *out_logits points to *out_count floats (n_vocab).
 * Borrowed: valid until the next call on this session. */
GENIE_API genie_status genie_session_evaluate(const float **out_logits, size_t *out_count, genie_session *session,
                                              const genie_token *tokens, size_t count);

/* The logits of the last evaluated token (*out_count == 0 before any evaluation).
 * Borrowed: valid until the next call on this session. */
GENIE_API genie_status genie_session_last_logits(const float **out_logits, size_t *out_count,
                                                 const genie_session *session);

/* The tokens the KV cache holds, in order. Borrowed: valid until the next call on this
 * session. */
GENIE_API genie_status genie_session_cached_tokens(const genie_token **out_tokens, size_t *out_count,
                                                   const genie_session *session);

/* *out = the number of tokens the session's KV cache holds at most. */
GENIE_API genie_status genie_session_context_length(int32_t *out, const genie_session *session);

/* Empties the KV cache. */
GENIE_API genie_status genie_session_reset(genie_session *session);

/* ---- session state (KV persistence) --------------------------------------------------- */
/* A session's KV cache (its tokens and their keys/values) saved to a file and restored in
 * another session or process with the same model, KV type and shape (docs/kv-cache.md). */

/* Saves the session's state to `path` (NUL-terminated UTF-8) atomically: a temporary file in
 * the same folder, fsync, rename, fsync of the folder. *out_bytes (NULL allowed) = the file's
 * size. Errors: IO, NOT_FOUND (no such folder), BUSY. */
GENIE_API genie_status genie_session_save_state(uint64_t *out_bytes, genie_session *session, const char *path);

/* Replaces the session's KV cache with the state in `path`; afterwards the cached tokens
 * are the file's and a generation whose prompt extends them evaluates only the new tokens.
 * Errors (the session is then unchanged; genie_last_error() names the file and what
 * differs): NOT_FOUND / IO (the file), FORMAT (not a KV state file, unknown version,
 * truncated, checksum mismatch), INVALID_ARGUMENT (saved from another model, another KV
 * type or shape, more tokens than the context holds), BUSY. */
GENIE_API genie_status genie_session_load_state(genie_session *session, const char *path);

/* ---- engine ------------------------------------------------------------------------- */
/* An in-process engine: one model's lifecycle (background load, swap, unload), health,
 * memory control and warm multi-turn conversations (docs/engine.md). Every genie_engine_*
 * function is thread-safe; genie_engine_load/swap/unload/wait/chat called from inside a
 * piece callback of the same engine fail with GENIE_BUSY (they would deadlock). */

typedef struct genie_engine genie_engine;

/* Where the engine's model is in its life. */
typedef enum genie_engine_state {
    GENIE_ENGINE_UNLOADED = 0, /* no model */
    GENIE_ENGINE_LOADING = 1,  /* a load runs and no model serves yet (a swap keeps READY/BUSY) */
    GENIE_ENGINE_READY = 2,    /* a model serves, no request runs */
    GENIE_ENGINE_BUSY = 3,     /* a model serves, at least one request runs */
    GENIE_ENGINE_FAILED = 4    /* the last load failed and no model serves */
} genie_engine_state;

/* Whether the engine needs attention (what a health check reports). */
typedef enum genie_engine_health {
    GENIE_HEALTH_OK = 0,
    GENIE_HEALTH_DEGRADED = 1, /* serving, but: stuck generation, out of memory, failed swap, device error */
    GENIE_HEALTH_FAILED = 2    /* not serving: the last load failed */
} genie_engine_health;

#define GENIE_ENGINE_OPTIONS_VERSION 1
/* Options of genie_engine_create. */
typedef struct genie_engine_options {
    unsigned int version;         /* GENIE_ENGINE_OPTIONS_VERSION */
    genie_backend backend;        /* of every load; default GENIE_BACKEND_AUTO */
    int32_t context_length;       /* tokens per session; 0 = min(training context, 4096) */
    int32_t threads;              /* CPU threads per session; 0 = all hardware threads */
    int32_t batch_size;           /* prompt tokens per forward pass (default 512) */
    genie_kv_type kv_type;        /* default GENIE_KV_F16 */
    int32_t max_conversations;    /* conversations whose KV cache is kept (LRU); default 4 */
    int32_t max_concurrent;       /* requests run at once; 1 (default) = serialized by priority */
    uint32_t watchdog_timeout_ms; /* no token for this long while running => DEGRADED "stuck";
                                     0 = off; default 60000 (prompt evaluation counts) */
    int cancel_stuck;             /* non-zero: also cancel a stuck generation; default 0 */
    int check_available_memory;   /* non-zero (default): refuse a KV cache larger than
                                     MemAvailable with GENIE_OUT_OF_MEMORY */
} genie_engine_options;
#define GENIE_ENGINE_OPTIONS_INIT \
    { GENIE_ENGINE_OPTIONS_VERSION, GENIE_BACKEND_AUTO, 0, 0, 512, GENIE_KV_F16, 4, 1, 60000u, 0, 1 }

/* Sets *opts to the defaults (equal to GENIE_ENGINE_OPTIONS_INIT). */
GENIE_API genie_status genie_engine_options_init(genie_engine_options *opts, unsigned int version);

/* Creates an engine with no model (state UNLOADED). `opts` may be NULL. Caller frees with
 * genie_engine_free. */
GENIE_API genie_status genie_engine_create(genie_engine **out, const genie_engine_options *opts);

/* Cancels running requests and a running load, waits for them, frees everything. NULL is a
 * no-op. No other call on the engine may run or start meanwhile. */
GENIE_API void genie_engine_free(genie_engine *engine);

/* Receives the fraction (0..1, increasing, 1 at the end) of a running load, on the loading
 * thread. Return 0 to continue, non-zero to cancel the load (it then fails with
 * GENIE_CANCELLED; the engine is not FAILED). */
typedef int (*genie_load_progress_callback)(void *user, float fraction);

/* Starts loading the GGUF at `path` (NUL-terminated) in the background and returns at
 * once; a model already loaded is unloaded first. `progress` may be NULL. Then call
 * genie_engine_wait, or poll genie_engine_status. Errors: BUSY (a load or swap runs). */
GENIE_API genie_status genie_engine_load(genie_engine *engine, const char *path,
                                         genie_load_progress_callback progress, void *user);

/* Like genie_engine_load, but the current model keeps serving while the new one loads; on
 * success the new one replaces it (running requests finish on the old one, which is freed
 * after them); on failure the old one keeps serving and health is DEGRADED ("swap failed").
 * Without a model it is genie_engine_load. */
GENIE_API genie_status genie_engine_swap(genie_engine *engine, const char *path,
                                         genie_load_progress_callback progress, void *user);

/* Waits for the running load/swap, at most timeout_ms (< 0: no limit). *out_state (may be
 * NULL) receives the state afterwards; it is GENIE_ENGINE_LOADING (with GENIE_OK) when the
 * time ran out while the first load still runs (a swap that still runs leaves READY/BUSY:
 * genie_engine_status's `loading` tells). Returns GENIE_OK, or the failed load's
 * status with its message (NOT_FOUND, FORMAT, UNSUPPORTED, OUT_OF_MEMORY, CANCELLED ...). */
GENIE_API genie_status genie_engine_wait(genie_engine_state *out_state, genie_engine *engine, int64_t timeout_ms);

/* Cancels a running load and running requests (waiting ones fail with NOT_LOADED), waits
 * for them, and frees the model and every KV cache and scratch buffer. State UNLOADED. */
GENIE_API genie_status genie_engine_unload(genie_engine *engine);

/* One tiny forward pass so the first request pays no lazy initialisation (page faults on
 * the mapped weights, the chat template's parse). Errors: NOT_LOADED. */
GENIE_API genie_status genie_engine_warmup(genie_engine *engine);

/* Tokens of context per session (0 = the default). Kept sessions of another size are
 * freed (their conversations start cold). */
GENIE_API genie_status genie_engine_set_context_limit(genie_engine *engine, int32_t n_ctx);

/* Frees the KV cache and scratch of idle kept conversations except the keep_idle most
 * recently used; *out_released (may be NULL) = the bytes released. */
GENIE_API genie_status genie_engine_trim(uint64_t *out_released, genie_engine *engine, int32_t keep_idle);

/* Forgets a conversation (conversation_id: NUL-terminated); no-op for an unknown id. */
GENIE_API genie_status genie_engine_forget(genie_engine *engine, const char *conversation_id);

/* Cancels the running request of a conversation (NULL: every running request). */
GENIE_API genie_status genie_engine_cancel(genie_engine *engine, const char *conversation_id);

#define GENIE_ENGINE_STATUS_VERSION 1
/* A snapshot of the engine: what the assistant's health check reads. Initialise with
 * GENIE_ENGINE_STATUS_INIT; release its strings with genie_engine_status_clear (it may be
 * reused afterwards; genie_engine_status clears it first). Strings are NUL-terminated,
 * never NULL after a successful call ("" when there is nothing to say). */
typedef struct genie_engine_status_info {
    unsigned int version;          /* set by the caller: GENIE_ENGINE_STATUS_VERSION */
    genie_engine_state state;
    genie_engine_health health;
    char *health_reason;           /* why health is not OK, e.g. "stuck: conversation 'a' produced
                                      no token for 61.0 s (watchdog 60.0 s)"; "" when OK */
    int loading;                   /* non-zero while a load or swap runs */
    float load_progress;           /* of the running (or last) load, 0..1 */
    char *model_path;              /* the serving model's file */
    char *model_name;              /* its general.name */
    char *architecture;            /* "llama", "qwen2", "qwen3", "gemma3" */
    char *backend;                 /* "cpu" */
    int32_t context_length;        /* tokens per session (the limit in force) */
    int32_t n_ctx_train;
    uint64_t weights_bytes;        /* the model's tensor data */
    uint64_t kv_bytes;             /* KV caches of kept conversations and running requests */
    uint64_t scratch_bytes;        /* their activation workspaces and logits */
    uint64_t device_bytes;         /* accelerator memory (0 on the CPU backend) */
    uint64_t process_rss_bytes;    /* resident set of the whole process; 0 if unknown */
    genie_status last_error_status;/* of the last failed load, swap or request; GENIE_OK if none */
    char *last_error;              /* its message */
    uint64_t requests;             /* chat requests admitted */
    uint64_t failures;             /* of those, ended with an error */
    uint64_t cancelled;            /* of those, ended GENIE_FINISH_CANCELLED */
    uint64_t prompt_tokens;
    uint64_t reused_tokens;        /* prompt tokens found in a kept KV cache */
    uint64_t generated_tokens;
    uint64_t stuck_events;         /* generations the watchdog found stuck */
    uint64_t out_of_memory;        /* out-of-memory errors */
    uint64_t loads;                /* successful loads and swaps */
    uint64_t load_failures;
    int32_t active_requests;
    int32_t queued_requests;
    int32_t conversations;         /* conversations with a kept KV cache */
    double seconds_since_token;    /* longest wait for a token among running requests; 0 when idle */
} genie_engine_status_info;
#define GENIE_ENGINE_STATUS_INIT                                                                                      \
    { GENIE_ENGINE_STATUS_VERSION, GENIE_ENGINE_UNLOADED, GENIE_HEALTH_OK, NULL, 0, 0.0f, NULL, NULL, NULL, NULL, 0, \
      0, 0, 0, 0, 0, 0, GENIE_OK, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0 }

/* Fills *out (version set by the caller). Never blocks on a running request or load. */
GENIE_API genie_status genie_engine_status(genie_engine_status_info *out, const genie_engine *engine);

/* Frees the strings of *out and zeroes its other fields (version kept). NULL is a no-op. */
GENIE_API void genie_engine_status_clear(genie_engine_status_info *out);

#define GENIE_ENGINE_CHAT_OPTIONS_VERSION 1
/* Engine-specific options of one chat request. */
typedef struct genie_engine_chat_options {
    unsigned int version;        /* GENIE_ENGINE_CHAT_OPTIONS_VERSION */
    const char *conversation_id; /* NUL-terminated; requests with the same id share a kept KV
                                    cache (warm turns); NULL or "" = a one-off request */
    int32_t priority;            /* waiting requests are admitted higher first; default 0 */
} genie_engine_chat_options;
#define GENIE_ENGINE_CHAT_OPTIONS_INIT { GENIE_ENGINE_CHAT_OPTIONS_VERSION, NULL, 0 }

/* Sets *opts to the defaults (equal to GENIE_ENGINE_CHAT_OPTIONS_INIT). */
GENIE_API genie_status genie_engine_chat_options_init(genie_engine_chat_options *opts, unsigned int version);

/* genie_session_chat on the engine: waits for a turn (priority), runs `request` on the
 * conversation's session (created cold, or kept from an earlier turn so only new tokens
 * are evaluated: out->reused_prefix_tokens), streams pieces to `callback` on the calling
 * thread. `opts` may be NULL (one-off, priority 0). Same request, callback, result and
 * finish-reason rules as genie_session_chat. Errors: NOT_LOADED (no model, or unloaded
 * while waiting), OUT_OF_MEMORY (KV cache; health becomes DEGRADED), and those of
 * genie_session_chat. */
GENIE_API genie_status genie_engine_chat(genie_engine *engine, const genie_engine_chat_options *opts,
                                         const genie_chat_request *request, genie_piece_callback callback,
                                         void *user, genie_chat_result *out);

#ifdef __cplusplus
}
#endif

#endif /* GENIE_GENIE_H */
