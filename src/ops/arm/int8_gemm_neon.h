// The aarch64 micro-kernels of the int8 GEMM (int8_gemm_kernels.h): tiles that read kQ8Strips /
// kQ4Strips matrices in place (packed_matrix.h: 32-row strips, per block of 32 columns
// [8 quads][32 rows][4 bytes] of q + 128, or [4 pairs][32 rows][4 bytes] of nibbles q + 8, then
// 32 fp16 scales), and the NEON x quantization.
//
// Every tile takes 16 rows of a strip (rows [16 * t.half, 16 * t.half + 16)) against up to
// 8 x rows (4 for SMULL), four weight rows at a time: each weight vector, loaded and turned into
// operands once, meets all its x rows, so its conversion (the q8 sign flip, the q4 nibble split)
// costs 1/8 (1/4) of the multiplies. Every row gets the same fp32 update per block,
//   c[i][r] = fma(float(dot), w_scale[r] * x_scale[i], c[i][r])
// (the exact int32 dot, then one rounding of the scale product and one of the fma), whatever the
// tile's row count, the row's place in it, or the kernel (smull, dotprod or i8mm): a row's bits
// depend on neither the batch size nor on which of the three kernels ran it. Per 4 outputs and
// block that update is 3 vector instructions (int-to-float, scale product, FMLA) beside 8 SDOT or
// 4 USMMLA, so the SDOT and USMMLA tiles keep the fp32 sums in registers (no load/store of c per
// block) and start their accumulators with loads (StartRows), not register copies.
//
// SMULL (ARMv8.0, every aarch64 CPU: Cortex-A53/A55/A72, Raspberry Pi 3/4, A64FX): no byte dot
// product into int32, so SMULL / SMULL2 multiply one 16-byte weight load (4 rows x one quad) by
// the x row's quad broadcast (DUP of a 32-bit lane) into int16 (rows 0-1 / 2-3), SMLAL / SMLAL2
// add a second quad's products, and SADALP widens the pairs into int32 (q8: two products of
// |q| <= 128, |x| <= 127 fit in int16, three do not); q4 nibbles (<= 15) keep the whole block in
// int16 and widen once. ADDP of the two int32 vectors gives the 4 rows' exact dots. Registers:
// 8 x, 8 accumulators, weights, patterns, products; 8 x rows would not fit.
//
// Dotprod (ARMv8.2 SDOT; Cortex-A76, Neoverse-N1 and later): one 16-byte load is 4 rows x one
// quad; SDOT by element multiplies it with one quad of an x row (x loaded 16 bytes = 4 quads at
// a time) into that row's int32x4. q8: q + 128 EOR 0x80 is q as a signed byte. 2-8 x rows
// (batch_tile): a pass per group of 4 rows over a chunk of 16 blocks, the group's fp32 sums of
// every x row in 8 registers across it; q4 nibbles become 16 q (EOR 0x88, then SHL #4 / AND
// 0xf0), the dots start at 0 and SCVTF #4 divides by 16 exactly. m = 1 (decode_tile): block by
// block over all 16 rows (4 fp32 sums in registers), a quad of the 16 rows being one 64-byte LD1;
// q4 nibbles q + 8 (AND 0x0f / USHR #4) less 8 * sum(x) in the int-to-float step.
//
// i8mm (SMMLA/USMMLA; Neoverse-N2/V1/V2, Graviton3/4, Apple M2 and later): USMMLA multiplies a
// 2 x 8 block of unsigned bytes by a 2 x 8 block of signed ones into a 2 x 2 int32 tile, twice the
// multiplies of SDOT per instruction. ZIP1/ZIP2 (32-bit) of quads 2p and 2p + 1 of 4 rows give the
// weight operands [row r, row r + 1] x 8 columns (q4: ZIP of the AND and USHR nibbles); x rows go
// in pairs [row i, row i + 1] x 8 columns (an odd last row pairs with zeros), laid out once per
// chunk of 16 blocks with the tiles' starts and x scales by 8-byte copies (PairBlock). q8 weights
// stay q + 128 (unsigned x signed), less 128 * sum(x); q4 less 8 * sum(x). A pass per group of 4
// rows keeps each x pair's sums as 2 x 2 tiles in registers across the chunk (ZIP/UZP to and from
// c once per chunk); the scale products are formed in the tiles' lane order.
//
// Driver (Int8KernelInfo) for all six tiles: strip_rows kInt8NeonStripRows, x_rows as below,
// Int8XLayout::kInt8, Int8PanelWeights::kBytes, depth kInt8Depth, reads_stored true.
// Plain declarations only: each .cpp is compiled for its own -march (see packed_kernels.h).
#pragma once

#include <cstdint>

#include "ops/int8_gemm_kernels.h"

namespace qvl::ops::kernels {

inline constexpr int64_t kInt8NeonStripRows = 16;  // half t.half of a stored 32-row strip
inline constexpr int64_t kInt8NeonSmullXRows = 4;
inline constexpr int64_t kInt8NeonDotprodXRows = 8;
inline constexpr int64_t kInt8NeonI8mmXRows = 8;

// int8_gemm_neon_smull.cpp (baseline armv8-a): kQ8Strips, kQ4Strips; any m.
void int8_tile_q8s_neon_smull(const Int8Tile& t);
void int8_tile_q4s_neon_smull(const Int8Tile& t);
// int8_gemm_neon_dotprod.cpp (-march=armv8.2-a+dotprod): kQ8Strips, kQ4Strips; any m.
void int8_tile_q8s_neon_dotprod(const Int8Tile& t);
void int8_tile_q4s_neon_dotprod(const Int8Tile& t);
// int8_gemm_neon_i8mm.cpp (+i8mm): the same; meant for m >= 2 (a lone x row would pair with
// zeros: half the multiplies wasted), where the dotprod tile takes m == 1 with the same bits.
void int8_tile_q8s_neon_i8mm(const Int8Tile& t);
void int8_tile_q4s_neon_i8mm(const Int8Tile& t);

// quantize_row_to_scalar with the same bits (quantize_neon.cpp, baseline armv8-a).
void quantize_row_to_neon(const float* x, int64_t nb, int32_t qmax, int8_t* q, float* scale,
                          int32_t* sum);

}  // namespace qvl::ops::kernels
