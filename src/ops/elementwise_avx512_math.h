// Vector math for AVX-512 kernels. Include only after `#pragma GCC target("avx512f,...")` in a
// kernel file: the functions are static (one private copy per file), so no AVX-512 code can leak
// into callers on other CPUs.
#pragma once

#include <immintrin.h>

#include "ops/exp2_polynomial.h"

// e^x for 16 lanes: x = n ln2 + r with |r| <= ln2/2, e^r by its degree-7 Taylor polynomial (error
// below 1e-8 relative), then scaled by 2^n. Overflows to +inf, underflows to 0 (x < -103.9),
// NaN stays NaN.
static inline __m512 exp_avx512(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.72283935546875f);
  const __m512 lo = _mm512_set1_ps(-103.97f);
  const __mmask16 over = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
  const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  __m512 result = _mm512_scalef_ps(p, n);
  result = _mm512_mask_mov_ps(result, over, _mm512_set1_ps(__builtin_inff()));
  result = _mm512_mask_mov_ps(result, under, _mm512_setzero_ps());
  return _mm512_mask_mov_ps(result, nan, x);
}

// 2^x for softmax arguments (x <= 0, as x - max): as exp2_nonpositive_avx2 (degree-6 polynomial
// on |r| <= 1/2, about 2^-125 below -125, NaN kept, no overflow handling).
static inline __m512 exp2_nonpositive_avx512(__m512 x) {
  const __m512 xc = _mm512_max_ps(_mm512_set1_ps(-125.0f), x);  // NaN in x is kept
  const __m512 n = _mm512_roundscale_ps(xc, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_sub_ps(xc, n);
  __m512 p = _mm512_set1_ps(qvl::ops::kExp2Polynomial[0]);
  for (int i = 1; i < 7; ++i)
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(qvl::ops::kExp2Polynomial[i]));
  return _mm512_scalef_ps(p, n);
}
