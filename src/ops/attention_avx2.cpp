// AVX2 flash-attention task (see attention_kernels.h). Called only when the CPU has AVX2 + FMA;
// this file must not define or instantiate any inline function from a shared header (no std::
// templates below the target pragma), or the linker could pick an AVX2 copy for everyone.
#include <immintrin.h>

#include "ops/attention_kernels.h"

#pragma GCC target("avx2,fma,f16c")

#include "ops/elementwise_avx2_math.h"

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

// scores[r][0 .. 16) of one key tile for kRows rows, scaled.
void qk_tile(const float* const* qr, const float* panel, int64_t d, float scale, float* scores) {
  __m256 acc[kRows][2];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t c = 0; c < d; ++c) {
    const __m256 k0 = _mm256_loadu_ps(panel + c * kKeyTile);
    const __m256 k1 = _mm256_loadu_ps(panel + c * kKeyTile + 8);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256 qb = _mm256_broadcast_ss(qr[r] + c);
      acc[r][0] = _mm256_fmadd_ps(qb, k0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(qb, k1, acc[r][1]);
    }
  }
  const __m256 sv = _mm256_set1_ps(scale);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    _mm256_storeu_ps(scores + r * kKeyBlock, _mm256_mul_ps(acc[r][0], sv));
    _mm256_storeu_ps(scores + r * kKeyBlock + 8, _mm256_mul_ps(acc[r][1], sv));
  }
}

