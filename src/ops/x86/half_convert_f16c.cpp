// F16C conversions of rows between fp32 and IEEE half (round to nearest even, as the scalar ones).
#include <immintrin.h>

#include <cstdint>

#include "base/half.h"
#include "ops/half_convert.h"
#include "ops/packed_kernels.h"
#include "ops/x86/packed_kernels_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx2,f16c")

namespace qvl::ops::kernels {

void f32_to_f16_f16c(const float* x, int64_t n, uint16_t* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = f32_to_f16(x[i]);
}

void f16_to_f32_f16c(const uint16_t* x, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = qvl::f16_to_f32(x[i]);
}

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
