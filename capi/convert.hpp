// Private to the C ABI (capi/*.cpp): conversions between genie.h's option / result structs
// and enums and their C++ counterparts (the chat request and result: chat_convert.hpp).
// Every function validates what the caller filled and throws InvalidArgument naming the
// field.
#pragma once

#include <genie/engine.hpp>
#include <genie/genie.h>
#include <genie/sampler.hpp>
#include <genie/session.hpp>

namespace genie::capi {

/// genie_backend (read with enum_field) -> BackendKind ("unknown backend N").
genie::BackendKind backend_from_c(int backend);
/// genie_kv_type (read with enum_field) -> KvType ("unknown kv_type N").
genie::KvType kv_type_from_c(int kv_type);

genie::SamplerOptions sampler_options_from_c(const genie_sampler_options& options);
/// NULL: the defaults of GENIE_GENERATE_OPTIONS_INIT.
genie::GenerateOptions generate_options_from_c(const genie_generate_options* options);

genie_finish_reason finish_reason_to_c(genie::FinishReason reason) noexcept;
genie_engine_state engine_state_to_c(genie::EngineState state) noexcept;
genie_engine_health engine_health_to_c(genie::EngineHealth health) noexcept;

/// Checks out->version, frees what it held and marks it failed until filled.
void begin_generate_result(genie_generate_result* out);
/// Fills *out (prepared by begin_generate_result) with malloc'ed copies of r's text and tokens.
void fill_generate_result(genie_generate_result* out, const genie::GenerateResult& r);

}  // namespace genie::capi
