// Internal: micro-kernels of the int8 GEMM (int8_gemm.cpp) and the panel layout they read.
// Plain declarations only: the per-ISA translation units are compiled for their ISA, so no inline
// function may be shared with them (see packed_kernels.h).
//
// The driver repacks a block of weights (kInt8RowBlock rows, all columns) once into
// strips of strip_rows (NR) rows; per block of 32 columns a strip holds
//   [8 quads][NR rows][4 bytes]  weights: 4 consecutive columns of a row in one 32-bit lane, so
//                                 one vector load gives 8 (AVX2) or 16 (AVX-512) rows
//   [NR float]                    the row's block scale (its fp16 scale widened)
//   [NR int32]                    128 * sum of the row's 32 weights (q8: the x + 128 correction)
// q8 weights are stored as int8 q; q4 as the stored nibble q + 8 in [1, 15] (unsigned).
// Matrices stored in strips (packed_matrix.h: 32-row strips, fp16 scales; kQ8Strips q + 128,
// kQ4Strips nibble pairs q + 8) are read in place by the VNNI kernels' stored-strip variants
// (int8_tile_q8s_*: q + 128 times x, less 128 * sum(x); int8_tile_q4s_*: each nibble q + 8 times
// x, less 8 * sum(x); 16-row kernels read half t.half of a strip); others get them repacked.
// Kernels that multiply in 16 bit (Int8PanelWeights::kPairs16) get q8 weights widened to int16
// instead, [16 pairs][NR rows][2 int16]: 2 consecutive columns of a row per 32-bit lane.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "ops/int8_gemm.h"

namespace qvl::ops::kernels {

inline constexpr int64_t kInt8Depth = 256;    // columns multiplied per chunk (byte panels)
inline constexpr int64_t kInt8RowBlock = 64;  // weight rows per block (a multiple of every NR)
inline constexpr int64_t kInt8XBlock = 256;   // x rows per pass over a row block's depth

// How a kernel wants the weights in its strips and x in its tiles.
enum class Int8PanelWeights { kBytes, kPairs16 };
// q, q + 128 (unsigned), q as int16; kInt7: q in [-63, 63] (x rounded to 7 bits, in xq).
enum class Int8XLayout { kInt8, kOffset8, kInt16, kInt7 };

// Bytes of the weights of one block of 32 columns of one row.
constexpr int64_t int8_weight_bytes(Int8PanelWeights w) {
  return w == Int8PanelWeights::kPairs16 ? 64 : 32;
}
// Bytes of one block of 32 columns of a strip of nr rows (weights, scales, sums).
constexpr int64_t int8_strip_block_bytes(int64_t nr,
                                         Int8PanelWeights w = Int8PanelWeights::kBytes) {
  return nr * (int8_weight_bytes(w) + 4 + 4);
}

// One micro-kernel call: rows x rows of x against one strip over nblocks blocks, adding to c.
struct Int8Tile {
  const uint8_t* strip;  // the strip's first block in this chunk
  int64_t nblocks;
  const int8_t* xq;     // x row i, chunk start: xq + i * ldx (int8 q, see quantize_row_scalar)
  const uint8_t* xu;    // the same as q + 128 (Int8XLayout::kOffset8 kernels only)
  const int16_t* xw;    // the same as int16 (Int8XLayout::kInt16 kernels only)
  const float* xscale;  // x row i, block b of the chunk: xscale[i * ldxs + b]
  const int32_t* xsum;  // sum of the block's q, same indexing as xscale
  int64_t ldx, ldxs;
  int64_t rows;  // 1 .. x_rows of the kernel
  float* c;      // output row i: c + i * ldc, strip_rows floats; accumulated into
  int64_t ldc;
  int64_t half;  // 16-row stored-strip kernels: rows [16 * half, 16 * half + 16) of the strip
  // Stored-strip kernels: when not 0, every line of the block this many bytes on is prefetched
  // (a batch that fits one x tile streams each stored strip once, from DRAM).
  int64_t prefetch_ahead;
};
using Int8TileKernel = void (*)(const Int8Tile& t);

// depth: columns per chunk (a multiple of 32), so that the chunk of a row block's strips stays in
// L1 (kInt8Depth for byte panels, half for kPairs16).
struct Int8KernelInfo {
  Int8TileKernel tile;
  int64_t strip_rows;
  int64_t x_rows;
  Int8XLayout x_layout;
  Int8PanelWeights weights;
  int64_t depth = kInt8Depth;
  bool reads_stored = false;  // a stored-strip tile: strip matrices are used in place
};

// Stored q8/q4 groups (see packed_matrix.h) the strips are made from, or a kQ8Strips/kQ4Strips
// matrix (strip_bytes != 0: strips of kStripRows rows, strip_block_bytes per block; groups is its
// first).
struct Int8RepackSource {
  const uint8_t* groups;
  int64_t group_bytes, scale_bytes;
  int64_t groups_total;  // groups past it are repacked as zero rows
  bool q8;
  int64_t strip_bytes = 0, strip_block_bytes = 0;
};
// The architecture's part of the int8 GEMM (src/ops/<arch>/int8_gemm_registry.cpp):
// the tile and layouts of `kernel` (one this CPU runs) for a matrix of `type` and m rows of x.
// A kernel may hand small batches (m < kGemmMinRows) to another tile that suits them.
Int8KernelInfo int8_kernel_info(Int8GemmKernel kernel, QuantType type, int64_t m);
// Whether `kernel` multiplies matrices of `type` (q8/q4, groups or strips).
bool int8_kernel_supports(Int8GemmKernel kernel, QuantType type);
// The kernel matmul uses at `isa` (a level this CPU runs) for matrices of `type`, or nullopt
// where the level has none for the type (matmul then runs the small-batch kernels).
std::optional<Int8GemmKernel> int8_kernel_for(IsaLevel isa, QuantType type,
                                              ActivationPrecision precision);
// Whether the dispatch may use AVX-VNNI where the CPU has it (set_avx_vnni_allowed).
bool avx_vnni_allowed();
// quantize_row_to_scalar with the same bits, by this CPU's fastest code.
void quantize_row_to(const float* x, int64_t nb, int32_t qmax, int8_t* q, float* scale,
                     int32_t* sum);
// Repacks `strips` strips of nr rows starting at group g0 (row 4 * g0), blocks [b0, b0 + nbc),
// into panel (strip s at s * nbc * int8_strip_block_bytes(nr, weights)). Sums are written for q8
// only; kPairs16 is for q8 only. Only called for kernels whose info has reads_stored false.
void int8_repack(const Int8RepackSource& src, int64_t g0, int64_t strips, int64_t nr, int64_t b0,
                 int64_t nbc, Int8PanelWeights weights, uint8_t* panel);
// dst[j] = src[j] for j < n (n a multiple of 32): x widened for Int8XLayout::kInt16.
void int8_widen(const int8_t* src, int64_t n, int16_t* dst);

}  // namespace qvl::ops::kernels
