// q8 / q4 GEMV and small-batch run kernels, AVX2 + FMA + F16C (see GroupRun in packed_kernels.h).
// Called only when the CPU has them (see best_isa); this file must not define or instantiate any
// inline function from a shared header (see packed_kernels.h).
//
// One arithmetic per output, the int8 GEMM's (int8_gemm_avx2.cpp): for each block b in order,
//   c = fma((float)dot_int32(row, x, b), w_scale(row, b) * x_scale(b), c)
// with the block's whole integer dot product (exact in int32, q4 offset included) converted once.
// So an output row has the same bits alone, in any small batch and in the GEMM (m >= 16).
// Lanes are weight rows: a call takes a pair of groups (8 rows, one fp32 vector per x row); a run
// with an odd group count computes its last group twice and drops the copy.
//   q4: per block, the pair's tile is transposed once so that each 32-bit lane holds 4
//   consecutive bytes of one row, then every x row (up to 8 per pass) multiplies it with its 4
//   bytes broadcast (the GEMM's scheme: no horizontal adds per x row, unpacking shared).
//   q8: the row-major tile against the whole x block (sign trick), rows gathered by unpacks and
//   adds. AVX2 has no 8-bit product that sums into int32 without a sign fix-up or a widening; the
//   transposed form (x widened to int16, vpmaddwd) measured no faster on Zen 3 (~50-60 GOP per
//   CPU-second) and needs x prepared.
#include <immintrin.h>

#include <cstring>

#include "ops/packed_kernels.h"
#include "ops/x86/packed_kernels_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

// x rows per pass over a pair's blocks (q4: 8 int16 sums, 4 transposed quads and 2 unpacked
// nibble vectors fill the 16 registers; measured faster than 6 at 8 rows).
constexpr int kQ4XRows = 8;
constexpr int kQ8XRows = 6;
static_assert(kQ4XRows <= kMaxRunXRows && kQ8XRows <= kMaxRunXRows);

inline void prefetch(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
}

inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

inline __m256i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Pins v to a register here at no cost (without it GCC reassociates the unrolled integer sums and
// spills the products, as in the int8 GEMM).
inline void keep_in_register(__m256i& v) {
  asm("" : "+x"(v));
}

// The two groups of a call (b == a when the run has one group left) and where they stream from.
struct Pair {
  const uint8_t* a;
  const uint8_t* b;
  int64_t scale_bytes;
  int64_t nb;
  int64_t ahead;  // prefetch distance: the same block of the groups the next call reads
};

// fp16 scales of block blk of both groups as fp32 [a0 a1 a2 a3 b0 b1 b2 b3].
inline __m256 pair_scales(const Pair& p, int64_t blk) {
  const __m128i sa = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p.a + blk * kScaleBytes));
  const __m128i sb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p.b + blk * kScaleBytes));
  return _mm256_cvtph_ps(_mm_unpacklo_epi64(sa, sb));
}

// The common chain step: c = fma(float(dot), w_scale * x_scale, c).
inline __m256 scale_step(__m256i dot, __m256 ws, float xs, __m256 c) {
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(ws, _mm256_set1_ps(xs)), c);
}

// q4 (16 bytes per row: byte j = column j in the low nibble, j + 16 in the high one). The 4 rows
// of a group's tile transposed by 32-bit lanes, both groups: lane order [a0 a2 b0 b2 a1 a3 b1 b3].
// Per x row, nibbles (q + 8, <= 15) times x by vpmaddubsw (pairs <= 3810, 8 of them summed in
// int16: <= 30480), widened once, minus 8 * sum(x): the exact block dot.
template <int X>
inline void q4_block(const Pair& p, const QuantX& x, int64_t b, __m256 (&acc)[X]) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const __m256i to_lanes = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const uint8_t* ta = p.a + p.scale_bytes + b * kQ4TileBytes;
  const uint8_t* tb = p.b + p.scale_bytes + b * kQ4TileBytes;
  prefetch(ta + p.ahead);
  prefetch(tb + p.ahead);
  const __m256i a01 = load256(ta), a23 = load256(ta + 32);
  const __m256i b01 = load256(tb), b23 = load256(tb + 32);
  const __m256i t0 = _mm256_unpacklo_epi32(a01, a23), t1 = _mm256_unpackhi_epi32(a01, a23);
  const __m256i u0 = _mm256_unpacklo_epi32(b01, b23), u1 = _mm256_unpackhi_epi32(b01, b23);
  const __m256i quad[4] = {_mm256_unpacklo_epi64(t0, u0), _mm256_unpackhi_epi64(t0, u0),
                           _mm256_unpacklo_epi64(t1, u1), _mm256_unpackhi_epi64(t1, u1)};
  __m256i dot[X];
  for (int i = 0; i < X; ++i) dot[i] = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m256i lo = _mm256_and_si256(quad[c], low4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(quad[c], 4), low4);
