// Internal: per-ISA inner kernels of ops::matmul on PackedMatrix, and the quantizers they share.
// Only plain declarations here: the AVX2/AVX-512 translation units are compiled for their ISA, so
// no inline function may be shared with them (the linker could keep an AVX copy for everyone).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl::ops::kernels {

// Layout constants (see packed_matrix.h).
inline constexpr int64_t kRows = 4;                // rows per group
inline constexpr int64_t kCols = 32;               // columns per block
inline constexpr int64_t kScaleBytes = kRows * 2;  // fp16 scales of one block
inline constexpr int64_t kBf16TileBytes = kRows * kCols * 2;
inline constexpr int64_t kQ8TileBytes = kRows * kCols;
inline constexpr int64_t kQ4TileBytes = kRows * kCols / 2;
// How far ahead (bytes) the streaming kernels prefetch weight data.
inline constexpr int64_t kPrefetchBytes = 1024;

// A run of nb consecutive blocks of one group of 4 weight rows: its fp16 scales (kQ8/kQ4) and its
// tiles, both starting at the run's first block (matmul splits long rows into runs for m > 1).
struct GroupSpan {
  const uint8_t* scales;
  const uint8_t* data;
  int64_t nb;
};

// Quantized activation rows (see quantize_row_scalar), starting at the span's first block; row i
// is at q + i * stride_blocks * 32, scale + i * stride_blocks, sum + i * stride_blocks.
struct QuantX {
  const int8_t* q;
  const float* scale;
  const int32_t* sum;
  int64_t stride_blocks;
  const float* scaled_sum;  // scale * sum per block
};

// Kernels write the dot products of the span's 4 weight rows with 1, 2 or 3 rows of x to
// out[4 * x row + weight row].
//   bf16: x is fp32 (scalar), fp32 with each 16 columns reordered as 8 even then 8 odd (AVX2),
//         or bf16 (AVX-512); the 3-row variants read rows x, x + x_stride, x + 2 * x_stride.
//   q8/q4: x as QuantX; the 2-row variants read rows 0 and 1.
using Bf16GroupKernel = void (*)(const GroupSpan& w, const void* x, float* out);
using Bf16Group3Kernel = void (*)(const GroupSpan& w, const void* x, size_t x_stride, float* out);
using QuantGroupKernel = void (*)(const GroupSpan& w, const QuantX& x, float* out);
// Two groups (8 weight rows) against one x row, sharing the x work: out[4 * group + row].
using QuantGroupPairKernel = void (*)(const GroupSpan& w0, const GroupSpan& w1, const QuantX& x,
                                      float* out);

void bf16_group_scalar(const GroupSpan& w, const void* x, float* out);
void q8_group_scalar(const GroupSpan& w, const QuantX& x, float* out);
void q4_group_scalar(const GroupSpan& w, const QuantX& x, float* out);

void bf16_group_avx2(const GroupSpan& w, const void* x, float* out);
void bf16_group3_avx2(const GroupSpan& w, const void* x, size_t x_stride, float* out);
void q8_group_avx2(const GroupSpan& w, const QuantX& x, float* out);
void q4_group_avx2(const GroupSpan& w, const QuantX& x, float* out);
void q8_group2_avx2(const GroupSpan& w, const QuantX& x, float* out);
void q4_group2_avx2(const GroupSpan& w, const QuantX& x, float* out);
void q4_group_pair_avx2(const GroupSpan& w0, const GroupSpan& w1, const QuantX& x, float* out);

void bf16_group_avx512(const GroupSpan& w, const void* x, float* out);
void bf16_group3_avx512(const GroupSpan& w, const void* x, size_t x_stride, float* out);
void q8_group_avx512(const GroupSpan& w, const QuantX& x, float* out);
void q8_group2_avx512(const GroupSpan& w, const QuantX& x, float* out);
void q4_group_avx512(const GroupSpan& w, const QuantX& x, float* out);
void q4_group2_avx512(const GroupSpan& w, const QuantX& x, float* out);

// Quantizes one activation row of k = nb * 32 values per block of 32: scale = absmax / 127,
// q = round-to-nearest-even(x * (127 / absmax)) in [-127, 127], sum = sum of q. The AVX2 variant
// computes bit-identical results.
void quantize_row_scalar(const float* x, int64_t nb, int8_t* q, float* scale, int32_t* sum);
void quantize_row_avx2(const float* x, int64_t nb, int8_t* q, float* scale, int32_t* sum);

// Blocked GEMM for m >= kGemmMinRows (driver: packed_gemm.cpp; per-ISA parts: packed_gemm.h):
// x is packed into panels of kGemmPanel rows (rows past m are zero) at xt, panel p at
// xt + p * k * kGemmPanel * (bytes per x value), and the result is written transposed,
// yt[n][m_pad]. Work is split in blocks of kGemmRowBlock weight rows; wbuf holds
// kGemmRowBlock * kGemmDepth floats per thread.
inline constexpr int64_t kGemmMinRows = 16;
inline constexpr int64_t kGemmPanel = 16;
inline constexpr int64_t kGemmDepth = 256;
inline constexpr int64_t kGemmRowBlock = 48;
enum class GemmType { kBF16, kQ8, kQ4 };
struct GemmProblem {
  GemmType type;
  const uint8_t* weights;  // packed groups (see packed_matrix.h)
  int64_t group_bytes, scale_bytes;
  int64_t n, k, m_pad;
  const void* xt;
  float* yt;
};

// IEEE half from float, round to nearest even (overflow to infinity).
uint16_t f32_to_f16(float f);

}  // namespace qvl::ops::kernels
