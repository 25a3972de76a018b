// ops::matmul on PackedMatrix: activation preparation, ISA dispatch and the blocked driver.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/error.h"
#include "base/half.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "ops/matmul.h"
#include "ops/packed_gemm.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using kernels::kCols;
using kernels::kRows;

IsaLevel detect_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16") &&
      __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
    return IsaLevel::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c")) {
    return IsaLevel::kAvx2;
  }
  return IsaLevel::kScalar;
}

// -1 = automatic, else an IsaLevel.
std::atomic<int> g_isa_override{-1};

// Activations of one call, prepared for the kernels of the chosen ISA.
struct PreparedX {
  const void* bf16_rows = nullptr;  // kBF16: row i at bf16_rows + i * row_bytes
  size_t row_bytes = 0;
  const int8_t* q = nullptr;  // kQ8/kQ4: quantized rows (see kernels::quantize_row_scalar)
  const float* scale = nullptr;
  const int32_t* sum = nullptr;
  const float* scaled_sum = nullptr;
};

// Grow-only scratch of the calling thread, so steady-state calls do not allocate.
struct Scratch {
  AlignedBuffer<uint8_t> x;
  AlignedBuffer<float> scale;
  AlignedBuffer<int32_t> sum;
  AlignedBuffer<float> scaled_sum;
};
thread_local Scratch t_scratch;

PreparedX prepare_bf16(const float* x, int64_t m, int64_t k, IsaLevel isa) {
  PreparedX p;
  if (isa == IsaLevel::kScalar) {
    p.bf16_rows = x;
    p.row_bytes = static_cast<size_t>(k) * 4;
    return p;
  }
  const size_t elem = isa == IsaLevel::kAvx2 ? 4 : 2;
  p.row_bytes = static_cast<size_t>(k) * elem;
  t_scratch.x.resize(p.row_bytes * static_cast<size_t>(m));
  uint8_t* base = t_scratch.x.data();
  ThreadPool::global().parallel_for(static_cast<size_t>(m), [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      const float* xi = x + static_cast<int64_t>(i) * k;
      if (isa == IsaLevel::kAvx2) {  // each 16 columns as 8 even then 8 odd ones
        auto* out = reinterpret_cast<float*>(base + i * p.row_bytes);
        for (int64_t c = 0; c < k; c += 16) {
          for (int64_t j = 0; j < 8; ++j) {
            out[c + j] = xi[c + 2 * j];
            out[c + 8 + j] = xi[c + 2 * j + 1];
          }
        }
      } else {
        auto* out = reinterpret_cast<uint16_t*>(base + i * p.row_bytes);
        for (int64_t j = 0; j < k; ++j) out[j] = f32_to_bf16(xi[j]);
      }
    }
  });
  p.bf16_rows = base;
  return p;
}

PreparedX prepare_quantized(const float* x, int64_t m, int64_t k, IsaLevel isa) {
  const int64_t nb = k / kCols;
  t_scratch.x.resize(static_cast<size_t>(m * k));
  t_scratch.scale.resize(static_cast<size_t>(m * nb));
  t_scratch.sum.resize(static_cast<size_t>(m * nb));
  t_scratch.scaled_sum.resize(static_cast<size_t>(m * nb));
  auto* q = reinterpret_cast<int8_t*>(t_scratch.x.data());
  float* scale = t_scratch.scale.data();
  int32_t* sum = t_scratch.sum.data();
  float* scaled_sum = t_scratch.scaled_sum.data();
  const auto quantize =
      isa == IsaLevel::kScalar ? kernels::quantize_row_scalar : kernels::quantize_row_avx2;
  ThreadPool::global().parallel_for(static_cast<size_t>(m), [&](size_t i0, size_t i1) {
    for (int64_t i = static_cast<int64_t>(i0); i < static_cast<int64_t>(i1); ++i) {
      quantize(x + i * k, nb, q + i * k, scale + i * nb, sum + i * nb);
      for (int64_t b = i * nb; b < (i + 1) * nb; ++b) {
        scaled_sum[b] = scale[b] * static_cast<float>(sum[b]);
      }
    }
  });
  PreparedX p;
  p.q = q;
  p.scale = scale;
  p.sum = sum;
  p.scaled_sum = scaled_sum;
  return p;
}

struct Dispatch {
  kernels::Bf16GroupKernel bf16;
  kernels::QuantGroupKernel q8;
  kernels::QuantGroupKernel q4;
  kernels::Bf16Group3Kernel bf16_x3 = nullptr;  // optional multi-row variants
  kernels::QuantGroupKernel q8_x2 = nullptr;
  kernels::QuantGroupKernel q4_x2 = nullptr;
  kernels::QuantGroupPairKernel q4_pair = nullptr;  // m == 1
};

