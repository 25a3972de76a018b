// ops::matmul on PackedMatrix: activation preparation, ISA dispatch and the blocked driver.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/error.h"
#include "base/half.h"
#include "base/log.h"
#include "base/stage_profile.h"
#include "base/thread_pool.h"
#include "ops/int8_gemm.h"
#include "ops/int8_gemm_kernels.h"
#include "ops/matmul.h"
#include "ops/packed_gemm.h"
#include "ops/packed_gemv.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using kernels::kCols;
using kernels::kRows;

// -1 = automatic, else an IsaLevel.
std::atomic<int> g_isa_override{-1};
// -1 = automatic (QVL_GEMM_ACT or int8), else a GemmActivations.
std::atomic<int> g_gemm_activations{-1};

GemmActivations default_gemm_activations() {
  static const GemmActivations act = [] {
    const char* env = std::getenv("QVL_GEMM_ACT");
    if (env == nullptr || std::string(env).empty() || std::string(env) == "int8") {
      return GemmActivations::kInt8;
    }
    if (std::string(env) == "f32") return GemmActivations::kF32;
    QVL_LOG(kError) << "QVL_GEMM_ACT=" << env << " is neither int8 nor f32; using int8";
    return GemmActivations::kInt8;
  }();
  return act;
}

std::atomic<bool> g_avx_vnni_allowed{true};

void matmul_on(IsaLevel isa, GemmActivations act, const float* x, int64_t m, const PackedMatrix& w,
               const float* bias, float* y,
               ActivationPrecision precision = ActivationPrecision::kInt8) {
  const std::optional<Int8GemmKernel> int8 =
      isa == IsaLevel::kScalar ? std::nullopt : kernels::int8_kernel_for(isa, w.type(), precision);
  if (in_strips(w.type())) {  // stored for the int8 GEMM, whatever m is
    if (int8) {
      int8_gemm(*int8, x, m, w, bias, y);
    } else {
      int8_gemm_reference(x, m, w, bias, y);
    }
    return;
  }
  // m >= kGemmMinRows with fp32 activations: the blocked GEMM (packed_gemm.h). Activations stay
  // fp32 (no int8 rounding: the dequantized weights are exact in fp32), except that bf16 weights
  // on AVX-512 and at ARM i8mm multiply bf16-rounded activations (vdpbf16ps, BFMMLA; fp32 sums).
  if (isa != IsaLevel::kScalar && m >= kernels::kGemmMinRows) {
    if (act == GemmActivations::kInt8 && w.type() != QuantType::kBF16) {
      if (int8) return int8_gemm(*int8, x, m, w, bias, y);
    } else if (const kernels::GemmKernels* gemm = kernels::gemm_kernels_for(isa, w.type())) {
      return kernels::gemm(*gemm, x, m, w, bias, y);
    }
  }
  const MatmulOutput output{&w, bias, y};
  detail::small_batch_matmul(isa, x, m, &output, 1);
}

