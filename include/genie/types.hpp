// libgenie: small value types shared by the public API.
#pragma once

#include <genie/export.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace genie {

/// Element/block type of a tensor. The numeric values are the GGUF (ggml_type)
/// ids, so a value read from a file converts directly.
enum class DType : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
    IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
    TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

/// Layout facts of a DType: a tensor row of n elements (n a multiple of
/// block_size) takes n / block_size * block_bytes bytes.
struct DTypeInfo {
    std::string_view name;  ///< llama.cpp's spelling, e.g. "Q4_K"
    uint32_t block_size;    ///< elements per block (1 for plain types)
    uint32_t block_bytes;   ///< bytes per block
    bool quantized;         ///< true for block-quantized types
};

/// Facts about a type id, or std::nullopt for an id this build does not know.
GENIE_API std::optional<DTypeInfo> dtype_info(uint32_t type_id) noexcept;

/// Same, for a known enum value (never empty for a declared enumerator).
GENIE_API DTypeInfo dtype_info(DType type) noexcept;

/// llama.cpp's name of a type, e.g. "Q6_K"; "?" for an unknown id.
GENIE_API std::string_view dtype_name(DType type) noexcept;

/// Parses a type name such as "q4_k" or "Q4_K" (case-insensitive).
GENIE_API std::optional<DType> dtype_from_name(std::string_view name) noexcept;

}  // namespace genie
