// Rows of fp32 to IEEE half (round to nearest even) and back: the 16-bit KV cache's storage.
#pragma once

#include <cstdint>

#include "ops/isa.h"

namespace qvl::ops {

// Same results as kernels::f32_to_f16 / f16_to_f32 for every finite value and infinity (NaNs stay
// NaNs); F16C instructions when the active ISA level has them.
void f32_to_f16_row(const float* x, int64_t n, uint16_t* out);
void f16_to_f32_row(const uint16_t* x, int64_t n, float* out);

namespace kernels {
// Row conversions of a level (same bits as the scalar ones), or null where it has none.
// Per architecture: src/ops/<arch>/kernel_registry.cpp.
struct HalfConvertKernels {
  void (*f32_to_f16)(const float* x, int64_t n, uint16_t* out);
  void (*f16_to_f32)(const uint16_t* x, int64_t n, float* out);
};
const HalfConvertKernels* half_convert_kernels_for(IsaLevel isa);
}  // namespace kernels

}  // namespace qvl::ops
