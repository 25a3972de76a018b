// The 256-bit VNNI micro-kernel of the int8 GEMM (layout in int8_gemm_kernels.h), written once
// for a vpdpbusd policy Dot (Dot::apply(acc, u8 a, s8 b) = acc + sum of 4 byte products per 32-bit
// lane). int8_gemm_avxvnni.cpp instantiates it with the instruction; int8_gemm_avx2.cpp with an
// exact AVX2 emulation, so that its indexing and offset corrections are tested on CPUs without
// AVX-VNNI. Everything here has internal linkage: each including translation unit (compiled for
// its own ISA) gets its own copy, none is shared (see packed_kernels.h). Include after
// <immintrin.h> and the file's target pragma.
//
// Operands (vpdpbusd multiplies unsigned by signed bytes into int32, nothing saturates):
//   q8: x + 128 (unsigned) times w; the offset is taken off per block as 128 * sum(w) of the row,
//       precomputed when the weights are repacked.
//   q4: the stored nibble q + 8 (unsigned) times x; the offset is taken off as 8 * sum(x).
//   stored q8 (a kQ8Strips matrix read in place, half t.half of each 32-row strip): q + 128
//       (unsigned) times x, less 128 * sum(x); fp16 scales.
//   stored q4 (kQ4Strips, the same way): each nibble q + 8 (unsigned) times x, less 8 * sum(x).
#pragma once

#include <cstring>

#include "ops/int8_gemm_kernels.h"
#include "ops/packed_matrix.h"
#include "ops/x86/int8_gemm_x86.h"

namespace qvl::ops::kernels {
namespace {  // NOLINT: internal linkage on purpose (see above)

constexpr int64_t kVnni256Rows = 16;
constexpr int64_t kVnni256BlockBytes = int8_strip_block_bytes(kVnni256Rows);

inline __m256i vnni256_broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline __m256i vnni256_load(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

enum class Vnni256Weights { kQ8, kQ4, kStoredQ8, kStoredQ4 };

inline __m256 vnni256_widen_scales(const uint8_t* fp16) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(fp16)));
}

