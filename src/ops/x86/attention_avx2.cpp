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

constexpr int kRows = 6;  // rows computed together (register blocking)

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

#include "ops/attention_flash_task.inc"

// The micro-kernels above as the policy of the shared task driver (attention_flash_task.inc).
struct Avx2FlashKernels {
  static constexpr int kTileRows = kRows;
  // Scores and exp in base 2: 2^(x log2 e) = e^x, so neither needs a multiply of its own.
  static constexpr float kQueryScale = 1.44269504088896341f;
  using Operand = float;
  static void pack_query_row(const float* src, float scale, int64_t d, float* block, int r) {
    pack_query_row_interleaved<kRows>(src, scale, d, block, r);  // see qk_tile
  }
  static void block_scores(const float* q, int64_t d, const float* panel, int64_t n_tiles,
                           float* scores) {
    for (int64_t t = 0; t < n_tiles; ++t) {
      qk_tile(q, d, panel + t * d * kKeyTile, scores + t * kKeyTile);
    }
  }
  static void block_probabilities(float* scores, const int64_t* visible, int64_t n_tiles, float* m,
                                  float* l, float* alpha) {
    softmax_block(scores, visible, n_tiles, m, l, alpha);
  }
  static void add_block_values(float* o, int64_t d, const float* alpha, const float* p,
                               const float* v, int64_t panel_stride, int64_t n_keys, int live) {
    with_live_rows<kRows>(live, [&](auto rows_c) {
      pv_rows<decltype(rows_c)::value>(o, d, alpha, p, v, panel_stride, n_keys);
    });
  }
};

}  // namespace

void task_avx2(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin, int64_t q_end,
               float* scratch) {
  flash_task<Avx2FlashKernels>(p, kvh_begin, kvh_end, q_begin, q_end, scratch);
}

}  // namespace qvl::ops::attention_kernels

QVL_TARGET_ISA_END