// The SIMD kernels cannot be exercised on every development machine (AVX-512 is often missing),
// so before first use they are compared with the scalar ones on a small problem; a mismatch is a
// bug, reported once, and matmul then uses the level below rather than compute garbage.
bool kernels_agree_with_scalar(IsaLevel isa) {
  // Row counts that reach the GEMM (3 panels: full and partial register tiles, a padded panel),
  // the multi-row kernels and the GEMV; k = 288 leaves a short depth block, n = 42 a short tile.
  const int64_t n = 42, k = 288, row_counts[] = {2 * kernels::kGemmMinRows + 3, 5, 1};
  const int64_t m = row_counts[0] + row_counts[1] + row_counts[2];
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(n * k)), x(static_cast<size_t>(m * k));
  for (auto& v : w) v = 0.05f * dist(rng);
  for (auto& v : x) v = dist(rng);
  for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4, QuantType::kQ8Strips,
                         QuantType::kQ4Strips}) {
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    if (!in_strips(type) && !detail::run_kernels_agree_with_scalar(isa, x.data(), packed)) {
      QVL_LOG(kError) << isa_level_name(isa) << " " << quant_type_name(type)
                      << " GEMV kernels disagree with the scalar ones; not using them";
      return false;
    }
    std::vector<float> want(static_cast<size_t>(m * n)), got(want.size());
    // Both GEMMs (int8 and fp32 activations) as well as the GEMV and small-batch kernels.
    for (GemmActivations act : {GemmActivations::kInt8, GemmActivations::kF32}) {
      int64_t row0 = 0;
      for (int64_t rows : row_counts) {
        const float* x_at = x.data() + row0 * k;
        matmul_on(IsaLevel::kScalar, act, x_at, rows, packed, nullptr, want.data() + row0 * n);
        matmul_on(isa, act, x_at, rows, packed, nullptr, got.data() + row0 * n);
        row0 += rows;
      }
      float largest = 0;
      for (float v : want) largest = std::max(largest, std::fabs(v));
      for (size_t i = 0; i < want.size(); ++i) {
        // bf16 rounding of x (AVX-512, ARM i8mm) and the fp32 GEMM's unrounded x move results by
        // well under 1%; a wrong kernel by ~100%.
        if (!(std::fabs(got[i] - want[i]) <= 0.01f * largest)) {
          QVL_LOG(kError) << isa_level_name(isa) << " " << quant_type_name(type) << " kernel ("
                          << gemm_activations_name(act)
                          << " GEMM activations) disagrees with the scalar one (" << got[i]
                          << " vs " << want[i] << "); not using it";
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

IsaLevel best_isa() {
  static const IsaLevel level = [] {
    IsaLevel usable = cpu_isa();
    while (usable != IsaLevel::kScalar && !kernels_agree_with_scalar(usable)) {
      usable = lower_isa_level(usable);
    }
    return usable;
  }();
  return level;
}

void set_isa_override(std::optional<IsaLevel> level) {
  const auto runs = [](IsaLevel wanted) {
    for (IsaLevel l = best_isa();; l = lower_isa_level(l)) {
      if (l == wanted) return true;
      if (l == IsaLevel::kScalar) return false;
    }
  };
  if (level && !runs(*level)) {
    fail(ErrorCode::kUnsupported, std::string("this CPU cannot run ") + isa_level_name(*level) +
                                      " kernels (best: " + isa_level_name(best_isa()) + ")");
  }
  g_isa_override.store(level ? static_cast<int>(*level) : -1);
}

IsaLevel active_isa() {
  const int level = g_isa_override.load();
  return level < 0 ? best_isa() : static_cast<IsaLevel>(level);
}

void set_avx_vnni_allowed(bool allowed) {
  g_avx_vnni_allowed.store(allowed);
}

bool kernels::avx_vnni_allowed() {
  return g_avx_vnni_allowed.load();
}

const char* active_int8_gemm_kernel_name() {
  const IsaLevel isa = active_isa();
  const std::optional<Int8GemmKernel> kernel =
      isa == IsaLevel::kScalar
          ? std::nullopt
          : kernels::int8_kernel_for(isa, QuantType::kQ4Strips, ActivationPrecision::kInt8);
  return kernel ? int8_gemm_kernel_name(*kernel) : "none";
}

const char* gemm_activations_name(GemmActivations act) {
  return act == GemmActivations::kInt8 ? "int8" : "f32";
}

void set_gemm_activations(std::optional<GemmActivations> act) {
  g_gemm_activations.store(act ? static_cast<int>(*act) : -1);
}

GemmActivations gemm_activations() {
  const int act = g_gemm_activations.load();
  return act < 0 ? default_gemm_activations() : static_cast<GemmActivations>(act);
}

MatmulArithmetic matmul_arithmetic(QuantType type, int64_t m) {
  // Mirrors the dispatch of matmul and matmul_on.
  const IsaLevel isa = active_isa();
  if (type == QuantType::kExact) return MatmulArithmetic::kF32;
  if (in_strips(type)) return MatmulArithmetic::kInt8Dot;
  // bf16 weights: bf16 dots where the level's kernel takes x as bf16 (vdpbf16ps on AVX-512,
  // BFMMLA at ARM i8mm), else fp32.
  if (isa != IsaLevel::kScalar && m >= kernels::kGemmMinRows) {
    if (type == QuantType::kBF16) {
      const kernels::GemmKernels* gemm = kernels::gemm_kernels_for(isa, type);
      return gemm && gemm->x_bytes == 2 ? MatmulArithmetic::kBF16Dot : MatmulArithmetic::kF32;
    }
    const bool int8 = gemm_activations() == GemmActivations::kInt8;
    return int8 ? MatmulArithmetic::kInt8Dot : MatmulArithmetic::kF32;
  }
  if (type == QuantType::kBF16) {
    const kernels::RunKernels* run =
        isa == IsaLevel::kScalar ? nullptr : kernels::run_kernels_for(isa);
    return run && run->bf16_x == kernels::Bf16RunX::kBf16 ? MatmulArithmetic::kBF16Dot
                                                          : MatmulArithmetic::kF32;
  }
  return MatmulArithmetic::kInt8Dot;
}

const char* matmul_arithmetic_name(MatmulArithmetic arithmetic) {
  switch (arithmetic) {
    case MatmulArithmetic::kF32:
      return "fp32";
    case MatmulArithmetic::kBF16Dot:
      return "bf16";
    case MatmulArithmetic::kInt8Dot:
      return "int8";
  }
  return "?";
}

void matmul(const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y,
            ActivationPrecision precision) {
  const profile::StageScope stage(profile::Work::kMatmul);
  if (m <= 0) return;
  if (w.type() == QuantType::kExact) {
    ops::matmul(x, m, w.exact_source(), bias, y);
    return;
  }
  QVL_CHECK(x != nullptr && y != nullptr && w.bytes() != nullptr);
  matmul_on(active_isa(), gemm_activations(), x, m, w, bias, y, precision);
}

void matmul_multi(const float* x, int64_t m, const MatmulOutput* outputs, size_t count) {
  if (m <= 0 || count == 0) return;
  const IsaLevel isa = active_isa();
  const QuantType type = outputs[0].w->type();
  bool same = type != QuantType::kExact;
  for (size_t j = 0; j < count; ++j) {
    const PackedMatrix& w = *outputs[j].w;
    QVL_CHECK(x != nullptr && outputs[j].y != nullptr && w.bytes() != nullptr);
    same = same && w.type() == type && w.cols() == outputs[0].w->cols();
  }
  // Matrices matmul_on sends to the int8 GEMM share its x quantization and pool dispatch; those
  // on the GEMV and small-batch kernels (m < 16, or scalar) their parallel region.
  const std::optional<Int8GemmKernel> kernel =
      isa == IsaLevel::kScalar || type == QuantType::kExact
          ? std::nullopt
          : kernels::int8_kernel_for(isa, type, ActivationPrecision::kInt8);
  const bool int8 =
      kernel && (in_strips(type) || (m >= kernels::kGemmMinRows && type != QuantType::kBF16 &&
                                     gemm_activations() == GemmActivations::kInt8));
  // As matmul_on: below the GEMM's rows, or where the level has no GEMM for the product.
  const bool gemm_missing = type == QuantType::kBF16 || gemm_activations() == GemmActivations::kF32
                                ? kernels::gemm_kernels_for(isa, type) == nullptr
                                : !kernel;
  const bool small = !in_strips(type) && !int8 &&
                     (isa == IsaLevel::kScalar || m < kernels::kGemmMinRows || gemm_missing);
  if (!same || !(int8 || small)) {
    for (size_t j = 0; j < count; ++j) matmul(x, m, *outputs[j].w, outputs[j].bias, outputs[j].y);
    return;
  }
  const profile::StageScope stage(profile::Work::kMatmul);
  if (int8) {
    int8_gemm_multi(*kernel, x, m, outputs, count);
  } else {
    detail::small_batch_matmul(isa, x, m, outputs, count);
  }
}

void matmul_grouped(const float* x, const GroupedOutput* outputs, size_t count) {
  if (count == 0) return;
  // Stored strips take the int8 GEMM at every m: one x quantization and one pool dispatch for all.
  const IsaLevel isa = active_isa();
  const QuantType type = outputs[0].w->type();
  const std::optional<Int8GemmKernel> kernel =
      isa == IsaLevel::kScalar || !in_strips(type)
          ? std::nullopt
          : kernels::int8_kernel_for(isa, type, ActivationPrecision::kInt8);
  bool same = kernel.has_value();
  int64_t m = 0;
  for (size_t j = 0; j < count; ++j) {
    same = same && outputs[j].w->type() == type && outputs[j].w->cols() == outputs[0].w->cols();
    m = std::max(m, outputs[j].row_end);
  }
  if (same) {
    const profile::StageScope stage(profile::Work::kMatmul);
    thread_local std::vector<MatmulOutput> products;
    thread_local std::vector<std::pair<int64_t, int64_t>> rows;
    products.clear();
    rows.clear();
    for (size_t j = 0; j < count; ++j) {
      QVL_CHECK(0 <= outputs[j].row_begin && outputs[j].row_begin <= outputs[j].row_end);
      products.push_back({outputs[j].w, nullptr, outputs[j].y});
      rows.emplace_back(outputs[j].row_begin, outputs[j].row_end);
    }
    int8_gemm_grouped(*kernel, x, m, products.data(), rows.data(), count);
    return;
  }
  for (size_t j = 0; j < count; ++j) {
    const GroupedOutput& o = outputs[j];
    QVL_CHECK(0 <= o.row_begin && o.row_begin <= o.row_end);
    matmul(x + o.row_begin * o.w->cols(), o.row_end - o.row_begin, *o.w, nullptr, o.y);
  }
}

}  // namespace qvl::ops
