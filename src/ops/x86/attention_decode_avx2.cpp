// AVX2 decode span kernel (see attention_decode.h). Called only when the CPU has AVX2 + FMA +
// F16C; this file must not define or instantiate any inline function from a shared header (no
// std:: templates below the target pragma), or the linker could pick an AVX2 copy for everyone.
#include <immintrin.h>

#include "ops/attention_decode.h"
#include "ops/kv_q8.h"
#include "ops/x86/attention_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx2,fma,f16c")

#include "ops/x86/elementwise_avx2_math.h"

namespace qvl::ops::attention_kernels {
namespace {

constexpr int kKeys = 4;            // keys scored together: 8 independent FMA chains for 2 rows
constexpr int64_t kValueBlock = 8;  // positions whose value rows stay in L1 over column chunks
// Rows are prefetched this many bytes of the run ahead (enough in flight to cover DRAM latency
// at full bandwidth, little enough to stay in L1), at most kMaxAhead positions.
constexpr int64_t kPrefetchBytes = 6144;
constexpr int64_t kMaxAhead = 32;
constexpr int64_t kTableRows = kDecodeSpan + kMaxAhead + kValueBlock;

int64_t min_i64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
int64_t max_i64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// Columns [c, c + 8) of an fp32 or half row as fp32.
__m256 load8(const float* row, int64_t c) {
  return _mm256_loadu_ps(row + c);
}
__m256 load8(const uint16_t* row, int64_t c) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c)));
}
// Prefetches the cache lines of [p, p + bytes).
void prefetch_bytes(const void* p, int64_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  for (uintptr_t a = begin & ~uintptr_t{63}; a < begin + static_cast<uintptr_t>(bytes); a += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(a), _MM_HINT_T0);
  }
}

// Lane x of the result is the sum of the 8 lanes of a[x], x < 8, all by the same tree
// ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)): a score's bits do not depend on its slot.
__m256 sum_lanes8(const __m256* a) {
  const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}
// The same for a[0 .. 4).
__m128 sum_lanes4(const __m256* a) {
  const __m256 u = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  return _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
}

// out[r][0 .. kKeys) = scale * q[r] . k[x] for kR rows; one FMA chain per (row, key) over the
// columns in order.
template <int kR>
void store_scores(__m256 (&acc)[kR][kKeys], float scale, float* const* out) {
  if constexpr (kR == 2) {
    const __m256 s = _mm256_mul_ps(sum_lanes8(&acc[0][0]), _mm256_set1_ps(scale));
    _mm_storeu_ps(out[0], _mm256_castps256_ps128(s));
    _mm_storeu_ps(out[1], _mm256_extractf128_ps(s, 1));
  } else {
    _mm_storeu_ps(out[0], _mm_mul_ps(sum_lanes4(&acc[0][0]), _mm_set1_ps(scale)));
  }
}

template <int kR, typename T>
void score_keys(const float* const* q, const T* const* k, int64_t d, float scale,
                float* const* out) {
  __m256 acc[kR][kKeys];
  for (int r = 0; r < kR; ++r) {
    for (int x = 0; x < kKeys; ++x) acc[r][x] = _mm256_setzero_ps();
  }
  for (int64_t c = 0; c < d; c += 8) {
    __m256 kv[kKeys];
    for (int x = 0; x < kKeys; ++x) kv[x] = load8(k[x], c);
    for (int r = 0; r < kR; ++r) {
      const __m256 qv = _mm256_loadu_ps(q[r] + c);
      for (int x = 0; x < kKeys; ++x) acc[r][x] = _mm256_fmadd_ps(qv, kv[x], acc[r][x]);
    }
  }
  store_scores<kR>(acc, scale, out);
}

// 8 codes of an 8-bit block at `codes` as fp32.
__m256 codes8(const int8_t* codes) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes))));
}

// 8-bit keys: q . codes per block of 32 columns, then times the block's scale into the total
// (walked by block pointer: no address arithmetic per vector).
template <int kR>
void score_keys(const float* const* q, const int8_t* const* k, int64_t d, float scale,
                float* const* out) {
  __m256 total[kR][kKeys];
  for (int r = 0; r < kR; ++r) {
    for (int x = 0; x < kKeys; ++x) total[r][x] = _mm256_setzero_ps();
  }
  for (int half = 0; half < kKeys; half += 2) {  // two keys at a time: no register spills
    const int8_t* b0 = k[half];
    const int8_t* b1 = k[half + 1];
    for (int64_t c = 0; c < d; c += kKvQ8Block, b0 += kKvQ8BlockBytes, b1 += kKvQ8BlockBytes) {
      __m256 acc[kR][2];
      for (int x = 0; x < kKvQ8Block / 8; ++x) {
        const __m256 k0 = codes8(b0 + 8 * x), k1 = codes8(b1 + 8 * x);
        for (int r = 0; r < kR; ++r) {
          const __m256 qv = _mm256_loadu_ps(q[r] + c + 8 * x);
          acc[r][0] = x == 0 ? _mm256_mul_ps(qv, k0) : _mm256_fmadd_ps(qv, k0, acc[r][0]);
          acc[r][1] = x == 0 ? _mm256_mul_ps(qv, k1) : _mm256_fmadd_ps(qv, k1, acc[r][1]);
        }
      }
      float s0, s1;
      __builtin_memcpy(&s0, b0 + kKvQ8Block, sizeof(float));
      __builtin_memcpy(&s1, b1 + kKvQ8Block, sizeof(float));
      for (int r = 0; r < kR; ++r) {
        total[r][half] = _mm256_fmadd_ps(acc[r][0], _mm256_set1_ps(s0), total[r][half]);
        total[r][half + 1] = _mm256_fmadd_ps(acc[r][1], _mm256_set1_ps(s1), total[r][half + 1]);
      }
    }
  }
  store_scores<kR>(total, scale, out);
}

