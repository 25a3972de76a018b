// AVX-512 decode span kernel (see attention_decode.h): the AVX2 kernel's structure at 16 lanes.
// Called only when the CPU has AVX-512; this file must not define or instantiate any inline
// function from a shared header (no std:: templates below the target pragma), or the linker could
// pick an AVX-512 copy for everyone.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors, which -Werror rejects.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/attention_decode.h"
#include "ops/kv_q8.h"

#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

#include "ops/elementwise_avx512_math.h"

namespace qvl::ops::attention_kernels {
namespace {

constexpr int kKeys = 4;            // keys scored together: 8 independent FMA chains for 2 rows
constexpr int64_t kValueBlock = 8;  // positions whose value rows stay in L1 over column chunks
constexpr int64_t kPrefetchBytes = 6144;  // how far ahead rows are prefetched (see AVX2 kernel)
constexpr int64_t kMaxAhead = 32;
constexpr int64_t kTableRows = kDecodeSpan + kMaxAhead + kValueBlock;

int64_t min_i64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
int64_t max_i64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// Columns [c, c + 16) of a row as fp32 (8-bit: the codes; the caller applies the block's scale).
__m512 load16(const float* row, int64_t c) {
  return _mm512_loadu_ps(row + c);
}
__m512 load16(const uint16_t* row, int64_t c) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c)));
}
__m512 load16(const int8_t* row, int64_t c) {
  const int8_t* codes = row + c / kKvQ8Block * kKvQ8BlockBytes + c % kKvQ8Block;
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes))));
}
float block_scale(const int8_t* row, int64_t block) {
  float scale;
  __builtin_memcpy(&scale, row + block * kKvQ8BlockBytes + kKvQ8Block, sizeof(float));
  return scale;
}

void prefetch_bytes(const void* p, int64_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  for (uintptr_t a = begin & ~uintptr_t{63}; a < begin + static_cast<uintptr_t>(bytes); a += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(a), _MM_HINT_T0);
  }
}

// 16 lanes folded to 8 (lane i + lane i + 8), then the AVX2 kernel's tree: lane x of the result
// is the sum of a[x] for x < 8, the same tree for every slot.
__m256 fold(__m512 a) {
  return _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
}
__m256 sum_lanes8(const __m512* a) {
  const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(fold(a[0]), fold(a[1])),
                                   _mm256_hadd_ps(fold(a[2]), fold(a[3])));
  const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(fold(a[4]), fold(a[5])),
                                   _mm256_hadd_ps(fold(a[6]), fold(a[7])));
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}
__m128 sum_lanes4(const __m512* a) {
  const __m256 u = _mm256_hadd_ps(_mm256_hadd_ps(fold(a[0]), fold(a[1])),
                                  _mm256_hadd_ps(fold(a[2]), fold(a[3])));
  return _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
}

template <int kR>
void store_scores(__m512 (&acc)[kR][kKeys], float scale, float* const* out) {
  if constexpr (kR == 2) {
    const __m256 s = _mm256_mul_ps(sum_lanes8(&acc[0][0]), _mm256_set1_ps(scale));
    _mm_storeu_ps(out[0], _mm256_castps256_ps128(s));
    _mm_storeu_ps(out[1], _mm256_extractf128_ps(s, 1));
  } else {
    _mm_storeu_ps(out[0], _mm_mul_ps(sum_lanes4(&acc[0][0]), _mm_set1_ps(scale)));
  }
}

// out[r][0 .. kKeys) = scale * q[r] . k[x] for kR rows.
template <int kR, typename T>
void score_keys(const float* const* q, const T* const* k, int64_t d, float scale,
                float* const* out) {
  __m512 acc[kR][kKeys];
  for (int r = 0; r < kR; ++r) {
    for (int x = 0; x < kKeys; ++x) acc[r][x] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < d; c += 16) {
    __m512 kv[kKeys];
    for (int x = 0; x < kKeys; ++x) kv[x] = load16(k[x], c);
    for (int r = 0; r < kR; ++r) {
      const __m512 qv = _mm512_loadu_ps(q[r] + c);
      for (int x = 0; x < kKeys; ++x) acc[r][x] = _mm512_fmadd_ps(qv, kv[x], acc[r][x]);
    }
  }
  store_scores<kR>(acc, scale, out);
}

