// AVX2 activations and norm rows (see elementwise_kernels.h). Called only when the CPU has AVX2 +
// FMA; no inline function from a shared header may be instantiated below the target pragma.
#include <immintrin.h>

#include "ops/elementwise_kernels.h"
#include "ops/x86/elementwise_x86.h"
#include "ops/x86/target_isa.h"

// Same rounding as the scalar references: no fusing of their separate multiplies and adds.
QVL_NO_FP_CONTRACT

QVL_TARGET_ISA_BEGIN("avx2,fma")

#include "ops/x86/elementwise_avx2_math.h"

namespace qvl::ops::elementwise_kernels {
namespace {

// All-ones in the first min(remaining, 8) lanes.
__m256i tail_mask(int64_t remaining) {
  const int64_t r = remaining < 8 ? remaining : 8;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(r)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Lanes i .. i + 8 of p, zeros past n. Masked moves only at the tail: on some AMD cores a masked
// store costs tens of cycles.
__m256 load(const float* p, int64_t i, int64_t n) {
  return i + 8 <= n ? _mm256_loadu_ps(p + i) : _mm256_maskload_ps(p + i, tail_mask(n - i));
}

void store(float* p, int64_t i, int64_t n, __m256 v) {
  if (i + 8 <= n) {
    _mm256_storeu_ps(p + i, v);
    return;
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  for (int64_t j = i; j < n; ++j) p[j] = lanes[j - i];
}

// Sum of x[i] (squares: (x[i] - shift)^2) in double, 4 lanes wide; masked-off lanes load 0.
double sum_f64(const float* x, bool squares, double shift, int64_t n) {
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  const __m256d sh = _mm256_set1_pd(shift);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = tail_mask(n - i);
    const __m256 xv = load(x, i, n);
    const __m256d mlo = _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(m)));
    const __m256d mhi = _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm256_extracti128_si256(m, 1)));
    const __m256d lo =
        _mm256_and_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(xv)), sh), mlo);
    const __m256d hi =
        _mm256_and_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1)), sh), mhi);
    if (squares) {
      acc0 = _mm256_fmadd_pd(lo, lo, acc0);
      acc1 = _mm256_fmadd_pd(hi, hi, acc1);
    } else {
      acc0 = _mm256_add_pd(acc0, lo);
      acc1 = _mm256_add_pd(acc1, hi);
    }
  }
  const __m256d acc = _mm256_add_pd(acc0, acc1);
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(acc), _mm256_extractf128_pd(acc, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

}  // namespace

void silu_mul_avx2(const float* gate, const float* up, int64_t n, float* out) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 g = load(gate, i, n);
    const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), g));
    const __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, e));
    store(out, i, n, _mm256_mul_ps(s, load(up, i, n)));
  }
}

void gelu_tanh_avx2(float* x, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 k2 = _mm256_set1_ps(-2.0f * 0.7978845608028654f);
  const __m256 c = _mm256_set1_ps(0.044715f);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v = load(x, i, n);
    const __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(c, v), _mm256_mul_ps(v, v), v);
    const __m256 e = exp_avx2(_mm256_mul_ps(k2, inner));
    store(x, i, n, _mm256_div_ps(v, _mm256_add_ps(one, e)));
  }
}

void rms_norm_row_avx2(const float* x, const float* weight, float eps, int64_t n, float* y) {
  const double sum_sq = sum_f64(x, true, 0.0, n);
  const __m256 inv = _mm256_set1_ps(1.0f / __builtin_sqrtf(static_cast<float>(sum_sq / n) + eps));
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 xi = _mm256_mul_ps(load(x, i, n), inv);
    store(y, i, n, _mm256_mul_ps(load(weight, i, n), xi));
  }
}

void layer_norm_row_avx2(const float* x, const float* weight, const float* bias, float eps,
                         int64_t n, float* y) {
  const double mean = sum_f64(x, false, 0.0, n) / n;
  const double var = sum_f64(x, true, mean, n);
  const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / __builtin_sqrt(var / n + eps)));
  const __m256 mean_f = _mm256_set1_ps(static_cast<float>(mean));
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 xi = _mm256_mul_ps(_mm256_sub_ps(load(x, i, n), mean_f), inv);
    const __m256 yi = _mm256_add_ps(_mm256_mul_ps(xi, load(weight, i, n)), load(bias, i, n));
    store(y, i, n, yi);
  }
}

ExpSum exp_sum_avx2(const float* x, int64_t n) {
  const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
  __m256 top = neg_inf;
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v =
        _mm256_blendv_ps(neg_inf, load(x, i, n), _mm256_castsi256_ps(tail_mask(n - i)));
    top = _mm256_max_ps(top, _mm256_blendv_ps(v, neg_inf, _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
  }
  ExpSum out{horizontal_max(top), 0.0};
  if (!(out.max > -__builtin_inff() && out.max < __builtin_inff())) return out;
  const __m256 shift = _mm256_set1_ps(out.max);
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    __m256 e = exp_avx2(_mm256_sub_ps(load(x, i, n), shift));
    const __m256 keep =
        _mm256_and_ps(_mm256_castsi256_ps(tail_mask(n - i)), _mm256_cmp_ps(e, e, _CMP_ORD_Q));
    e = _mm256_and_ps(e, keep);
    acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  const __m256d acc = _mm256_add_pd(acc0, acc1);
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(acc), _mm256_extractf128_pd(acc, 1));
  out.sum = _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
  return out;
}

}  // namespace qvl::ops::elementwise_kernels

QVL_TARGET_ISA_END