template <class Dot, int R, Vnni256Weights W>
void vnni256_tile(const Int8Tile& t) {
  constexpr bool Q8 = W == Vnni256Weights::kQ8, kNibbles = W == Vnni256Weights::kStoredQ4;
  constexpr bool kStored = W == Vnni256Weights::kStoredQ8 || kNibbles;
  // A stored strip has 32 rows: this tile's 16 are 64 bytes into each quad's (or nibble pair's)
  // 128 at t.half.
  constexpr int64_t kStride = W == Vnni256Weights::kStoredQ8 ? kStripBlockBytes
                              : kNibbles                     ? kQ4StripBlockBytes
                                                             : kVnni256BlockBytes;
  constexpr int64_t kQuadBytes = kStored ? kStripRows * 4 : kVnni256Rows * 4;
  constexpr int64_t kLoads = kNibbles ? 4 : 8;  // quads, or pairs of quads in nibbles
  constexpr int64_t kScalesAt = kStripRows * kLoads * 4;
  constexpr int32_t kOffsetW = W == Vnni256Weights::kStoredQ8 ? 128 : 8;
  for (int64_t b = 0; b < t.nblocks; ++b) {
    const uint8_t* block = t.strip + b * kStride;
    if (kStored && t.prefetch_ahead != 0) {  // this tile's half of the block, and the scales
      const uint8_t* ahead = block + t.prefetch_ahead + t.half * kVnni256Rows * 4;
      for (int64_t l = 0; l < kLoads; ++l) __builtin_prefetch(ahead + l * kQuadBytes);
      __builtin_prefetch(block + t.prefetch_ahead + kScalesAt);
    }
    const uint8_t* weights = kStored ? block + t.half * kVnni256Rows * 4 : block;
    const auto* scales = reinterpret_cast<const float*>(block + 32 * kVnni256Rows);
    const auto* sums = reinterpret_cast<const uint8_t*>(block + 36 * kVnni256Rows);
    // The dot products start at minus the operand offset (q8: 128 * sum(w) per weight row; q4:
    // 8 * sum(x) per x row): the same int32 as subtracting it at the end, and the 16 registers
    // need not hold the sums past the dot products.
    // With few x rows the vpdpbusd latency chains of one set of accumulators would set the pace:
    // odd quads go to a second set, added at the end (exact in int32).
    constexpr int kSets = R <= 2 ? 2 : 1;
    __m256i acc[kSets][R][2];
    if constexpr (Q8) {
      const __m256i zero = _mm256_setzero_si256();
      const __m256i start0 = _mm256_sub_epi32(zero, vnni256_load(sums));
      const __m256i start1 = _mm256_sub_epi32(zero, vnni256_load(sums + 32));
      for (int i = 0; i < R; ++i) acc[0][i][0] = start0, acc[0][i][1] = start1;
    } else {
      for (int i = 0; i < R; ++i) {
        acc[0][i][0] = acc[0][i][1] = _mm256_set1_epi32(-kOffsetW * t.xsum[i * t.ldxs + b]);
      }
    }
    for (int set = 1; set < kSets; ++set) {
      for (int i = 0; i < R; ++i) acc[set][i][0] = acc[set][i][1] = _mm256_setzero_si256();
    }
    // Columns 4 * quad .. 4 * quad + 3 of the 16 rows (two vectors of 8) into every x row.
    const auto dot_quad = [&](int quad, __m256i w0, __m256i w1) {
      auto& a = acc[quad % kSets];
#pragma GCC unroll 6
      for (int i = 0; i < R; ++i) {
        const int64_t at = i * t.ldx + b * 32 + quad * 4;
        if constexpr (Q8) {
          const __m256i xu = vnni256_broadcast4(t.xu + at);
          a[i][0] = Dot::apply(a[i][0], xu, w0);
          a[i][1] = Dot::apply(a[i][1], xu, w1);
        } else {
          const __m256i xs = vnni256_broadcast4(t.xq + at);
          a[i][0] = Dot::apply(a[i][0], w0, xs);
          a[i][1] = Dot::apply(a[i][1], w1, xs);
        }
      }
    };
    if constexpr (kNibbles) {
      const __m256i low4 = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
      for (int pair = 0; pair < 4; ++pair) {  // low nibbles: quad 2 pair, high: 2 pair + 1
        const uint8_t* at = weights + pair * kQuadBytes;
        dot_quad(2 * pair, _mm256_and_si256(vnni256_load(at), low4),
                 _mm256_and_si256(vnni256_load(at + 32), low4));
        dot_quad(2 * pair + 1, _mm256_and_si256(_mm256_srli_epi16(vnni256_load(at), 4), low4),
                 _mm256_and_si256(_mm256_srli_epi16(vnni256_load(at + 32), 4), low4));
      }
    } else {
#pragma GCC unroll 8
      for (int quad = 0; quad < 8; ++quad) {
        dot_quad(quad, vnni256_load(weights + quad * kQuadBytes),
                 vnni256_load(weights + quad * kQuadBytes + 32));
      }
    }
    __m256 s0, s1;
    if constexpr (kStored) {
      const uint8_t* fp16 = block + kScalesAt + t.half * kVnni256Rows * 2;
      s0 = vnni256_widen_scales(fp16);
      s1 = vnni256_widen_scales(fp16 + 16);
    } else {
      s0 = _mm256_loadu_ps(scales), s1 = _mm256_loadu_ps(scales + 8);
    }
    for (int set = 1; set < kSets; ++set) {
      for (int i = 0; i < R; ++i) {
        acc[0][i][0] = _mm256_add_epi32(acc[0][i][0], acc[set][i][0]);
        acc[0][i][1] = _mm256_add_epi32(acc[0][i][1], acc[set][i][1]);
      }
    }
    for (int i = 0; i < R; ++i) {
      const __m256i d0 = acc[0][i][0], d1 = acc[0][i][1];
      const __m256 sx = _mm256_set1_ps(t.xscale[i * t.ldxs + b]);
      float* c = t.c + i * t.ldc;
      _mm256_storeu_ps(
          c, _mm256_fmadd_ps(_mm256_cvtepi32_ps(d0), _mm256_mul_ps(s0, sx), _mm256_loadu_ps(c)));
      _mm256_storeu_ps(c + 8, _mm256_fmadd_ps(_mm256_cvtepi32_ps(d1), _mm256_mul_ps(s1, sx),
                                              _mm256_loadu_ps(c + 8)));
    }
  }
}

template <class Dot, Vnni256Weights W>
void vnni256_tile_rows(const Int8Tile& t) {
  switch (t.rows) {
    case 1:
      return vnni256_tile<Dot, 1, W>(t);
    case 2:
      return vnni256_tile<Dot, 2, W>(t);
    case 3:
      return vnni256_tile<Dot, 3, W>(t);
    case 4:
      return vnni256_tile<Dot, 4, W>(t);
    case 5:
      return vnni256_tile<Dot, 5, W>(t);
    default:  // kInt8AvxVnniXRows: 12 accumulators, 2 weight vectors and x in the 16 registers
      return vnni256_tile<Dot, 6, W>(t);
  }
}

}  // namespace
}  // namespace qvl::ops::kernels
