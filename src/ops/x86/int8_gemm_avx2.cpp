// AVX2 micro-kernels of the int8 GEMM (see int8_gemm_kernels.h): x rows [1, R] x 16 weight rows
// (two vectors of 8 rows), x broadcast 4 bytes at a time. All results are exact in int32:
//   q8 (kPairs16): vpmaddwd on weights and x widened to int16, 2 columns per 32-bit lane: a pair
//       is at most 2 * 127 * 127, and no operand needs a sign fix-up. AVX2 has no 8-bit multiply
//       that sums into int32, so vpmaddwd (16 products per instruction) matches the throughput of
//       vpmaddubsw + vpmaddwd (32 per two) and leaves the other two vector pipes to the vpaddd.
//       Measured on Zen 3 (2026-11): 2 vpmaddwd + 2 vpaddd per 32 multiply-adds run at ~84% of
//       the probe's vpmaddubsw + vpmaddwd + vpaddd rate (4 ops filling 4 pipes; presumably some
//       vpaddd issue on the multiply pipes), whatever the tile (2 or 4 weight vectors x 3-6 rows)
//       or the order; x broadcasts cost no more than plain loads. Every exact q8 x q8 form
//       on AVX2 needs 4 vector ops per 32 (vpmaddubsw saturates on x + 128, sign tricks and
//       nibble splits add the op back), so the tile is written in assembly to lose nothing else.
//   q4: the stored nibble q + 8 (<= 15) times x (|x| <= 127) by vpmaddubsw: a pair is at most
//       3810, so the 8 steps of a block (30480) are summed in int16 and widened once per block;
//       the offset is taken off as 8 * sum(x) of the block. One vpmaddubsw + vpaddw per 32
//       multiply-adds needs no vpmaddwd in the loop, so 6 rows (12 accumulators) are taken at
//       once, pinned to registers.
// Per block of 32 columns the int32 dot products are scaled by (weight scale * x scale) and added
// to the fp32 outputs in c (there are not enough registers to keep them, so c stays in L1). Every
// x row goes through the same instructions whatever R and its place in the tile.
// Called only when the CPU has AVX2/FMA; no shared inline functions (see packed_kernels.h).
#include <immintrin.h>

#include <cstring>

#include "ops/int8_gemm_kernels.h"
#include "ops/x86/int8_gemm_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx2,fma,f16c")

#include "ops/x86/int8_gemm_vnni256_tile.h"

namespace qvl::ops::kernels {
namespace {

constexpr int64_t kNr = 16;

inline __m256i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline __m256i load(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Pins v to a register at this point at no cost. Without it GCC reassociates the unrolled integer
// sums, computes every product first and spills most of them.
inline void keep_in_register(__m256i& v) {
  asm("" : "+x"(v));
}

// c[i][0..16) += dot[i][v] * weight scales (s0: rows 0-7, s1: rows 8-15) * x scale of row i,
// for block b.
template <int R>
inline void scale_into_c(const float* xscale, int64_t ldxs, float* __restrict c, int64_t ldc,
                         __m256 s0, __m256 s1, const __m256i (&dot)[R][2]) {
  for (int i = 0; i < R; ++i) {
    const __m256 sx = _mm256_set1_ps(xscale[i * ldxs]);
    float* ci = c + i * ldc;
    _mm256_storeu_ps(ci, _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i][0]), _mm256_mul_ps(s0, sx),
                                         _mm256_loadu_ps(ci)));
    _mm256_storeu_ps(ci + 8, _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i][1]), _mm256_mul_ps(s1, sx),
                                             _mm256_loadu_ps(ci + 8)));
  }
}

// Stored-strip tiles read a 16-row half t.half of a 32-row strip's block: 64 bytes t.half * 64
// into each of its 128-byte pieces (quads or nibble pairs), and the fp16 scales at scales_at.
// Prefetches the half's `pieces` and the scales t.prefetch_ahead bytes on, when asked.
inline void prefetch_stored_half(const Int8Tile& t, const uint8_t* block, int64_t pieces,
                                 int64_t scales_at) {
  if (t.prefetch_ahead == 0) return;
  const uint8_t* ahead = block + t.prefetch_ahead + t.half * 64;
  for (int64_t l = 0; l < pieces; ++l) __builtin_prefetch(ahead + l * 128);
  __builtin_prefetch(block + t.prefetch_ahead + scales_at);
}

