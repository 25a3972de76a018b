#include "model/gguf_types.h"

namespace qvl {

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id) {
  // Block sizes from the GGUF/ggml format description (QK_K = 256 for the K-quants).
  switch (static_cast<GgmlType>(id)) {
    case GgmlType::kF32:
      return GgmlTypeInfo{"F32", 1, 4};
    case GgmlType::kF16:
      return GgmlTypeInfo{"F16", 1, 2};
    case GgmlType::kQ4_0:
      return GgmlTypeInfo{"Q4_0", 32, 2 + 16};
    case GgmlType::kQ4_1:
      return GgmlTypeInfo{"Q4_1", 32, 2 + 2 + 16};
    case GgmlType::kQ5_0:
      return GgmlTypeInfo{"Q5_0", 32, 2 + 4 + 16};
    case GgmlType::kQ5_1:
      return GgmlTypeInfo{"Q5_1", 32, 2 + 2 + 4 + 16};
    case GgmlType::kQ8_0:
      return GgmlTypeInfo{"Q8_0", 32, 2 + 32};
    case GgmlType::kQ8_1:
      return GgmlTypeInfo{"Q8_1", 32, 2 + 2 + 32};
    case GgmlType::kQ2_K:
      return GgmlTypeInfo{"Q2_K", 256, 2 + 2 + 256 / 16 + 256 / 4};
    case GgmlType::kQ3_K:
      return GgmlTypeInfo{"Q3_K", 256, 2 + 256 / 4 + 256 / 8 + 12};
    case GgmlType::kQ4_K:
      return GgmlTypeInfo{"Q4_K", 256, 2 + 2 + 12 + 256 / 2};
    case GgmlType::kQ5_K:
      return GgmlTypeInfo{"Q5_K", 256, 2 + 2 + 12 + 256 / 8 + 256 / 2};
    case GgmlType::kQ6_K:
      return GgmlTypeInfo{"Q6_K", 256, 2 + 256 / 2 + 256 / 4 + 256 / 16};
    case GgmlType::kQ8_K:
      return GgmlTypeInfo{"Q8_K", 256, 4 + 256 + 256 / 8};
    case GgmlType::kIQ4_NL:
      return GgmlTypeInfo{"IQ4_NL", 32, 2 + 16};
    case GgmlType::kIQ4_XS:
      return GgmlTypeInfo{"IQ4_XS", 256, 2 + 2 + 256 / 64 + 256 / 2};
    case GgmlType::kI8:
      return GgmlTypeInfo{"I8", 1, 1};
    case GgmlType::kI16:
      return GgmlTypeInfo{"I16", 1, 2};
    case GgmlType::kI32:
      return GgmlTypeInfo{"I32", 1, 4};
    case GgmlType::kI64:
      return GgmlTypeInfo{"I64", 1, 8};
    case GgmlType::kF64:
      return GgmlTypeInfo{"F64", 1, 8};
    case GgmlType::kBF16:
      return GgmlTypeInfo{"BF16", 1, 2};
  }
  return std::nullopt;
}

const char* ggml_type_name(GgmlType type) {
  const auto info = ggml_type_info(static_cast<uint32_t>(type));
  return info ? info->name : "?";
}

std::optional<uint64_t> ggml_row_bytes(GgmlType type, int64_t n) {
  const auto info = ggml_type_info(static_cast<uint32_t>(type));
  if (!info || n < 0 || n % info->block_elems != 0) return std::nullopt;
  return static_cast<uint64_t>(n / info->block_elems) * static_cast<uint64_t>(info->block_bytes);
}

}  // namespace qvl
