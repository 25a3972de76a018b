// GEMV / small-batch driver: activation preparation and the split of weight groups over threads.
#include "ops/packed_gemv.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/error.h"
#include "base/half.h"
#include "base/thread_pool.h"
#include "ops/packed_kernels.h"

namespace qvl::ops::detail {
namespace {

using kernels::kCols;
using kernels::kRows;

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

// Rows of x are prepared in parallel only when there is enough of them to pay for a dispatch.
size_t rows_per_task(int64_t k) {
  constexpr int64_t kValuesPerTask = 16384;
  return static_cast<size_t>(std::max<int64_t>(1, kValuesPerTask / k));
}

PreparedX prepare_bf16(const float* x, int64_t m, int64_t k, kernels::Bf16RunX layout) {
  PreparedX p;
  if (layout == kernels::Bf16RunX::kF32) {
    p.bf16_rows = x;
    p.row_bytes = static_cast<size_t>(k) * 4;
    return p;
  }
  const bool even_odd = layout == kernels::Bf16RunX::kF32EvenOdd16;
  const size_t elem = even_odd ? 4 : 2;
  p.row_bytes = static_cast<size_t>(k) * elem;
  t_scratch.x.resize(p.row_bytes * static_cast<size_t>(m));
  uint8_t* base = t_scratch.x.data();
  const auto prepare_rows = [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      const float* xi = x + static_cast<int64_t>(i) * k;
      if (even_odd) {  // each 16 columns as 8 even then 8 odd ones
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
  };
  ThreadPool::global().parallel_for(static_cast<size_t>(m), prepare_rows, rows_per_task(k));
  p.bf16_rows = base;
  return p;
}

PreparedX prepare_quantized(const float* x, int64_t m, int64_t k,
                            const kernels::RunKernels& kernel) {
  const int64_t nb = k / kCols;
  t_scratch.x.resize(static_cast<size_t>(m * k));
  t_scratch.scale.resize(static_cast<size_t>(m * nb));
  t_scratch.sum.resize(static_cast<size_t>(m * nb));
  t_scratch.scaled_sum.resize(static_cast<size_t>(m * nb));
  auto* q = reinterpret_cast<int8_t*>(t_scratch.x.data());
  float* scale = t_scratch.scale.data();
  int32_t* sum = t_scratch.sum.data();
  float* scaled_sum = t_scratch.scaled_sum.data();
  const auto quantize = kernel.quantize_row;
  const auto prepare_rows = [&](size_t i0, size_t i1) {
    for (int64_t i = static_cast<int64_t>(i0); i < static_cast<int64_t>(i1); ++i) {
      quantize(x + i * k, nb, q + i * k, scale + i * nb, sum + i * nb);
      for (int64_t b = i * nb; b < (i + 1) * nb; ++b) {
        scaled_sum[b] = scale[b] * static_cast<float>(sum[b]);
      }
    }
  };
  ThreadPool::global().parallel_for(static_cast<size_t>(m), prepare_rows, rows_per_task(k));
  PreparedX p;
  p.q = q;
  p.scale = scale;
  p.sum = sum;
  p.scaled_sum = scaled_sum;
  return p;
}

const kernels::RunKernels& kernels_for(IsaLevel isa) {
  static const kernels::RunKernels scalar{kernels::bf16_run_scalar, kernels::Bf16RunX::kF32,
                                          kernels::q8_run_scalar, kernels::q4_run_scalar,
                                          kernels::quantize_row_scalar};
  if (isa == IsaLevel::kScalar) return scalar;
  const kernels::RunKernels* k = kernels::run_kernels_for(isa);
  return k != nullptr ? *k : scalar;
}

// One matrix's part of the shared work: its groups are [first_group, first_group + groups) of the
// combined index space.
struct Part {
  const uint8_t* weights;
  int64_t n, groups, first_group;
  const float* bias;
  float* y;
};

}  // namespace

void small_batch_matmul(IsaLevel isa, const float* x, int64_t m, const MatmulOutput* outputs,
                        size_t count) {
  QVL_CHECK(count > 0);
  const QuantType type = outputs[0].w->type();
  const int64_t k = outputs[0].w->cols(), nb = k / kCols;
  std::vector<Part> parts;
  parts.reserve(count);
  int64_t total_groups = 0;
  for (size_t j = 0; j < count; ++j) {
    const PackedMatrix& w = *outputs[j].w;
    QVL_CHECK(w.type() == type && w.cols() == k && type != QuantType::kExact);
    const int64_t groups = (w.rows() + kRows - 1) / kRows;
    parts.push_back({static_cast<const uint8_t*>(w.bytes()), w.rows(), groups, total_groups,
                     outputs[j].bias, outputs[j].y});
    total_groups += groups;
  }
  const kernels::RunKernels& kernel = kernels_for(isa);
  const PreparedX px = type == QuantType::kBF16 ? prepare_bf16(x, m, k, kernel.bf16_x)
                                                : prepare_quantized(x, m, k, kernel);
  const int64_t group_bytes = static_cast<int64_t>(packed_size_bytes(type, kRows, k));
  const int64_t scale_bytes = type == QuantType::kBF16 ? 0 : nb * kernels::kScaleBytes;

  // count groups of `part` from group g against x rows [i, i + nx) (a shape of GroupRun).
  const auto run = [&](const Part& part, int64_t g, int count, int64_t i, int nx) {
    float out[kernels::kMaxRunGroups * kernels::kMaxRunXRows * kRows];
    const kernels::GroupRun w{part.weights + g * group_bytes, group_bytes, scale_bytes, nb, count};
    if (type == QuantType::kBF16) {
      kernel.bf16(w, static_cast<const uint8_t*>(px.bf16_rows) + i * px.row_bytes, px.row_bytes, nx,
                  out);
    } else {
      const kernels::QuantX qx{px.q + i * k, px.scale + i * nb, px.sum + i * nb, nb,
                               px.scaled_sum + i * nb};
      (type == QuantType::kQ8 ? kernel.q8 : kernel.q4)(w, qx, nx, out);
    }
    for (int d = 0; d < nx; ++d) {
      float* yi = part.y + (i + d) * part.n;
      for (int c = 0; c < count; ++c) {
        const int64_t r0 = (g + c) * kRows, rn = std::min(kRows, part.n - r0);
        const float* o = out + (d * count + c) * kRows;
        for (int64_t r = 0; r < rn; ++r) yi[r0 + r] = part.bias ? o[r] + part.bias[r0 + r] : o[r];
      }
    }
  };

  ThreadPool::global().parallel_for(static_cast<size_t>(total_groups), [&](size_t b0, size_t b1) {
    const auto begin = static_cast<int64_t>(b0), end = static_cast<int64_t>(b1);
    for (const Part& part : parts) {
      const int64_t g0 = std::max(begin, part.first_group) - part.first_group;
      const int64_t g1 = std::min(end, part.first_group + part.groups) - part.first_group;
      if (m == 1) {
        for (int64_t g = g0; g < g1; g += kernels::kMaxRunGroups) {
          run(part, g, static_cast<int>(std::min<int64_t>(kernels::kMaxRunGroups, g1 - g)), 0, 1);
        }
        continue;
      }
      for (int64_t g = g0; g < g1; g += kernels::kMaxRunBatchGroups) {
        const int count = static_cast<int>(std::min<int64_t>(kernels::kMaxRunBatchGroups, g1 - g));
        for (int64_t i = 0; i < m; i += kernels::kMaxRunXRows) {
          run(part, g, count, i, static_cast<int>(std::min<int64_t>(kernels::kMaxRunXRows, m - i)));
        }
      }
    }
  });
}

bool run_kernels_agree_with_scalar(IsaLevel isa, const float* x, const PackedMatrix& w) {
  // Every run shape (count groups x nx rows) directly, whatever the pool size makes of a matmul.
  const int64_t k = w.cols(), nb = k / kCols;
  QVL_CHECK(w.rows() >= kernels::kMaxRunGroups * kRows);
  const QuantType type = w.type();
  const kernels::RunKernels &fast = kernels_for(isa), &oracle = kernels_for(IsaLevel::kScalar);
  const int64_t group_bytes = static_cast<int64_t>(packed_size_bytes(type, kRows, k));
  const int64_t scale_bytes = type == QuantType::kBF16 ? 0 : nb * kernels::kScaleBytes;
  const auto* weights = static_cast<const uint8_t*>(w.bytes());
  constexpr int kOut = kernels::kMaxRunGroups * kernels::kMaxRunXRows * kRows;
  for (int count = 1; count <= kernels::kMaxRunGroups; ++count) {
    for (int nx = 1; nx <= (count <= kernels::kMaxRunBatchGroups ? kernels::kMaxRunXRows : 1);
         ++nx) {
      const kernels::GroupRun run{weights, group_bytes, scale_bytes, nb, count};
      float got[kOut], want[kOut];
      if (type == QuantType::kBF16) {
        const PreparedX px = prepare_bf16(x, nx, k, fast.bf16_x);
        fast.bf16(run, px.bf16_rows, px.row_bytes, nx, got);
        oracle.bf16(run, x, static_cast<size_t>(k) * 4, nx, want);
      } else {
        const PreparedX px = prepare_quantized(x, nx, k, oracle);
        const kernels::QuantX qx{px.q, px.scale, px.sum, nb, px.scaled_sum};
        (type == QuantType::kQ8 ? fast.q8 : fast.q4)(run, qx, nx, got);
        (type == QuantType::kQ8 ? oracle.q8 : oracle.q4)(run, qx, nx, want);
      }
      float largest = 0;
      for (int j = 0; j < count * nx * kRows; ++j) largest = std::max(largest, std::fabs(want[j]));
      for (int j = 0; j < count * nx * kRows; ++j) {
        // bf16 rounding of x on AVX-512 moves results by well under 1%; a wrong kernel by ~100%.
        if (!(std::fabs(got[j] - want[j]) <= 0.01f * largest)) return false;
      }
    }
  }
  return true;
}

}  // namespace qvl::ops::detail