// scale_into_c for block b of a stored strip's half, whose rows' fp16 scales are at scales_at.
template <int R>
inline void scale_stored_into_c(const Int8Tile& t, int64_t b, const uint8_t* block,
                                int64_t scales_at, const __m256i (&dot)[R][2]) {
  const auto* fp16 = reinterpret_cast<const __m128i*>(block + scales_at + t.half * 32);
  scale_into_c<R>(t.xscale + b, t.ldxs, t.c, t.ldc, _mm256_cvtph_ps(_mm_loadu_si128(fp16)),
                  _mm256_cvtph_ps(_mm_loadu_si128(fp16 + 1)), dot);
}

// q8 on the int16 panel: per block 16 steps of 2 columns, vpmaddwd + vpaddd per product vector,
// each block in assembly: GCC copied or spilled the twelve accumulators of an intrinsics version
// and compiled its scale step through the stack. Registers: ymm0-11 the accumulators of rows 0-5
// (two per row), ymm12/13 the weight pair vectors, ymm15 the broadcast x pair, which its second
// product overwrites, ymm14 the first product. The first pair writes the accumulators instead of
// adding to zero. Then, as scale_into_c: ymm12/13 the weight scales, ymm14 the row's x scale, ymm15
// their product, and c = fma(float(dot), w scale * x scale, c) (both products commute exactly).
// Rows past R are left out at assembly time (.if on the immediate R), so every R runs the same
// instructions per row. Row i's x, x scale and c are at base0 + i * stride for i < 3 and base3 + (i
// - 3) * stride.
// clang-format off
#define QVL_Q8_ROW(row, a0, a1, x)                          \
  ".if " #row " < %c[rows]\n\t"                             \
  "vpbroadcastd \\p*4" x ", %%ymm15\n\t"                   \
  ".if \\p == 0\n\t"                                        \
  "vpmaddwd %%ymm12, %%ymm15, %%ymm" #a0 "\n\t"              \
  "vpmaddwd %%ymm13, %%ymm15, %%ymm" #a1 "\n\t"              \
  ".else\n\t"                                               \
  "vpmaddwd %%ymm12, %%ymm15, %%ymm14\n\t"                   \
  "vpmaddwd %%ymm13, %%ymm15, %%ymm15\n\t"                   \
  "vpaddd %%ymm14, %%ymm" #a0 ", %%ymm" #a0 "\n\t"          \
  "vpaddd %%ymm15, %%ymm" #a1 ", %%ymm" #a1 "\n\t"          \
  ".endif\n\t"                                              \
  ".endif\n\t"
// c[0..16) of a row = fma(float(dot), w scale * x scale, c): dots in ymm a0/a1, the weight
// scales in ymm12/13, the x scale at xs (also used by StoredQ8X7Asm below).
#define QVL_SCALE_INTO_C(a0, a1, xs, c)                     \
  "vbroadcastss " xs ", %%ymm14\n\t"                        \
  "vmulps %%ymm14, %%ymm12, %%ymm15\n\t"                     \
  "vcvtdq2ps %%ymm" #a0 ", %%ymm" #a0 "\n\t"                \
  "vfmadd213ps " c ", %%ymm15, %%ymm" #a0 "\n\t"            \
  "vmovups %%ymm" #a0 ", " c "\n\t"                         \
  "vmulps %%ymm14, %%ymm13, %%ymm15\n\t"                     \
  "vcvtdq2ps %%ymm" #a1 ", %%ymm" #a1 "\n\t"                \
  "vfmadd213ps 32" c ", %%ymm15, %%ymm" #a1 "\n\t"          \
  "vmovups %%ymm" #a1 ", 32" c "\n\t"