Dispatch kernels_for(IsaLevel isa) {
  using namespace kernels;  // NOLINT: a table of kernel names
  switch (isa) {
    case IsaLevel::kAvx512:
      return {bf16_group_avx512,  q8_group_avx512,  q4_group_avx512,
              bf16_group3_avx512, q8_group2_avx512, q4_group2_avx512};
    case IsaLevel::kAvx2:
      return {bf16_group_avx2, q8_group_avx2,  q4_group_avx2,     bf16_group3_avx2,
              q8_group2_avx2,  q4_group2_avx2, q4_group_pair_avx2};
    case IsaLevel::kScalar:
      break;
  }
  return {bf16_group_scalar, q8_group_scalar, q4_group_scalar};
}

// Cache blocking for m > 1 (sized for a 512 KB L2): a pass takes kGroupsPerPass groups and
// kSpanBlocks blocks (512 columns) of them against up to kXBlock rows of x, so the weight spans
// (<= 64 KB) stay cached for all those rows and the x block (<= 96 KB) for all the groups.
// m == 1 streams each group from start to end instead.
constexpr int64_t kGroupsPerPass = 16;
constexpr int64_t kSpanBlocks = 16;
constexpr int64_t kXBlock = 48;

// m >= kGemmMinRows on AVX2 and up: the blocked GEMM (packed_gemm.h). Activations stay fp32
// (no int8 rounding: the dequantized weights are exact in fp32), except that bf16 weights on
// AVX-512 multiply bf16-rounded activations with vdpbf16ps (fp32 sums).
const kernels::GemmKernels& gemm_kernels_for(IsaLevel isa, QuantType type) {
  if (isa == IsaLevel::kAvx512) {
    return type == QuantType::kBF16 ? kernels::kGemmBf16Avx512 : kernels::kGemmF32Avx512;
  }
  return kernels::kGemmF32Avx2;
}

