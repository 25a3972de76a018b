// Internal: the x86 run kernels of the GEMV and small batches and the AVX2 quantizers
// (ops/packed_kernels.h). Plain declarations only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/packed_kernels.h"

namespace qvl::ops::kernels {

void bf16_run_avx2(const GroupRun& w, const void* x, size_t x_stride, int nx, float* out);
void q8_run_avx2(const GroupRun& w, const QuantX& x, int nx, float* out);
void q4_run_avx2(const GroupRun& w, const QuantX& x, int nx, float* out);
void bf16_run_avx512(const GroupRun& w, const void* x, size_t x_stride, int nx, float* out);
void q8_run_avx512(const GroupRun& w, const QuantX& x, int nx, float* out);
void q4_run_avx512(const GroupRun& w, const QuantX& x, int nx, float* out);

void quantize_row_avx2(const float* x, int64_t nb, int8_t* q, float* scale, int32_t* sum);
void quantize_row_to_avx2(const float* x, int64_t nb, int32_t qmax, int8_t* q, float* scale,
                          int32_t* sum);

// F16C row conversions (half_convert_f16c.cpp).
void f32_to_f16_f16c(const float* x, int64_t n, uint16_t* out);
void f16_to_f32_f16c(const uint16_t* x, int64_t n, float* out);

}  // namespace qvl::ops::kernels
