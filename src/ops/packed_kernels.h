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

// One group of 4 weight rows [scales][tiles] over nb blocks, dotted with one prepared row of x.
// Writes the 4 dot products to out[0..3].
//   bf16: x is fp32 (scalar), fp32 with each 16 columns reordered as 8 even then 8 odd (AVX2),
//         or bf16 (AVX-512).
//   q8/q4: x quantized by quantize_row: int8 q[nb * 32], scale[nb], sum[nb] (sum of q per block).
using Bf16GroupKernel = void (*)(const uint8_t* group, int64_t nb, const void* x, float* out);
// The same for 3 consecutive x rows (x, x + x_stride, x + 2 * x_stride) at once, so the weights are
// unpacked once for all three; out[4 * x row + weight row]. Used for m > 1.
using Bf16Group3Kernel = void (*)(const uint8_t* group, int64_t nb, const void* x, size_t x_stride,
                                  float* out);
using QuantGroupKernel = void (*)(const uint8_t* group, int64_t nb, const int8_t* xq,
                                  const float* xscale, const int32_t* xsum, float* out);

// The same for 2 consecutive quantized x rows (row 1 at xq + nb * 32, xscale + nb, xsum + nb);
// out[4 * x row + weight row]. Used for m > 1.
using QuantGroup2Kernel = QuantGroupKernel;

void bf16_group_scalar(const uint8_t* group, int64_t nb, const void* x, float* out);
void q8_group_scalar(const uint8_t* group, int64_t nb, const int8_t* xq, const float* xscale,
                     const int32_t* xsum, float* out);
void q4_group_scalar(const uint8_t* group, int64_t nb, const int8_t* xq, const float* xscale,
                     const int32_t* xsum, float* out);

void bf16_group_avx2(const uint8_t* group, int64_t nb, const void* x, float* out);
void bf16_group3_avx2(const uint8_t* group, int64_t nb, const void* x, size_t x_stride, float* out);
void q8_group_avx2(const uint8_t* group, int64_t nb, const int8_t* xq, const float* xscale,
                   const int32_t* xsum, float* out);
void q4_group_avx2(const uint8_t* group, int64_t nb, const int8_t* xq, const float* xscale,
                   const int32_t* xsum, float* out);

void q4_group2_avx2(const uint8_t* group, int64_t nb, const int8_t* xq, const float* xscale,
                    const int32_t* xsum, float* out);

void bf16_group_avx512(const uint8_t* group, int64_t nb, const void* x, float* out);
void bf16_group3_avx512(const uint8_t* group, int64_t nb, const void* x, size_t x_stride,
                        float* out);
void q8_group_avx512(const uint8_t* group, int64_t nb, const int8_t* xq, const float* xscale,
                     const int32_t* xsum, float* out);
void q4_group_avx512(const uint8_t* group, int64_t nb, const int8_t* xq, const float* xscale,
                     const int32_t* xsum, float* out);
void q8_group2_avx512(const uint8_t* group, int64_t nb, const int8_t* xq, const float* xscale,
                      const int32_t* xsum, float* out);
void q4_group2_avx512(const uint8_t* group, int64_t nb, const int8_t* xq, const float* xscale,
                      const int32_t* xsum, float* out);

// Quantizes one activation row of k = nb * 32 values per block of 32: scale = absmax / 127,
// q = round-to-nearest-even(x * (127 / absmax)) in [-127, 127], sum = sum of q. The AVX2 variant
// computes bit-identical results.
void quantize_row_scalar(const float* x, int64_t nb, int8_t* q, float* scale, int32_t* sum);
void quantize_row_avx2(const float* x, int64_t nb, int8_t* q, float* scale, int32_t* sum);

// IEEE half from float, round to nearest even (overflow to infinity).
uint16_t f32_to_f16(float f);

}  // namespace qvl::ops::kernels
