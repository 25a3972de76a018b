// The BFMMLA kernel set of the blocked GEMM (kGemmBf16Neon) against a scalar model of the
// instruction, bit for bit: first the tile alone on inputs chosen to exercise each of BFMMLA's
// roundings (denormal inputs and products, cancellation, sums whose parts lie far apart), then
// through the driver on every tail; each row's bits whatever batch computes it; and where the
// dispatch picks it. The tile needs FEAT_BF16 (the i8mm level): elsewhere these tests skip, and
// under qemu -cpu max they compare the model with qemu's BFMMLA (which follows the Arm ARM).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "ops/arm/packed_gemm_neon.h"
#include "ops/isa_test_util.h"
#include "ops/packed_gemm.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using testing::random_vector;
using testing::runs_level;

constexpr const char* kNoBf16 = "this CPU lacks the i8mm level (I8MM + BF16): BFMMLA not run";

// BFMMLA's arithmetic with FPCR.EBF = 0 (the Arm ARM's BFDotAdd; qemu's bfdotadd): FPCR ignored,
// denormal inputs and results flushed to zero, every addition rounded to odd. Finite values that
// do not overflow only (the tests make no others).
float flush_denormal(float v) {
  return std::fabs(v) < FLT_MIN ? std::copysign(0.0f, v) : v;
}

// a + b (normal or zero) rounded to odd: truncated toward zero, then the last bit set if that
// was inexact. TwoSum gives the exact sum as s + e in doubles.
float add_round_to_odd(float a, float b) {
  const double s = static_cast<double>(a) + b;
  const double bv = s - a;
  const double e = (a - (s - bv)) + (b - bv);
  if (s == 0) return static_cast<float>(s);                           // exact: IEEE's sign of zero
  const bool below_s = e != 0 && std::signbit(e) != std::signbit(s);  // |a + b| < |s|
  if (std::fabs(s) < FLT_MIN || (std::fabs(s) == FLT_MIN && below_s)) {
    return std::copysign(0.0f, static_cast<float>(s));  // flushed (tiny before rounding)
  }
  float t = static_cast<float>(s);
  if (std::fabs(static_cast<double>(t)) > std::fabs(s)) t = std::nextafter(t, 0.0f);
  const bool exact_in_float = static_cast<double>(t) == s;
  if (exact_in_float && below_s) t = std::nextafter(t, 0.0f);
  if (!exact_in_float || e != 0) {
    uint32_t bits;
    std::memcpy(&bits, &t, sizeof bits);
    bits |= 1;
    std::memcpy(&t, &bits, sizeof t);
  }
  return t;
}

// sum + (x0 w0 + x1 w1): products exact (8-bit significands), tiny ones flushed.
float bf16_dot_add(float sum, uint16_t x0, uint16_t w0, uint16_t x1, uint16_t w1) {
  const auto product = [](uint16_t a, uint16_t b) {
    const double p =
        static_cast<double>(flush_denormal(bf16_to_f32(a))) * flush_denormal(bf16_to_f32(b));
    return flush_denormal(static_cast<float>(p));
  };
  return add_round_to_odd(flush_denormal(sum), add_round_to_odd(product(x0, w0), product(x1, w1)));
}

// Panel and strip of the tile (packed_gemm_bfmmla_neon.cpp): per 4 k, rows 2p and 2p + 1 as one
// vector of 8 bf16.
size_t pair_index(int64_t row, int64_t k, int64_t rows) {
  return static_cast<size_t>((k / 4) * rows * 4 + (row / 2) * 8 + (row % 2) * 4 + k % 4);
}

// bf16 values over a wide range of exponents, with zeros of both signs, denormals and the
// negatives of earlier values (cancellation).
std::vector<uint16_t> awkward_bf16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = rng();
    const uint16_t sign = static_cast<uint16_t>((r & 1) << 15);
    switch ((r >> 1) % 8) {
      case 0:
        v[i] = sign;  // +-0
        break;
      case 1:
        v[i] = static_cast<uint16_t>(sign | ((r >> 4) % 127 + 1));  // denormal
        break;
      case 2:
        v[i] = i > 0 ? static_cast<uint16_t>(v[i - 1] ^ 0x8000) : sign;
        break;
      default:  // exponents 2^-70 .. 2^30: products from 2^-140 (flushed) to 2^60
        v[i] = static_cast<uint16_t>(sign | (((r >> 4) % 101 + 57) << 7) | ((r >> 12) & 0x7f));
    }
  }
  return v;
}

