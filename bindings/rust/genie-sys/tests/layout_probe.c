/* Prints the size and alignment of every struct of genie.h and the offset and size of each
 * field, one per line ("SIZE name bytes", "ALIGN name bytes", "OFFSET name.field bytes",
 * "FIELDSIZE name.field bytes"), for genie-sys/tests/layout.rs to compare with the Rust
 * declarations. Built by bindings/rust/CMakeLists.txt with the C compiler that builds
 * libgenie. */
#include <stddef.h>
#include <stdio.h>

#include "genie/genie.h"

#define SIZE(T) printf("SIZE %s %zu\nALIGN %s %zu\n", #T, sizeof(T), #T, (size_t)_Alignof(T))
#define OFFSET(T, F)                                                                  \
    printf("OFFSET %s.%s %zu\nFIELDSIZE %s.%s %zu\n", #T, #F, offsetof(T, F), #T, #F, \
           sizeof(((T *)0)->F))

int main(void) {
    SIZE(genie_model_options);
    OFFSET(genie_model_options, version);
    OFFSET(genie_model_options, backend);
    OFFSET(genie_model_options, use_mmap);
    OFFSET(genie_model_options, memory_budget_bytes);
    SIZE(genie_model_info);
    OFFSET(genie_model_info, version);
    OFFSET(genie_model_info, architecture);
    OFFSET(genie_model_info, name);
    OFFSET(genie_model_info, parameter_count);
    OFFSET(genie_model_info, file_size);
    OFFSET(genie_model_info, weight_bytes);
    OFFSET(genie_model_info, n_vocab);
    OFFSET(genie_model_info, n_ctx_train);
    OFFSET(genie_model_info, n_embd);
    OFFSET(genie_model_info, n_layer);
    OFFSET(genie_model_info, n_head);
    OFFSET(genie_model_info, n_head_kv);
    OFFSET(genie_model_info, head_dim);
    OFFSET(genie_model_info, n_ff);
    OFFSET(genie_model_info, bos);
    OFFSET(genie_model_info, eos);
    OFFSET(genie_model_info, load_time_ms);
    OFFSET(genie_model_info, decode_bytes);
    SIZE(genie_sampler_options);
    OFFSET(genie_sampler_options, version);
    OFFSET(genie_sampler_options, temperature);
    OFFSET(genie_sampler_options, top_k);
    OFFSET(genie_sampler_options, top_p);
    OFFSET(genie_sampler_options, min_p);
    OFFSET(genie_sampler_options, seed);
    OFFSET(genie_sampler_options, typical_p);
    OFFSET(genie_sampler_options, penalty_last_n);
    OFFSET(genie_sampler_options, repeat_penalty);
    OFFSET(genie_sampler_options, frequency_penalty);
    OFFSET(genie_sampler_options, presence_penalty);
    OFFSET(genie_sampler_options, logit_bias_tokens);
    OFFSET(genie_sampler_options, logit_bias_values);
    OFFSET(genie_sampler_options, n_logit_bias);
    SIZE(genie_session_options);
    OFFSET(genie_session_options, version);
    OFFSET(genie_session_options, context_length);
    OFFSET(genie_session_options, threads);
    OFFSET(genie_session_options, batch_size);
    OFFSET(genie_session_options, kv_type);
    SIZE(genie_generate_options);
    OFFSET(genie_generate_options, version);
    OFFSET(genie_generate_options, max_tokens);
    OFFSET(genie_generate_options, stop_on_eog);
    OFFSET(genie_generate_options, add_special);
    OFFSET(genie_generate_options, parse_special);
    OFFSET(genie_generate_options, stop);
    OFFSET(genie_generate_options, n_stop);
    SIZE(genie_generate_result);
    OFFSET(genie_generate_result, version);
    OFFSET(genie_generate_result, text);
    OFFSET(genie_generate_result, text_len);
    OFFSET(genie_generate_result, tokens);
    OFFSET(genie_generate_result, n_tokens);
    OFFSET(genie_generate_result, finish_reason);
    OFFSET(genie_generate_result, prompt_tokens);
    OFFSET(genie_generate_result, reused_prompt_tokens);
    OFFSET(genie_generate_result, completion_tokens);
    OFFSET(genie_generate_result, load_ms);
    OFFSET(genie_generate_result, prompt_eval_ms);
    OFFSET(genie_generate_result, time_to_first_token_ms);
    OFFSET(genie_generate_result, decode_ms);
    OFFSET(genie_generate_result, prompt_tokens_per_s);
    OFFSET(genie_generate_result, decode_tokens_per_s);
    SIZE(genie_chat_message);
    OFFSET(genie_chat_message, role);
    OFFSET(genie_chat_message, content);
    SIZE(genie_chat_turn);
    OFFSET(genie_chat_turn, role);
    OFFSET(genie_chat_turn, content);
    OFFSET(genie_chat_turn, content_len);
    SIZE(genie_chat_request);
    OFFSET(genie_chat_request, version);
    OFFSET(genie_chat_request, messages);
    OFFSET(genie_chat_request, n_messages);
    OFFSET(genie_chat_request, max_tokens);
    OFFSET(genie_chat_request, sampler);
    OFFSET(genie_chat_request, response_format);
    OFFSET(genie_chat_request, json_schema);
    OFFSET(genie_chat_request, json_schema_len);
    OFFSET(genie_chat_request, think);
    OFFSET(genie_chat_request, stop);
    OFFSET(genie_chat_request, n_stop);
    OFFSET(genie_chat_request, idle_timeout_ms);
    OFFSET(genie_chat_request, deadline_ms);
    OFFSET(genie_chat_request, tools_json);
    OFFSET(genie_chat_request, tools_json_len);
    SIZE(genie_chat_result);
    OFFSET(genie_chat_result, version);
    OFFSET(genie_chat_result, text);
    OFFSET(genie_chat_result, text_len);
    OFFSET(genie_chat_result, reasoning);
    OFFSET(genie_chat_result, reasoning_len);
    OFFSET(genie_chat_result, n_tool_calls);
    OFFSET(genie_chat_result, tool_name);
    OFFSET(genie_chat_result, tool_arguments);
    OFFSET(genie_chat_result, finish_reason);
    OFFSET(genie_chat_result, prompt_tokens);
    OFFSET(genie_chat_result, reused_prefix_tokens);
    OFFSET(genie_chat_result, completion_tokens);
    OFFSET(genie_chat_result, time_to_first_token_ms);
    OFFSET(genie_chat_result, prefill_ms);
    OFFSET(genie_chat_result, prefill_tokens_per_s);
    OFFSET(genie_chat_result, decode_ms);
    OFFSET(genie_chat_result, decode_tokens_per_s);
    OFFSET(genie_chat_result, total_ms);
    SIZE(genie_engine_options);
    OFFSET(genie_engine_options, version);
    OFFSET(genie_engine_options, backend);
    OFFSET(genie_engine_options, context_length);
    OFFSET(genie_engine_options, threads);
    OFFSET(genie_engine_options, batch_size);
    OFFSET(genie_engine_options, kv_type);
    OFFSET(genie_engine_options, max_conversations);
    OFFSET(genie_engine_options, max_concurrent);
    OFFSET(genie_engine_options, watchdog_timeout_ms);
    OFFSET(genie_engine_options, cancel_stuck);
    OFFSET(genie_engine_options, check_available_memory);
    SIZE(genie_engine_status_info);
    OFFSET(genie_engine_status_info, version);
    OFFSET(genie_engine_status_info, state);
    OFFSET(genie_engine_status_info, health);
    OFFSET(genie_engine_status_info, health_reason);
    OFFSET(genie_engine_status_info, loading);
    OFFSET(genie_engine_status_info, load_progress);
    OFFSET(genie_engine_status_info, model_path);
    OFFSET(genie_engine_status_info, model_name);
    OFFSET(genie_engine_status_info, architecture);
    OFFSET(genie_engine_status_info, backend);
    OFFSET(genie_engine_status_info, context_length);
    OFFSET(genie_engine_status_info, n_ctx_train);
    OFFSET(genie_engine_status_info, weights_bytes);
    OFFSET(genie_engine_status_info, kv_bytes);
    OFFSET(genie_engine_status_info, scratch_bytes);
    OFFSET(genie_engine_status_info, device_bytes);
    OFFSET(genie_engine_status_info, process_rss_bytes);
    OFFSET(genie_engine_status_info, last_error_status);
    OFFSET(genie_engine_status_info, last_error);
    OFFSET(genie_engine_status_info, requests);
    OFFSET(genie_engine_status_info, failures);
    OFFSET(genie_engine_status_info, cancelled);
    OFFSET(genie_engine_status_info, prompt_tokens);
    OFFSET(genie_engine_status_info, reused_tokens);
    OFFSET(genie_engine_status_info, generated_tokens);
    OFFSET(genie_engine_status_info, stuck_events);
    OFFSET(genie_engine_status_info, out_of_memory);
    OFFSET(genie_engine_status_info, loads);
    OFFSET(genie_engine_status_info, load_failures);
    OFFSET(genie_engine_status_info, active_requests);
    OFFSET(genie_engine_status_info, queued_requests);
    OFFSET(genie_engine_status_info, conversations);
    OFFSET(genie_engine_status_info, seconds_since_token);
    SIZE(genie_engine_chat_options);
    OFFSET(genie_engine_chat_options, version);
    OFFSET(genie_engine_chat_options, conversation_id);
    OFFSET(genie_engine_chat_options, priority);
    return 0;
}
