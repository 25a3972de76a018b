// AVX-512 activations and norm rows (see elementwise_kernels.h). Called only when the CPU has
// AVX-512; no inline function from a shared header may be instantiated below the target pragma.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/elementwise_kernels.h"

// Same rounding as the scalar references: no fusing of their separate multiplies and adds.
#pragma GCC optimize("fp-contract=off")

#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")

#include "ops/elementwise_avx512_math.h"

namespace qvl::ops::elementwise_kernels {
namespace {

__mmask16 tail_mask(int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xFFFF)
                         : static_cast<__mmask16>((1u << remaining) - 1u);
}

// Sum of x[i] (squares: (x[i] - shift)^2) in double, 8 lanes wide.
double sum_f64(const float* x, bool squares, double shift, int64_t n) {
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  const __m512d sh = _mm512_set1_pd(shift);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
    const __m512d lo = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(xv)), sh);
    const __m512d hi = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(xv, 1)), sh);
    const __mmask8 mlo = static_cast<__mmask8>(m), mhi = static_cast<__mmask8>(m >> 8);
    if (!squares) {
      acc0 = _mm512_mask_add_pd(acc0, mlo, acc0, lo);
      acc1 = _mm512_mask_add_pd(acc1, mhi, acc1, hi);
    } else {  // sum of squares of (x - shift)
      acc0 = _mm512_mask3_fmadd_pd(lo, lo, acc0, mlo);
      acc1 = _mm512_mask3_fmadd_pd(hi, hi, acc1, mhi);
    }
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
}

}  // namespace

void silu_mul_avx512(const float* gate, const float* up, int64_t n, float* out) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    const __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

void gelu_tanh_avx512(float* x, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 k2 = _mm512_set1_ps(-2.0f * 0.7978845608028654f);
  const __m512 c = _mm512_set1_ps(0.044715f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 inner = _mm512_fmadd_ps(_mm512_mul_ps(c, v), _mm512_mul_ps(v, v), v);
    const __m512 e = exp_avx512(_mm512_mul_ps(k2, inner));
    _mm512_mask_storeu_ps(x + i, m, _mm512_div_ps(v, _mm512_add_ps(one, e)));
  }
}

void rms_norm_row_avx512(const float* x, const float* weight, float eps, int64_t n, float* y) {
  const double sum_sq = sum_f64(x, true, 0.0, n);
  const __m512 inv = _mm512_set1_ps(1.0f / __builtin_sqrtf(static_cast<float>(sum_sq / n) + eps));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 xi = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, weight + i), xi));
  }
}

void layer_norm_row_avx512(const float* x, const float* weight, const float* bias, float eps,
                           int64_t n, float* y) {
  const double mean = sum_f64(x, false, 0.0, n) / n;
  const double var = sum_f64(x, true, mean, n);
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / __builtin_sqrt(var / n + eps)));
  const __m512 mean_f = _mm512_set1_ps(static_cast<float>(mean));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 xi = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mean_f), inv);
    const __m512 yi = _mm512_add_ps(_mm512_mul_ps(xi, _mm512_maskz_loadu_ps(m, weight + i)),
                                    _mm512_maskz_loadu_ps(m, bias + i));
    _mm512_mask_storeu_ps(y + i, m, yi);
  }
}

}  // namespace qvl::ops::elementwise_kernels
