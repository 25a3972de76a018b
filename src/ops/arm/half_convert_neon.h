// NEON rows of fp32 to IEEE half and back (ops/half_convert.h): FCVTN / FCVTL, which round to
// nearest even like the scalar conversions. Bit-identical to kernels::f32_to_f16 and
// qvl::f16_to_f32 for every input, NaNs included.
#pragma once

#include <cstdint>

namespace qvl::ops {

void f32_to_f16_neon(const float* x, int64_t n, uint16_t* out);
void f16_to_f32_neon(const uint16_t* x, int64_t n, float* out);

}  // namespace qvl::ops
