// AVX-512 flash-attention task (see attention_kernels.h). Called only when the CPU has AVX-512;
// this file must not define or instantiate any inline function from a shared header (no std::
// templates below the target pragma), or the linker could pick an AVX-512 copy for everyone.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors, which -Werror rejects.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/attention_kernels.h"

#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")

#include "ops/elementwise_avx512_math.h"

namespace qvl::ops::attention_kernels {
namespace {

constexpr int64_t kKeyBlock = 128;  // keys per online-softmax step (a multiple of kKeyTile)
constexpr int kRows = 4;            // rows computed together (register blocking)

int64_t min_i64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
int64_t max_i64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// scores[r][0 .. 16 * kTiles) of one block for kRows rows. The rows of q are pre-scaled (scale and
// log2(e) folded in once per task), so this is the plain product.
template <int kTiles>
void qk_tiles(const float* q, int64_t d, const float* panel, float* scores) {
  __m512 acc[kRows][kTiles];
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTiles; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < d; ++c) {
    __m512 kv[kTiles];
    for (int t = 0; t < kTiles; ++t) kv[t] = _mm512_loadu_ps(panel + (t * d + c) * kKeyTile);
    for (int r = 0; r < kRows; ++r) {
      const __m512 qb = _mm512_set1_ps(q[r * d + c]);
      for (int t = 0; t < kTiles; ++t) acc[r][t] = _mm512_fmadd_ps(qb, kv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTiles; ++t)
      _mm512_storeu_ps(scores + r * kKeyBlock + t * kKeyTile, acc[r][t]);
  }
}

// o[r][c0 .. c0 + 16 * kVecs) = alpha[r] * o + sum_j p[r][j] * v[j][c0 ..] for the first kLive
// rows; v is the value panel of columns c0 .. c0 + 16 (16 floats per key, keys consecutive), the
// next panel panel_stride floats on: kVecs contiguous streams.
template <int kLive, int kVecs>
void pv_chunk(float* o, int64_t d, const float* alpha, const float* p, const float* v,
              int64_t panel_stride, int64_t c0, int64_t n_keys) {
  __m512 acc[kLive][kVecs];
  for (int r = 0; r < kLive; ++r) {
    const __m512 a = _mm512_set1_ps(alpha[r]);
    for (int x = 0; x < kVecs; ++x)
      acc[r][x] = _mm512_mul_ps(a, _mm512_loadu_ps(o + c0 + r * d + x * 16));
  }
  for (int64_t j = 0; j < n_keys; ++j) {
    __m512 vv[kVecs];
    for (int x = 0; x < kVecs; ++x) vv[x] = _mm512_loadu_ps(v + x * panel_stride + j * kKeyTile);
    for (int r = 0; r < kLive; ++r) {
      const __m512 pb = _mm512_set1_ps(p[r * kKeyBlock + j]);
      for (int x = 0; x < kVecs; ++x) acc[r][x] = _mm512_fmadd_ps(pb, vv[x], acc[r][x]);
    }
  }
  for (int r = 0; r < kLive; ++r) {
    for (int x = 0; x < kVecs; ++x) _mm512_storeu_ps(o + c0 + r * d + x * 16, acc[r][x]);
  }
}

// pv_chunk over all of head_dim, 64 columns (4 panels) at a time; v: the panel of columns 0 .. 16
// at this key block.
template <int kLive>
void pv_rows(float* o, int64_t d, const float* alpha, const float* p, const float* v,
             int64_t panel_stride, int64_t n_keys) {
  for (int64_t c0 = 0; c0 < d; c0 += 64) {
    const float* vc = v + (c0 / kKeyTile) * panel_stride;
    switch (min_i64(4, (d - c0) / 16)) {
      case 4:
        pv_chunk<kLive, 4>(o, d, alpha, p, vc, panel_stride, c0, n_keys);
        break;
      case 3:
        pv_chunk<kLive, 3>(o, d, alpha, p, vc, panel_stride, c0, n_keys);
        break;
      case 2:
        pv_chunk<kLive, 2>(o, d, alpha, p, vc, panel_stride, c0, n_keys);
        break;
      default:
        pv_chunk<kLive, 1>(o, d, alpha, p, vc, panel_stride, c0, n_keys);
        break;
    }
  }
}

// Turns one block of scores (log2 domain) into probabilities against the updated running max,
// updates the running sums and returns each row's rescale factor in alpha. Scores of keys a row
// does not see (past visible[r]) get weight 0; only rows with such keys pay for the masking.
void softmax_block(float* scores, const int64_t* visible, int64_t n_tiles, float* m, float* l,
                   float* alpha) {
  const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
  for (int r = 0; r < kRows; ++r) {
    float* row = scores + r * kKeyBlock;
    const bool masked = visible[r] < n_tiles * kKeyTile;
    __m512 vmax = neg_inf;
    for (int64_t t = 0; t < n_tiles; ++t) {
      __m512 x = _mm512_loadu_ps(row + t * kKeyTile);
      if (masked) {
        const int64_t count = min_i64(max_i64(visible[r] - t * kKeyTile, 0), kKeyTile);
        const __mmask16 keep = static_cast<__mmask16>((1u << count) - 1u);
        x = _mm512_mask_mov_ps(neg_inf, keep, x);
        _mm512_storeu_ps(row + t * kKeyTile, x);
      }
      vmax = _mm512_max_ps(vmax, x);
    }
    const float m_new = __builtin_fmaxf(m[r], _mm512_reduce_max_ps(vmax));
    if (m_new == -__builtin_inff()) {  // nothing visible yet: no weight, nothing to rescale
      for (int64_t t = 0; t < n_tiles; ++t)
        _mm512_storeu_ps(row + t * kKeyTile, _mm512_setzero_ps());
      alpha[r] = 1.0f;
      continue;
    }
    const __m512 mv = _mm512_set1_ps(m_new);
    __m512 vsum = _mm512_setzero_ps();
    for (int64_t t = 0; t < n_tiles; ++t) {
      const __m512 x = _mm512_sub_ps(_mm512_loadu_ps(row + t * kKeyTile), mv);
      __m512 e = exp2_nonpositive_avx512(x);
      if (masked) {  // masked lanes hold -inf: exactly 0, not the polynomial's floor
        e = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, neg_inf, _CMP_NEQ_OQ), e);
      }
      _mm512_storeu_ps(row + t * kKeyTile, e);
      vsum = _mm512_add_ps(vsum, e);
    }
    alpha[r] = __builtin_exp2f(m[r] - m_new);
    l[r] = l[r] * alpha[r] + _mm512_reduce_add_ps(vsum);
    m[r] = m_new;
  }
}

}  // namespace

