// The x86 kernels of each level, for the generic drivers (see ops/isa.h). AVX-512 shares the
// AVX2 kernels where it has none of its own (the fp32 GEMM's strip packers, the quantizer).
// Compiled for the baseline x86-64: it only names kernels, it runs none.
#include "ops/attention_kernels.h"
#include "ops/elementwise_kernels.h"
#include "ops/half_convert.h"
#include "ops/machine_probe_kernels.h"
#include "ops/packed_gemm.h"
#include "ops/packed_kernels.h"
#include "ops/x86/attention_x86.h"
#include "ops/x86/elementwise_x86.h"
#include "ops/x86/machine_probe_x86.h"
#include "ops/x86/packed_gemm_x86.h"
#include "ops/x86/packed_kernels_x86.h"

namespace qvl::ops {

namespace kernels {

const RunKernels* run_kernels_for(IsaLevel isa) {
  static const RunKernels avx2{bf16_run_avx2, Bf16RunX::kF32EvenOdd16, q8_run_avx2, q4_run_avx2,
                               quantize_row_avx2};
  static const RunKernels avx512{bf16_run_avx512, Bf16RunX::kBf16, q8_run_avx512, q4_run_avx512,
                                 quantize_row_avx2};
  if (isa == IsaLevel::kAvx512) return &avx512;
  return isa == IsaLevel::kAvx2 ? &avx2 : nullptr;
}

const GemmKernels* gemm_kernels_for(IsaLevel isa, QuantType type) {
  if (isa == IsaLevel::kAvx512) {
    return type == QuantType::kBF16 ? &kGemmBf16Avx512 : &kGemmF32Avx512;
  }
  return isa == IsaLevel::kAvx2 ? &kGemmF32Avx2 : nullptr;
}

const HalfConvertKernels* half_convert_kernels_for(IsaLevel isa) {
  static const HalfConvertKernels f16c{f32_to_f16_f16c, f16_to_f32_f16c};
  return isa == IsaLevel::kAvx2 || isa == IsaLevel::kAvx512 ? &f16c : nullptr;
}

}  // namespace kernels

namespace elementwise_kernels {

const ElementwiseKernels* elementwise_kernels_for(IsaLevel isa) {
  static const ElementwiseKernels avx2{silu_mul_avx2, gelu_tanh_avx2, rms_norm_row_avx2,
                                       layer_norm_row_avx2, exp_sum_avx2};
  static const ElementwiseKernels avx512{silu_mul_avx512, gelu_tanh_avx512, rms_norm_row_avx512,
                                         layer_norm_row_avx512, exp_sum_avx512};
  if (isa == IsaLevel::kAvx512) return &avx512;
  return isa == IsaLevel::kAvx2 ? &avx2 : nullptr;
}

}  // namespace elementwise_kernels

namespace attention_kernels {

const AttentionKernels* attention_kernels_for(IsaLevel isa) {
  static const AttentionKernels avx2{task_avx2, decode_span_avx2, nullptr, nullptr};
  static const AttentionKernels avx512{task_avx512, decode_span_avx512, bf16_pairs_avx512,
                                       task_bf16_avx512};
  if (isa == IsaLevel::kAvx512) return &avx512;
  return isa == IsaLevel::kAvx2 ? &avx2 : nullptr;
}

}  // namespace attention_kernels

namespace probe_kernels {

const ProbeKernels* probe_kernels_for(IsaLevel isa) {
  static const ProbeKernels avx2{
      fma_loop_avx2,      kFmaAvx2PerIter,  "vfmadd231ps ymm",         nullptr,      0, "",
      int8_dot_loop_avx2, kInt8Avx2PerIter, "vpmaddubsw+vpmaddwd ymm", read_sum_avx2};
  static const ProbeKernels avx512{fma_loop_avx512,      kFmaAvx512PerIter,  "vfmadd231ps zmm",
                                   bf16_dot_loop_avx512, kBf16Avx512PerIter, "vdpbf16ps zmm",
                                   int8_dot_loop_avx512, kInt8Avx512PerIter, "vpdpbusd zmm",
                                   read_sum_avx512};
  if (isa == IsaLevel::kAvx512) return &avx512;
  return isa == IsaLevel::kAvx2 ? &avx2 : nullptr;
}

}  // namespace probe_kernels

}  // namespace qvl::ops
