// AVX2 + FMA + F16C activation quantizer (the GEMV kernels are in packed_gemv_avx2.cpp). Called
// only when the CPU has it (see best_isa); this file must not define or instantiate any inline
// function from a shared header (see packed_kernels.h).
#include <immintrin.h>

#include "ops/packed_kernels.h"
#include "ops/x86/packed_kernels_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx2,fma,f16c")

namespace qvl::ops::kernels {
void quantize_row_to_avx2(const float* x, int64_t nb, int32_t qmax, int8_t* q, float* scale,
                          int32_t* sum) {
  const auto top = static_cast<float>(qmax);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256i lo = _mm256_set1_epi32(-qmax), hi = _mm256_set1_epi32(qmax);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + b * kCols;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(xb + 8 * j);
      amax = _mm256_max_ps(_mm256_and_ps(v[j], abs_mask), amax);  // NaN lanes keep amax
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    const float m = _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
    const __m256 inv = _mm256_set1_ps(m > 0 ? top / m : 0.0f);
    __m256i iv[4];
    __m256i total = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      iv[j] = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], inv));  // NaN -> INT_MIN -> -qmax
      iv[j] = _mm256_min_epi32(_mm256_max_epi32(iv[j], lo), hi);
      total = _mm256_add_epi32(total, iv[j]);
    }
    const __m256i packed =
        _mm256_packs_epi16(_mm256_packs_epi32(iv[0], iv[1]), _mm256_packs_epi32(iv[2], iv[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kCols),
                        _mm256_permutevar8x32_epi32(packed, order));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
    scale[b] = m / top;
    sum[b] = _mm_cvtsi128_si32(t);
  }
}

void quantize_row_avx2(const float* x, int64_t nb, int8_t* q, float* scale, int32_t* sum) {
  quantize_row_to_avx2(x, nb, 127, q, scale, sum);
}

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
