// The NEON kernel set of the blocked GEMM (kGemmF32Neon), called directly through the driver,
// against a scalar oracle with the same roundings on every tail: k not a multiple of the 256
// depth block, n not a multiple of the 128-row block or of the 16-row strip, m not a multiple of
// the tile's 6 x rows nor of an x block (32 panels); each row's bits whatever batch computes it.
// And the NEON q8/q4 run kernels against the scalar ones bit for bit on every run shape, with
// products at the int16 limit. All baseline NEON: every aarch64 CPU runs them.
#include "ops/arm/packed_gemm_neon.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/isa_test_util.h"
#include "ops/packed_gemm.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using testing::random_vector;

struct Case {
  int64_t n, k, m;
};
// n: 1 and 5 (one partial strip), 13, 47 (strips of 16 + a partial one), 133 (a block of 128 and
// a 5-row block, reaching past the packed row groups), 144 (a full strip in the second block),
// 260 (two blocks and a group); k: 32, 64, 256 (one whole depth block), 288 and 1120 (depth
// blocks + 32 / + 96); m: 16, 17, 19, 33, 70 (partial tiles of 1..5 rows), 18 (whole tiles only),
// 200 (two x blocks).
constexpr Case kCases[] = {{1, 32, 16},     {5, 288, 17},    {13, 288, 33},  {47, 1120, 70},
                           {133, 288, 200}, {133, 1120, 33}, {144, 256, 18}, {260, 64, 19}};

std::vector<float> dequantized(const PackedMatrix& w) {
  std::vector<float> out(static_cast<size_t>(w.rows() * w.cols()));
  for (int64_t r = 0; r < w.rows(); ++r) w.row_to_f32(r, out.data() + r * w.cols());
  return out;
}

// One accumulator per output, w * x fused into it in k order (kept exactly across depth
// blocks), then + bias: the tile's arithmetic, so the comparison is exact.
TEST(PackedGemmNeon, TileIsExactOnEveryTail) {
  for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
    for (const Case& c : kCases) {
      const auto w = random_vector(static_cast<size_t>(c.n * c.k), 60, 0.05f);
      const auto x = random_vector(static_cast<size_t>(c.m * c.k), 61, 1.0f);
      const auto bias = random_vector(static_cast<size_t>(c.n), 62, 1.0f);
      const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), c.n, c.k}, type);
      const std::vector<float> wd = dequantized(packed);
      std::vector<float> y(static_cast<size_t>(c.m * c.n), NAN);
      kernels::gemm(kernels::kGemmF32Neon, x.data(), c.m, packed, bias.data(), y.data());
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t r = 0; r < c.n; ++r) {
          float acc = 0.0f;
          for (int64_t j = 0; j < c.k; ++j) acc = std::fma(wd[r * c.k + j], x[i * c.k + j], acc);
          ASSERT_EQ(y[static_cast<size_t>(i * c.n + r)], acc + bias[r])
              << quant_type_name(type) << " n=" << c.n << " k=" << c.k << " m=" << c.m << " x row "
              << i << " w row " << r;
        }
      }
    }
  }
}

// Rows of an m = 300 product against the same rows computed in batches of other sizes and at
// other offsets (other places in a register tile, panel and x block): bit for bit equal.
TEST(PackedGemmNeon, RowsAreIndependentOfTheBatch) {
  const int64_t n = 133, k = 1120, m = 300;
  const auto w = random_vector(static_cast<size_t>(n * k), 90, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 91, 1.0f);
  const auto bias = random_vector(static_cast<size_t>(n), 92, 1.0f);
  for (QuantType type : {QuantType::kBF16, QuantType::kQ4}) {
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    std::vector<float> whole(static_cast<size_t>(m * n));
    kernels::gemm(kernels::kGemmF32Neon, x.data(), m, packed, bias.data(), whole.data());
    struct Batch {
      int64_t offset, rows;
    };
    for (const Batch b : {Batch{0, 16}, Batch{283, 17}, Batch{101, 37}, Batch{7, 64}, Batch{1, 299},
                          Batch{150, 150}}) {
      std::vector<float> part(static_cast<size_t>(b.rows * n));
      kernels::gemm(kernels::kGemmF32Neon, x.data() + b.offset * k, b.rows, packed, bias.data(),
                    part.data());
      for (int64_t i = 0; i < b.rows; ++i) {
        ASSERT_EQ(0, std::memcmp(part.data() + i * n, whole.data() + (b.offset + i) * n,
                                 static_cast<size_t>(n) * sizeof(float)))
            << quant_type_name(type) << ": row " << b.offset + i
            << " differs when computed in a batch of " << b.rows << " from row " << b.offset;
      }
    }
  }
}

