// The aarch64 kernels of each level for the generic drivers (see ops/isa.h). At every level, in
// baseline NEON: elementwise kernels, attention (flash task and decode spans), half conversions,
// the x quantizer, the fp32 blocked GEMM (bf16 and q8/q4 group weights) and the GEMV /
// small-batch run kernels (bf16, q8, q4 groups); the int8 GEMM's stored-strip tiles with
// SMULL/SADALP (kNeonSmull), SDOT (kNeonDotprod) or USMMLA (kNeonI8mm), all with the same bits.
// kNeonI8mm (which implies BF16) multiplies bf16 weights by BFMMLA instead, GEMM and GEMV.
// Null where a level has none yet (the scalar oracles run).
// Compiled for the ARMv8.0 baseline: it only names kernels, it runs none.
#include <optional>

#include "base/error.h"
#include "ops/arm/attention_neon.h"
#include "ops/arm/elementwise_neon.h"
#include "ops/arm/half_convert_neon.h"
#include "ops/arm/int8_gemm_neon.h"
#include "ops/arm/machine_probe_neon.h"
#include "ops/arm/packed_gemm_neon.h"
#include "ops/attention_kernels.h"
#include "ops/elementwise_kernels.h"
#include "ops/half_convert.h"
#include "ops/int8_gemm.h"
#include "ops/int8_gemm_kernels.h"
#include "ops/machine_probe_kernels.h"
#include "ops/packed_gemm.h"
#include "ops/packed_kernels.h"

