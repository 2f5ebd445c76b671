/* Compiled with -std=c99 -pedantic -Wall -Wextra -Werror: genie.h must be plain C99. */
#include <genie/genie.h>

int genie_header_c99_check(void);

int genie_header_c99_check(void) {
    genie_model_options mo = GENIE_MODEL_OPTIONS_INIT;
    genie_session_options so = GENIE_SESSION_OPTIONS_INIT;
    genie_sampler_options sa = GENIE_SAMPLER_OPTIONS_INIT;
    genie_generate_options go = GENIE_GENERATE_OPTIONS_INIT;
    genie_generate_result gr = GENIE_GENERATE_RESULT_INIT;
    genie_model_info mi = GENIE_MODEL_INFO_INIT;
    genie_chat_message msg = {"user", "hi"};
    genie_piece_callback cb = 0;
    genie_log_callback lc = 0;
    (void)cb;
    (void)lc;
    (void)msg;
    return (int)(mo.version + so.version + sa.version + go.version + gr.version + mi.version) + GENIE_ABI_VERSION;
}
