// Internal: per-ISA inner kernels of ops::matmul on PackedMatrix, and the quantizers they share.
// Only plain declarations here: the AVX2/AVX-512 translation units are compiled for their ISA, so
// no inline function may be shared with them (the linker could keep an AVX copy for everyone).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/isa.h"

namespace qvl::ops::kernels {

// Layout constants (see packed_matrix.h).
inline constexpr int64_t kRows = 4;                // rows per group
inline constexpr int64_t kCols = 32;               // columns per block
inline constexpr int64_t kScaleBytes = kRows * 2;  // fp16 scales of one block
inline constexpr int64_t kBf16TileBytes = kRows * kCols * 2;
inline constexpr int64_t kQ8TileBytes = kRows * kCols;
inline constexpr int64_t kQ4TileBytes = kRows * kCols / 2;

// nb consecutive blocks of one group of 4 weight rows: its fp16 scales (kQ8/kQ4) and its tiles.
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

// The scalar kernels (the oracle): dot products of the span's 4 weight rows with one row of x,
// written to out[weight row]. bf16: x is fp32. q8/q4: x as QuantX.
void bf16_group_scalar(const GroupSpan& w, const void* x, float* out);
void q8_group_scalar(const GroupSpan& w, const QuantX& x, float* out);
void q4_group_scalar(const GroupSpan& w, const QuantX& x, float* out);

// Whole-row kernels of the GEMV and small batches (m < kGemmMinRows). A run is `count`
// consecutive groups of one matrix, all nb blocks of each: group g starts at
// first + g * group_bytes (its scale_bytes of fp16 scales, then its tiles). A kernel multiplies
// the run by nx rows of x and writes out[(i * count + g) * 4 + r] (x row i, group g, weight row r).
// Allowed shapes: count in [1, kMaxRunGroups] with nx == 1 (the GEMV: several groups share each x
// block), or count in [1, kMaxRunBatchGroups] with nx in [1, kMaxRunXRows] (small batches: a
// whole batch below the GEMM in one call; kernels take it in as many x rows at a time as their
// registers hold, unpacking each tile once per such step, and each x block serves 2 groups).
// Every (x row, group) pair gets the same arithmetic in the same order whatever count and nx are,
// so a row's result does not depend on how many other rows share the call (batch invariance
// below the GEMM). The AVX2 q8/q4 kernels also do the int8 GEMM's arithmetic per output
// (packed_gemv_avx2_quant.cpp), so on AVX2 a row's bits do not change at the GEMM either.
//   bf16: x rows at x + i * x_stride: fp32 (scalar), fp32 with each 16 columns reordered as 8 even
//         then 8 odd (AVX2), or bf16 (AVX-512). q8/q4: x as QuantX, rows i.
inline constexpr int kMaxRunGroups = 4;
inline constexpr int kMaxRunXRows = 15;  // kGemmMinRows - 1
inline constexpr int kMaxRunBatchGroups = 2;
struct GroupRun {
  const uint8_t* first;
  int64_t group_bytes;
  int64_t scale_bytes;
  int64_t nb;
  int count;
};
using Bf16RunKernel = void (*)(const GroupRun& w, const void* x, size_t x_stride, int nx,
                               float* out);
using QuantRunKernel = void (*)(const GroupRun& w, const QuantX& x, int nx, float* out);

void bf16_run_scalar(const GroupRun& w, const void* x, size_t x_stride, int nx, float* out);
void q8_run_scalar(const GroupRun& w, const QuantX& x, int nx, float* out);
void q4_run_scalar(const GroupRun& w, const QuantX& x, int nx, float* out);
// Quantizes one activation row of k = nb * 32 values per block of 32: scale = absmax / 127,
// q = round-to-nearest-even(x * (127 / absmax)) in [-127, 127], sum = sum of q. The AVX2 variant
// SIMD variants compute bit-identical results.
void quantize_row_scalar(const float* x, int64_t nb, int8_t* q, float* scale, int32_t* sum);
// The same to [-qmax, qmax] (1 <= qmax <= 127): scale = absmax / qmax, q = round(x * (qmax /
// absmax)); qmax 127 is quantize_row_*.
void quantize_row_to_scalar(const float* x, int64_t nb, int32_t qmax, int8_t* q, float* scale,
                            int32_t* sum);

// The run kernels of a level. bf16_x: how its bf16 kernel takes x (see above).
enum class Bf16RunX { kF32, kF32EvenOdd16, kBf16 };
struct RunKernels {
  Bf16RunKernel bf16;
  Bf16RunX bf16_x;
  QuantRunKernel q8, q4;
  void (*quantize_row)(const float* x, int64_t nb, int8_t* q, float* scale, int32_t* sum);
};
// The run kernels of `isa` (a level this CPU runs), or null where the level has none (the scalar
// ones run). Per architecture: src/ops/<arch>/kernel_registry.cpp.
const RunKernels* run_kernels_for(IsaLevel isa);

// Below kGemmMinRows rows matmul runs the kernels above; from it on, a blocked GEMM
// (packed_gemm.h) or the int8 GEMM (int8_gemm.h).
inline constexpr int64_t kGemmMinRows = 16;
static_assert(kMaxRunXRows == kGemmMinRows - 1);

// IEEE half from float, round to nearest even (overflow to infinity).
uint16_t f32_to_f16(float f);

}  // namespace qvl::ops::kernels
