// NEON flash-attention task (see attention_kernels.h) for many rows per key: prompts and the
// vision tower. The micro-kernels and their policy for the shared task driver
// (ops/attention_flash_task.inc: the loops, masks and running state). ARMv8.0 baseline; built
// with -ffp-contract=off, so every product below is an explicit FMA or multiply.
//
// Rows (query, head-in-group) go 4 at a time, one row per lane of a vector, so that both products
// are FMLA by element (vfmaq_laneq_f32): QK^T multiplies the 4 rows' q at column c (one load of
// the interleaved copy [c][4]) into 16 keys of the K panel (4 loads), 16 accumulators; P V
// multiplies the 4 rows' probabilities of key j (one load of [j][4]) into 16 value columns of the
// V panel (4 loads), 16 accumulators. Either loop: 16 FMLA per 5 loads, 16 independent chains
// (4-cycle latency on 2 or 4 pipes), 16 + 4 + 1 of the 32 registers. The scores leave QK^T
// transposed by ST4 as [key][row], so the online softmax runs down the keys with the 4 rows in
// the lanes: max, exp, sum and the rescale are lane-wise, with no horizontal step at all.
// Both product loops take one step (one column, one key) per iteration: unrolled by two, GCC 12
// put vector MOVs into the accumulator chains (llvm-mca: 18 instead of 16 cycles per 32 FMLA on
// Neoverse N1, 12 instead of 8 on V1).
//
// Batch invariance: a row's arithmetic is per lane and indexed only by keys and columns (its lane
// is never an operand), the driver's key blocks start at multiples of kKeyBlock from key 0, and
// keys a row does not see but its tile mates do (causal, zero-padded panel keys) are -inf scores,
// hence probability exactly +0 (FMAXNM clamp, 2^-127 scale = 0) that adds nothing to its sums,
// and a block it sees nothing of rescales by exactly 1 (e^0). So its bits are those of the row
// alone.
#include "ops/arm/attention_neon.h"

#include <arm_neon.h>

#include "ops/arm/elementwise_neon_math.h"

