/* genie-c-example: a plain C99 consumer of libgenie's C ABI.
 *
 *   genie-c-example MODEL.gguf PROMPT [N_TOKENS]
 *   genie-c-example --chat MODEL.gguf MESSAGE [N_TOKENS]
 *
 * Loads the model and streams a greedy answer to stdout through the piece callback: a
 * continuation of PROMPT (genie_session_generate), or with --chat the assistant's reply to
 * MESSAGE rendered with the model's chat template (genie_session_chat; reasoning goes to
 * stderr). Then prints a one-line summary to stderr. Exit status 0 on success, 1 on a
 * libgenie error (its message on stderr), 2 on bad usage. */
#include <genie/genie.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Called on this thread for each piece: complete UTF-8, not NUL-terminated. */
static int print_piece(void *user, const char *utf8, size_t len, genie_token token) {
    (void)user;
    (void)token;
    fwrite(utf8, 1, len, stdout);
    fflush(stdout);
    return 0; /* 0 = continue */
}

/* genie_session_chat's callback: also called on this thread, before the call returns. */
static int print_chat_piece(void *user, genie_piece_kind kind, const char *utf8, size_t len) {
    FILE *to = kind == GENIE_PIECE_REASONING ? stderr : stdout;
    (void)user;
    fwrite(utf8, 1, len, to);
    fflush(to);
    return 0; /* non-zero would cancel (finish GENIE_FINISH_CANCELLED) */
}

static int fail(const char *what, genie_status status) {
    fprintf(stderr, "genie-c-example: %s failed: %s: %s\n", what, genie_status_name(status), genie_last_error());
    return 1;
}

static const char *finish_name(genie_finish_reason reason) {
    switch (reason) {
    case GENIE_FINISH_STOP: return "stop";
    case GENIE_FINISH_LENGTH: return "length";
    case GENIE_FINISH_CANCELLED: return "cancelled";
    case GENIE_FINISH_TIMEOUT: return "timeout";
    case GENIE_FINISH_ERROR: return "error";
    }
    return "?";
}

static int chat(genie_session *session, const char *message, int max_tokens) {
    genie_chat_turn turns[2];
    genie_chat_request request = GENIE_CHAT_REQUEST_INIT;
    genie_chat_result result = GENIE_CHAT_RESULT_INIT;
    genie_status status;
    turns[0].role = "system";
    turns[0].content = "You are a helpful assistant.";
    turns[0].content_len = strlen(turns[0].content);
    turns[1].role = "user";
    turns[1].content = message;
    turns[1].content_len = strlen(message);
    request.messages = turns;
    request.n_messages = 2;
    request.max_tokens = max_tokens;
    request.deadline_ms = 60000; /* give up after a minute */
    /* request.sampler = NULL: greedy. */
    status = genie_session_chat(session, &request, print_chat_piece, NULL, &result);
    if (status != GENIE_OK) return fail("genie_session_chat", status);
    printf("\n");
    fprintf(stderr, "%d prompt tokens (%d reused), %d generated, first token %.1f ms, %.1f tokens/s, finish %s\n",
            (int)result.prompt_tokens, (int)result.reused_prefix_tokens, (int)result.completion_tokens,
            result.time_to_first_token_ms, result.decode_tokens_per_s, finish_name(result.finish_reason));
    if (result.n_tool_calls > 0) fprintf(stderr, "tool call: %s %s\n", result.tool_name, result.tool_arguments);
    genie_chat_result_clear(&result);
    return 0;
}

int main(int argc, char **argv) {
    genie_model_options model_options = GENIE_MODEL_OPTIONS_INIT;
    genie_session_options session_options = GENIE_SESSION_OPTIONS_INIT;
    genie_sampler_options sampler_options = GENIE_SAMPLER_OPTIONS_INIT; /* temperature 0: greedy */
    genie_generate_options generate_options = GENIE_GENERATE_OPTIONS_INIT;
    genie_generate_result result = GENIE_GENERATE_RESULT_INIT;
    genie_model *model = NULL;
    genie_session *session = NULL;
    genie_sampler *sampler = NULL;
    genie_status status;
    int exit_code = 0;
    int chat_mode = argc > 1 && strcmp(argv[1], "--chat") == 0;

    if (chat_mode) {
        ++argv;
        --argc;
    }
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s [--chat] MODEL.gguf PROMPT [N_TOKENS]\n", argv[0]);
        return 2;
    }
    generate_options.max_tokens = argc == 4 ? atoi(argv[3]) : 32;

    status = genie_model_load(&model, argv[1], &model_options);
    if (status != GENIE_OK) return fail("genie_model_load", status);
    status = genie_session_create(&session, model, &session_options);
    if (status != GENIE_OK) {
        exit_code = fail("genie_session_create", status);
        goto done;
    }
    if (chat_mode) {
        exit_code = chat(session, argv[2], generate_options.max_tokens);
        goto done;
    }
    status = genie_sampler_create(&sampler, &sampler_options);
    if (status != GENIE_OK) {
        exit_code = fail("genie_sampler_create", status);
        goto done;
    }
    status = genie_session_generate(&result, session, argv[2], strlen(argv[2]), sampler, &generate_options,
                                    print_piece, NULL);
    if (status != GENIE_OK) {
        exit_code = fail("genie_session_generate", status);
        goto done;
    }
    printf("\n");
    fprintf(stderr, "%d prompt tokens, %d generated, first token %.1f ms, %.1f tokens/s, finish %d\n",
            (int)result.prompt_tokens, (int)result.completion_tokens, result.time_to_first_token_ms,
            result.decode_tokens_per_s, (int)result.finish_reason);

done:
    genie_generate_result_clear(&result);
    genie_sampler_free(sampler);
    genie_session_free(session);
    genie_model_free(model); /* sessions keep the model alive; order does not matter */
    return exit_code;
}