#define QVL_Q8_SCALE(row, a0, a1, xs, c)                    \
  ".if " #row " < %c[rows]\n\t"                             \
  QVL_SCALE_INTO_C(a0, a1, xs, c)                           \
  ".endif\n\t"
// clang-format on

struct Q8PairsAsm {
  static constexpr Int8PanelWeights kWeights = Int8PanelWeights::kPairs16;
  template <int R>
  static void run(const Int8Tile& t) {
    static_assert(R >= 1 && R <= 6, "six rows of two accumulators fill ymm0-11");
    constexpr int64_t block_bytes = int8_strip_block_bytes(kNr, kWeights);
    static_assert(block_bytes == 64 * 16 + 64 + 64, "weights at 0, scales at 1024 (asm below)");
    // Rows 3-5 are based at row 3 (at row 0 when there is no row 3: never read then).
    const int64_t third = R > 3 ? 3 : 0;
    float* const c0 = t.c;
    float* const c3 = t.c + third * t.ldc;
    for (int64_t b = 0; b < t.nblocks; ++b) {
      const uint8_t* block = t.strip + b * block_bytes;
      const int16_t* x0 = t.xw + b * 32;
      const int16_t* x3 = x0 + third * t.ldx;
      const float* xs0 = t.xscale + b;
      const float* xs3 = xs0 + third * t.ldxs;
      // clang-format off
      asm(".irp p,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n\t"
          "vmovdqu \\p*64(%[w]), %%ymm12\n\t"
          "vmovdqu \\p*64+32(%[w]), %%ymm13\n\t"
          QVL_Q8_ROW(0, 0, 1, "(%[x0])") QVL_Q8_ROW(1, 2, 3, "(%[x0],%[ldx],2)")
          QVL_Q8_ROW(2, 4, 5, "(%[x0],%[ldx],4)") QVL_Q8_ROW(3, 6, 7, "(%[x3])")
          QVL_Q8_ROW(4, 8, 9, "(%[x3],%[ldx],2)") QVL_Q8_ROW(5, 10, 11, "(%[x3],%[ldx],4)")
          ".endr\n\t"
          "vmovups 1024(%[w]), %%ymm12\n\t"
          "vmovups 1056(%[w]), %%ymm13\n\t"
          QVL_Q8_SCALE(0, 0, 1, "(%[xs0])", "(%[c0])")
          QVL_Q8_SCALE(1, 2, 3, "(%[xs0],%[ldxs],4)", "(%[c0],%[ldc],4)")
          QVL_Q8_SCALE(2, 4, 5, "(%[xs0],%[ldxs],8)", "(%[c0],%[ldc],8)")
          QVL_Q8_SCALE(3, 6, 7, "(%[xs3])", "(%[c3])")
          QVL_Q8_SCALE(4, 8, 9, "(%[xs3],%[ldxs],4)", "(%[c3],%[ldc],4)")
          QVL_Q8_SCALE(5, 10, 11, "(%[xs3],%[ldxs],8)", "(%[c3],%[ldc],8)")
          :
          : [w] "r"(block), [x0] "r"(x0), [x3] "r"(x3), [ldx] "r"(t.ldx), [xs0] "r"(xs0),
            [xs3] "r"(xs3), [ldxs] "r"(t.ldxs), [c0] "r"(c0), [c3] "r"(c3), [ldc] "r"(t.ldc),
            [rows] "i"(R)
          : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
            "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory");
      // clang-format on
    }
  }
};
#undef QVL_Q8_ROW
#undef QVL_Q8_SCALE