// 8-bit keys: q . codes per block of 32 columns, then times the block's scale into the total.
template <int kR>
void score_keys(const float* const* q, const int8_t* const* k, int64_t d, float scale,
                float* const* out) {
  __m512 total[kR][kKeys];
  for (int r = 0; r < kR; ++r) {
    for (int x = 0; x < kKeys; ++x) total[r][x] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < d / kKvQ8Block; ++b) {
    const int64_t c = b * kKvQ8Block;
    __m512 k0[kKeys], k1[kKeys];
    for (int x = 0; x < kKeys; ++x) {
      k0[x] = load16(k[x], c);
      k1[x] = load16(k[x], c + 16);
    }
    for (int r = 0; r < kR; ++r) {
      const __m512 q0 = _mm512_loadu_ps(q[r] + c), q1 = _mm512_loadu_ps(q[r] + c + 16);
      for (int x = 0; x < kKeys; ++x) {
        const __m512 acc = _mm512_fmadd_ps(q1, k1[x], _mm512_mul_ps(q0, k0[x]));
        total[r][x] = _mm512_fmadd_ps(acc, _mm512_set1_ps(block_scale(k[x], b)), total[r][x]);
      }
    }
  }
  store_scores<kR>(total, scale, out);
}

// o[r][c0 .. c0 + 16 * kVecs) += sum over keys j < n, in order, of p[r][j] * v[j][c0 ..].
template <int kR, int kVecs, typename T>
void add_values(float* const* o, const float* const* p, const T* const* v, int64_t n, int64_t c0) {
  __m512 acc[kR][kVecs];
  for (int r = 0; r < kR; ++r) {
    for (int x = 0; x < kVecs; ++x) acc[r][x] = _mm512_loadu_ps(o[r] + c0 + 16 * x);
  }
  for (int64_t j = 0; j < n; ++j) {
    __m512 vv[kVecs];
    for (int x = 0; x < kVecs; ++x) vv[x] = load16(v[j], c0 + 16 * x);
    for (int r = 0; r < kR; ++r) {
      for (int x = 0; x < kVecs; ++x) {
        // 8-bit: each 32 columns are one block (c0 is a multiple of 32); its scale goes into the
        // weight.
        float w = p[r][j];
        if constexpr (sizeof(T) == 1) w *= block_scale(v[j], (c0 + 16 * x) / kKvQ8Block);
        acc[r][x] = _mm512_fmadd_ps(_mm512_set1_ps(w), vv[x], acc[r][x]);
      }
    }
  }
  for (int r = 0; r < kR; ++r) {
    for (int x = 0; x < kVecs; ++x) _mm512_storeu_ps(o[r] + c0 + 16 * x, acc[r][x]);
  }
}

// As the AVX2 kernel's softmax_span, 16 lanes (s has room up to n rounded up to 16).
void softmax_span(float* s, int64_t visible, int64_t n, float* m_out, float* l_out) {
  const int64_t n16 = (n + 15) / 16 * 16;
  const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
  __m512 vmax = neg_inf;
  for (int64_t x = 0; x < n16; x += 16) {
    const int64_t count = min_i64(16, max_i64(0, visible - x));
    const __mmask16 keep = static_cast<__mmask16>((1u << count) - 1u);
    const __m512 v = _mm512_mask_loadu_ps(neg_inf, keep, s + x);
    _mm512_storeu_ps(s + x, v);
    vmax = _mm512_max_ps(vmax, v);
  }
  const float m = _mm512_reduce_max_ps(vmax);
  *m_out = m;
  if (m == -__builtin_inff()) {
    for (int64_t x = 0; x < n16; x += 16) _mm512_storeu_ps(s + x, _mm512_setzero_ps());
    *l_out = 0.0f;
    return;
  }
  const __m512 mv = _mm512_set1_ps(m);
  __m512 vsum = _mm512_setzero_ps();
  for (int64_t x = 0; x < n16; x += 16) {
    const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(s + x), mv));
    _mm512_storeu_ps(s + x, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  *l_out = _mm512_reduce_add_ps(vsum);
}

// o[r] += sum_j w[r][j] * v[j] over all of head_dim: chunks of 64 columns, then 32 and 16 for
// head_dim not a multiple of 64.
template <int kR, typename T>
void add_value_columns(float* const* o, const float* const* w, const T* const* v, int64_t n,
                       int64_t d) {
  int64_t c0 = 0;
  for (; c0 + 64 <= d; c0 += 64) add_values<kR, 4>(o, w, v, n, c0);
  if (c0 + 32 <= d) {
    add_values<kR, 2>(o, w, v, n, c0);
    c0 += 32;
  }
  if (c0 < d) add_values<kR, 1>(o, w, v, n, c0);
}

#include "ops/attention_decode_span.inc"

}  // namespace

void decode_span_avx512(const Problem& p, const DecodeTask& task) {
  run_span(p, task);
}

}  // namespace qvl::ops::attention_kernels
