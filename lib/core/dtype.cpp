// The type table: block sizes and byte sizes as ggml defines them.
#include <genie/types.hpp>

#include <array>
#include <cctype>

namespace genie {
namespace {

struct Row {
    DType type;
    DTypeInfo info;
};

// Byte sizes follow ggml's block structs (e.g. block_q8_1 is 2 halves + 32 int8 = 36).
constexpr std::array<Row, 32> kTable{{
    {DType::F32, {"F32", 1, 4, false}},
    {DType::F16, {"F16", 1, 2, false}},
    {DType::Q4_0, {"Q4_0", 32, 18, true}},
    {DType::Q4_1, {"Q4_1", 32, 20, true}},
    {DType::Q5_0, {"Q5_0", 32, 22, true}},
    {DType::Q5_1, {"Q5_1", 32, 24, true}},
    {DType::Q8_0, {"Q8_0", 32, 34, true}},
    {DType::Q8_1, {"Q8_1", 32, 36, true}},
    {DType::Q2_K, {"Q2_K", 256, 84, true}},
    {DType::Q3_K, {"Q3_K", 256, 110, true}},
    {DType::Q4_K, {"Q4_K", 256, 144, true}},
    {DType::Q5_K, {"Q5_K", 256, 176, true}},
    {DType::Q6_K, {"Q6_K", 256, 210, true}},
    {DType::Q8_K, {"Q8_K", 256, 292, true}},
    {DType::IQ2_XXS, {"IQ2_XXS", 256, 66, true}},
    {DType::IQ2_XS, {"IQ2_XS", 256, 74, true}},
    {DType::IQ3_XXS, {"IQ3_XXS", 256, 98, true}},
    {DType::IQ1_S, {"IQ1_S", 256, 50, true}},
    {DType::IQ4_NL, {"IQ4_NL", 32, 18, true}},
    {DType::IQ3_S, {"IQ3_S", 256, 110, true}},
    {DType::IQ2_S, {"IQ2_S", 256, 82, true}},
    {DType::IQ4_XS, {"IQ4_XS", 256, 136, true}},
    {DType::I8, {"I8", 1, 1, false}},
    {DType::I16, {"I16", 1, 2, false}},
    {DType::I32, {"I32", 1, 4, false}},
    {DType::I64, {"I64", 1, 8, false}},
    {DType::F64, {"F64", 1, 8, false}},
    {DType::IQ1_M, {"IQ1_M", 256, 56, true}},
    {DType::BF16, {"BF16", 1, 2, false}},
    {DType::TQ1_0, {"TQ1_0", 256, 54, true}},
    {DType::TQ2_0, {"TQ2_0", 256, 66, true}},
    {DType::MXFP4, {"MXFP4", 32, 17, true}},
}};

}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t type_id) noexcept {
    for (const Row& row : kTable)
        if (static_cast<uint32_t>(row.type) == type_id) return row.info;
    return std::nullopt;
}

DTypeInfo dtype_info(DType type) noexcept {
    if (auto info = dtype_info(static_cast<uint32_t>(type))) return *info;
    return {"?", 1, 0, false};
}

std::string_view dtype_name(DType type) noexcept { return dtype_info(type).name; }

std::optional<DType> dtype_from_name(std::string_view name) noexcept {
    for (const Row& row : kTable) {
        if (row.info.name.size() != name.size()) continue;
        bool same = true;
        for (size_t i = 0; i < name.size() && same; ++i)
            same = std::toupper(static_cast<unsigned char>(name[i])) == row.info.name[i];
        if (same) return row.type;
    }
    return std::nullopt;
}

}  // namespace genie
