// Weight strips of the blocked GEMM (layouts: packed_gemm.h), shared by every kernel set: the
// packed tiles hold a row's 32 columns contiguously, a strip wants each column's strip_rows rows
// contiguously, so rows are taken 8 at a time (two packed groups) and every 8 x 8 square of
// 32-bit words (fp32 values, or bf16 pairs) is transposed in registers. A block is packed once
// per depth block and reused by every x row, so this runs on AVX2 for the AVX-512 sets too.
#include <immintrin.h>

#include "ops/packed_gemm.h"
#include "ops/x86/packed_gemm_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

// v[i] = row i (8 words) -> v[j] = column j.
void transpose8x8(__m256 v[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
  const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
  const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
  const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
  v[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  v[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  v[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  v[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  v[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  v[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  v[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  v[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Weight row r, block b: 32 fp32 values into out[0..3] (zero past the packed groups).
void dequantize_row(const GemmProblem& p, int64_t r, int64_t b, __m256 out[4]) {
  if (r >= (p.n + kRows - 1) / kRows * kRows) {
    for (int c = 0; c < 4; ++c) out[c] = _mm256_setzero_ps();
    return;
  }
  const uint8_t* group = p.weights + (r / kRows) * p.group_bytes;
  const int64_t in_group = r % kRows;
  const uint8_t* data = group + p.scale_bytes;
  if (p.type == GemmType::kBF16) {  // bf16 is the top half of fp32: widen and shift
    const uint8_t* src = data + b * kBf16TileBytes + in_group * kCols * 2;
    for (int c = 0; c < 4; ++c) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c * 16));
      out[c] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    return;
  }
  const uint8_t* s = group + b * kScaleBytes + in_group * 2;
  const __m256 scale = _mm256_set1_ps(_cvtsh_ss(static_cast<uint16_t>(s[0] | (s[1] << 8))));
  __m128i q[2];  // columns 0..15, 16..31 as int8
  if (p.type == GemmType::kQ8) {
    const uint8_t* src = data + b * kQ8TileBytes + in_group * kCols;
    q[0] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    q[1] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
  } else {  // kQ4: byte j = column j (low nibble) and j + 16 (high nibble), each q + 8
    const uint8_t* src = data + b * kQ4TileBytes + in_group * (kCols / 2);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
    q[0] = _mm_sub_epi8(_mm_and_si128(packed, low4), eight);
    q[1] = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 4), low4), eight);
  }
  for (int h = 0; h < 2; ++h) {
    const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q[h]));
    const __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(q[h], q[h])));
    out[2 * h] = _mm256_mul_ps(lo, scale);
    out[2 * h + 1] = _mm256_mul_ps(hi, scale);
  }
}

// Weight row r, block b of a bf16 matrix: its 16 pairs as 32-bit words in out[0..1].
void bf16_pairs_row(const GemmProblem& p, int64_t r, int64_t b, __m256 out[2]) {
  if (r >= (p.n + kRows - 1) / kRows * kRows) {
    out[0] = out[1] = _mm256_setzero_ps();
    return;
  }
  const uint8_t* src = p.weights + (r / kRows) * p.group_bytes + p.scale_bytes +
                       b * kBf16TileBytes + (r % kRows) * kCols * 2;
  out[0] = _mm256_loadu_ps(reinterpret_cast<const float*>(src));
  out[1] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + 32));
}

}  // namespace

void pack_strips_f32_avx2(const GemmProblem& p, int64_t r0, int64_t strips, int strip_rows,
                          int64_t k0, int64_t depth, void* out) {
  auto* const dst = static_cast<float*>(out);
  for (int64_t r8 = 0; r8 < strips * strip_rows; r8 += 8) {
    float* const strip = dst + (r8 / strip_rows) * depth * strip_rows + r8 % strip_rows;
    for (int64_t b = k0 / kCols; b < (k0 + depth) / kCols; ++b) {
      __m256 rows[8][4];
      for (int i = 0; i < 8; ++i) dequantize_row(p, r0 + r8 + i, b, rows[i]);
      for (int c = 0; c < 4; ++c) {
        __m256 v[8];
        for (int i = 0; i < 8; ++i) v[i] = rows[i][c];
        transpose8x8(v);
        float* o = strip + (b * kCols - k0 + c * 8) * strip_rows;
        for (int j = 0; j < 8; ++j) _mm256_storeu_ps(o + j * strip_rows, v[j]);
      }
    }
  }
}

void pack_strips_bf16_pairs_avx2(const GemmProblem& p, int64_t r0, int64_t strips, int strip_rows,
                                 int64_t k0, int64_t depth, void* out) {
  auto* const dst = static_cast<float*>(out);  // 32-bit words: one bf16 pair each
  for (int64_t r8 = 0; r8 < strips * strip_rows; r8 += 8) {
    float* const strip = dst + (r8 / strip_rows) * (depth / 2) * strip_rows + r8 % strip_rows;
    for (int64_t b = k0 / kCols; b < (k0 + depth) / kCols; ++b) {
      __m256 rows[8][2];
      for (int i = 0; i < 8; ++i) bf16_pairs_row(p, r0 + r8 + i, b, rows[i]);
      for (int c = 0; c < 2; ++c) {
        __m256 v[8];
        for (int i = 0; i < 8; ++i) v[i] = rows[i][c];
        transpose8x8(v);
        float* o = strip + ((b * kCols - k0) / 2 + c * 8) * strip_rows;
        for (int j = 0; j < 8; ++j) _mm256_storeu_ps(o + j * strip_rows, v[j]);
      }
    }
  }
}

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
