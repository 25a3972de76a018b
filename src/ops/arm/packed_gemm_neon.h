// Internal: the aarch64 kernel set of the blocked GEMM (ops/packed_gemm.h) and the NEON run
// kernels of the GEMV and small batches (ops/packed_kernels.h). Baseline ARMv8.0 NEON serves every
// ARM level (kNeon, kNeonDotprod, kNeonI8mm), except the BFMMLA kernels (FEAT_BF16: kNeonI8mm).
// Plain declarations only (see packed_kernels.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/packed_gemm.h"
#include "ops/packed_kernels.h"

namespace qvl::ops::kernels {

// packed_gemm_neon.cpp: fp32 x panels, weight strips dequantized to fp32 at pack time (kBF16,
// kQ8, kQ4 groups), a 6 x 16 FMLA-by-lane register tile.
extern const GemmKernels kGemmF32Neon;
// packed_gemm_bfmmla_neon.cpp: bf16 weights only, x rounded to bf16, a 6 x 16 BFMMLA tile
// (gemm_tile_bfmmla, packed_gemm_bfmmla_neon_bf16.cpp: call only where the CPU has BF16).
extern const GemmKernels kGemmBf16Neon;
void gemm_tile_bfmmla(const void* x_panel, const void* w_strip, int64_t depth, float* y,
                      int64_t ldy, bool accumulate);

// packed_gemv_neon.cpp: bf16 with fp32 x (Bf16RunX::kF32); q8 / q4 with the scalar oracle's
// arithmetic (exact int32 block dots, then the same fp32 roundings: the same bits).
void bf16_run_neon(const GroupRun& w, const void* x, size_t x_stride, int nx, float* out);
// packed_gemv_bfmmla_neon_bf16.cpp (BF16: the i8mm level): bf16 x (Bf16RunX::kBf16), the
// arithmetic of kGemmBf16Neon's tile per output, so the same bits as the GEMM.
void bf16_run_bfmmla(const GroupRun& w, const void* x, size_t x_stride, int nx, float* out);
void q8_run_neon(const GroupRun& w, const QuantX& x, int nx, float* out);
void q4_run_neon(const GroupRun& w, const QuantX& x, int nx, float* out);
// quantize_row_to_neon with qmax 127 (quantize_neon.cpp): quantize_row_scalar's bits.
void quantize_row_neon(const float* x, int64_t nb, int8_t* q, float* scale, int32_t* sum);

}  // namespace qvl::ops::kernels
