// ggml tensor types as GGUF files number them, and the geometry of their blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace qvl {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};

struct GgmlTypeInfo {
  const char* name;
  int64_t block_elems;  // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
};

// The geometry of a type id, or nullopt for ids qvl does not know (their sizes are unknown, so a
// file using them cannot even be checked).
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t type_id);
const char* ggml_type_name(GgmlType type);

// Bytes of a row of n elements, or nullopt when n is not a whole number of blocks.
std::optional<uint64_t> ggml_row_bytes(GgmlType type, int64_t n);

}  // namespace qvl