namespace qvl::ops {

namespace {
bool is_arm_level(IsaLevel isa) {
  return isa == IsaLevel::kNeon || isa == IsaLevel::kNeonDotprod || isa == IsaLevel::kNeonI8mm;
}
}  // namespace

bool cpu_runs_int8_gemm_kernel(Int8GemmKernel kernel) {
  if (kernel == Int8GemmKernel::kNeonSmull) return cpu_runs_isa(IsaLevel::kNeon);
  if (kernel == Int8GemmKernel::kNeonDotprod) return cpu_runs_isa(IsaLevel::kNeonDotprod);
  if (kernel == Int8GemmKernel::kNeonI8mm) return cpu_runs_isa(IsaLevel::kNeonI8mm);
  return false;
}

namespace kernels {

const RunKernels* run_kernels_for(IsaLevel isa) {
  static const RunKernels neon{bf16_run_neon, Bf16RunX::kF32, q8_run_neon, q4_run_neon,
                               quantize_row_neon};
  // bf16 by BFMMLA with the GEMM's bits per output (the level implies BF16).
  static const RunKernels i8mm{bf16_run_bfmmla, Bf16RunX::kBf16, q8_run_neon, q4_run_neon,
                               quantize_row_neon};
  if (isa == IsaLevel::kNeonI8mm) return &i8mm;
  return is_arm_level(isa) ? &neon : nullptr;
}
const GemmKernels* gemm_kernels_for(IsaLevel isa, QuantType type) {
  // Stored strips always take the int8 GEMM (int8_kernel_for); exact weights never come here.
  // bf16 weights at i8mm by BFMMLA (the level implies BF16, see cpu_detect.cpp), x rounded to
  // bf16; elsewhere, and for q8/q4 groups, the fp32 tile (widened weights, fp32 x).
  if (isa == IsaLevel::kNeonI8mm && type == QuantType::kBF16) return &kGemmBf16Neon;
  const bool groups = type == QuantType::kBF16 || type == QuantType::kQ8 || type == QuantType::kQ4;
  return is_arm_level(isa) && groups ? &kGemmF32Neon : nullptr;
}
const HalfConvertKernels* half_convert_kernels_for(IsaLevel isa) {
  static const HalfConvertKernels neon{f32_to_f16_neon, f16_to_f32_neon};
  return is_arm_level(isa) ? &neon : nullptr;
}

Int8KernelInfo int8_kernel_info(Int8GemmKernel kernel, QuantType type, int64_t m) {
  QVL_CHECK(int8_kernel_supports(kernel, type));
  const bool q4 = type == QuantType::kQ4Strips;
  if (kernel == Int8GemmKernel::kNeonSmull) {
    return {q4 ? int8_tile_q4s_neon_smull : int8_tile_q8s_neon_smull,
            kInt8NeonStripRows,
            kInt8NeonSmullXRows,
            Int8XLayout::kInt8,
            Int8PanelWeights::kBytes,
            kInt8Depth,
            true};
  }
  // A lone x row would pair with zeros in USMMLA (half its multiplies wasted): the dotprod tile
  // takes it, with the same bits.
  const bool i8mm = kernel == Int8GemmKernel::kNeonI8mm && m >= 2;
  const Int8TileKernel tile = i8mm ? (q4 ? int8_tile_q4s_neon_i8mm : int8_tile_q8s_neon_i8mm)
                                   : (q4 ? int8_tile_q4s_neon_dotprod : int8_tile_q8s_neon_dotprod);
  return {tile,
          kInt8NeonStripRows,
          i8mm ? kInt8NeonI8mmXRows : kInt8NeonDotprodXRows,
          Int8XLayout::kInt8,
          Int8PanelWeights::kBytes,
          kInt8Depth,
          true};
}
bool int8_kernel_supports(Int8GemmKernel kernel, QuantType type) {
  // The ARM tiles read stored strips (what every q8/q4 model file holds); q8/q4 groups are
  // multiplied by the small-batch kernels.
  const bool arm = kernel == Int8GemmKernel::kNeonSmull || kernel == Int8GemmKernel::kNeonDotprod ||
                   kernel == Int8GemmKernel::kNeonI8mm;
  return arm && in_strips(type);
}
std::optional<Int8GemmKernel> int8_kernel_for(IsaLevel isa, QuantType type, ActivationPrecision) {
  if (!in_strips(type)) return std::nullopt;
  if (isa == IsaLevel::kNeonI8mm) return Int8GemmKernel::kNeonI8mm;
  if (isa == IsaLevel::kNeonDotprod) return Int8GemmKernel::kNeonDotprod;
  if (isa == IsaLevel::kNeon) return Int8GemmKernel::kNeonSmull;
  return std::nullopt;
}
void quantize_row_to(const float* x, int64_t nb, int32_t qmax, int8_t* q, float* scale,
                     int32_t* sum) {
  quantize_row_to_neon(x, nb, qmax, q, scale, sum);
}
void int8_repack(const Int8RepackSource&, int64_t, int64_t, int64_t, int64_t, int64_t,
                 Int8PanelWeights, uint8_t*) {
  fail(ErrorCode::kInternal, "the aarch64 int8 tiles read stored strips: nothing to repack");
}
void int8_widen(const int8_t*, int64_t, int16_t*) {
  fail(ErrorCode::kInternal, "the aarch64 int8 tiles take int8 x: nothing to widen");
}

}  // namespace kernels

namespace elementwise_kernels {
const ElementwiseKernels* elementwise_kernels_for(IsaLevel isa) {
  static const ElementwiseKernels neon{silu_mul_neon, gelu_tanh_neon, rms_norm_row_neon,
                                       layer_norm_row_neon, exp_sum_neon};
  return is_arm_level(isa) ? &neon : nullptr;
}
}  // namespace elementwise_kernels

namespace attention_kernels {
const AttentionKernels* attention_kernels_for(IsaLevel isa) {
  static const AttentionKernels neon{task_neon, decode_span_neon, nullptr, nullptr};
  return is_arm_level(isa) ? &neon : nullptr;
}
}  // namespace attention_kernels

namespace probe_kernels {
const ProbeKernels* probe_kernels_for(IsaLevel isa) {
  static const ProbeKernels neon{
      fma_loop_neon,      kFmaNeonPerIter,  "fmla v.4s",           nullptr,      0, "",
      int8_dot_loop_neon, kInt8NeonPerIter, "smull+smlal2+sadalp", read_sum_neon};
  static const ProbeKernels dotprod{
      fma_loop_neon,         kFmaNeonPerIter,     "fmla v.4s", nullptr,      0, "",
      int8_dot_loop_dotprod, kInt8DotprodPerIter, "sdot",      read_sum_neon};
  static const ProbeKernels i8mm{fma_loop_neon,        kFmaNeonPerIter,    "fmla v.4s",
                                 bf16_dot_loop_bfmmla, kBf16BfmmlaPerIter, "bfmmla",
                                 int8_dot_loop_i8mm,   kInt8I8mmPerIter,   "usmmla",
                                 read_sum_neon};
  if (isa == IsaLevel::kNeonI8mm) return &i8mm;
  if (isa == IsaLevel::kNeonDotprod) return &dotprod;
  return isa == IsaLevel::kNeon ? &neon : nullptr;
}
}  // namespace probe_kernels

}  // namespace qvl::ops