TEST(PackedGemmBfmmla, TileGivesTheModelsBitsOnAwkwardInputs) {
  if (!runs_level(IsaLevel::kNeonI8mm)) GTEST_SKIP() << kNoBf16;
  const kernels::GemmKernels& g = kernels::kGemmBf16Neon;
  const int64_t depth = 64, xr = g.tile_x_rows, sr = g.strip_rows;
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const auto xv = awkward_bf16(static_cast<size_t>(xr * depth), 2 * seed);
    const auto wv = awkward_bf16(static_cast<size_t>(sr * depth), 2 * seed + 1);
    std::vector<uint16_t> panel(xv.size()), strip(wv.size());
    for (int64_t i = 0; i < xr; ++i) {
      for (int64_t k = 0; k < depth; ++k) panel[pair_index(i, k, xr)] = xv[i * depth + k];
    }
    for (int64_t j = 0; j < sr; ++j) {
      for (int64_t k = 0; k < depth; ++k) strip[pair_index(j, k, sr)] = wv[j * depth + k];
    }
    // Accumulated onto large, small, zero and denormal sums: the model's input flush and its
    // roundings when the products are far below the sum.
    std::vector<float> y(static_cast<size_t>(xr * sr));
    for (size_t t = 0; t < y.size(); ++t) {
      const float starts[] = {0.0f, -0.0f, 1e30f, -3.5f, 1e-40f, 1.2e-38f, 7.0e-20f, 1e12f};
      y[t] = starts[(t + seed) % 8];
    }
    std::vector<float> want = y;
    g.tile(panel.data(), strip.data(), depth, y.data(), sr, true);
    for (int64_t i = 0; i < xr; ++i) {
      for (int64_t j = 0; j < sr; ++j) {
        float s = want[static_cast<size_t>(i * sr + j)];
        for (int64_t k = 0; k < depth; k += 2) {
          s = bf16_dot_add(s, xv[i * depth + k], wv[j * depth + k], xv[i * depth + k + 1],
                           wv[j * depth + k + 1]);
        }
        const float got = y[static_cast<size_t>(i * sr + j)];
        ASSERT_EQ(0, std::memcmp(&got, &s, sizeof s))
            << "seed " << seed << " x row " << i << " w row " << j << ": " << got << " vs " << s;
      }
    }
  }
}

struct Case {
  int64_t n, k, m;
};
// n: 1 and 5 (one partial strip), 13, 47 (strips of 16 + a partial one), 133 (a block of 128 and
// a 5-row block, reaching past the packed row groups), 144 (a full strip in the second block),
// 260; k: 32, 64, 256 (one depth block), 288 and 1120 (depth blocks + 32 / + 96); m: 16, 17, 19,
// 33, 70 (partial tiles of 1..5 rows), 18 (whole tiles only), 200 (two x blocks).
constexpr Case kCases[] = {{1, 32, 16},     {5, 288, 17},    {13, 288, 33},  {47, 1120, 70},
                           {133, 288, 200}, {133, 1120, 33}, {144, 256, 18}, {260, 64, 19}};

TEST(PackedGemmBfmmla, GemmGivesTheModelsBitsOnEveryTail) {
  if (!runs_level(IsaLevel::kNeonI8mm)) GTEST_SKIP() << kNoBf16;
  for (const Case& c : kCases) {
    const auto w = random_vector(static_cast<size_t>(c.n * c.k), 60, 0.05f);
    const auto x = random_vector(static_cast<size_t>(c.m * c.k), 61, 1.0f);
    const auto bias = random_vector(static_cast<size_t>(c.n), 62, 1.0f);
    const auto packed =
        PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), c.n, c.k}, QuantType::kBF16);
    std::vector<uint16_t> wb(w.size()), xb(x.size());
    for (size_t i = 0; i < w.size(); ++i) wb[i] = f32_to_bf16(w[i]);
    for (size_t i = 0; i < x.size(); ++i) xb[i] = f32_to_bf16(x[i]);
    std::vector<float> y(static_cast<size_t>(c.m * c.n), NAN);
    kernels::gemm(kernels::kGemmBf16Neon, x.data(), c.m, packed, bias.data(), y.data());
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t r = 0; r < c.n; ++r) {
        const uint16_t* xi = xb.data() + i * c.k;
        const uint16_t* wr = wb.data() + r * c.k;
        float s = 0.0f;
        for (int64_t j = 0; j < c.k; j += 2)
          s = bf16_dot_add(s, xi[j], wr[j], xi[j + 1], wr[j + 1]);
        ASSERT_EQ(y[static_cast<size_t>(i * c.n + r)], s + bias[r])
            << "n=" << c.n << " k=" << c.k << " m=" << c.m << " x row " << i << " w row " << r;
      }
    }
  }
}

