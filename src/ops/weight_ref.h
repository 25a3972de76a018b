// A read-only reference to a 2-D weight matrix [rows, cols] stored row-major in some type.
// Kernels take these, so they never depend on how the model stored or loaded its weights.
#pragma once

#include <cstdint>
#include <cstring>

#include "base/half.h"

namespace qvl::ops {

enum class WeightType { kF32, kBF16, kF16 };

struct WeightRef {
  WeightType type = WeightType::kF32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
};

inline size_t weight_type_size(WeightType t) {
  return t == WeightType::kF32 ? 4 : 2;
}

// Converts row r to float32 (exact for all supported types).
inline void weight_row_to_f32(const WeightRef& w, int64_t r, float* out) {
  const size_t n = static_cast<size_t>(w.cols);
  const auto* base =
      static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r) * n * weight_type_size(w.type);
  switch (w.type) {
    case WeightType::kF32:
      std::memcpy(out, base, n * 4);
      break;
    case WeightType::kBF16: {
      const auto* p = reinterpret_cast<const uint16_t*>(base);
      for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(p[i]);
      break;
    }
    case WeightType::kF16: {
      const auto* p = reinterpret_cast<const uint16_t*>(base);
      for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(p[i]);
      break;
    }
  }
}

}  // namespace qvl::ops
