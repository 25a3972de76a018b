// AVX2 flash-attention task (see attention_kernels.h). Called only when the CPU has AVX2 + FMA;
// this file must not define or instantiate any inline function from a shared header (no std::
// templates below the target pragma), or the linker could pick an AVX2 copy for everyone.
#include <immintrin.h>

#include "ops/attention_kernels.h"
#include "ops/x86/attention_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx2,fma,f16c")

#include "ops/x86/elementwise_avx2_math.h"

namespace qvl::ops::attention_kernels {
namespace {

constexpr int64_t kKeyBlock = 128;  // keys per online-softmax step (a multiple of kKeyTile)
constexpr int kRows = 6;            // rows computed together (register blocking)

int64_t min_i64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
int64_t max_i64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// scores[r][0 .. 16) of one key tile for kRows rows. q holds the kRows rows interleaved
// ([c][kRows]: the broadcasts of one step share a cache line, as in the GEMM tile) and
// pre-scaled (scale and log2(e) folded in once per task), so this is the plain product.
void qk_tile(const float* q, int64_t d, const float* panel, float* scores) {
  __m256 acc[kRows][2];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int64_t c = 0; c < d; ++c) {
    const __m256 k0 = _mm256_loadu_ps(panel + c * kKeyTile);
    const __m256 k1 = _mm256_loadu_ps(panel + c * kKeyTile + 8);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256 qb = _mm256_broadcast_ss(q + c * kRows + r);
      acc[r][0] = _mm256_fmadd_ps(qb, k0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(qb, k1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    _mm256_storeu_ps(scores + r * kKeyBlock, acc[r][0]);
    _mm256_storeu_ps(scores + r * kKeyBlock + 8, acc[r][1]);
  }
}

// o[r][c0 .. c0 + 16) = alpha[r] * o + sum_j p[r][j] * v[j][c0 ..] for the first kLive rows;
// v is the value panel of columns c0 .. c0 + 16 (16 floats per key, keys consecutive), so each
// chunk streams one contiguous run that the hardware prefetcher follows.
template <int kLive>
void pv_panel(float* o, int64_t d, const float* alpha, const float* p, const float* v, int64_t c0,
              int64_t n_keys) {
  __m256 acc[kLive][2];
#pragma GCC unroll 8
  for (int r = 0; r < kLive; ++r) {
    const __m256 a = _mm256_set1_ps(alpha[r]);
    acc[r][0] = _mm256_mul_ps(a, _mm256_loadu_ps(o + c0 + r * d));
    acc[r][1] = _mm256_mul_ps(a, _mm256_loadu_ps(o + c0 + r * d + 8));
  }
#pragma GCC unroll 4
  for (int64_t j = 0; j < n_keys; ++j) {
    const __m256 v0 = _mm256_loadu_ps(v + j * kKeyTile);
    const __m256 v1 = _mm256_loadu_ps(v + j * kKeyTile + 8);
#pragma GCC unroll 8
    for (int r = 0; r < kLive; ++r) {
      const __m256 pb = _mm256_broadcast_ss(p + r * kKeyBlock + j);
      acc[r][0] = _mm256_fmadd_ps(pb, v0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(pb, v1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kLive; ++r) {
    _mm256_storeu_ps(o + c0 + r * d, acc[r][0]);
    _mm256_storeu_ps(o + c0 + r * d + 8, acc[r][1]);
  }
}

// pv_panel over all of head_dim; v: the panel of columns 0 .. 16 at this key block, the next
// panel panel_stride floats on.
template <int kLive>
void pv_rows(float* o, int64_t d, const float* alpha, const float* p, const float* v,
             int64_t panel_stride, int64_t n_keys) {
  for (int64_t c0 = 0; c0 < d; c0 += kKeyTile)
    pv_panel<kLive>(o, d, alpha, p, v + (c0 / kKeyTile) * panel_stride, c0, n_keys);
}

template <int N>
struct LiveRows {
  static constexpr int value = N;
};

// Calls f(LiveRows<live>()) for live in 1 .. kRows.
template <typename F>
void with_live_rows(int live, F f) {
  switch (live) {
    case 6:
      return f(LiveRows<6>());
    case 5:
      return f(LiveRows<5>());
    case 4:
      return f(LiveRows<4>());
    case 3:
      return f(LiveRows<3>());
    case 2:
      return f(LiveRows<2>());
    default:
      return f(LiveRows<1>());
  }
}

// Turns one block of scores (log2 domain) into probabilities against the updated running max,
// updates the running sums and returns each row's rescale factor in alpha. Scores of keys a row
// does not see (past visible[r]: causal, or the zero-padded keys of the last tile) get weight 0;
// only rows with such keys pay for the masking.
void softmax_block(float* scores, const int64_t* visible, int64_t n_tiles, float* m, float* l,
                   float* alpha) {
  const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
  const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const int64_t n_lanes = n_tiles * kKeyTile;
  for (int r = 0; r < kRows; ++r) {
    float* row = scores + r * kKeyBlock;
    const bool masked = visible[r] < n_lanes;
    __m256 vmax = neg_inf;
    if (masked) {
      const __m256 limit = _mm256_set1_ps(static_cast<float>(visible[r]));
      for (int64_t x = 0; x < n_lanes; x += 8) {
        // lane index < visible (small exact integers in float)
        const __m256 keep = _mm256_cmp_ps(
            _mm256_add_ps(lane, _mm256_set1_ps(static_cast<float>(x))), limit, _CMP_LT_OQ);
        const __m256 v = _mm256_blendv_ps(neg_inf, _mm256_loadu_ps(row + x), keep);
        _mm256_storeu_ps(row + x, v);
        vmax = _mm256_max_ps(vmax, v);
      }
    } else {
      __m256 vmax1 = neg_inf;
      for (int64_t x = 0; x < n_lanes; x += 16) {
        vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(row + x));
        vmax1 = _mm256_max_ps(vmax1, _mm256_loadu_ps(row + x + 8));
      }
      vmax = _mm256_max_ps(vmax, vmax1);
    }
    const float m_new = __builtin_fmaxf(m[r], horizontal_max(vmax));
    if (m_new == -__builtin_inff()) {  // nothing visible yet: no weight, nothing to rescale
      for (int64_t x = 0; x < n_lanes; x += 8) _mm256_storeu_ps(row + x, _mm256_setzero_ps());
      alpha[r] = 1.0f;
      continue;
    }
    const __m256 mv = _mm256_set1_ps(m_new);
    __m256 vsum0 = _mm256_setzero_ps(), vsum1 = _mm256_setzero_ps();
    for (int64_t x = 0; x < n_lanes; x += 16) {
      const __m256 s0 = _mm256_sub_ps(_mm256_loadu_ps(row + x), mv);
      const __m256 s1 = _mm256_sub_ps(_mm256_loadu_ps(row + x + 8), mv);
      __m256 e0 = exp2_nonpositive_avx2(s0);
      __m256 e1 = exp2_nonpositive_avx2(s1);
      if (masked) {  // masked lanes hold -inf: exactly 0, not the polynomial's floor
        e0 = _mm256_and_ps(e0, _mm256_cmp_ps(s0, neg_inf, _CMP_NEQ_OQ));
        e1 = _mm256_and_ps(e1, _mm256_cmp_ps(s1, neg_inf, _CMP_NEQ_OQ));
      }
      _mm256_storeu_ps(row + x, e0);
      _mm256_storeu_ps(row + x + 8, e1);
      vsum0 = _mm256_add_ps(vsum0, e0);
      vsum1 = _mm256_add_ps(vsum1, e1);
    }
    alpha[r] = __builtin_exp2f(m[r] - m_new);
    // One rounding, written out: GCC contracts `l * alpha + sum` into an FMA at -O2 under the
    // target, not at -O1; the bits must not depend on the optimiser (the AVX-512 task matches).
    l[r] = __builtin_fmaf(l[r], alpha[r], horizontal_sum(_mm256_add_ps(vsum0, vsum1)));
    m[r] = m_new;
  }
}

}  // namespace

void task_avx2(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin, int64_t q_end,
               float* scratch) {
  const AttentionShape& s = p.shape;
  const int64_t d = s.head_dim, n_heads = s.n_heads, group = s.n_heads / s.n_kv_heads;
  const int64_t rows = (q_end - q_begin) * group;
  const int64_t rows_padded = (rows + kRows - 1) / kRows * kRows;
  const int64_t heads = kvh_end - kvh_begin;
  float* o_all = scratch;
  float* m_all = o_all + heads * rows_padded * d;
  float* l_all = m_all + heads * rows_padded;
  float* scores = l_all + heads * rows_padded;
  float* q_all = scores + kRows * kKeyBlock;
  for (int64_t i = 0; i < heads * rows_padded * d; ++i) o_all[i] = 0.0f;
  for (int64_t r = 0; r < heads * rows_padded; ++r) {
    m_all[r] = -__builtin_inff();
    l_all[r] = 0.0f;
  }
  // The rows of q per kv head, kRows at a time interleaved ([c][kRows], see qk_tile) and scaled
  // by scale * log2(e): the softmax runs in base 2 (2^(x log2 e) = e^x), so neither scores nor
  // exp need a multiply of their own.
  const float q_scale = s.scale * 1.44269504088896341f;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t row = 0; row < rows_padded; ++row) {
      float* dst = q_all + (h * rows_padded + row / kRows * kRows) * d + row % kRows;
      if (row >= rows) {  // padding: never visible, never stored
        for (int64_t c = 0; c < d; ++c) dst[c * kRows] = 0.0f;
        continue;
      }
      const int64_t i = q_begin + row / group;
      const float* src = p.q + (i * n_heads + (kvh_begin + h) * group + row % group) * d;
      for (int64_t c = 0; c < d; ++c) dst[c * kRows] = src[c] * q_scale;
    }
  }
  const bool causal = p.causal_offset >= 0;
  auto visible_keys = [&](int64_t i) {
    return causal ? min_i64(p.nk, p.causal_offset + i + 1) : p.nk;
  };
  const int64_t n_tiles_all = (p.nk + kKeyTile - 1) / kKeyTile;
  const int64_t v_panel_stride = p.nk * kKeyTile;  // floats from one value panel to the next
  const int64_t task_keys = visible_keys(q_end - 1);
  for (int64_t j0 = 0; j0 < task_keys; j0 += kKeyBlock) {
    const int64_t j1 = min_i64(j0 + kKeyBlock, task_keys);
    for (int64_t kvh = kvh_begin; kvh < kvh_end; ++kvh) {
      float* o = o_all + (kvh - kvh_begin) * rows_padded * d;
      float* m = m_all + (kvh - kvh_begin) * rows_padded;
      float* l = l_all + (kvh - kvh_begin) * rows_padded;
      const float* qh = q_all + (kvh - kvh_begin) * rows_padded * d;
      const float* panels = p.k_panels + kvh * n_tiles_all * d * kKeyTile;
      const float* values = p.v_panels + kvh * d * p.nk + j0 * kKeyTile;
      for (int64_t g = 0; g < rows; g += kRows) {
        int64_t visible[kRows];  // relative to j0
        int64_t group_keys = 0;
        for (int r = 0; r < kRows; ++r) {
          const int64_t i = q_begin + (g + r) / group;
          visible[r] = g + r < rows ? min_i64(visible_keys(i), j1) - j0 : 0;
          group_keys = max_i64(group_keys, visible[r]);
        }
        if (group_keys <= 0) continue;  // causal: the whole block is in these rows' future
        const int64_t n_tiles = (group_keys + kKeyTile - 1) / kKeyTile;
        const float* panel = panels + (j0 / kKeyTile) * d * kKeyTile;
        for (int64_t t = 0; t < n_tiles; ++t) {
          qk_tile(qh + g * d, d, panel + t * d * kKeyTile, scores + t * kKeyTile);
        }
        const int live = static_cast<int>(min_i64(kRows, rows - g));  // rows past the end: padding
        float alpha[kRows];
        softmax_block(scores, visible, n_tiles, m + g, l + g, alpha);
        float* og = o + g * d;
        with_live_rows(live, [&](auto rows_c) {
          pv_rows<decltype(rows_c)::value>(og, d, alpha, scores, values, v_panel_stride,
                                           group_keys);
        });
      }
    }
  }
  for (int64_t kvh = kvh_begin; kvh < kvh_end; ++kvh) {
    const float* o = o_all + (kvh - kvh_begin) * rows_padded * d;
    const float* l = l_all + (kvh - kvh_begin) * rows_padded;
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t i = q_begin + row / group;
      float* dst = p.out + (i * n_heads + kvh * group + row % group) * d;
      const __m256 inv = _mm256_set1_ps(1.0f / l[row]);
      for (int64_t c = 0; c < d; c += 8) {
        _mm256_storeu_ps(dst + c, _mm256_mul_ps(_mm256_loadu_ps(o + row * d + c), inv));
      }
    }
  }
}

}  // namespace qvl::ops::attention_kernels

QVL_TARGET_ISA_END
