// Repacking of stored q8/q4 weights into the int8 GEMM's strips (layout in int8_gemm_kernels.h),
// shared by every int8 micro-kernel (all of them run on AVX2 machines), and the widening of x. A
// stored group of 4 rows becomes 4 adjacent 32-bit lanes of every quad: a 4 x 8 transpose of 32-bit
// words per block. Called only when the CPU has AVX2/F16C; no shared inline functions (see
// packed_kernels.h).
#include <immintrin.h>

#include "ops/int8_gemm_kernels.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"
#include "ops/x86/int8_gemm_x86.h"
#include "ops/x86/packed_kernels_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

// 128 * sum of the 32 int8 of v (sad works on unsigned bytes: flip the sign bit, subtract 128s).
inline int32_t offset_sum(__m256i v) {
  const __m256i sad = _mm256_sad_epu8(
      _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80))), _mm256_setzero_si256());
  const __m128i s = _mm_add_epi64(_mm256_castsi256_si128(sad), _mm256_extracti128_si256(sad, 1));
  const int64_t total = _mm_cvtsi128_si64(s) + _mm_extract_epi64(s, 1);
  return static_cast<int32_t>(128 * (total - 128 * kCols));
}

// Rows of one stored group's block as 32 columns each (q4: nibbles q + 8).
inline void group_rows(const Int8RepackSource& src, const uint8_t* group, int64_t b,
                       __m256i (&row)[kRows]) {
  const uint8_t* data = group + src.scale_bytes;
  if (src.q8) {
    for (int r = 0; r < kRows; ++r) {
      row[r] =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + b * kQ8TileBytes + r * kCols));
    }
    return;
  }
  const __m128i low4 = _mm_set1_epi8(0x0f);
  for (int r = 0; r < kRows; ++r) {
    const __m128i v =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + b * kQ4TileBytes + r * 16));
    row[r] = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), low4), _mm_and_si128(v, low4));
  }
}

// Rows 4g .. 4g + 3 of block b of a strip matrix as 32 columns each (kQ8Strips: int8 q;
// kQ4Strips: nibbles q + 8): word (quad, row) of the strip becomes word quad of the row, a 4 x 8
// transpose of 32-bit words.
inline void strip_rows(const uint8_t* block, int64_t row_in_strip, bool q8, __m256i (&row)[kRows]) {
  // a[i] holds quad i of the 4 rows in its low half, quad i + 4 in its high half.
  __m256i a[4];
  const auto rows_of = [&](int64_t at) {  // the 4 rows' words of quad (or nibble pair) `at`
    return _mm_loadu_si128(
        reinterpret_cast<const __m128i*>(block + at * kStripRows * 4 + row_in_strip * 4));
  };
  if (q8) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));  // q + 128 -> q
    for (int q = 0; q < 4; ++q) {
      a[q] = _mm256_xor_si256(_mm256_set_m128i(rows_of(q + 4), rows_of(q)), flip);
    }
  } else {  // pair p holds quads 2p (low nibbles) and 2p + 1 (high)
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i pairs02 = _mm256_set_m128i(rows_of(2), rows_of(0));
    const __m256i pairs13 = _mm256_set_m128i(rows_of(3), rows_of(1));
    a[0] = _mm256_and_si256(pairs02, low4);                        // quads 0, 4
    a[1] = _mm256_and_si256(_mm256_srli_epi16(pairs02, 4), low4);  // quads 1, 5
    a[2] = _mm256_and_si256(pairs13, low4);                        // quads 2, 6
    a[3] = _mm256_and_si256(_mm256_srli_epi16(pairs13, 4), low4);  // quads 3, 7
  }
  const __m256i t0 = _mm256_unpacklo_epi32(a[0], a[1]), t1 = _mm256_unpackhi_epi32(a[0], a[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(a[2], a[3]), t3 = _mm256_unpackhi_epi32(a[2], a[3]);
  row[0] = _mm256_unpacklo_epi64(t0, t2);
  row[1] = _mm256_unpackhi_epi64(t0, t2);
  row[2] = _mm256_unpacklo_epi64(t1, t3);
  row[3] = _mm256_unpackhi_epi64(t1, t3);
}

// Rows 0-3 of v, 8 32-bit words each, to words [w0, w0 + 8) of a strip block: word w of row r
// goes to dst + (w * nr + r) * 4 (a 4 x 8 transpose of 32-bit words).
inline void store_words(const __m256i (&v)[kRows], int64_t w0, int64_t nr, uint8_t* dst) {
  const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]);
  const __m256i t1 = _mm256_unpackhi_epi32(v[0], v[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]);
  const __m256i t3 = _mm256_unpackhi_epi32(v[2], v[3]);
  const __m256i words[4] = {_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2),
                            _mm256_unpacklo_epi64(t1, t3), _mm256_unpackhi_epi64(t1, t3)};
  for (int64_t w = 0; w < 4; ++w) {  // words[w] holds word w (low half) and w + 4 (high half)
    auto* lo = reinterpret_cast<__m128i*>(dst + (w0 + w) * nr * 4);
    auto* hi = reinterpret_cast<__m128i*>(dst + (w0 + w + 4) * nr * 4);
    _mm_storeu_si128(lo, _mm256_castsi256_si128(words[w]));
    _mm_storeu_si128(hi, _mm256_extracti128_si256(words[w], 1));
  }
}

}  // namespace