#pragma GCC unroll 8
    for (int i = 0; i < X; ++i) {
      const int8_t* xq = x.q + (i * x.stride_blocks + b) * kCols;
      dot[i] = _mm256_add_epi16(dot[i], _mm256_maddubs_epi16(lo, broadcast4(xq + 4 * c)));
      dot[i] = _mm256_add_epi16(dot[i], _mm256_maddubs_epi16(hi, broadcast4(xq + 16 + 4 * c)));
      keep_in_register(dot[i]);
    }
  }
  const __m256 ws = _mm256_permutevar8x32_ps(pair_scales(p, b), to_lanes);
  for (int i = 0; i < X; ++i) {
    const int64_t xb = i * x.stride_blocks + b;
    const __m256i d =
        _mm256_sub_epi32(_mm256_madd_epi16(dot[i], ones), _mm256_set1_epi32(8 * x.sum[xb]));
    acc[i] = scale_step(d, ws, x.scale[xb], acc[i]);
  }
}

// P pairs (the GEMV: all 4 groups of a run in one pass over the blocks, so their prefetches go
// out together) x X rows of x; res[p * X + i] in row order.
template <int P, int X>
void q4_pairs(const Pair* ps, const QuantX& x, float (*res)[8]) {
  __m256 acc[P][X];
  for (int p = 0; p < P; ++p) {
    for (int i = 0; i < X; ++i) acc[p][i] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < ps[0].nb; ++b) {
    for (int p = 0; p < P; ++p) q4_block<X>(ps[p], x, b, acc[p]);
  }
  const __m256i to_rows = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int p = 0; p < P; ++p) {
    for (int i = 0; i < X; ++i) {
      _mm256_storeu_ps(res[p * X + i], _mm256_permutevar8x32_ps(acc[p][i], to_rows));
    }
  }
}

// [r0 r1 r2 r3 | r0 r1 r2 r3] sums of the low and high 128-bit lanes of four rows' int32
// vectors: unpacks and adds (vphaddd takes more uops on Zen 3 than the unpacks and the add).
inline __m256i gather_rows(const __m256i (&d)[kRows]) {
  const __m256i a01 = _mm256_add_epi32(_mm256_unpacklo_epi32(d[0], d[1]),
                                       _mm256_unpackhi_epi32(d[0], d[1]));  // r0 r1 r0 r1
  const __m256i a23 = _mm256_add_epi32(_mm256_unpacklo_epi32(d[2], d[3]),
                                       _mm256_unpackhi_epi32(d[2], d[3]));  // r2 r3 r2 r3
  return _mm256_add_epi32(_mm256_unpacklo_epi64(a01, a23), _mm256_unpackhi_epi64(a01, a23));
}

// q8 by rows (no transposition): |x| times the weights with the sign of x (vpmaddubsw, pairs
// within int16 as |q| <= 127), pairs to int32, each group's 4 rows gathered by unpacks and adds
// into [r0 r1 r2 r3] per 16-column half, the halves of both groups added: [a0 a1 a2 a3 b0 b1 b2
// b3], the whole block dot. X rows of x share each block's prefetches; the tiles come from L1
// again.
template <int X>
inline void q8_block(const Pair& p, const QuantX& x, int64_t b, __m256 (&acc)[X]) {
  const __m256i ones = _mm256_set1_epi16(1);
  const uint8_t* tiles[2] = {p.a + p.scale_bytes + b * kQ8TileBytes,
                             p.b + p.scale_bytes + b * kQ8TileBytes};
  for (int g = 0; g < 2; ++g) {
    prefetch(tiles[g] + p.ahead);
    prefetch(tiles[g] + p.ahead + 64);
  }
  const __m256 ws = pair_scales(p, b);
  for (int i = 0; i < X; ++i) {
    const int64_t xb = i * x.stride_blocks + b;
    const __m256i xv = load256(x.q + xb * kCols);
    const __m256i ax = _mm256_abs_epi8(xv);
    __m256i halves[2];
    for (int g = 0; g < 2; ++g) {
      __m256i d[kRows];
      for (int r = 0; r < kRows; ++r) {
        const __m256i signed_w = _mm256_sign_epi8(load256(tiles[g] + r * kCols), xv);
        d[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(ax, signed_w), ones);
      }
      halves[g] = gather_rows(d);
    }
    const __m256i dot = _mm256_add_epi32(_mm256_permute2x128_si256(halves[0], halves[1], 0x20),
                                         _mm256_permute2x128_si256(halves[0], halves[1], 0x31));
    acc[i] = scale_step(dot, ws, x.scale[xb], acc[i]);
  }
}

