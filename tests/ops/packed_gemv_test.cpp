// The whole-row GEMV / small-batch kernels (kernels::*_run_*) of every ISA level against the scalar
// ones on all run shapes, batch invariance of matmul below the GEMM, and matmul_multi against
// separate matmul calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/half.h"
#include "isa_test_util.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using testing::available_isas;
using testing::IsaScope;
using testing::random_vector;

// The run kernels of a level, the scalar ones where it has none.
kernels::RunKernels run_kernels(IsaLevel isa) {
  const kernels::RunKernels* k = isa == IsaLevel::kScalar ? nullptr : kernels::run_kernels_for(isa);
  if (k != nullptr) return *k;
  return {kernels::bf16_run_scalar, kernels::Bf16RunX::kF32, kernels::q8_run_scalar,
          kernels::q4_run_scalar, kernels::quantize_row_scalar};
}

// x rows as the bf16 kernels of `isa` read them (kernels::Bf16RunX): fp32, fp32 with each 16
// columns as 8 even then 8 odd ones, or bf16. Returns the bytes and sets the row stride.
std::vector<uint8_t> bf16_kernel_x(const std::vector<float>& x, int64_t rows, int64_t k,
                                   IsaLevel isa, size_t* stride) {
  const kernels::Bf16RunX layout = run_kernels(isa).bf16_x;
  *stride = static_cast<size_t>(k) * (layout == kernels::Bf16RunX::kBf16 ? 2 : 4);
  std::vector<uint8_t> out(*stride * static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    const float* xi = x.data() + i * k;
    uint8_t* dst = out.data() + static_cast<size_t>(i) * *stride;
    for (int64_t c = 0; c < k; ++c) {
      if (layout == kernels::Bf16RunX::kBf16) {
        const uint16_t h = f32_to_bf16(xi[c]);
        std::memcpy(dst + c * 2, &h, 2);
        continue;
      }
      const int64_t j = c % 16;
      const int64_t src = layout == kernels::Bf16RunX::kF32EvenOdd16
                              ? c - j + (j < 8 ? 2 * j : 2 * (j - 8) + 1)
                              : c;
      std::memcpy(dst + c * 4, &xi[src], 4);
    }
  }
  return out;
}

struct QuantRows {
  std::vector<int8_t> q;
  std::vector<float> scale, scaled_sum;
  std::vector<int32_t> sum;
  kernels::QuantX view(int64_t nb) const {
    return {q.data(), scale.data(), sum.data(), nb, scaled_sum.data()};
  }
};

QuantRows quantize_rows(const std::vector<float>& x, int64_t rows, int64_t nb) {
  QuantRows r;
  r.q.resize(static_cast<size_t>(rows * nb * 32));
  r.scale.resize(static_cast<size_t>(rows * nb));
  r.sum.resize(r.scale.size());
  r.scaled_sum.resize(r.scale.size());
  for (int64_t i = 0; i < rows; ++i) {
    kernels::quantize_row_scalar(x.data() + i * nb * 32, nb, r.q.data() + i * nb * 32,
                                 r.scale.data() + i * nb, r.sum.data() + i * nb);
  }
  for (size_t b = 0; b < r.scale.size(); ++b) r.scaled_sum[b] = r.scale[b] * r.sum[b];
  return r;
}

// Every run shape (count groups x nx rows) and several depths, against the scalar kernels fed
// the same x (bf16-rounded for AVX-512's bf16 kernel).
void check_run_kernels(IsaLevel isa) {
  const kernels::RunKernels fast = run_kernels(isa), oracle = run_kernels(IsaLevel::kScalar);
  struct Shape {
    int count, nx;
  };
  std::vector<Shape> shapes;
  for (int c = 1; c <= kernels::kMaxRunGroups; ++c) shapes.push_back({c, 1});
  for (int c = 1; c <= kernels::kMaxRunBatchGroups; ++c) {
    for (int nx = 2; nx <= kernels::kMaxRunXRows; ++nx) shapes.push_back({c, nx});
  }
  for (int64_t nb : {1, 2, 3, 9, 33}) {
    const int64_t k = nb * 32, n = kernels::kMaxRunGroups * kernels::kRows;
    const auto w = random_vector(static_cast<size_t>(n * k), 60 + static_cast<uint32_t>(nb), 0.05f);
    auto x = random_vector(static_cast<size_t>(kernels::kMaxRunXRows * k), 70, 1.0f);
    if (fast.bf16_x == kernels::Bf16RunX::kBf16) {
      for (float& v : x) v = bf16_to_f32(f32_to_bf16(v));
    }
    const QuantRows qx = quantize_rows(x, kernels::kMaxRunXRows, nb);
    size_t fast_stride = 0, oracle_stride = 0;
    const auto xf = bf16_kernel_x(x, kernels::kMaxRunXRows, k, isa, &fast_stride);
    const auto xo = bf16_kernel_x(x, kernels::kMaxRunXRows, k, IsaLevel::kScalar, &oracle_stride);
    for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
      const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
      const int64_t group_bytes = static_cast<int64_t>(packed_size_bytes(type, 4, k));
      const int64_t scale_bytes = type == QuantType::kBF16 ? 0 : nb * kernels::kScaleBytes;
      for (const Shape& s : shapes) {
        const kernels::GroupRun run{static_cast<const uint8_t*>(packed.bytes()), group_bytes,
                                    scale_bytes, nb, s.count};
        std::vector<float> got(static_cast<size_t>(s.count * s.nx * 4), NAN), want(got.size());
        if (type == QuantType::kBF16) {
          fast.bf16(run, xf.data(), fast_stride, s.nx, got.data());
          oracle.bf16(run, xo.data(), oracle_stride, s.nx, want.data());
        } else {
          const auto fn = type == QuantType::kQ8 ? fast.q8 : fast.q4;
          const auto ref = type == QuantType::kQ8 ? oracle.q8 : oracle.q4;
          fn(run, qx.view(nb), s.nx, got.data());
          ref(run, qx.view(nb), s.nx, want.data());
        }
        for (size_t j = 0; j < got.size(); ++j) {
          // The integer dots are exact; only the fp32 summation order differs.
          ASSERT_NEAR(got[j], want[j], 1e-5f * (1 + std::fabs(want[j]) + std::sqrt(k)))
              << quant_type_name(type) << " on " << isa_level_name(isa) << ": " << s.count
              << " groups x " << s.nx << " rows, k " << k << ", output " << j;
        }
      }
    }
  }
}

