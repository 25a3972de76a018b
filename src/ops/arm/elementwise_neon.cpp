// NEON activations and norm rows (see elementwise_neon.h).
#include "ops/arm/elementwise_neon.h"

#include <arm_neon.h>

#include <cmath>

#include "ops/arm/elementwise_neon_math.h"

// Same rounding as the scalar references: no fusing of their separate multiplies and adds.
#pragma GCC optimize("fp-contract=off")

namespace qvl::ops::elementwise_kernels {
namespace {

using neon::load_partial;
using neon::store_partial;

// out[i] = f(a[i], b[i]) four lanes at a time (two vectors per iteration for independent work);
// the last partial vector goes through a stack copy.
template <typename F>
void map2(const float* a, const float* b, int64_t n, float* out, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float32x4_t r0 = f(vld1q_f32(a + i), vld1q_f32(b + i));
    const float32x4_t r1 = f(vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    vst1q_f32(out + i, r0);
    vst1q_f32(out + i + 4, r1);
  }
  if (i + 4 <= n) {
    vst1q_f32(out + i, f(vld1q_f32(a + i), vld1q_f32(b + i)));
    i += 4;
  }
  if (i < n) {
    store_partial(out + i, n - i, f(load_partial(a + i, n - i, 0), load_partial(b + i, n - i, 0)));
  }
}

// x / (1 + e) in the forms silu and gelu_tanh share. FDIV rather than FRECPE + 2 FRECPS: the
// divide unit works beside the FMA pipes, which the exponential keeps busy.
float32x4_t div_one_plus(float32x4_t x, float32x4_t e) {
  return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), e));
}

// Sum of x[i] (squares: (x[i] - shift)^2) in double over four accumulators of 2 lanes, enough
// independent adds to cover the FP64 add latency.
template <bool kSquares>
double sum_f64(const float* x, double shift, int64_t n) {
  const float64x2_t sh = vdupq_n_f64(shift);
  float64x2_t acc[4] = {vdupq_n_f64(0), vdupq_n_f64(0), vdupq_n_f64(0), vdupq_n_f64(0)};
  const auto add = [&](float64x2_t& a, float64x2_t v) {
    v = vsubq_f64(v, sh);
    a = kSquares ? vfmaq_f64(a, v, v) : vaddq_f64(a, v);
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float32x4_t v0 = vld1q_f32(x + i), v1 = vld1q_f32(x + i + 4);
    add(acc[0], vcvt_f64_f32(vget_low_f32(v0)));
    add(acc[1], vcvt_high_f64_f32(v0));
    add(acc[2], vcvt_f64_f32(vget_low_f32(v1)));
    add(acc[3], vcvt_high_f64_f32(v1));
  }
  double tail = 0;  // at most 7 terms, in order
  for (; i < n; ++i) {
    const double v = static_cast<double>(x[i]) - shift;
    tail += kSquares ? v * v : v;
  }
  const float64x2_t s = vaddq_f64(vaddq_f64(acc[0], acc[1]), vaddq_f64(acc[2], acc[3]));
  return vaddvq_f64(s) + tail;
}

}  // namespace

void silu_mul_neon(const float* gate, const float* up, int64_t n, float* out) {
  map2(gate, up, n, out, [](float32x4_t g, float32x4_t u) {
    return vmulq_f32(div_one_plus(g, neon::exp(vnegq_f32(g))), u);
  });
}

void gelu_tanh_neon(float* x, int64_t n) {
  // map2 reads both inputs of a vector before writing it, so x can be its own output.
  map2(x, x, n, x, [](float32x4_t v, float32x4_t) {
    const float32x4_t cv = vmulq_f32(vdupq_n_f32(0.044715f), v);
    const float32x4_t inner = vfmaq_f32(v, cv, vmulq_f32(v, v));
    const float32x4_t e = neon::exp(vmulq_f32(vdupq_n_f32(-2.0f * 0.7978845608028654f), inner));
    return div_one_plus(v, e);
  });
}

void rms_norm_row_neon(const float* x, const float* weight, float eps, int64_t n, float* y) {
  const double sum_sq = sum_f64<true>(x, 0.0, n);
  const float32x4_t inv = vdupq_n_f32(1.0f / std::sqrt(static_cast<float>(sum_sq / n) + eps));
  map2(x, weight, n, y,
       [inv](float32x4_t xv, float32x4_t w) { return vmulq_f32(w, vmulq_f32(xv, inv)); });
}

void layer_norm_row_neon(const float* x, const float* weight, const float* bias, float eps,
                         int64_t n, float* y) {
  const double mean = sum_f64<false>(x, 0.0, n) / n;
  const double var = sum_f64<true>(x, mean, n);
  const float32x4_t inv = vdupq_n_f32(static_cast<float>(1.0 / std::sqrt(var / n + eps)));
  const float32x4_t mean_f = vdupq_n_f32(static_cast<float>(mean));
  const auto norm = [&](float32x4_t xv, float32x4_t w, float32x4_t b) {
    return vaddq_f32(vmulq_f32(vmulq_f32(vsubq_f32(xv, mean_f), inv), w), b);
  };
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    vst1q_f32(y + i, norm(vld1q_f32(x + i), vld1q_f32(weight + i), vld1q_f32(bias + i)));
  }
  if (i < n) {
    const int64_t r = n - i;
    store_partial(y + i, r,
                  norm(load_partial(x + i, r, 0), load_partial(weight + i, r, 0),
                       load_partial(bias + i, r, 0)));
  }
}

ExpSum exp_sum_neon(const float* x, int64_t n) {
  constexpr float kNegInf = -__builtin_inff();
  // FMAXNM ignores a NaN operand: NaN reads as -inf without a compare.
  float32x4_t top0 = vdupq_n_f32(kNegInf), top1 = top0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    top0 = vmaxnmq_f32(top0, vld1q_f32(x + i));
    top1 = vmaxnmq_f32(top1, vld1q_f32(x + i + 4));
  }
  for (; i + 4 <= n; i += 4) top0 = vmaxnmq_f32(top0, vld1q_f32(x + i));
  if (i < n) top1 = vmaxnmq_f32(top1, load_partial(x + i, n - i, kNegInf));
  ExpSum out{vmaxnmvq_f32(vmaxnmq_f32(top0, top1)), 0.0};
  if (!(out.max > kNegInf && out.max < __builtin_inff())) return out;

  // x - max <= 0; NaN and -inf (also the tail's fill) give exactly 0.
  const float32x4_t shift = vdupq_n_f32(out.max);
  const auto term = [&](float32x4_t v) { return neon::exp_nonpositive(vsubq_f32(v, shift)); };
  float64x2_t acc0 = vdupq_n_f64(0), acc1 = vdupq_n_f64(0);
  const auto add = [&](float32x4_t e) {
    acc0 = vaddq_f64(acc0, vcvt_f64_f32(vget_low_f32(e)));
    acc1 = vaddq_f64(acc1, vcvt_high_f64_f32(e));
  };
  for (i = 0; i + 4 <= n; i += 4) add(term(vld1q_f32(x + i)));
  if (i < n) add(term(load_partial(x + i, n - i, kNegInf)));
  out.sum = vaddvq_f64(vaddq_f64(acc0, acc1));
  return out;
}

}  // namespace qvl::ops::elementwise_kernels