template <int P, int X>
void q8_pairs(const Pair* ps, const QuantX& x, float (*res)[8]) {
  __m256 acc[P][X];
  for (int p = 0; p < P; ++p) {
    for (int i = 0; i < X; ++i) acc[p][i] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < ps[0].nb; ++b) {
    for (int p = 0; p < P; ++p) q8_block<X>(ps[p], x, b, acc[p]);
  }
  for (int p = 0; p < P; ++p) {
    for (int i = 0; i < X; ++i) _mm256_storeu_ps(res[p * X + i], acc[p][i]);
  }
}

QuantX rows_from(const QuantX& x, int i) {
  const int64_t b = i * x.stride_blocks;
  return {x.q + b * kCols, x.scale + b, x.sum + b, x.stride_blocks, x.scaled_sum + b};
}

// Kernel<1, X> for X = n in [1, kMaxX].
template <int kMaxX, template <int, int> class Kernel>
void with_rows(int n, const Pair& p, const QuantX& x, float (*res)[8]) {
  if constexpr (kMaxX > 1) {
    if (n < kMaxX) return with_rows<kMaxX - 1, Kernel>(n, p, x, res);
  }
  Kernel<1, kMaxX>::run(&p, x, res);
}

// The run's groups as pairs (the last one doubled when count is odd).
int run_pairs(const GroupRun& w, Pair (&ps)[kMaxRunGroups / 2]) {
  int n = 0;
  for (int g = 0; g < w.count; g += 2, ++n) {
    const uint8_t* a = w.first + g * w.group_bytes;
    ps[n] = {a, g + 1 < w.count ? a + w.group_bytes : a, w.scale_bytes, w.nb,
             w.count * w.group_bytes};
  }
  return n;
}

// Kernel<P, X>::run(pairs, x, res) over the run: the GEMV (nx == 1) as one call of all its pairs;
// small batches pair by pair, in calls of at most kMaxX rows of x. out as in GroupRun.
template <int kMaxX, template <int, int> class Kernel>
void run_kernel(const GroupRun& w, const QuantX& x, int nx, float* out) {
  Pair ps[kMaxRunGroups / 2];
  const int npairs = run_pairs(w, ps);
  const auto scatter = [&](const float(*res)[8], int pair, int i, int row) {
    const int g = 2 * pair;
    std::memcpy(out + (row * w.count + g) * kRows, res[i], (g + 1 < w.count ? 8 : 4) * 4);
  };
  if (nx == 1) {
    float res[kMaxRunGroups / 2][8];
    if (npairs == 2) {
      Kernel<2, 1>::run(ps, x, res);
    } else {
      Kernel<1, 1>::run(ps, x, res);
    }
    for (int p = 0; p < npairs; ++p) scatter(res, p, p, 0);
    return;
  }
  for (int p = 0; p < npairs; ++p) {
    for (int i0 = 0; i0 < nx; i0 += kMaxX) {
      const int n = nx - i0 < kMaxX ? nx - i0 : kMaxX;
      float res[kMaxX][8];
      with_rows<kMaxX, Kernel>(n, ps[p], rows_from(x, i0), res);
      for (int i = 0; i < n; ++i) scatter(res, p, i, i0 + i);
    }
  }
}

template <int P, int X>
struct Q4 {
  static void run(const Pair* ps, const QuantX& x, float (*res)[8]) { q4_pairs<P, X>(ps, x, res); }
};
template <int P, int X>
struct Q8 {
  static void run(const Pair* ps, const QuantX& x, float (*res)[8]) { q8_pairs<P, X>(ps, x, res); }
};

}  // namespace

void q8_run_avx2(const GroupRun& w, const QuantX& x, int nx, float* out) {
  run_kernel<kQ8XRows, Q8>(w, x, nx, out);
}

void q4_run_avx2(const GroupRun& w, const QuantX& x, int nx, float* out) {
  run_kernel<kQ4XRows, Q4>(w, x, nx, out);
}

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