TEST(PackedGemv, RunKernelsMatchScalarOnEveryShapeAtEveryLevel) {
  for (IsaLevel isa : available_isas()) {
    if (isa != IsaLevel::kScalar) check_run_kernels(isa);
  }
}

// Batch invariance at the kernel level, per ISA level: (x row i, group g) gets the
// same bits alone (nx = 1, one group), in every small-batch run (up to kMaxRunXRows rows of x, 1
// or 2 groups) and as group g of every GEMV run (count groups), at several depths.
void check_run_rows_do_not_depend_on_the_run(IsaLevel isa) {
  const kernels::RunKernels fast = run_kernels(isa);
  constexpr int kMaxX = kernels::kMaxRunXRows, kMaxG = kernels::kMaxRunGroups;
  for (int64_t nb : {1, 2, 3, 17}) {
    const int64_t k = nb * 32, n = kMaxG * kernels::kRows;
    const auto w = random_vector(static_cast<size_t>(n * k), 90 + static_cast<uint32_t>(nb), 0.05f);
    const auto x = random_vector(static_cast<size_t>(kMaxX * k), 91, 1.0f);
    const QuantRows qx = quantize_rows(x, kMaxX, nb);
    size_t stride = 0;
    const auto xf = bf16_kernel_x(x, kMaxX, k, isa, &stride);
    for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
      const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
      const int64_t group_bytes = static_cast<int64_t>(packed_size_bytes(type, 4, k));
      const int64_t scale_bytes = type == QuantType::kBF16 ? 0 : nb * kernels::kScaleBytes;
      const auto* bytes = static_cast<const uint8_t*>(packed.bytes());
      // run(first group, count, first x row, nx) into out
      const auto run = [&](int g, int count, int i, int nx, float* out) {
        const kernels::GroupRun r{bytes + g * group_bytes, group_bytes, scale_bytes, nb, count};
        if (type == QuantType::kBF16) {
          fast.bf16(r, xf.data() + i * stride, stride, nx, out);
          return;
        }
        kernels::QuantX q = qx.view(nb);
        q = {q.q + i * k, q.scale + i * nb, q.sum + i * nb, nb, q.scaled_sum + i * nb};
        (type == QuantType::kQ8 ? fast.q8 : fast.q4)(r, q, nx, out);
      };
      for (int g = 0; g < kMaxG; ++g) {
        for (int i = 0; i < kMaxX; ++i) {
          float alone[kernels::kRows];
          run(g, 1, i, 1, alone);
          const std::string where = std::string(quant_type_name(type)) + " on " +
                                    isa_level_name(isa) + ", nb " + std::to_string(nb) +
                                    ", group " + std::to_string(g) + ", x row " + std::to_string(i);
          for (int nx = std::max(2, i + 1); nx <= kMaxX; ++nx) {
            // Alone in its group, or with the group before / after it (2-group batch runs).
            for (int first = std::max(0, g - 1); first <= g; ++first) {
              const int count = std::min(kernels::kMaxRunBatchGroups, kMaxG - first);
              if (first < g && count < 2) continue;
              for (int c = first == g ? 1 : 2; c <= count; ++c) {
                float batch[kernels::kMaxRunBatchGroups * kMaxX * kernels::kRows];
                run(first, c, 0, nx, batch);
                ASSERT_EQ(
                    std::memcmp(batch + (i * c + g - first) * kernels::kRows, alone, sizeof alone),
                    0)
                    << where << " as row " << i << " of " << nx << ", group " << g - first << " of "
                    << c;
              }
            }
          }
          for (int count = std::max(2, g + 1); count <= kMaxG; ++count) {
            float gemv[kMaxG * kernels::kRows];
            run(0, count, i, 1, gemv);
            ASSERT_EQ(std::memcmp(gemv + g * kernels::kRows, alone, sizeof alone), 0)
                << where << " as group " << g << " of " << count;
          }
        }
      }
    }
  }
}