void task_avx512(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin,
                 int64_t q_end, float* scratch) {
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
  // The rows of q, contiguous per kv head and scaled by scale * log2(e): the softmax runs in
  // base 2 (2^(x log2 e) = e^x), so neither scores nor exp need a multiply of their own.
  const __m512 q_scale = _mm512_set1_ps(s.scale * 1.44269504088896341f);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t row = 0; row < rows_padded; ++row) {
      float* dst = q_all + (h * rows_padded + row) * d;
      if (row >= rows) {  // padding: never visible, never stored
        for (int64_t c = 0; c < d; c += 16) _mm512_storeu_ps(dst + c, _mm512_setzero_ps());
        continue;
      }
      const int64_t i = q_begin + row / group;
      const float* src = p.q + (i * n_heads + (kvh_begin + h) * group + row % group) * d;
      for (int64_t c = 0; c < d; c += 16)
        _mm512_storeu_ps(dst + c, _mm512_mul_ps(_mm512_loadu_ps(src + c), q_scale));
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
        for (int64_t t = 0; t < n_tiles; t += 2) {
          if (t + 1 < n_tiles) {
            qk_tiles<2>(qh + g * d, d, panel + t * d * kKeyTile, scores + t * kKeyTile);
          } else {
            qk_tiles<1>(qh + g * d, d, panel + t * d * kKeyTile, scores + t * kKeyTile);
          }
        }
        const int live = static_cast<int>(min_i64(kRows, rows - g));  // rows past the end: padding
        float alpha[kRows];
        softmax_block(scores, visible, n_tiles, m + g, l + g, alpha);
        float* og = o + g * d;
        switch (live) {
          case 4:
            pv_rows<4>(og, d, alpha, scores, values, v_panel_stride, group_keys);
            break;
          case 3:
            pv_rows<3>(og, d, alpha, scores, values, v_panel_stride, group_keys);
            break;
          case 2:
            pv_rows<2>(og, d, alpha, scores, values, v_panel_stride, group_keys);
            break;
          default:
            pv_rows<1>(og, d, alpha, scores, values, v_panel_stride, group_keys);
            break;
        }
      }
    }
  }
  for (int64_t kvh = kvh_begin; kvh < kvh_end; ++kvh) {
    const float* o = o_all + (kvh - kvh_begin) * rows_padded * d;
    const float* l = l_all + (kvh - kvh_begin) * rows_padded;
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t i = q_begin + row / group;
      float* dst = p.out + (i * n_heads + kvh * group + row % group) * d;
      const __m512 inv = _mm512_set1_ps(1.0f / l[row]);
      for (int64_t c = 0; c < d; c += 16) {
        _mm512_storeu_ps(dst + c, _mm512_mul_ps(_mm512_loadu_ps(o + row * d + c), inv));
      }
    }
  }
}

}  // namespace qvl::ops::attention_kernels