// The byte-panel kernels: per block 8 steps of 4 columns; Step multiplies one weight vector with
// one row's broadcast x into the accumulator and Finish turns it into the block's int32 dots.
template <class Step>
void byte_tile_block(const Int8Tile& t, int64_t b, __m256i (&acc)[Step::kRows][2]) {
  constexpr int R = Step::kRows;
  const uint8_t* block = t.strip + b * int8_strip_block_bytes(kNr);
  const int8_t* xb = t.xq + b * 32;
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int quad = 0; quad < 8; ++quad) {
    const __m256i w0 = load(block + quad * 64), w1 = load(block + quad * 64 + 32);
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) {
      const __m256i xs = broadcast4(xb + i * t.ldx + quad * 4);
      Step::step(acc[i], w0, w1, xs);
    }
  }
  for (int i = 0; i < R; ++i) Step::finish(acc[i], t.xsum[i * t.ldxs + b]);
  const auto* scales = reinterpret_cast<const float*>(block + 32 * kNr);
  scale_into_c<R>(t.xscale + b, t.ldxs, t.c, t.ldc, _mm256_loadu_ps(scales),
                  _mm256_loadu_ps(scales + 8), acc);
}

// The accumulators are pinned to registers: otherwise GCC spills every product of a block to the
// stack before summing them.
template <int R>
struct Q4Step {
  static constexpr int kRows = R;
  static void step(__m256i (&acc)[2], __m256i w0, __m256i w1, __m256i xs) {
    acc[0] = _mm256_add_epi16(acc[0], _mm256_maddubs_epi16(w0, xs));
    acc[1] = _mm256_add_epi16(acc[1], _mm256_maddubs_epi16(w1, xs));
    keep_in_register(acc[0]);
    keep_in_register(acc[1]);
  }
  static void finish(__m256i (&acc)[2], int32_t xsum) {
    const __m256i ones = _mm256_set1_epi16(1), offset = _mm256_set1_epi32(8 * xsum);
    acc[0] = _mm256_sub_epi32(_mm256_madd_epi16(acc[0], ones), offset);
    acc[1] = _mm256_sub_epi32(_mm256_madd_epi16(acc[1], ones), offset);
  }
};

// q4 on a stored kQ4Strips strip's half (rows 16 * t.half ..) in place, for decode and batches
// below kGemmMinRows: as Q4Step, each nibble q + 8 times x by vpmaddubsw, summed in int16 over the
// block's 8 quads and widened once, so 32 multiply-adds cost one vpmaddubsw + vpaddw where the
// 256-bit VNNI tile with vpdpbusd as vpmaddubsw + vpmaddwd by ones + vpaddd (the tile it replaced)
// needs two multiply-pipe instructions (AVX2 CPUs have two such pipes). The int32 dots are equal,
// so the outputs are the VNNI tile's bits.
struct StoredQ4Tile {
  template <int R>
  static void run(const Int8Tile& t) {
    static_assert(kQ4StripBlockBytes == 576 && kStripRows == 32, "strip layout (below)");
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < t.nblocks; ++b) {
      // Per block: 4 nibble pairs of [32 rows][4 bytes] (this half's 16 rows 64 bytes in), then
      // the 32 rows' fp16 scales.
      const uint8_t* block = t.strip + b * kQ4StripBlockBytes;
      prefetch_stored_half(t, block, 4, 512);
      const uint8_t* w = block + t.half * 64;
      const int8_t* xb = t.xq + b * 32;
      __m256i acc[R][2];
      for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int quad = 0; quad < 8; ++quad) {  // low nibbles of pair p: quad 2p, high: 2p + 1
        __m256i v0 = load(w + quad / 2 * 128), v1 = load(w + quad / 2 * 128 + 32);
        if (quad % 2 == 1) v0 = _mm256_srli_epi16(v0, 4), v1 = _mm256_srli_epi16(v1, 4);
        const __m256i w0 = _mm256_and_si256(v0, low4), w1 = _mm256_and_si256(v1, low4);
#pragma GCC unroll 6
        for (int i = 0; i < R; ++i) {
          Q4Step<R>::step(acc[i], w0, w1, broadcast4(xb + i * t.ldx + quad * 4));
        }
      }
      for (int i = 0; i < R; ++i) Q4Step<R>::finish(acc[i], t.xsum[i * t.ldxs + b]);
      scale_stored_into_c<R>(t, b, block, 512, acc);
    }
  }
};