TEST(PackedGemv, RunKernelRowsDoNotDependOnTheRunShapeAtEveryLevel) {
  for (IsaLevel isa : available_isas()) check_run_rows_do_not_depend_on_the_run(isa);
}

TEST(PackedGemv, BatchRowsAreBitIdenticalToSingleRows) {
  // Below the GEMM, a row's result must not depend on the batch: m = 1 (the GEMV, several groups
  // per kernel call) and every m < 16 (rows in blocks of up to kMaxRunXRows) give identical bits. n
  // = 37 has a short last group; the work is split unevenly over the threads.
  const int64_t n = 37, k = 544;
  const auto w = random_vector(static_cast<size_t>(n * k), 80, 0.05f);
  const auto bias = random_vector(static_cast<size_t>(n), 81, 1.0f);
  const int64_t max_m = kernels::kGemmMinRows - 1;
  const auto x = random_vector(static_cast<size_t>(max_m * k), 82, 1.0f);
  for (IsaLevel isa : available_isas()) {
    IsaScope scope(isa);
    for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
      const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
      std::vector<float> single(static_cast<size_t>(max_m * n));
      for (int64_t i = 0; i < max_m; ++i) {
        matmul(x.data() + i * k, 1, packed, bias.data(), single.data() + i * n);
      }
      for (int64_t m = 2; m <= max_m; ++m) {
        std::vector<float> batch(static_cast<size_t>(m * n));
        matmul(x.data(), m, packed, bias.data(), batch.data());
        ASSERT_EQ(std::memcmp(batch.data(), single.data(), batch.size() * sizeof(float)), 0)
            << quant_type_name(type) << " on " << isa_level_name(isa) << ", m " << m;
      }
    }
  }
}

TEST(PackedGemv, MatmulMultiEqualsSeparateMatmuls) {
  // Three matrices with the same input (row counts not multiples of 4, one over two row blocks
  // of the int8 GEMM, one with a bias), for the GEMV, small batches and the GEMMs (the int8 one
  // runs them in one dispatch, the fp32 one by one); strips take the int8 GEMM at every m.
  const int64_t k = 320, rows[] = {45, 9, 70};
  const auto x = random_vector(static_cast<size_t>(20 * k), 90, 1.0f);
  const auto bias = random_vector(static_cast<size_t>(rows[1]), 91, 1.0f);
  for (IsaLevel isa : available_isas()) {
    IsaScope scope(isa);
    for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4, QuantType::kQ8Strips,
                           QuantType::kQ4Strips}) {
      std::vector<PackedMatrix> mats;
      for (int j = 0; j < 3; ++j) {
        const auto w = random_vector(static_cast<size_t>(rows[j] * k), 92 + j, 0.05f);
        mats.push_back(PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), rows[j], k}, type));
      }
      for (int64_t m : {1, 2, 5, 15, 20}) {
        std::vector<std::vector<float>> multi(3), separate(3);
        std::vector<MatmulOutput> outputs;
        for (int j = 0; j < 3; ++j) {
          multi[j].assign(static_cast<size_t>(m * rows[j]), NAN);
          separate[j].assign(multi[j].size(), NAN);
          const float* b = j == 1 ? bias.data() : nullptr;
          outputs.push_back({&mats[j], b, multi[j].data()});
          matmul(x.data(), m, mats[j], b, separate[j].data());
        }
        matmul_multi(x.data(), m, outputs.data(), outputs.size());
        for (int j = 0; j < 3; ++j) {
          ASSERT_EQ(std::memcmp(multi[j].data(), separate[j].data(), multi[j].size() * 4), 0)
              << quant_type_name(type) << " on " << isa_level_name(isa) << ", m " << m
              << ", matrix " << j;
        }
      }
    }
  }
}

TEST(PackedGemv, MatmulMultiRunsMixedTypesSeparately) {
  const int64_t k = 64;
  const auto w = random_vector(static_cast<size_t>(8 * k), 100, 0.05f);
  const auto x = random_vector(static_cast<size_t>(k), 101, 1.0f);
  const auto a = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), 8, k}, QuantType::kQ8);
  const auto b = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), 8, k}, QuantType::kQ4);
  std::vector<float> ya(8), yb(8), wa(8), wb(8);
  const MatmulOutput outputs[] = {{&a, nullptr, ya.data()}, {&b, nullptr, yb.data()}};
  matmul_multi(x.data(), 1, outputs, 2);
  matmul(x.data(), 1, a, nullptr, wa.data());
  matmul(x.data(), 1, b, nullptr, wb.data());
  EXPECT_EQ(ya, wa);
  EXPECT_EQ(yb, wb);
}

}  // namespace
}  // namespace qvl::ops
