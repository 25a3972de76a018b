// NEON decode span kernel (see attention_decode.h): the micro-kernels the shared span driver
// (attention_decode_span.inc) calls, for fp32, half (FCVTL) and 8-bit (SXTL + SCVTF) K/V.
// Scores: one FMA chain per (row, key) over the columns in order, summed across lanes by a fixed
// FADDP tree; values: one FMA per (row, column, key), keys in order, the weight taken by lane
// (FMLA by element: no broadcast per key). Every product is an explicit FMA or multiply (the file
// is built with -ffp-contract=off), so a row's bits depend only on its own query and keys.
#include <arm_neon.h>

#include "ops/arm/attention_neon.h"
#include "ops/arm/elementwise_neon_math.h"
#include "ops/attention_decode.h"
#include "ops/kv_q8.h"

namespace qvl::ops::attention_kernels {
namespace {

// 8 keys x 2 rows = 16 independent FMA chains: enough to cover 4-cycle FMLA latency on 4 pipes
// (Neoverse V1/V2); 16 accumulators + 8 keys + 2 queries fit the 32 registers.
constexpr int kKeys = 8;
constexpr int64_t kValueBlock = 16;  // positions whose value rows stay in L1 over column chunks
// Rows are prefetched this many bytes of the run ahead, at most kMaxAhead positions.
constexpr int64_t kPrefetchBytes = 6144;
constexpr int64_t kMaxAhead = 32;
constexpr int64_t kTableRows = kDecodeSpan + kMaxAhead + kValueBlock;

int64_t min_i64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
int64_t max_i64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// Prefetches the cache lines of [p, p + bytes) (64-byte lines: on 128-byte-line cores every
// other PRFM is redundant, which costs little).
void prefetch_bytes(const void* p, int64_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  for (uintptr_t a = begin & ~uintptr_t{63}; a < begin + static_cast<uintptr_t>(bytes); a += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 3);
  }
}

// Columns [c, c + 4) of an fp32 or half row as fp32.
float32x4_t load4(const float* row, int64_t c) {
  return vld1q_f32(row + c);
}
float32x4_t load4(const uint16_t* row, int64_t c) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(row + c)));
}

// Lane x = the sum of the 4 lanes of a[x], every lane by the same tree (a0 + a1) + (a2 + a3): a
// score's bits do not depend on its slot.
float32x4_t sum_lanes4(const float32x4_t* a) {
  return vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3]));
}

// out[r][0 .. kKeys) = scale * q[r] . k[x] for kR rows; one FMA chain per (row, key) over the
// columns in order (head_dim a multiple of 16: 4 columns a step).
template <int kR, typename T>
void score_keys(const float* const* q, const T* const* k, int64_t d, float scale,
                float* const* out) {
  float32x4_t acc[kR][kKeys];
#pragma GCC unroll 16
  for (int r = 0; r < kR; ++r) {
#pragma GCC unroll 16
    for (int x = 0; x < kKeys; ++x) acc[r][x] = vdupq_n_f32(0.0f);
  }
  for (int64_t c = 0; c < d; c += 4) {
    float32x4_t kv[kKeys];
#pragma GCC unroll 16
    for (int x = 0; x < kKeys; ++x) kv[x] = load4(k[x], c);
#pragma GCC unroll 16
    for (int r = 0; r < kR; ++r) {
      const float32x4_t qv = vld1q_f32(q[r] + c);
#pragma GCC unroll 16
      for (int x = 0; x < kKeys; ++x) acc[r][x] = vfmaq_f32(acc[r][x], qv, kv[x]);
    }
  }
  const float32x4_t sv = vdupq_n_f32(scale);
#pragma GCC unroll 16
  for (int r = 0; r < kR; ++r) {
#pragma GCC unroll 16
    for (int x = 0; x < kKeys; x += 4) {
      vst1q_f32(out[r] + x, vmulq_f32(sum_lanes4(&acc[r][x]), sv));
    }
  }
}

// 8 codes at `codes` as two fp32 vectors (SXTL to 16, SXTL/SXTL2 to 32, SCVTF: exact).
void codes8(const int8_t* codes, float32x4_t& lo, float32x4_t& hi) {
  const int16x8_t w = vmovl_s8(vld1_s8(codes));
  lo = vcvtq_f32_s32(vmovl_s16(vget_low_s16(w)));
  hi = vcvtq_f32_s32(vmovl_high_s16(w));
}