// q8 on a stored kQ8Strips strip's half in place, for decode and batches below kGemmMinRows (the
// output head's, 311 M weights a row in a 2B model): each stored byte q + 128 is 16 * hi + lo in
// nibbles, each nibble times x by vpmaddubsw summed in int16 over the block as in StoredQ4Tile
// (two sets of accumulators, so 3 x rows fill the registers), then dot = 16 * sum(hi) + sum(lo)
// less 128 * sum(x). 32 multiply-adds cost 2 vpmaddubsw + 2 vpaddw against 9 instructions for the
// exact vpdpbusd emulation it replaced; the int32 dots, and so the bits, are every kernel's.
struct StoredQ8NibbleTile {
  template <int R>
  static void run(const Int8Tile& t) {
    static_assert(kStripBlockBytes == 1088 && kStripRows == 32, "strip layout (below)");
    const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    const __m256i sixteens = _mm256_set1_epi16(16);
    for (int64_t b = 0; b < t.nblocks; ++b) {
      // Per block: 8 quads of [32 rows][4 bytes] (this half's 16 rows 64 bytes in), then the 32
      // rows' fp16 scales.
      const uint8_t* block = t.strip + b * kStripBlockBytes;
      prefetch_stored_half(t, block, 8, 1024);
      const uint8_t* w = block + t.half * 64;
      const int8_t* xb = t.xq + b * 32;
      __m256i lo[R][2], hi[R][2];
      for (int i = 0; i < R; ++i) {
        lo[i][0] = lo[i][1] = hi[i][0] = hi[i][1] = _mm256_setzero_si256();
      }
#pragma GCC unroll 8
      for (int quad = 0; quad < 8; ++quad) {
        const __m256i v0 = load(w + quad * 128), v1 = load(w + quad * 128 + 32);
        __m256i w0 = _mm256_and_si256(v0, low4), w1 = _mm256_and_si256(v1, low4);
#pragma GCC unroll 3
        for (int i = 0; i < R; ++i) {
          Q4Step<R>::step(lo[i], w0, w1, broadcast4(xb + i * t.ldx + quad * 4));
        }
        w0 = _mm256_and_si256(_mm256_srli_epi16(v0, 4), low4);
        w1 = _mm256_and_si256(_mm256_srli_epi16(v1, 4), low4);
#pragma GCC unroll 3
        for (int i = 0; i < R; ++i) {
          Q4Step<R>::step(hi[i], w0, w1, broadcast4(xb + i * t.ldx + quad * 4));
        }
      }
      __m256i dot[R][2];
      for (int i = 0; i < R; ++i) {
        const __m256i offset = _mm256_set1_epi32(128 * t.xsum[i * t.ldxs + b]);
        for (int v = 0; v < 2; ++v) {
          dot[i][v] = _mm256_sub_epi32(_mm256_add_epi32(_mm256_madd_epi16(hi[i][v], sixteens),
                                                        _mm256_madd_epi16(lo[i][v], ones)),
                                       offset);
        }
      }
      scale_stored_into_c<R>(t, b, block, 1024, dot);
    }
  }
};

template <template <int> class Step>
struct ByteTile {
  template <int R>
  static void run(const Int8Tile& t) {
    for (int64_t b = 0; b < t.nblocks; ++b) {
      __m256i acc[R][2];
      byte_tile_block<Step<R>>(t, b, acc);
    }
  }
};

// Kernel::run<R> for R = t.rows (rows past MaxRows never come).
template <class Kernel, int MaxRows>
void run_rows(const Int8Tile& t) {
  if constexpr (MaxRows > 1) {
    if (t.rows < MaxRows) return run_rows<Kernel, MaxRows - 1>(t);
  }
  Kernel::template run<MaxRows>(t);
}

// vpdpbusd in AVX2, exactly: bytes widened to 16 bit (a unsigned, b signed), even and odd pairs
// through vpmaddwd (|products| <= 255 * 128, no saturation).
struct EmulatedVpdpbusd {
  static __m256i apply(__m256i acc, __m256i a, __m256i b) {
    const __m256i low8 = _mm256_set1_epi16(0x00ff);
    const __m256i a_even = _mm256_and_si256(a, low8), a_odd = _mm256_srli_epi16(a, 8);
    const __m256i b_even = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8);
    const __m256i b_odd = _mm256_srai_epi16(b, 8);
    return _mm256_add_epi32(
        acc, _mm256_add_epi32(_mm256_madd_epi16(a_even, b_even), _mm256_madd_epi16(a_odd, b_odd)));
  }
};