// (bf16 weights at i8mm take BFMMLA, GEMM and GEMV: packed_gemm_bfmmla_test.cpp.)
TEST(PackedGemmNeon, EveryArmLevelTakesTheNeonKernels) {
  for (IsaLevel isa : {IsaLevel::kNeon, IsaLevel::kNeonDotprod, IsaLevel::kNeonI8mm}) {
    for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
      if (isa == IsaLevel::kNeonI8mm && type == QuantType::kBF16) continue;
      EXPECT_EQ(kernels::gemm_kernels_for(isa, type), &kernels::kGemmF32Neon)
          << isa_level_name(isa) << " " << quant_type_name(type);
    }
    EXPECT_EQ(kernels::gemm_kernels_for(isa, QuantType::kQ8Strips), nullptr);
    const kernels::RunKernels* run = kernels::run_kernels_for(isa);
    ASSERT_NE(run, nullptr) << isa_level_name(isa);
    const bool bfmmla = isa == IsaLevel::kNeonI8mm;
    EXPECT_EQ(run->bf16, bfmmla ? &kernels::bf16_run_bfmmla : &kernels::bf16_run_neon);
    EXPECT_EQ(run->bf16_x, bfmmla ? kernels::Bf16RunX::kBf16 : kernels::Bf16RunX::kF32);
  }
}

// The q8/q4 run kernels do the scalar oracle's arithmetic (exact int32 block dots, the same fp32
// roundings in the same order), so every output has the scalar bits, on every run shape. Weight
// row 0 and x row 0 are all at the format's maximum (q = 127 / 7): every int16 pair of products
// at its largest; row 1 alternates signs.
TEST(PackedGemvNeon, QuantRunKernelsGiveTheScalarBits) {
  struct Shape {
    int count, nx;
  };
  std::vector<Shape> shapes;
  for (int c = 1; c <= kernels::kMaxRunGroups; ++c) shapes.push_back({c, 1});
  for (int c = 1; c <= kernels::kMaxRunBatchGroups; ++c) {
    for (int nx = 2; nx <= kernels::kMaxRunXRows; ++nx) shapes.push_back({c, nx});
  }
  for (int64_t nb : {1, 3, 17}) {
    const int64_t k = nb * kernels::kCols, n = kernels::kMaxRunGroups * kernels::kRows;
    auto w = random_vector(static_cast<size_t>(n * k), 100 + static_cast<uint32_t>(nb), 0.05f);
    auto x = random_vector(static_cast<size_t>(kernels::kMaxRunXRows * k), 110, 1.0f);
    for (int64_t j = 0; j < k; ++j) {
      w[static_cast<size_t>(j)] = 0.05f;
      w[static_cast<size_t>(k + j)] = j % 2 ? -0.05f : 0.05f;
      x[static_cast<size_t>(j)] = -1.0f;
    }
    const int64_t rows = kernels::kMaxRunXRows;
    std::vector<int8_t> q(static_cast<size_t>(rows * k));
    std::vector<float> scale(static_cast<size_t>(rows * nb)), scaled_sum(scale.size());
    std::vector<int32_t> sum(scale.size());
    for (int64_t i = 0; i < rows; ++i) {
      kernels::quantize_row_neon(x.data() + i * k, nb, q.data() + i * k, scale.data() + i * nb,
                                 sum.data() + i * nb);
    }
    for (size_t b = 0; b < scale.size(); ++b) scaled_sum[b] = scale[b] * sum[b];
    const kernels::QuantX qx{q.data(), scale.data(), sum.data(), nb, scaled_sum.data()};
    for (QuantType type : {QuantType::kQ8, QuantType::kQ4}) {
      const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
      const auto group_bytes = static_cast<int64_t>(packed_size_bytes(type, kernels::kRows, k));
      const bool q4 = type == QuantType::kQ4;
      for (const Shape& s : shapes) {
        const kernels::GroupRun run{static_cast<const uint8_t*>(packed.bytes()), group_bytes,
                                    nb * kernels::kScaleBytes, nb, s.count};
        std::vector<float> got(static_cast<size_t>(s.count * s.nx * kernels::kRows), NAN);
        std::vector<float> want(got.size());
        (q4 ? kernels::q4_run_neon : kernels::q8_run_neon)(run, qx, s.nx, got.data());
        (q4 ? kernels::q4_run_scalar : kernels::q8_run_scalar)(run, qx, s.nx, want.data());
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
            << quant_type_name(type) << ": " << s.count << " groups x " << s.nx << " rows, nb "
            << nb;
      }
    }
  }
}

}  // namespace
}  // namespace qvl::ops