// 8-bit keys: q . codes per block of 32 columns (a chain of its own), then times the block's
// scale into the key's total, 4 keys at a time (8 partial + 8 total accumulators, 8 converted
// codes and 4 queries: no spills).
template <int kR>
void score_keys(const float* const* q, const int8_t* const* k, int64_t d, float scale,
                float* const* out) {
  const float32x4_t sv = vdupq_n_f32(scale);
#pragma GCC unroll 16
  for (int x0 = 0; x0 < kKeys; x0 += 4) {
    float32x4_t total[kR][4];
#pragma GCC unroll 16
    for (int r = 0; r < kR; ++r) {
#pragma GCC unroll 16
      for (int x = 0; x < 4; ++x) total[r][x] = vdupq_n_f32(0.0f);
    }
    const int8_t* b[4] = {k[x0], k[x0 + 1], k[x0 + 2], k[x0 + 3]};
    for (int64_t c = 0; c < d; c += kKvQ8Block) {
      float32x4_t acc[kR][4];
#pragma GCC unroll 16
      for (int s = 0; s < kKvQ8Block; s += 8) {
        float32x4_t lo[4], hi[4];
#pragma GCC unroll 16
        for (int x = 0; x < 4; ++x) codes8(b[x] + s, lo[x], hi[x]);
#pragma GCC unroll 16
        for (int r = 0; r < kR; ++r) {
          const float32x4_t q0 = vld1q_f32(q[r] + c + s);
          const float32x4_t q1 = vld1q_f32(q[r] + c + s + 4);
#pragma GCC unroll 16
          for (int x = 0; x < 4; ++x) {
            acc[r][x] = s == 0 ? vmulq_f32(q0, lo[x]) : vfmaq_f32(acc[r][x], q0, lo[x]);
            acc[r][x] = vfmaq_f32(acc[r][x], q1, hi[x]);
          }
        }
      }
#pragma GCC unroll 16
      for (int x = 0; x < 4; ++x) {
        float block_scale;
        __builtin_memcpy(&block_scale, b[x] + kKvQ8Block, sizeof(float));
#pragma GCC unroll 16
        for (int r = 0; r < kR; ++r) total[r][x] = vfmaq_n_f32(total[r][x], acc[r][x], block_scale);
        b[x] += kKvQ8BlockBytes;
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < kR; ++r) vst1q_f32(out[r] + x0, vmulq_f32(sum_lanes4(total[r]), sv));
  }
}

// Columns [c, c + 4 * kVecs) of value row `row` as fp32 (8-bit: c is the byte offset of the
// first column's code).
template <int kVecs>
void load_values(const float* row, int64_t c, float32x4_t* vv) {
#pragma GCC unroll 16
  for (int x = 0; x < kVecs; ++x) vv[x] = vld1q_f32(row + c + 4 * x);
}
template <int kVecs>
void load_values(const uint16_t* row, int64_t c, float32x4_t* vv) {
#pragma GCC unroll 16
  for (int x = 0; x < kVecs; x += 2) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(row + c + 4 * x));
    vv[x] = vcvt_f32_f16(vget_low_f16(h));
    vv[x + 1] = vcvt_high_f32_f16(h);
  }
}
template <int kVecs>
void load_values(const int8_t* row, int64_t at, float32x4_t* vv) {
#pragma GCC unroll 16
  for (int x = 0; x < kVecs; x += 2) codes8(row + at + 4 * x, vv[x], vv[x + 1]);
}

// The block's scale of 8-bit value row j (1 for fp32 and half: never read).
template <typename T>
float value_scale(const T* const* v, int64_t j, int64_t block) {
  if constexpr (sizeof(T) == 1) {
    float s;
    __builtin_memcpy(&s, v[j] + block + kKvQ8Block, sizeof(float));
    return s;
  } else {
    return 1.0f;
  }
}

// acc[r] += w[r][lane] * row[at ..] for kR rows: one FMLA by element per vector.
template <int kLane, int kR, int kVecs, typename T>
void add_lane(float32x4_t (&acc)[kR][kVecs], const float32x4_t* wv, const T* row, int64_t at) {
  float32x4_t vv[kVecs];
  load_values<kVecs>(row, at, vv);
#pragma GCC unroll 16
  for (int r = 0; r < kR; ++r) {
#pragma GCC unroll 16
    for (int x = 0; x < kVecs; ++x) acc[r][x] = vfmaq_laneq_f32(acc[r][x], vv[x], wv[r], kLane);
  }
}