void matmul_on(IsaLevel isa, const float* x, int64_t m, const PackedMatrix& w, const float* bias,
               float* y) {
  if (isa != IsaLevel::kScalar && m >= kernels::kGemmMinRows) {
    kernels::gemm(gemm_kernels_for(isa, w.type()), x, m, w, bias, y);
    return;
  }
  const QuantType type = w.type();
  const int64_t n = w.rows(), k = w.cols(), nb = k / kCols;
  const int64_t groups = (n + kRows - 1) / kRows;
  const int64_t gbytes = static_cast<int64_t>(packed_size_bytes(type, kRows, k));
  const int64_t scale_bytes = type == QuantType::kBF16 ? 0 : nb * kernels::kScaleBytes;
  const int64_t tile_bytes = type == QuantType::kBF16 ? kernels::kBf16TileBytes
                             : type == QuantType::kQ8 ? kernels::kQ8TileBytes
                                                      : kernels::kQ4TileBytes;
  const PreparedX px =
      type == QuantType::kBF16 ? prepare_bf16(x, m, k, isa) : prepare_quantized(x, m, k, isa);
  const size_t x_elem_bytes = type == QuantType::kBF16 ? px.row_bytes / static_cast<size_t>(k) : 1;
  const Dispatch kernel = kernels_for(isa);
  const auto* weights = static_cast<const uint8_t*>(w.bytes());
  const int64_t span = m == 1 ? nb : std::min(nb, kSpanBlocks);

  const auto span_of = [&](int64_t g, int64_t s0) {
    const uint8_t* group = weights + g * gbytes;
    return kernels::GroupSpan{group + s0 * kernels::kScaleBytes,
                              group + scale_bytes + s0 * tile_bytes, std::min(span, nb - s0)};
  };
  const auto quant_x = [&](int64_t i, int64_t s0) {
    const int64_t b = i * nb + s0;
    return kernels::QuantX{px.q + b * kCols, px.scale + b, px.sum + b, nb, px.scaled_sum + b};
  };
  // Adds (or, for the first span, stores) the 4 outputs of group rows r0.. for x rows i...
  const auto emit = [&](const float* out, int64_t count, int64_t i, int64_t r0, bool first) {
    const int64_t rn = std::min(kRows, n - r0);
    for (int64_t d = 0; d < count; ++d) {
      float* yi = y + (i + d) * n + r0;
      const float* o = out + d * kRows;
      for (int64_t r = 0; r < rn; ++r) {
        yi[r] = first ? (bias ? o[r] + bias[r0 + r] : o[r]) : yi[r] + o[r];
      }
    }
  };

  ThreadPool::global().parallel_for(static_cast<size_t>(groups), [&](size_t b0, size_t b1) {
    const int64_t g_begin = static_cast<int64_t>(b0), g_end = static_cast<int64_t>(b1);
    for (int64_t gp = g_begin; gp < g_end; gp += kGroupsPerPass) {
      const int64_t gp_end = std::min(g_end, gp + kGroupsPerPass);
      for (int64_t i0 = 0; i0 < m; i0 += kXBlock) {
        const int64_t i1 = std::min(m, i0 + kXBlock);
        for (int64_t s0 = 0; s0 < nb; s0 += span) {
          for (int64_t g = gp; g < gp_end; ++g) {
            const kernels::GroupSpan ws = span_of(g, s0);
            if (m == 1 && type == QuantType::kQ4 && kernel.q4_pair != nullptr && g + 1 < gp_end) {
              float out[2 * kRows];
              kernel.q4_pair(ws, span_of(g + 1, s0), quant_x(0, s0), out);
              emit(out, 1, 0, g * kRows, true);
              emit(out + kRows, 1, 0, (g + 1) * kRows, true);
              ++g;
              continue;
            }
            for (int64_t i = i0; i < i1;) {
              float out[3 * kRows];
              int64_t rows = 1;
              if (type == QuantType::kBF16) {
                const uint8_t* xi = static_cast<const uint8_t*>(px.bf16_rows) + i * px.row_bytes +
                                    s0 * kCols * x_elem_bytes;
                if (kernel.bf16_x3 != nullptr && i + 3 <= i1) {
                  kernel.bf16_x3(ws, xi, px.row_bytes, out);
                  rows = 3;
                } else {
                  kernel.bf16(ws, xi, out);
                }
              } else {
                const bool q8 = type == QuantType::kQ8;
                kernels::QuantGroupKernel fn = q8 ? kernel.q8 : kernel.q4;
                const kernels::QuantGroupKernel fn2 = q8 ? kernel.q8_x2 : kernel.q4_x2;
                if (fn2 != nullptr && i + 2 <= i1) {
                  fn = fn2;
                  rows = 2;
                }
                fn(ws, quant_x(i, s0), out);
              }
              emit(out, rows, i, g * kRows, s0 == 0);
              i += rows;
            }
          }
        }
      }
    }
  });
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
  for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    std::vector<float> want(static_cast<size_t>(m * n)), got(want.size());
    int64_t row0 = 0;
    for (int64_t rows : row_counts) {
      const float* x_at = x.data() + row0 * k;
      matmul_on(IsaLevel::kScalar, x_at, rows, packed, nullptr, want.data() + row0 * n);
      matmul_on(isa, x_at, rows, packed, nullptr, got.data() + row0 * n);
      row0 += rows;
    }
    float largest = 0;
    for (float v : want) largest = std::max(largest, std::fabs(v));
    for (size_t i = 0; i < want.size(); ++i) {
      // bf16 rounding of x on AVX-512 moves results by well under 1%; a wrong kernel by ~100%.
      if (!(std::fabs(got[i] - want[i]) <= 0.01f * largest)) {
        QVL_LOG(kError) << isa_level_name(isa) << " " << quant_type_name(type)
                        << " kernel disagrees with the scalar one (" << got[i] << " vs " << want[i]
                        << "); not using it";
        return false;
      }
    }
  }
  return true;
}

}  // namespace

const char* isa_level_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::kScalar:
      return "scalar";
    case IsaLevel::kAvx2:
      return "avx2";
    case IsaLevel::kAvx512:
      return "avx512";
  }
  return "?";
}

IsaLevel cpu_isa() {
  static const IsaLevel level = detect_isa();
  return level;
}

IsaLevel best_isa() {
  static const IsaLevel level = [] {
    IsaLevel usable = cpu_isa();
    while (usable != IsaLevel::kScalar && !kernels_agree_with_scalar(usable)) {
      usable = static_cast<IsaLevel>(static_cast<int>(usable) - 1);
    }
    return usable;
  }();
  return level;
}

void set_isa_override(std::optional<IsaLevel> level) {
  if (level && static_cast<int>(*level) > static_cast<int>(best_isa())) {
    fail(ErrorCode::kUnsupported, std::string("this CPU cannot run ") + isa_level_name(*level) +
                                      " kernels (best: " + isa_level_name(best_isa()) + ")");
  }
  g_isa_override.store(level ? static_cast<int>(*level) : -1);
}

IsaLevel active_isa() {
  const int level = g_isa_override.load();
  return level < 0 ? best_isa() : static_cast<IsaLevel>(level);
}

void matmul(const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y) {
  if (m <= 0) return;
  if (w.type() == QuantType::kExact) {
    ops::matmul(x, m, w.exact_source(), bias, y);
    return;
  }
  QVL_CHECK(x != nullptr && y != nullptr && w.bytes() != nullptr);
  matmul_on(active_isa(), x, m, w, bias, y);
}

}  // namespace qvl::ops
