// Internal: the blocked GEMM of ops::matmul for m >= kGemmMinRows (prompt prefill, vision tower).
// One driver (packed_gemm.cpp: x panels, weight row blocks x depth blocks, threads, output
// transposition) runs a kernel set of one ISA: how x panels and weight blocks are laid out and
// the register tile that multiplies them.
//   fp32 (AVX2, AVX-512): x panels [k][16] fp32; weight blocks dequantized to fp32 [rows][depth]
//     (exact: bf16 widens, scale * q is exact), so the only rounding is fp32 accumulation.
//   bf16 (AVX-512 BF16, bf16 weights only): x rounded to bf16 (nearest even; denormals flush to
//     zero as vcvtne2ps2bf16 does) in panels [k / 2][16][2] (the k pairs vdpbf16ps multiplies);
//     weight blocks copied to bf16 [rows][depth] (pairs of k adjacent), fp32 accumulation.
// Like packed_kernels.h: plain declarations only (the kernel files are compiled for their ISA).
#pragma once

#include <cstdint>

#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops::kernels {

struct GemmKernels {
  const char* name;
  int x_bytes;      // bytes per x value in a panel
  int w_bytes;      // bytes per weight in a packed weight block
  int tile_rows;    // weight rows per register tile
  int tile_panels;  // x panels per register tile
  // Rows [0, rows) of x (row i at x + i * k; rows <= kGemmPanel, the rest of the panel is zero)
  // into one panel at `panel`.
  void (*pack_x_panel)(const float* x, int64_t rows, int64_t k, void* panel);
  // Weight rows [r0, r0 + rows) x columns [k0, k0 + depth) of p into out[rows][depth].
  void (*pack_weights)(const GemmProblem& p, int64_t r0, int64_t rows, int64_t k0, int64_t depth,
                       void* out);
  // y[r * ldy + 16 * q + j] (+)= sum_kk w[r][kk] * x(panel q)[kk][j] for r < rows (<= tile_rows),
  // q < panels (<= tile_panels), j < 16; w[r] at w + r * depth values, panel q at x + q *
  // x_panel_stride values (x already offset to the depth block). Stores if !accumulate.
  void (*tile)(const void* w, int64_t depth, const void* x, int64_t x_panel_stride, int panels,
               int rows, float* y, int64_t ldy, bool accumulate);
};

extern const GemmKernels kGemmF32Avx2;
extern const GemmKernels kGemmF32Avx512;
extern const GemmKernels kGemmBf16Avx512;  // GemmType::kBF16 weights only

// The fp32 panel packer (plain code, shared by the fp32 kernel sets).
void pack_x_panel_f32(const float* x, int64_t rows, int64_t k, void* panel);

// Row blocks [block_begin, block_end) of p with kernel set g; wbuf as in packed_kernels.h.
void gemm_row_blocks(const GemmProblem& p, const GemmKernels& g, int64_t block_begin,
                     int64_t block_end, void* wbuf);

// y[m, w.rows()] = x * W^T (+ bias) through kernel set g; w is kBF16/kQ8/kQ4 (kBF16 only for
// kGemmBf16Avx512), m >= 1, w.cols() % 32 == 0. Threads via ThreadPool::global().
void gemm(const GemmKernels& g, const float* x, int64_t m, const PackedMatrix& w, const float* bias,
          float* y);

}  // namespace qvl::ops::kernels
