#include "ops/half_convert.h"

#include "base/half.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

const kernels::HalfConvertKernels* usable() {
  const IsaLevel isa = active_isa();
  return isa == IsaLevel::kScalar ? nullptr : kernels::half_convert_kernels_for(isa);
}

}  // namespace

void f32_to_f16_row(const float* x, int64_t n, uint16_t* out) {
  if (const kernels::HalfConvertKernels* k = usable()) {
    k->f32_to_f16(x, n, out);
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = kernels::f32_to_f16(x[i]);
}

void f16_to_f32_row(const uint16_t* x, int64_t n, float* out) {
  if (const kernels::HalfConvertKernels* k = usable()) {
    k->f16_to_f32(x, n, out);
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = qvl::f16_to_f32(x[i]);
}

}  // namespace qvl::ops
