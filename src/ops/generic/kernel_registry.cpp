// CPUs without kernels of their own: every level is kScalar, so every driver runs the scalar
// oracles (see ops/isa.h).
#include <optional>

#include "base/error.h"
#include "ops/attention_kernels.h"
#include "ops/elementwise_kernels.h"
#include "ops/half_convert.h"
#include "ops/int8_gemm.h"
#include "ops/int8_gemm_kernels.h"
#include "ops/machine_probe_kernels.h"
#include "ops/packed_gemm.h"
#include "ops/packed_kernels.h"

namespace qvl::ops {

bool cpu_runs_int8_gemm_kernel(Int8GemmKernel) {
  return false;
}

namespace kernels {

const RunKernels* run_kernels_for(IsaLevel) {
  return nullptr;
}
const GemmKernels* gemm_kernels_for(IsaLevel, QuantType) {
  return nullptr;
}
const HalfConvertKernels* half_convert_kernels_for(IsaLevel) {
  return nullptr;
}

Int8KernelInfo int8_kernel_info(Int8GemmKernel, QuantType, int64_t) {
  fail(ErrorCode::kUnsupported, "this CPU has no int8 GEMM kernel");
}
bool int8_kernel_supports(Int8GemmKernel, QuantType) {
  return false;
}
std::optional<Int8GemmKernel> int8_kernel_for(IsaLevel, QuantType, ActivationPrecision) {
  return std::nullopt;
}
void quantize_row_to(const float* x, int64_t nb, int32_t qmax, int8_t* q, float* scale,
                     int32_t* sum) {
  quantize_row_to_scalar(x, nb, qmax, q, scale, sum);
}
void int8_repack(const Int8RepackSource&, int64_t, int64_t, int64_t, int64_t, int64_t,
                 Int8PanelWeights, uint8_t*) {
  fail(ErrorCode::kUnsupported, "this CPU has no int8 GEMM kernel");
}
void int8_widen(const int8_t*, int64_t, int16_t*) {
  fail(ErrorCode::kUnsupported, "this CPU has no int8 GEMM kernel");
}

}  // namespace kernels

namespace elementwise_kernels {
const ElementwiseKernels* elementwise_kernels_for(IsaLevel) {
  return nullptr;
}
}  // namespace elementwise_kernels

namespace attention_kernels {
const AttentionKernels* attention_kernels_for(IsaLevel) {
  return nullptr;
}
}  // namespace attention_kernels

namespace probe_kernels {
const ProbeKernels* probe_kernels_for(IsaLevel) {
  return nullptr;
}
}  // namespace probe_kernels

}  // namespace qvl::ops