// The 7-bit kernel (int8_tile_q8s_avx2_x7) on a stored q8 strip's half in place, a block at a
// time in assembly (as Q8PairsAsm, GCC spilled the intrinsics version's accumulators): per quad
// of 4 columns, for each row, vpmaddubsw(q + 128, x) (unsigned weights, x in [-63, 63]: an int16
// pair is at most 2 * 255 * 63, exact), vpmaddwd by ones, vpaddd. Then per row: the dots less
// 128 * sum(x), and c = fma(float(dot), w scale * x scale, c) as every kernel. The rows' offsets
// and x scales of the block come in `fix` (one register for all rows). Registers: ymm0-9 the
// accumulators of rows 0-4, ymm11 the ones, ymm12/13 the weights, ymm14/15 x and the products.
// Five rows, not six with ones read from memory: the same speed (BM_Int8Gemm vision shapes, Zen 5
// at AVX2, ~210 GOP/s per core against the probe's 258; kAvx2's q8 tile 184).
// clang-format off
#define QVL_X7_ROW(row, a0, a1, x)                          \
  ".if " #row " < %c[rows]\n\t"                             \
  "vpbroadcastd \\p*4" x ", %%ymm15\n\t"                   \
  "vpmaddubsw %%ymm15, %%ymm12, %%ymm14\n\t"                \
  "vpmaddubsw %%ymm15, %%ymm13, %%ymm15\n\t"                \
  ".if \\p == 0\n\t"                                        \
  "vpmaddwd %%ymm11, %%ymm14, %%ymm" #a0 "\n\t"             \
  "vpmaddwd %%ymm11, %%ymm15, %%ymm" #a1 "\n\t"             \
  ".else\n\t"                                               \
  "vpmaddwd %%ymm11, %%ymm14, %%ymm14\n\t"                   \
  "vpmaddwd %%ymm11, %%ymm15, %%ymm15\n\t"                   \
  "vpaddd %%ymm14, %%ymm" #a0 ", %%ymm" #a0 "\n\t"          \
  "vpaddd %%ymm15, %%ymm" #a1 ", %%ymm" #a1 "\n\t"          \
  ".endif\n\t"                                              \
  ".endif\n\t"