// o[r][c0 .. c0 + 8 * kVecs) += sum over keys j < n, in order, of p[r][j] * v[j][c0 ..] for kR
// rows.
template <int kR, int kVecs, typename T>
void add_values(float* const* o, const float* const* p, const T* const* v, int64_t n, int64_t c0) {
  __m256 acc[kR][kVecs];
  for (int r = 0; r < kR; ++r) {
    for (int x = 0; x < kVecs; ++x) acc[r][x] = _mm256_loadu_ps(o[r] + c0 + 8 * x);
  }
  // 8-bit: the 32 columns are one block (c0 is a multiple of 32); its scale goes into the weight.
  const int64_t block = c0 / kKvQ8Block * kKvQ8BlockBytes;
  for (int64_t j = 0; j < n; ++j) {
    __m256 vv[kVecs];
    for (int x = 0; x < kVecs; ++x) {
      if constexpr (sizeof(T) == 1) {
        vv[x] = codes8(v[j] + block + 8 * x);
      } else {
        vv[x] = load8(v[j], c0 + 8 * x);
      }
    }
    for (int r = 0; r < kR; ++r) {
      float w = p[r][j];
      if constexpr (sizeof(T) == 1) {
        float scale;
        __builtin_memcpy(&scale, v[j] + block + kKvQ8Block, sizeof(float));
        w *= scale;
      }
      const __m256 wv = _mm256_set1_ps(w);
      for (int x = 0; x < kVecs; ++x) acc[r][x] = _mm256_fmadd_ps(wv, vv[x], acc[r][x]);
    }
  }
  for (int r = 0; r < kR; ++r) {
    for (int x = 0; x < kVecs; ++x) _mm256_storeu_ps(o[r] + c0 + 8 * x, acc[r][x]);
  }
}

// Scores s[0 .. n) of one row, the first `visible` of them seen: s becomes exp(s - m) (0 past
// visible, up to n rounded up to 8) with m their max; returns m and l, their sum (-inf and 0 if
// nothing is visible).
void softmax_span(float* s, int64_t visible, int64_t n, float* m_out, float* l_out) {
  const int64_t n8 = (n + 7) / 8 * 8;
  const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
  const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 limit = _mm256_set1_ps(static_cast<float>(visible));
  __m256 vmax = neg_inf;
  for (int64_t x = 0; x < n8; x += 8) {
    // lane index < visible (small exact integers in float)
    const __m256 keep = _mm256_cmp_ps(_mm256_add_ps(lane, _mm256_set1_ps(static_cast<float>(x))),
                                      limit, _CMP_LT_OQ);
    const __m256 v = _mm256_blendv_ps(neg_inf, _mm256_loadu_ps(s + x), keep);
    _mm256_storeu_ps(s + x, v);
    vmax = _mm256_max_ps(vmax, v);
  }
  const float m = horizontal_max(vmax);
  *m_out = m;
  if (m == -__builtin_inff()) {
    for (int64_t x = 0; x < n8; x += 8) _mm256_storeu_ps(s + x, _mm256_setzero_ps());
    *l_out = 0.0f;
    return;
  }
  const __m256 mv = _mm256_set1_ps(m);
  __m256 vsum = _mm256_setzero_ps();
  for (int64_t x = 0; x < n8; x += 8) {
    const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + x), mv));
    _mm256_storeu_ps(s + x, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  *l_out = horizontal_sum(vsum);
}

// o[r] += sum_j w[r][j] * v[j] over all of head_dim: chunks of 32 columns (one 8-bit block), a
// last one of 16 if head_dim is odd in 16s.
template <int kR, typename T>
void add_value_columns(float* const* o, const float* const* w, const T* const* v, int64_t n,
                       int64_t d) {
  int64_t c0 = 0;
  for (; c0 + 32 <= d; c0 += 32) add_values<kR, 4>(o, w, v, n, c0);
  if (c0 < d) add_values<kR, 2>(o, w, v, n, c0);
}

#include "ops/attention_decode_span.inc"

}  // namespace

void decode_span_avx2(const Problem& p, const DecodeTask& task) {
  run_span(p, task);
}

}  // namespace qvl::ops::attention_kernels

QVL_TARGET_ISA_END