void int8_repack_avx2(const Int8RepackSource& src, int64_t g0, int64_t strips, int64_t nr,
                      int64_t b0, int64_t nbc, Int8PanelWeights weights, uint8_t* panel) {
  const int64_t block_bytes = int8_strip_block_bytes(nr, weights);
  const int64_t weight_bytes = int8_weight_bytes(weights);
  const int64_t groups_per_strip = nr / kRows;
  for (int64_t s = 0; s < strips; ++s) {
    for (int64_t gs = 0; gs < groups_per_strip; ++gs) {
      const int64_t g = g0 + s * groups_per_strip + gs;
      const uint8_t* group = src.groups + g * src.group_bytes;
      for (int64_t b = 0; b < nbc; ++b) {
        uint8_t* dst = panel + (s * nbc + b) * block_bytes;
        auto* scales = reinterpret_cast<float*>(dst + weight_bytes * nr) + gs * kRows;
        auto* sums = reinterpret_cast<int32_t*>(dst + (weight_bytes + 4) * nr) + gs * kRows;
        __m256i row[kRows];
        if (g < src.groups_total && src.strip_bytes != 0) {
          const int64_t row0 = g * kRows;
          const uint8_t* block =
              src.groups + row0 / kStripRows * src.strip_bytes + (b0 + b) * src.strip_block_bytes;
          _mm_prefetch(reinterpret_cast<const char*>(block + 4096), _MM_HINT_T0);
          strip_rows(block, row0 % kStripRows, src.q8, row);
          const int64_t weight_bytes = src.q8 ? kCols : kCols / 2;
          _mm_storeu_ps(scales, _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(
                                    block + kStripRows * weight_bytes + row0 % kStripRows * 2))));
        } else if (g < src.groups_total) {
          // The weights come cold from DRAM (every matrix once per prompt chunk) and the
          // out-of-order window covers only a few blocks: ask for the line 4 KiB ahead (into the
          // next groups at the end). BM_Int8GemmCold m32: q8 -11..-18%, q4 -7..-11%.
          const uint8_t* ahead =
              group + src.scale_bytes + (b0 + b) * (src.q8 ? kQ8TileBytes : kQ4TileBytes) + 4096;
          _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
          if (src.q8) _mm_prefetch(reinterpret_cast<const char*>(ahead + 64), _MM_HINT_T0);
          group_rows(src, group, b0 + b, row);
          _mm_storeu_ps(scales, _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(
                                    group + (b0 + b) * kScaleBytes))));
        } else {  // rows past the matrix: q = 0, scale 0
          for (auto& r : row) r = _mm256_set1_epi8(src.q8 ? 0 : 8);
          _mm_storeu_ps(scales, _mm_setzero_ps());
        }
        for (int r = 0; r < kRows; ++r) sums[r] = src.q8 ? offset_sum(row[r]) : 0;
        uint8_t* rows_at = dst + gs * kRows * 4;
        if (weights == Int8PanelWeights::kBytes) {  // words are quads of int8
          store_words(row, 0, nr, rows_at);
          continue;
        }
        for (int64_t half = 0; half < 2; ++half) {  // words are pairs of int16
          __m256i wide[kRows];
          for (int r = 0; r < kRows; ++r) {
            wide[r] = _mm256_cvtepi8_epi16(half == 0 ? _mm256_castsi256_si128(row[r])
                                                     : _mm256_extracti128_si256(row[r], 1));
          }
          store_words(wide, 8 * half, nr, rows_at);
        }
      }
    }
  }
}

void int8_widen_avx2(const int8_t* src, int64_t n, int16_t* dst) {
  for (int64_t j = 0; j < n; j += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j), _mm256_cvtepi8_epi16(v));
  }
}

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
