// Internal: the int8 GEMM of matmul on q8/q4 matrices for m >= kGemmMinRows (prompt prefill,
// vision) and on q8-strips matrices at every m (also decode), its micro-kernel variants and the
// scalar oracle the tests hold them to.
//
// x is quantized per row and block of 32 exactly as the decode GEMV does (quantize_row_*: int8,
// scale absmax / 127), weights are used as stored (q8 or q4 with fp16 block scales); each block's
// dot product is exact in int32 and is scaled by (weight scale * x scale) in fp32. So a row's
// result equals what the GEMV gives it, up to fp32 summation order. The one exception is kAvx2X7
// (below), which rounds x to 7 bits on stored q8 strips.
#pragma once

#include <cstdint>
#include <utility>

#include "ops/packed_matrix.h"

namespace qvl::ops {

// Micro-kernels. kAvx2 needs AVX2 (+FMA, F16C); kAvxVnni also the 256-bit vpdpbusd (Alder Lake and
// later, Zen 5); kAvx512Vnni the IsaLevel::kAvx512 set. kAvxVnniEmulated is the kAvxVnni code with
// vpdpbusd emulated in AVX2, for tests on CPUs without AVX-VNNI (matmul never picks it).
// kAvx2X7 is kAvx2 except on kQ8Strips matrices, which it reads in place with x rounded to
// [-63, 63] (scale absmax / 63): AVX2 has no exact unsigned x signed byte dot into int32, and 7-bit
// x keeps vpmaddubsw's int16 pairs from saturating, so 32 multiply-adds take 3 instructions instead
// of kAvx2's 4, at twice the activation rounding. matmul uses it only where asked to
// (ActivationPrecision::kFastest: the vision tower) on AVX2 without AVX-VNNI.
// kNeonSmull (ARMv8.0: SMULL/SMLAL + SADALP, every aarch64 CPU), kNeonDotprod (ARMv8.2 SDOT) and
// kNeonI8mm (SMMLA/USMMLA) read stored strips in place on aarch64, with the same bits
// (src/ops/arm/int8_gemm_neon.h).
enum class Int8GemmKernel {
  kAvx2,
  kAvx2X7,
  kAvxVnni,
  kAvx512Vnni,
  kAvxVnniEmulated,
  kNeonSmull,
  kNeonDotprod,
  kNeonI8mm
};
const char* int8_gemm_kernel_name(Int8GemmKernel kernel);
// The largest |q| the kernel rounds x to on a matrix of `type`: 63 for kAvx2X7 on kQ8Strips, else
// 127.
int32_t int8_gemm_x_max(Int8GemmKernel kernel, QuantType type);
// Whether this CPU can run the kernel (not whether it passed the self-check).
bool cpu_runs_int8_gemm_kernel(Int8GemmKernel kernel);
// The start-up self-check of a kernel: every weight type on a small product with tails, against
// int8_gemm_reference (logged as an error when it disagrees).
bool int8_gemm_kernel_agrees_with_reference(Int8GemmKernel kernel);

// Frees the calling thread's quantized copy of x and tile buffers, which otherwise keep the size
// of its largest product (e.g. an image's on a request thread); the next call allocates again.
void release_int8_gemm_scratch();
// The bytes that scratch holds now (for tests).
size_t int8_gemm_scratch_bytes();

// y[m, n] = x[m, k] * W^T (+ bias) for a q8/q4 matrix (groups or strips) on the given kernel
// (which the CPU must run). Threads via ThreadPool::global().
void int8_gemm(Int8GemmKernel kernel, const float* x, int64_t m, const PackedMatrix& w,
               const float* bias, float* y);
// The same for several matrices of one type and cols on the same x: x is quantized once and all
// their row blocks share one pool dispatch; each output gets the bits of its own int8_gemm call.
void int8_gemm_multi(Int8GemmKernel kernel, const float* x, int64_t m, const MatmulOutput* outputs,
                     size_t count);
// The same with each output on its own rows [first, second) of x (y holding that many rows):
// a mixture of experts' tokens grouped by expert (x_rows null: all rows, as int8_gemm_multi).
// Each output gets the bits of an int8_gemm call on its rows alone.
void int8_gemm_grouped(Int8GemmKernel kernel, const float* x, int64_t m,
                       const MatmulOutput* outputs, const std::pair<int64_t, int64_t>* x_rows,
                       size_t count);

// Tests: int8_gemm's driver (x quantization, weight repacking, blocking, tails) for `kernel`'s
// layout, with `tile` in place of its micro-kernel (e.g. the kernel's source compiled on a scalar
// model of an ISA this CPU lacks), so that driver/tile layout mismatches show.
namespace kernels {
struct Int8Tile;
}  // namespace kernels
using Int8TileFunction = void (*)(const kernels::Int8Tile& t);
void int8_gemm_with_tile(Int8GemmKernel kernel, Int8TileFunction tile, const float* x, int64_t m,
                         const PackedMatrix& w, const float* bias, float* y);

// The same result computed plainly (scalar, one output at a time, blocks summed in order): the
// oracle for every kernel, with x rounded to [-x_max, x_max] (int8_gemm_x_max).
void int8_gemm_reference(const float* x, int64_t m, const PackedMatrix& w, const float* bias,
                         float* y, int32_t x_max = 127);

}  // namespace qvl::ops