// o[r][c0 .. c0 + 4 * kVecs) += sum over keys j < n, in order, of w[r][j] * v[j][c0 ..] for kR
// rows (8-bit: w times the row's block scale, one rounding). Keys go 4 at a time, their weights
// one vector per row, taken by lane; the last n % 4 one by one with the same FMA, so a key's
// group changes no bit.
template <int kR, int kVecs, typename T>
void add_values(float* const* o, const float* const* w, const T* const* v, int64_t n, int64_t c0) {
  float32x4_t acc[kR][kVecs];
#pragma GCC unroll 16
  for (int r = 0; r < kR; ++r) {
#pragma GCC unroll 16
    for (int x = 0; x < kVecs; ++x) acc[r][x] = vld1q_f32(o[r] + c0 + 4 * x);
  }
  // 8-bit: the columns are (part of) one block; `at` is where the codes start in a row.
  const int64_t block = c0 / kKvQ8Block * kKvQ8BlockBytes;
  const int64_t at = sizeof(T) == 1 ? block + c0 % kKvQ8Block : c0;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    float32x4_t wv[kR];
#pragma GCC unroll 16
    for (int r = 0; r < kR; ++r) wv[r] = vld1q_f32(w[r] + j);
    if constexpr (sizeof(T) == 1) {
      float s[4];
#pragma GCC unroll 16
      for (int l = 0; l < 4; ++l) s[l] = value_scale(v, j + l, block);
      const float32x4_t scales = vld1q_f32(s);
#pragma GCC unroll 16
      for (int r = 0; r < kR; ++r) wv[r] = vmulq_f32(wv[r], scales);
    }
    add_lane<0, kR, kVecs>(acc, wv, v[j], at);
    add_lane<1, kR, kVecs>(acc, wv, v[j + 1], at);
    add_lane<2, kR, kVecs>(acc, wv, v[j + 2], at);
    add_lane<3, kR, kVecs>(acc, wv, v[j + 3], at);
  }
  for (; j < n; ++j) {
    float32x4_t vv[kVecs];
    load_values<kVecs>(v[j], at, vv);
    const float s = value_scale(v, j, block);
#pragma GCC unroll 16
    for (int r = 0; r < kR; ++r) {
      const float wj = sizeof(T) == 1 ? w[r][j] * s : w[r][j];
#pragma GCC unroll 16
      for (int x = 0; x < kVecs; ++x) acc[r][x] = vfmaq_n_f32(acc[r][x], vv[x], wj);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kR; ++r) {
#pragma GCC unroll 16
    for (int x = 0; x < kVecs; ++x) vst1q_f32(o[r] + c0 + 4 * x, acc[r][x]);
  }
}

// o[r] += sum_j w[r][j] * v[j] over all of head_dim: chunks of 32 columns (one 8-bit block; 16
// accumulators for a pair of rows), a last one of 16 if head_dim is odd in 16s.
template <int kR, typename T>
void add_value_columns(float* const* o, const float* const* w, const T* const* v, int64_t n,
                       int64_t d) {
  int64_t c0 = 0;
  for (; c0 + 32 <= d; c0 += 32) add_values<kR, 8>(o, w, v, n, c0);
  if (c0 < d) add_values<kR, 4>(o, w, v, n, c0);
}

// Scores s[0 .. n) of one row, the first `visible` of them seen: s becomes exp(s - m) (exactly 0
// past visible, up to n rounded up to 8) with m their max; returns m and l, their sum (-inf and 0
// if nothing is visible). Lane sums in a fixed order over fixed positions: zeros past visible add
// nothing, so n (which other rows set) changes no bit.
void softmax_span(float* s, int64_t visible, int64_t n, float* m_out, float* l_out) {
  const int64_t n8 = (n + 7) / 8 * 8;
  const float32x4_t neg_inf = vdupq_n_f32(-__builtin_inff());
  const float lanes[4] = {0.0f, 1.0f, 2.0f, 3.0f};
  const float32x4_t lane = vld1q_f32(lanes);
  const float32x4_t limit = vdupq_n_f32(static_cast<float>(visible));
  float32x4_t vmax = neg_inf;
  for (int64_t x = 0; x < n8; x += 4) {
    // lane index < visible (small exact integers in float)
    const uint32x4_t keep = vcltq_f32(vaddq_f32(lane, vdupq_n_f32(static_cast<float>(x))), limit);
    const float32x4_t v = vbslq_f32(keep, vld1q_f32(s + x), neg_inf);
    vst1q_f32(s + x, v);
    vmax = vmaxq_f32(vmax, v);
  }
  const float m = vmaxvq_f32(vmax);
  *m_out = m;
  if (m == -__builtin_inff()) {
    for (int64_t x = 0; x < n8; x += 4) vst1q_f32(s + x, vdupq_n_f32(0.0f));
    *l_out = 0.0f;
    return;
  }
  const float32x4_t mv = vdupq_n_f32(m);
  float32x4_t vsum = vdupq_n_f32(0.0f);
  for (int64_t x = 0; x < n8; x += 4) {
    // -inf - m clamps to the exp's floor, whose result is exactly 0
    const float32x4_t e = neon::exp_nonpositive(vsubq_f32(vld1q_f32(s + x), mv));
    vst1q_f32(s + x, e);
    vsum = vaddq_f32(vsum, e);
  }
  const float32x4_t pairs = vpaddq_f32(vsum, vsum);
  *l_out = vgetq_lane_f32(vpaddq_f32(pairs, pairs), 0);  // (s0 + s1) + (s2 + s3)
}

#include "ops/attention_decode_span.inc"

}  // namespace

void decode_span_neon(const Problem& p, const DecodeTask& task) {
  run_span(p, task);
}

}  // namespace qvl::ops::attention_kernels