// o[r][c0 .. c0 + 8 * kVecs) = alpha[r] * o + sum_j p[r][j] * v[j][c0 ..] for the first kLive
// rows, v packed per head ([nk][d], row j at v + j * d: prefill). Rows are contiguous, so the
// hardware prefetcher follows them, and without a row table and software prefetches the 12
// accumulators stay in registers (a table version spilled them on every key).
template <int kLive, int kVecs>
void pv_packed_chunk(float* o, int64_t d, const float* alpha, const float* p, const float* v,
                     int64_t c0, int64_t n_keys) {
  __m256 acc[kLive][kVecs];
#pragma GCC unroll 8
  for (int r = 0; r < kLive; ++r) {
    const __m256 a = _mm256_set1_ps(alpha[r]);
#pragma GCC unroll 8
    for (int x = 0; x < kVecs; ++x)
      acc[r][x] = _mm256_mul_ps(a, _mm256_loadu_ps(o + c0 + r * d + x * 8));
  }
  for (int64_t j = 0; j < n_keys; ++j) {
    const float* vj = v + j * d + c0;
    __m256 vv[kVecs];
#pragma GCC unroll 8
    for (int x = 0; x < kVecs; ++x) vv[x] = _mm256_loadu_ps(vj + x * 8);
#pragma GCC unroll 8
    for (int r = 0; r < kLive; ++r) {
      const __m256 pb = _mm256_broadcast_ss(p + r * kKeyBlock + j);
#pragma GCC unroll 8
      for (int x = 0; x < kVecs; ++x) acc[r][x] = _mm256_fmadd_ps(pb, vv[x], acc[r][x]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kLive; ++r) {
#pragma GCC unroll 8
    for (int x = 0; x < kVecs; ++x) _mm256_storeu_ps(o + c0 + r * d + x * 8, acc[r][x]);
  }
}

template <int kLive>
void pv_packed_rows(float* o, int64_t d, const float* alpha, const float* p, const float* v,
                    int64_t n_keys) {
  constexpr int kVecs = kLive == 1 ? 8 : kLive == 2 ? 4 : 2;
  int64_t c0 = 0;
  for (; c0 + kVecs * 8 <= d; c0 += kVecs * 8)
    pv_packed_chunk<kLive, kVecs>(o, d, alpha, p, v, c0, n_keys);
  for (; c0 < d; c0 += 16) pv_packed_chunk<kLive, 2>(o, d, alpha, p, v, c0, n_keys);
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

// Masks scores beyond each row's visible keys, turns them into probabilities against the updated
// running max, updates the running sums and returns each row's rescale factor in alpha.
void softmax_block(float* scores, const int64_t* visible, int64_t n_tiles, float* m, float* l,
                   float* alpha) {
  const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
  const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  for (int r = 0; r < kRows; ++r) {
    float* row = scores + r * kKeyBlock;
    __m256 vmax = neg_inf;
    const int64_t n_lanes = n_tiles * kKeyTile;
    for (int64_t x = 0; x < n_lanes; x += 8) {
      // lane index < visible (small exact integers in float)
      const __m256 keep = _mm256_cmp_ps(_mm256_add_ps(lane, _mm256_set1_ps(static_cast<float>(x))),
                                        _mm256_set1_ps(static_cast<float>(visible[r])), _CMP_LT_OQ);
      const __m256 v = _mm256_blendv_ps(neg_inf, _mm256_loadu_ps(row + x), keep);
      _mm256_storeu_ps(row + x, v);
      vmax = _mm256_max_ps(vmax, v);
    }
    const float m_new = __builtin_fmaxf(m[r], horizontal_max(vmax));
    if (m_new == -__builtin_inff()) {  // nothing visible yet: no weight, nothing to rescale
      for (int64_t x = 0; x < n_lanes; x += 8) _mm256_storeu_ps(row + x, _mm256_setzero_ps());
      alpha[r] = 1.0f;
      continue;
    }
    const __m256 mv = _mm256_set1_ps(m_new);
    __m256 vsum = _mm256_setzero_ps();
    for (int64_t x = 0; x < n_lanes; x += 8) {
      const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(row + x), mv));
      _mm256_storeu_ps(row + x, e);
      vsum = _mm256_add_ps(vsum, e);
    }
    alpha[r] = _mm256_cvtss_f32(exp_avx2(_mm256_set1_ps(m[r] - m_new)));
    l[r] = l[r] * alpha[r] + horizontal_sum(vsum);
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
  for (int64_t i = 0; i < heads * rows_padded * d; ++i) o_all[i] = 0.0f;
  for (int64_t r = 0; r < heads * rows_padded; ++r) {
    m_all[r] = -__builtin_inff();
    l_all[r] = 0.0f;
  }
  const bool causal = p.causal_offset >= 0;
  auto visible_keys = [&](int64_t i) {
    return causal ? min_i64(p.nk, p.causal_offset + i + 1) : p.nk;
  };
  const int64_t n_tiles_all = (p.nk + kKeyTile - 1) / kKeyTile;
  const int64_t task_keys = visible_keys(q_end - 1);
  for (int64_t j0 = 0; j0 < task_keys; j0 += kKeyBlock) {
    const int64_t j1 = min_i64(j0 + kKeyBlock, task_keys);
    for (int64_t kvh = kvh_begin; kvh < kvh_end; ++kvh) {
      float* o = o_all + (kvh - kvh_begin) * rows_padded * d;
      float* m = m_all + (kvh - kvh_begin) * rows_padded;
      float* l = l_all + (kvh - kvh_begin) * rows_padded;
      const float* panels = p.k_panels + kvh * n_tiles_all * d * kKeyTile;
      for (int64_t g = 0; g < rows; g += kRows) {
        const float* qr[kRows];
        int64_t visible[kRows];  // relative to j0
        int64_t group_keys = 0;
        for (int r = 0; r < kRows; ++r) {
          const int64_t row = min_i64(g + r, rows - 1);
          const int64_t i = q_begin + row / group;
          qr[r] = p.q + (i * n_heads + kvh * group + row % group) * d;
          visible[r] = g + r < rows ? min_i64(visible_keys(i), j1) - j0 : 0;
          group_keys = max_i64(group_keys, visible[r]);
        }
        if (group_keys <= 0) continue;  // causal: the whole block is in these rows' future
        const int64_t n_tiles = (group_keys + kKeyTile - 1) / kKeyTile;
        const float* panel = panels + (j0 / kKeyTile) * d * kKeyTile;
        for (int64_t t = 0; t < n_tiles; ++t) {
          qk_tile(qr, panel + t * d * kKeyTile, d, s.scale, scores + t * kKeyTile);
        }
        const int live = static_cast<int>(min_i64(kRows, rows - g));  // rows past the end: padding
        float alpha[kRows];
        softmax_block(scores, visible, n_tiles, m + g, l + g, alpha);
        float* og = o + g * d;
        with_live_rows(live, [&](auto rows_c) {
          pv_packed_rows<decltype(rows_c)::value>(og, d, alpha, scores,
                                                  p.v_packed + (kvh * p.nk + j0) * d, group_keys);
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
