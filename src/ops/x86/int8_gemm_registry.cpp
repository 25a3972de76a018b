// The x86 part of the int8 GEMM (ops/int8_gemm_kernels.h): which tile each kernel runs on each
// weight type, the AVX2 x quantizer and repacker, and which kernel matmul picks at each level.
// Compiled for the baseline x86-64: it only names kernels, it runs none.
#include <optional>

#include "base/error.h"
#include "ops/int8_gemm.h"
#include "ops/int8_gemm_kernels.h"
#include "ops/packed_kernels.h"
#include "ops/x86/cpuid_features.h"
#include "ops/x86/int8_gemm_x86.h"
#include "ops/x86/packed_kernels_x86.h"

namespace qvl::ops {

bool cpu_runs_int8_gemm_kernel(Int8GemmKernel kernel) {
  switch (kernel) {
    case Int8GemmKernel::kAvx2:
    case Int8GemmKernel::kAvx2X7:
    case Int8GemmKernel::kAvxVnniEmulated:
      return cpu_runs_isa(IsaLevel::kAvx2);
    case Int8GemmKernel::kAvxVnni:
      return kernels::cpu_has_avx_vnni();
    case Int8GemmKernel::kAvx512Vnni:
      return cpu_runs_isa(IsaLevel::kAvx512);
    default:
      return false;
  }
}

namespace kernels {

bool cpu_has_avx_vnni() {
  static const bool has = [] {
    __builtin_cpu_init();
    return cpu_runs_isa(IsaLevel::kAvx2) && arch::cpuid_has_avxvnni();
  }();
  return has;
}

namespace {

// The kernels that read strip matrices in place; every other kernel gets them repacked like
// kQ8/kQ4 (the same values: the same strips).
std::optional<Int8KernelInfo> stored_strip_kernel(Int8GemmKernel kernel, QuantType type) {
  const bool q4 = type == QuantType::kQ4Strips;
  const auto info = [](Int8TileKernel tile, int64_t nr, int64_t x_rows) {
    return Int8KernelInfo{tile,       nr,  x_rows, Int8XLayout::kInt8, Int8PanelWeights::kBytes,
                          kInt8Depth, true};
  };
  switch (kernel) {
    case Int8GemmKernel::kAvx512Vnni:
      return info(q4 ? int8_tile_q4s_avx512 : int8_tile_q8s_avx512, 32, kInt8Avx512StoredXRows);
    case Int8GemmKernel::kAvxVnni:
      return info(q4 ? int8_tile_q4s_avxvnni : int8_tile_q8s_avxvnni, 16, kInt8AvxVnniXRows);
    case Int8GemmKernel::kAvxVnniEmulated:
      return info(q4 ? int8_tile_q4s_avxvnni_emulated : int8_tile_q8s_avxvnni_emulated, 16,
                  kInt8AvxVnniXRows);
    case Int8GemmKernel::kAvx2X7:
      if (q4) return std::nullopt;
      return Int8KernelInfo{int8_tile_q8s_avx2_x7,
                            16,
                            kInt8Avx2X7XRows,
                            Int8XLayout::kInt7,
                            Int8PanelWeights::kBytes,
                            kInt8Depth,
                            true};
    default:
      return std::nullopt;
  }
}

Int8KernelInfo kernel_info(Int8GemmKernel kernel, QuantType type) {
  if (in_strips(type)) {
    if (auto stored = stored_strip_kernel(kernel, type)) return *stored;
  }
  const bool q8 = values_type(type) == QuantType::kQ8;
  const Int8XLayout vnni_x = q8 ? Int8XLayout::kOffset8 : Int8XLayout::kInt8;
  switch (kernel) {
    case Int8GemmKernel::kAvx2:
    case Int8GemmKernel::kAvx2X7:
      if (q8) {  // int16 strips: half the depth keeps a row block's chunk in L1
        return {int8_tile_q8_avx2,          16,
                kInt8Avx2Q8XRows,           Int8XLayout::kInt16,
                Int8PanelWeights::kPairs16, kInt8Depth / 2};
      }
      return {int8_tile_q4_avx2, 16, kInt8Avx2Q4XRows, Int8XLayout::kInt8,
              Int8PanelWeights::kBytes};
    case Int8GemmKernel::kAvxVnni:
      return {q8 ? int8_tile_q8_avxvnni : int8_tile_q4_avxvnni, 16, kInt8AvxVnniXRows, vnni_x,
              Int8PanelWeights::kBytes};
    case Int8GemmKernel::kAvx512Vnni:
      return {q8 ? int8_tile_q8_avx512 : int8_tile_q4_avx512, 32, kInt8Avx512XRows, vnni_x,
              Int8PanelWeights::kBytes};
    case Int8GemmKernel::kAvxVnniEmulated:
      return {q8 ? int8_tile_q8_avxvnni_emulated : int8_tile_q4_avxvnni_emulated, 16,
              kInt8AvxVnniXRows, vnni_x, Int8PanelWeights::kBytes};
    default:
      break;
  }
  fail(ErrorCode::kInternal, "not an x86 int8 GEMM kernel");
}

}  // namespace

Int8KernelInfo int8_kernel_info(Int8GemmKernel kernel, QuantType type, int64_t m) {
  // Below the GEMM's rows (decode) the AVX2 kernels would repack the whole matrix per call for a
  // few rows: tiles that read the strips in place take them instead, with int16 sums of nibble
  // products (q4, and q8 split into nibbles; kAvx2X7 keeps its own 7-bit tile for q8 strips).
  const bool q4 = type == QuantType::kQ4Strips;
  const bool avx2 = kernel == Int8GemmKernel::kAvx2 || (kernel == Int8GemmKernel::kAvx2X7 && q4);
  if (avx2 && in_strips(type) && m < kGemmMinRows) {
    Int8KernelInfo info = kernel_info(Int8GemmKernel::kAvxVnniEmulated, type);  // 16-row halves
    info.tile = q4 ? int8_tile_q4s_avx2 : int8_tile_q8s_avx2;
    info.x_rows = q4 ? kInt8Avx2Q4XRows : kInt8Avx2Q8sXRows;
    return info;
  }
  // The AVX-512 stored-strip tiles take up to 8 x rows: a decode step of 8 streams in one pass
  // over each strip, its outputs updated in memory past 6 rows. Larger batches go 6 rows at a
  // time, outputs in registers (the same bits per row): at 128 rows 512 -> 559 GOP/s per core
  // (2048 x 2048 q4 strips in cache, one thread).
  if (kernel == Int8GemmKernel::kAvx512Vnni && in_strips(type) && m > kInt8Avx512StoredXRows) {
    Int8KernelInfo info = kernel_info(kernel, type);
    info.x_rows = kInt8Avx512XRows;
    return info;
  }
  return kernel_info(kernel, type);
}

bool int8_kernel_supports(Int8GemmKernel kernel, QuantType type) {
  const bool int8_type = values_type(type) == QuantType::kQ8 || values_type(type) == QuantType::kQ4;
  return int8_type && kernel != Int8GemmKernel::kNeonSmull &&
         kernel != Int8GemmKernel::kNeonDotprod && kernel != Int8GemmKernel::kNeonI8mm;
}

std::optional<Int8GemmKernel> int8_kernel_for(IsaLevel isa, QuantType /*type*/,
                                              ActivationPrecision precision) {
  if (isa == IsaLevel::kAvx512) return Int8GemmKernel::kAvx512Vnni;
  if (isa != IsaLevel::kAvx2) return std::nullopt;
  // AVX-VNNI is a sub-feature of the AVX2 level, checked against the oracle on first use like
  // the levels are; on a mismatch the AVX2 kernels stay in use.
  static const bool vnni_usable =
      cpu_has_avx_vnni() && int8_gemm_kernel_agrees_with_reference(Int8GemmKernel::kAvxVnni);
  if (avx_vnni_allowed() && vnni_usable) return Int8GemmKernel::kAvxVnni;
  if (precision == ActivationPrecision::kFastest) {
    static const bool x7_usable = int8_gemm_kernel_agrees_with_reference(Int8GemmKernel::kAvx2X7);
    if (x7_usable) return Int8GemmKernel::kAvx2X7;
  }
  return Int8GemmKernel::kAvx2;
}

void quantize_row_to(const float* x, int64_t nb, int32_t qmax, int8_t* q, float* scale,
                     int32_t* sum) {
  static const bool avx2 = cpu_runs_isa(IsaLevel::kAvx2);
  (avx2 ? quantize_row_to_avx2 : quantize_row_to_scalar)(x, nb, qmax, q, scale, sum);
}

void int8_repack(const Int8RepackSource& src, int64_t g0, int64_t strips, int64_t nr, int64_t b0,
                 int64_t nbc, Int8PanelWeights weights, uint8_t* panel) {
  int8_repack_avx2(src, g0, strips, nr, b0, nbc, weights, panel);
}

void int8_widen(const int8_t* src, int64_t n, int16_t* dst) {
  int8_widen_avx2(src, n, dst);
}

}  // namespace kernels
}  // namespace qvl::ops
