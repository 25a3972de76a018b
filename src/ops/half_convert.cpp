#include "ops/half_convert.h"

#include <immintrin.h>

#include "base/half.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

__attribute__((target("avx2,f16c"))) void f32_to_f16_f16c(const float* x, int64_t n,
                                                          uint16_t* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = kernels::f32_to_f16(x[i]);
}

__attribute__((target("avx2,f16c"))) void f16_to_f32_f16c(const uint16_t* x, int64_t n,
                                                          float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = qvl::f16_to_f32(x[i]);
}

bool has_f16c() {
  return active_isa() != IsaLevel::kScalar;
}

}  // namespace

void f32_to_f16_row(const float* x, int64_t n, uint16_t* out) {
  if (has_f16c()) {
    f32_to_f16_f16c(x, n, out);
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = kernels::f32_to_f16(x[i]);
}

void f16_to_f32_row(const uint16_t* x, int64_t n, float* out) {
  if (has_f16c()) {
    f16_to_f32_f16c(x, n, out);
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = qvl::f16_to_f32(x[i]);
}

}  // namespace qvl::ops
