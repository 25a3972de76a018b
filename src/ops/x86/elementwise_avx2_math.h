// Vector math for AVX2 kernels. Include only after `#pragma GCC target("avx2,fma")` in a kernel
// file: the functions are static (one private copy per file), so no AVX2 code can leak into
// callers on other CPUs.
#pragma once

#include <immintrin.h>

#include "ops/exp2_polynomial.h"

// e^x for 8 lanes: x = n ln2 + r with |r| <= ln2/2, e^r by its degree-7 Taylor polynomial (error
// below 1e-8 relative), then scaled by 2^n built in the exponent bits. +inf above 88.37 (just
// short of the true overflow at 88.72), 0 below -87.33 (no subnormals), NaN stays NaN.
static inline __m256 exp_avx2(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.37f);
  const __m256 lo = _mm256_set1_ps(-87.33f);
  const __m256 over = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
  const __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 result = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  result = _mm256_blendv_ps(result, _mm256_set1_ps(__builtin_inff()), over);
  result = _mm256_blendv_ps(result, _mm256_setzero_ps(), under);
  return _mm256_blendv_ps(result, x, nan);
}

// 2^x for softmax arguments (x <= 0, as x - max): x = n + r with |r| <= 1/2, 2^r by a degree-6
// polynomial in r (relative error ~1.5e-7), scaled by 2^n built in the exponent bits. Below -125
// it returns about 2^-125 instead of underflowing (no subnormals); NaN stays NaN. No overflow
// handling, so about half the instructions of exp_avx2.
static inline __m256 exp2_nonpositive_avx2(__m256 x) {
  const __m256 xc = _mm256_max_ps(_mm256_set1_ps(-125.0f), x);  // NaN in x is kept
  const __m256 n = _mm256_round_ps(xc, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_sub_ps(xc, n);
  __m256 p = _mm256_set1_ps(qvl::ops::kExp2Polynomial[0]);
  for (int i = 1; i < 7; ++i)
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(qvl::ops::kExp2Polynomial[i]));
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

// The largest and the sum of 8 lanes (the sum by a fixed tree: same bits on every call).
static inline float horizontal_max(__m256 v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  x = _mm_max_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}
static inline float horizontal_sum(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}