namespace qvl::ops::attention_kernels {
namespace {

constexpr int kRows = 4;  // rows per register tile: the lanes of a vector

int64_t min_i64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
int64_t max_i64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// One step of 16 keys x 4 rows: acc row r, keys 4x .. 4x + 3 += k[x] * a[r].
#define QVL_FMLA_4x4(acc, k0, k1, k2, k3, a)      \
  do {                                            \
    acc##00 = vfmaq_laneq_f32(acc##00, k0, a, 0); \
    acc##01 = vfmaq_laneq_f32(acc##01, k1, a, 0); \
    acc##02 = vfmaq_laneq_f32(acc##02, k2, a, 0); \
    acc##03 = vfmaq_laneq_f32(acc##03, k3, a, 0); \
    acc##10 = vfmaq_laneq_f32(acc##10, k0, a, 1); \
    acc##11 = vfmaq_laneq_f32(acc##11, k1, a, 1); \
    acc##12 = vfmaq_laneq_f32(acc##12, k2, a, 1); \
    acc##13 = vfmaq_laneq_f32(acc##13, k3, a, 1); \
    acc##20 = vfmaq_laneq_f32(acc##20, k0, a, 2); \
    acc##21 = vfmaq_laneq_f32(acc##21, k1, a, 2); \
    acc##22 = vfmaq_laneq_f32(acc##22, k2, a, 2); \
    acc##23 = vfmaq_laneq_f32(acc##23, k3, a, 2); \
    acc##30 = vfmaq_laneq_f32(acc##30, k0, a, 3); \
    acc##31 = vfmaq_laneq_f32(acc##31, k1, a, 3); \
    acc##32 = vfmaq_laneq_f32(acc##32, k2, a, 3); \
    acc##33 = vfmaq_laneq_f32(acc##33, k3, a, 3); \
  } while (0)

// scores[j][r] (j in [0, 16), r in [0, 4)) = q[r] . key j of the panel: q is the 4 rows
// interleaved ([c][4]) and pre-scaled, the panel [c][16]. One FMA chain per (row, key) over the
// columns in order.
void qk_tile(const float* q, int64_t d, const float* panel, float* scores) {
  const float32x4_t z = vdupq_n_f32(0.0f);
  float32x4_t a00 = z, a01 = z, a02 = z, a03 = z, a10 = z, a11 = z, a12 = z, a13 = z;
  float32x4_t a20 = z, a21 = z, a22 = z, a23 = z, a30 = z, a31 = z, a32 = z, a33 = z;
  for (int64_t c = 0; c < d; ++c) {
    const float* k = panel + c * kKeyTile;
    const float32x4_t qa = vld1q_f32(q + c * kRows);
    const float32x4_t k0 = vld1q_f32(k), k1 = vld1q_f32(k + 4);
    const float32x4_t k2 = vld1q_f32(k + 8), k3 = vld1q_f32(k + 12);
    QVL_FMLA_4x4(a, k0, k1, k2, k3, qa);
  }
  // ST4 interleaves the 4 rows: keys 4x .. 4x + 3, each as [r0, r1, r2, r3].
  vst4q_f32(scores, (float32x4x4_t{{a00, a10, a20, a30}}));
  vst4q_f32(scores + 16, (float32x4x4_t{{a01, a11, a21, a31}}));
  vst4q_f32(scores + 32, (float32x4x4_t{{a02, a12, a22, a32}}));
  vst4q_f32(scores + 48, (float32x4x4_t{{a03, a13, a23, a33}}));
}

// o[r][c0 .. c0 + 16) = alpha[r] * o[r] + sum_j p[j][r] * v[j][0 .. 16) for the 4 rows (o rows d
// floats apart); v: the value panel of columns c0 .. c0 + 16 at the block's first key. Keys in
// order, one FMA chain per (row, column). Out of line: inlined into the shared driver, GCC 12
// kept the softmax's constants live across this loop and spilled 5 accumulators to the stack
// (llvm-mca on Neoverse N1: 210 instead of 130 cycles per 64 FMLA).
__attribute__((noinline)) void pv_panel(float* o, int64_t d, float32x4_t alpha, const float* p,
                                        const float* v, int64_t n_keys) {
  float* o0 = o;
  float* o1 = o + d;
  float* o2 = o + 2 * d;
  float* o3 = o + 3 * d;
  float32x4_t a00 = vmulq_laneq_f32(vld1q_f32(o0), alpha, 0);
  float32x4_t a01 = vmulq_laneq_f32(vld1q_f32(o0 + 4), alpha, 0);
  float32x4_t a02 = vmulq_laneq_f32(vld1q_f32(o0 + 8), alpha, 0);
  float32x4_t a03 = vmulq_laneq_f32(vld1q_f32(o0 + 12), alpha, 0);
  float32x4_t a10 = vmulq_laneq_f32(vld1q_f32(o1), alpha, 1);
  float32x4_t a11 = vmulq_laneq_f32(vld1q_f32(o1 + 4), alpha, 1);
  float32x4_t a12 = vmulq_laneq_f32(vld1q_f32(o1 + 8), alpha, 1);
  float32x4_t a13 = vmulq_laneq_f32(vld1q_f32(o1 + 12), alpha, 1);
  float32x4_t a20 = vmulq_laneq_f32(vld1q_f32(o2), alpha, 2);
  float32x4_t a21 = vmulq_laneq_f32(vld1q_f32(o2 + 4), alpha, 2);
  float32x4_t a22 = vmulq_laneq_f32(vld1q_f32(o2 + 8), alpha, 2);
  float32x4_t a23 = vmulq_laneq_f32(vld1q_f32(o2 + 12), alpha, 2);
  float32x4_t a30 = vmulq_laneq_f32(vld1q_f32(o3), alpha, 3);
  float32x4_t a31 = vmulq_laneq_f32(vld1q_f32(o3 + 4), alpha, 3);
  float32x4_t a32 = vmulq_laneq_f32(vld1q_f32(o3 + 8), alpha, 3);
  float32x4_t a33 = vmulq_laneq_f32(vld1q_f32(o3 + 12), alpha, 3);
  for (int64_t j = 0; j < n_keys; ++j) {
    const float* vj = v + j * kKeyTile;
    const float32x4_t pa = vld1q_f32(p + j * kRows);
    const float32x4_t v0 = vld1q_f32(vj), v1 = vld1q_f32(vj + 4);
    const float32x4_t v2 = vld1q_f32(vj + 8), v3 = vld1q_f32(vj + 12);
    QVL_FMLA_4x4(a, v0, v1, v2, v3, pa);
  }
  vst1q_f32(o0, a00), vst1q_f32(o0 + 4, a01), vst1q_f32(o0 + 8, a02), vst1q_f32(o0 + 12, a03);
  vst1q_f32(o1, a10), vst1q_f32(o1 + 4, a11), vst1q_f32(o1 + 8, a12), vst1q_f32(o1 + 12, a13);
  vst1q_f32(o2, a20), vst1q_f32(o2 + 4, a21), vst1q_f32(o2 + 8, a22), vst1q_f32(o2 + 12, a23);
  vst1q_f32(o3, a30), vst1q_f32(o3 + 4, a31), vst1q_f32(o3 + 8, a32), vst1q_f32(o3 + 12, a33);
}

#undef QVL_FMLA_4x4

// Turns one block of scores ([j][4], n_keys a multiple of 16) into probabilities against the
// updated running max m, updates the running sums l and returns the rows' rescale factors. Key j
// of row r counts only if j < visible[r] (relative to the block); the others get -inf, so weight
// exactly 0. Lane-wise throughout: 4 partial maxima and sums by key index mod 4, combined as
// (0 + 1) + (2 + 3). Blocks every row sees whole skip the mask (it would keep every score).
float32x4_t softmax_block(float* scores, int32x4_t visible, int64_t n_keys, float* m, float* l) {
  const float32x4_t neg_inf = vdupq_n_f32(-__builtin_inff());
  float32x4_t mx0 = neg_inf, mx1 = neg_inf, mx2 = neg_inf, mx3 = neg_inf;
  if (vminvq_s32(visible) >= n_keys) {  // every key of the block visible to every row: no mask
    for (int64_t j = 0; j < n_keys; j += 4) {
      const float* s = scores + j * kRows;
      mx0 = vmaxq_f32(mx0, vld1q_f32(s)), mx1 = vmaxq_f32(mx1, vld1q_f32(s + 4));
      mx2 = vmaxq_f32(mx2, vld1q_f32(s + 8)), mx3 = vmaxq_f32(mx3, vld1q_f32(s + 12));
    }
  } else {
    int32x4_t key = vdupq_n_s32(0);
    const int32x4_t one = vdupq_n_s32(1);
    for (int64_t j = 0; j < n_keys; j += 4) {
      float* s = scores + j * kRows;
      float32x4_t s0 = vld1q_f32(s), s1 = vld1q_f32(s + 4);
      float32x4_t s2 = vld1q_f32(s + 8), s3 = vld1q_f32(s + 12);
      s0 = vbslq_f32(vcltq_s32(key, visible), s0, neg_inf);
      key = vaddq_s32(key, one);
      s1 = vbslq_f32(vcltq_s32(key, visible), s1, neg_inf);
      key = vaddq_s32(key, one);
      s2 = vbslq_f32(vcltq_s32(key, visible), s2, neg_inf);
      key = vaddq_s32(key, one);
      s3 = vbslq_f32(vcltq_s32(key, visible), s3, neg_inf);
      key = vaddq_s32(key, one);
      vst1q_f32(s, s0), vst1q_f32(s + 4, s1), vst1q_f32(s + 8, s2), vst1q_f32(s + 12, s3);
      mx0 = vmaxq_f32(mx0, s0), mx1 = vmaxq_f32(mx1, s1);
      mx2 = vmaxq_f32(mx2, s2), mx3 = vmaxq_f32(mx3, s3);
    }
  }
  const float32x4_t m_old = vld1q_f32(m);
  const float32x4_t m_new = vmaxq_f32(m_old, vmaxq_f32(vmaxq_f32(mx0, mx1), vmaxq_f32(mx2, mx3)));
  // A row with nothing visible yet has m_new = -inf: s - m_new is NaN (-inf - -inf) and
  // exp_nonpositive reads NaN as the clamp, 0; its o and l stay 0.
  float32x4_t su0 = vdupq_n_f32(0.0f), su1 = su0, su2 = su0, su3 = su0;
  for (int64_t j = 0; j < n_keys; j += 4) {
    float* s = scores + j * kRows;
    const float32x4_t e0 = neon::exp_nonpositive(vsubq_f32(vld1q_f32(s), m_new));
    const float32x4_t e1 = neon::exp_nonpositive(vsubq_f32(vld1q_f32(s + 4), m_new));
    const float32x4_t e2 = neon::exp_nonpositive(vsubq_f32(vld1q_f32(s + 8), m_new));
    const float32x4_t e3 = neon::exp_nonpositive(vsubq_f32(vld1q_f32(s + 12), m_new));
    vst1q_f32(s, e0), vst1q_f32(s + 4, e1), vst1q_f32(s + 8, e2), vst1q_f32(s + 12, e3);
    su0 = vaddq_f32(su0, e0), su1 = vaddq_f32(su1, e1);
    su2 = vaddq_f32(su2, e2), su3 = vaddq_f32(su3, e3);
  }
  const float32x4_t sum = vaddq_f32(vaddq_f32(su0, su1), vaddq_f32(su2, su3));
  // e^(m_old - m_new): exactly 1 where the max stays, 0 from -inf (and from NaN: nothing yet).
  const float32x4_t alpha = neon::exp_nonpositive(vsubq_f32(m_old, m_new));
  vst1q_f32(l, vfmaq_f32(sum, vld1q_f32(l), alpha));  // l * alpha + sum, one rounding
  vst1q_f32(m, m_new);
  return alpha;
}

#include "ops/attention_flash_task.inc"

// The micro-kernels above as the policy of the shared task driver (attention_flash_task.inc).
struct NeonFlashKernels {
  static constexpr int kTileRows = kRows;
  static constexpr float kQueryScale = 1.0f;  // scores in base e (neon::exp_nonpositive)
  using Operand = float;
  static void pack_query_row(const float* src, float scale, int64_t d, float* block, int r) {
    pack_query_row_interleaved<kRows>(src, scale, d, block, r);  // see qk_tile
  }
  // Scores [key][row]: tile t at key 16 t.
  static void block_scores(const float* q, int64_t d, const float* panel, int64_t n_tiles,
                           float* scores) {
    for (int64_t t = 0; t < n_tiles; ++t) {
      qk_tile(q, d, panel + t * d * kKeyTile, scores + t * kKeyTile * kRows);
    }
  }
  static void block_probabilities(float* scores, const int64_t* visible, int64_t n_tiles, float* m,
                                  float* l, float* alpha) {
    const int32x4_t seen = vcombine_s32(vmovn_s64(vld1q_s64(visible)),  // at most kKeyBlock
                                        vmovn_s64(vld1q_s64(visible + 2)));
    vst1q_f32(alpha, softmax_block(scores, seen, n_tiles * kKeyTile, m, l));
  }
  // All 4 rows whatever `live` (the lanes of one vector): padding rows have probabilities 0.
  static void add_block_values(float* o, int64_t d, const float* alpha, const float* p,
                               const float* v, int64_t panel_stride, int64_t n_keys, int /*live*/) {
    const float32x4_t rescale = vld1q_f32(alpha);
    for (int64_t c0 = 0; c0 < d; c0 += kKeyTile) {
      pv_panel(o + c0, d, rescale, p, v + (c0 / kKeyTile) * panel_stride, n_keys);
    }
  }
};

}  // namespace

void task_neon(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin, int64_t q_end,
               float* scratch) {
  flash_task<NeonFlashKernels>(p, kvh_begin, kvh_end, q_begin, q_end, scratch);
}

}  // namespace qvl::ops::attention_kernels