#define QVL_X7_SCALE(row, a0, a1, c)                        \
  ".if " #row " < %c[rows]\n\t"                             \
  "vpbroadcastd 4*" #row "(%[fix]), %%ymm14\n\t"            \
  "vpaddd %%ymm14, %%ymm" #a0 ", %%ymm" #a0 "\n\t"          \
  "vpaddd %%ymm14, %%ymm" #a1 ", %%ymm" #a1 "\n\t"          \
  QVL_SCALE_INTO_C(a0, a1, "32+4*" #row "(%[fix])", c)      \
  ".endif\n\t"
// clang-format on

struct StoredQ8X7Asm {
  template <int R>
  static void run(const Int8Tile& t) {
    static_assert(R >= 1 && R <= 5, "five rows of two accumulators fill ymm0-9");
    static_assert(kStripBlockBytes == 1088 && kStripRows == 32, "strip layout (asm below)");
    alignas(32) static const int16_t ones[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    struct alignas(32) Fix {
      int32_t offset[8];  // -128 * sum(x) of the row's block
      float xscale[8];
    } fix{};
    const int64_t third = R > 3 ? 3 : 0;  // rows 3-4 are based at row 3 (row 0 if none)
    float* const c0 = t.c;
    float* const c3 = t.c + third * t.ldc;
    for (int64_t b = 0; b < t.nblocks; ++b) {
      const uint8_t* block = t.strip + b * kStripBlockBytes;
      prefetch_stored_half(t, block, 8, 1024);
      for (int i = 0; i < R; ++i) {
        fix.offset[i] = -128 * t.xsum[i * t.ldxs + b];
        fix.xscale[i] = t.xscale[i * t.ldxs + b];
      }
      const uint8_t* w = block + t.half * 64;
      const uint8_t* scales = block + 1024 + t.half * 32;
      const int8_t* x0 = t.xq + b * 32;
      const int8_t* x3 = x0 + third * t.ldx;
      // clang-format off
      asm("vmovdqa %[ones], %%ymm11\n\t"
          ".irp p,0,1,2,3,4,5,6,7\n\t"
          "vmovdqu \\p*128(%[w]), %%ymm12\n\t"
          "vmovdqu \\p*128+32(%[w]), %%ymm13\n\t"
          QVL_X7_ROW(0, 0, 1, "(%[x0])") QVL_X7_ROW(1, 2, 3, "(%[x0],%[ldx],1)")
          QVL_X7_ROW(2, 4, 5, "(%[x0],%[ldx],2)") QVL_X7_ROW(3, 6, 7, "(%[x3])")
          QVL_X7_ROW(4, 8, 9, "(%[x3],%[ldx],1)")
          ".endr\n\t"
          "vcvtph2ps (%[scales]), %%ymm12\n\t"
          "vcvtph2ps 16(%[scales]), %%ymm13\n\t"
          QVL_X7_SCALE(0, 0, 1, "(%[c0])")
          QVL_X7_SCALE(1, 2, 3, "(%[c0],%[ldc],4)")
          QVL_X7_SCALE(2, 4, 5, "(%[c0],%[ldc],8)")
          QVL_X7_SCALE(3, 6, 7, "(%[c3])")
          QVL_X7_SCALE(4, 8, 9, "(%[c3],%[ldc],4)")
          :
          : [w] "r"(w), [scales] "r"(scales), [x0] "r"(x0), [x3] "r"(x3), [ldx] "r"(t.ldx),
            [fix] "r"(&fix), [c0] "r"(c0), [c3] "r"(c3), [ldc] "r"(t.ldc),
            [ones] "m"(*reinterpret_cast<const int16_t(*)[16]>(ones)), [rows] "i"(R)
          : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
            "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory");
      // clang-format on
    }
  }
};
#undef QVL_X7_ROW
#undef QVL_X7_SCALE
#undef QVL_SCALE_INTO_C

}  // namespace

void int8_tile_q4s_avx2(const Int8Tile& t) {
  run_rows<StoredQ4Tile, kInt8Avx2Q4XRows>(t);
}

void int8_tile_q8s_avx2(const Int8Tile& t) {
  run_rows<StoredQ8NibbleTile, kInt8Avx2Q8sXRows>(t);
}

void int8_tile_q8s_avx2_x7(const Int8Tile& t) {
  run_rows<StoredQ8X7Asm, kInt8Avx2X7XRows>(t);
}

void int8_tile_q8_avxvnni_emulated(const Int8Tile& t) {
  vnni256_tile_rows<EmulatedVpdpbusd, Vnni256Weights::kQ8>(t);
}
void int8_tile_q4_avxvnni_emulated(const Int8Tile& t) {
  vnni256_tile_rows<EmulatedVpdpbusd, Vnni256Weights::kQ4>(t);
}
void int8_tile_q8s_avxvnni_emulated(const Int8Tile& t) {
  vnni256_tile_rows<EmulatedVpdpbusd, Vnni256Weights::kStoredQ8>(t);
}
void int8_tile_q4s_avxvnni_emulated(const Int8Tile& t) {
  vnni256_tile_rows<EmulatedVpdpbusd, Vnni256Weights::kStoredQ4>(t);
}

void int8_tile_q8_avx2(const Int8Tile& t) {
  run_rows<Q8PairsAsm, kInt8Avx2Q8XRows>(t);
}
void int8_tile_q4_avx2(const Int8Tile& t) {
  run_rows<ByteTile<Q4Step>, kInt8Avx2Q4XRows>(t);
}

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
