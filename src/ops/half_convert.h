// Rows of fp32 to IEEE half (round to nearest even) and back: the 16-bit KV cache's storage.
#pragma once

#include <cstdint>

namespace qvl::ops {

// Same results as kernels::f32_to_f16 / f16_to_f32 for every finite value and infinity (NaNs stay
// NaNs); F16C instructions when the active ISA level has them.
void f32_to_f16_row(const float* x, int64_t n, uint16_t* out);
void f16_to_f32_row(const uint16_t* x, int64_t n, float* out);

}  // namespace qvl::ops