// Rows of an m = 300 product against the same rows computed in batches of other sizes and at
// other offsets (other places in a register tile, a row pair, a panel and an x block).
TEST(PackedGemmBfmmla, RowsAreIndependentOfTheBatch) {
  if (!runs_level(IsaLevel::kNeonI8mm)) GTEST_SKIP() << kNoBf16;
  const int64_t n = 133, k = 1120, m = 300;
  const auto w = random_vector(static_cast<size_t>(n * k), 90, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 91, 1.0f);
  const auto bias = random_vector(static_cast<size_t>(n), 92, 1.0f);
  const auto packed =
      PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, QuantType::kBF16);
  std::vector<float> whole(static_cast<size_t>(m * n));
  kernels::gemm(kernels::kGemmBf16Neon, x.data(), m, packed, bias.data(), whole.data());
  struct Batch {
    int64_t offset, rows;
  };
  for (const Batch b : {Batch{0, 16}, Batch{283, 17}, Batch{101, 37}, Batch{7, 64}, Batch{1, 299},
                        Batch{150, 150}}) {
    std::vector<float> part(static_cast<size_t>(b.rows * n));
    kernels::gemm(kernels::kGemmBf16Neon, x.data() + b.offset * k, b.rows, packed, bias.data(),
                  part.data());
    for (int64_t i = 0; i < b.rows; ++i) {
      ASSERT_EQ(0, std::memcmp(part.data() + i * n, whole.data() + (b.offset + i) * n,
                               static_cast<size_t>(n) * sizeof(float)))
          << "row " << b.offset + i << " differs in a batch of " << b.rows << " from row "
          << b.offset;
    }
  }
}

// The run kernel (GEMV and small batches) on every run shape: the model's bits per output, which
// are the GEMM's (batch_invariance_test.cpp checks it through matmul).
TEST(PackedGemmBfmmla, RunKernelGivesTheModelsBitsOnEveryShape) {
  if (!runs_level(IsaLevel::kNeonI8mm)) GTEST_SKIP() << kNoBf16;
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
    const auto w =
        random_vector(static_cast<size_t>(n * k), 100 + static_cast<uint32_t>(nb), 0.05f);
    const auto x = random_vector(static_cast<size_t>(kernels::kMaxRunXRows * k), 110, 1.0f);
    std::vector<uint16_t> wb(w.size()), xb(x.size());
    for (size_t i = 0; i < w.size(); ++i) wb[i] = f32_to_bf16(w[i]);
    for (size_t i = 0; i < x.size(); ++i) xb[i] = f32_to_bf16(x[i]);
    const auto packed =
        PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, QuantType::kBF16);
    const auto group_bytes =
        static_cast<int64_t>(packed_size_bytes(QuantType::kBF16, kernels::kRows, k));
    for (const Shape& sh : shapes) {
      const kernels::GroupRun run{static_cast<const uint8_t*>(packed.bytes()), group_bytes, 0, nb,
                                  sh.count};
      std::vector<float> got(static_cast<size_t>(sh.count * sh.nx * kernels::kRows), NAN);
      kernels::bf16_run_bfmmla(run, xb.data(), static_cast<size_t>(k) * 2, sh.nx, got.data());
      for (int i = 0; i < sh.nx; ++i) {
        for (int64_t r = 0; r < sh.count * kernels::kRows; ++r) {
          float s = 0.0f;
          for (int64_t j = 0; j < k; j += 2) {
            s = bf16_dot_add(s, xb[i * k + j], wb[r * k + j], xb[i * k + j + 1], wb[r * k + j + 1]);
          }
          const float g = got[static_cast<size_t>(i * sh.count * kernels::kRows + r)];
          ASSERT_EQ(0, std::memcmp(&g, &s, sizeof s))
              << sh.count << " groups x " << sh.nx << " rows, nb " << nb << ": x row " << i
              << " w row " << r << ": " << g << " vs " << s;
        }
      }
    }
  }
}

// bf16 weights take BFMMLA at the i8mm level only (the level implies BF16); q8/q4 groups, and
// every lower level, the fp32 tile. The choice depends on the level alone, not on the CPU.
TEST(PackedGemmBfmmla, TheI8mmLevelTakesItForBf16Weights) {
  EXPECT_EQ(kernels::gemm_kernels_for(IsaLevel::kNeonI8mm, QuantType::kBF16),
            &kernels::kGemmBf16Neon);
  for (IsaLevel isa : {IsaLevel::kNeon, IsaLevel::kNeonDotprod, IsaLevel::kNeonI8mm}) {
    for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
      if (isa == IsaLevel::kNeonI8mm && type == QuantType::kBF16) continue;
      EXPECT_EQ(kernels::gemm_kernels_for(isa, type), &kernels::kGemmF32Neon)
          << isa_level_name(isa) << " " << quant_type_name(type);
    }
  }
  const bool bf16 = std::find(cpu_features().flags.begin(), cpu_features().flags.end(),
                              std::string("bf16")) != cpu_features().flags.end();
  if (cpu_isa() == IsaLevel::kNeonI8mm) {
    EXPECT_TRUE(bf16) << "the i8mm level without BF16";
  }
}

}  // namespace
}  // namespace qvl::ops
