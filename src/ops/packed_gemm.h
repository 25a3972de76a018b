// Internal: the blocked GEMM of ops::matmul for m >= kGemmMinRows (prompt prefill, vision tower).
// One driver (packed_gemm.cpp: x panels, weight strips, cache blocks, threads, tails) runs a
// kernel set of one ISA, which differs only in its register tile (tile_x_rows x rows times
// strip_rows weight rows) and in how x and weights are laid out for it:
//   x panel     tile_x_rows rows of x interleaved per k: [k][tile_x_rows] fp32, or for bf16 the k
//               pairs [k / 2][tile_x_rows][2]; rows past m are zero. Stored per depth block.
//   weight strip strip_rows weight rows interleaved per k: [depth][strip_rows] fp32 (dequantized:
//               exact, bf16 widens and scale * q is exact), or bf16 pairs [depth /
//               2][strip_rows][2]; rows past n are zero.
// The tile broadcasts one x value (or bf16 pair) per x row and multiplies it with the strip's
// vectors: one accumulator vector per (x row, lanes of weight rows), stored per tile and copied
// into y[m][n] (+ bias) once a row block is done.
//
// Arithmetic per output: one fp32 accumulator, w * x fused in k order (vdpbf16ps: a pair per
// step), stored and reloaded exactly between depth blocks of kGemmDepth, then + bias. Nothing of
// it depends on m or on the row's place in a panel, so a row's result is the same bit for bit
// whatever batch it is computed in (prompt chunks rely on this).
// Like packed_kernels.h: plain declarations only (the kernel files are compiled for their ISA).
#pragma once

#include <cstdint>

#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops::kernels {

inline constexpr int64_t kGemmDepth = 256;        // k per depth block (a multiple of kCols)
inline constexpr int64_t kGemmRowBlock = 128;     // weight rows packed at once (multiple of strips)
inline constexpr int64_t kGemmXBlockPanels = 32;  // x panels per pass over a packed weight block
inline constexpr int kGemmMaxTileX = 16;          // bound on tile_x_rows

enum class GemmType { kBF16, kQ8, kQ4 };
// The packed weights of one GEMM (layout: packed_matrix.h).
struct GemmProblem {
  GemmType type;
  const uint8_t* weights;  // packed groups
  int64_t group_bytes, scale_bytes;
  int64_t n, k;
};

struct GemmKernels {
  const char* name;
  int x_bytes;      // bytes per x value in a panel
  int w_bytes;      // bytes per weight in a strip
  int tile_x_rows;  // x rows per panel and register tile (<= kGemmMaxTileX)
  int strip_rows;   // weight rows per strip and register tile (a multiple of 8 dividing
                    // kGemmRowBlock)
  // Columns [0, depth) of rows [0, rows) of x (row i at x + i * ldx; rows <= tile_x_rows) into
  // one panel [depth][tile_x_rows] (bf16: pairs).
  void (*pack_x_panel)(const float* x, int64_t rows, int64_t ldx, int64_t depth, int tile_x_rows,
                       void* panel);
  // Weight rows [r0, r0 + strips * strip_rows) x columns [k0, k0 + depth) of p into `strips`
  // consecutive strips (strip s at out + s * depth * strip_rows values).
  void (*pack_strips)(const GemmProblem& p, int64_t r0, int64_t strips, int strip_rows, int64_t k0,
                      int64_t depth, void* out);
  // y[i * ldy + j] = (accumulate ? y[i * ldy + j] : 0) + sum_kk x[i][kk] * w[kk][j] for every
  // i < tile_x_rows, j < strip_rows; x and w are the panel and strip already offset to the depth
  // block.
  void (*tile)(const void* x, const void* w, int64_t depth, float* y, int64_t ldy, bool accumulate);
};

// The kernel set of `isa` (a level this CPU runs) for weights of `type`, or null where the level
// has none (matmul then runs the small-batch kernels). Per architecture:
// src/ops/<arch>/kernel_registry.cpp.
const GemmKernels* gemm_kernels_for(IsaLevel isa, QuantType type);

// Shared by the kernel sets: plain code.
void pack_x_panel_f32(const float* x, int64_t rows, int64_t ldx, int64_t depth, int tile_x_rows,
                      void* panel);

// y[m, w.rows()] = x * W^T (+ bias) through kernel set g; w is kBF16/kQ8/kQ4 (kBF16 only for
// kernel sets that take it), m >= 1, w.cols() % 32 == 0. Threads via ThreadPool::global().
void gemm(const GemmKernels& g, const float* x, int64_t m, const PackedMatrix& w, const float* bias,
          float* y);

}  // namespace qvl::ops::kernels
