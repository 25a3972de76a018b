// The NEON int8 GEMM tiles on stored q8/q4 strips, called directly (Int8Tile) on packed matrices
// against int8_gemm_reference: every x-row tail of the tile, both halves of a strip, a partial
// strip, chunked and whole depths, with and without prefetch; the same bits whatever the tile's
// row count and for every kernel (batch invariance); the ARMv8.0 SMULL tile against the SDOT tile
// bit for bit (every tail, extreme products), and the i8mm tile against the SDOT tile over many
// chunks; and the NEON x quantization against the scalar one bit for bit. Tiles the CPU lacks are
// skipped.
#include "ops/arm/int8_gemm_neon.h"

#include <asm/hwcap.h>
#include <gtest/gtest.h>
#include <sys/auxv.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/int8_gemm.h"
#include "ops/int8_gemm_kernels.h"
#include "ops/isa_test_util.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using kernels::Int8Tile;
using kernels::Int8TileKernel;
using testing::random_vector;

bool has_neon() {
  return true;  // every aarch64 CPU
}
bool has_dotprod() {
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
}
bool has_i8mm() {
  return (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
}

struct NeonTile {
  const char* name;
  Int8TileKernel q8s, q4s;
  int64_t x_rows;
  bool (*cpu_has)();
};
const NeonTile kSmull{"neon-smull", kernels::int8_tile_q8s_neon_smull,
                      kernels::int8_tile_q4s_neon_smull, kernels::kInt8NeonSmullXRows, has_neon};
const NeonTile kDotprod{"neon-dotprod", kernels::int8_tile_q8s_neon_dotprod,
                        kernels::int8_tile_q4s_neon_dotprod, kernels::kInt8NeonDotprodXRows,
                        has_dotprod};
const NeonTile kI8mm{"neon-i8mm", kernels::int8_tile_q8s_neon_i8mm,
                     kernels::int8_tile_q4s_neon_i8mm, kernels::kInt8NeonI8mmXRows, has_i8mm};

// x quantized row by row (x row i at i * k, scales and sums at i * nb), as the tiles read it.
struct QuantX {
  std::vector<int8_t> q;
  std::vector<float> scale;
  std::vector<int32_t> sum;
};
QuantX quantize(const std::vector<float>& x, int64_t m, int64_t k) {
  const int64_t nb = k / kBlockCols;
  QuantX qx{std::vector<int8_t>(static_cast<size_t>(m * k)),
            std::vector<float>(static_cast<size_t>(m * nb)),
            std::vector<int32_t>(static_cast<size_t>(m * nb))};
  for (int64_t i = 0; i < m; ++i) {
    kernels::quantize_row_to_neon(x.data() + i * k, nb, 127, qx.q.data() + i * k,
                                  qx.scale.data() + i * nb, qx.sum.data() + i * nb);
  }
  return qx;
}

// y[m, n] = x * W^T through `tile` alone: x rows in tiles of `x_rows` (the last one partial),
// every 16-row half of every strip, the depth in chunks of `chunk_blocks` blocks.
std::vector<float> run_tiles(Int8TileKernel tile, int64_t x_rows, const PackedMatrix& w,
                             const QuantX& qx, int64_t m, int64_t chunk_blocks,
                             int64_t prefetch_ahead) {
  const int64_t n = w.rows(), k = w.cols(), nb = k / kBlockCols;
  const int64_t strips = (n + kStripRows - 1) / kStripRows;
  const int64_t block_bytes = strip_block_bytes(w.type()), ldc = strips * kStripRows;
  const auto* bytes = static_cast<const uint8_t*>(w.bytes());
  std::vector<float> c(static_cast<size_t>(m * ldc), 0.0f);
  for (int64_t b0 = 0; b0 < nb; b0 += chunk_blocks) {
    for (int64_t i0 = 0; i0 < m; i0 += x_rows) {
      for (int64_t s = 0; s < strips; ++s) {
        for (int64_t half = 0; half < 2; ++half) {
          Int8Tile t{};
          t.strip = bytes + (s * nb + b0) * block_bytes;
          t.nblocks = std::min(chunk_blocks, nb - b0);
          t.xq = qx.q.data() + i0 * k + b0 * kBlockCols;
          t.xscale = qx.scale.data() + i0 * nb + b0;
          t.xsum = qx.sum.data() + i0 * nb + b0;
          t.ldx = k;
          t.ldxs = nb;
          t.rows = std::min(x_rows, m - i0);
          t.c = c.data() + i0 * ldc + s * kStripRows + half * kernels::kInt8NeonStripRows;
          t.ldc = ldc;
          t.half = half;
          // Within the stored matrix but past the strip: what a streamed strip prefetches.
          t.prefetch_ahead = prefetch_ahead;
          tile(t);
        }
      }
    }
  }
  std::vector<float> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    std::copy_n(c.data() + i * ldc, n, y.data() + i * n);
  }
  return y;
}

class Int8GemmNeon : public ::testing::TestWithParam<const NeonTile*> {
 protected:
  void SetUp() override {
    if (!GetParam()->cpu_has()) {
      GTEST_SKIP() << "this CPU lacks " << GetParam()->name << "; skipped";
    }
  }
};

TEST_P(Int8GemmNeon, MatchesTheScalarOracleOnEveryTail) {
  const NeonTile& tile = *GetParam();
  // n 42: a full strip and a partial one (its zero rows computed, not compared); k 288: 9 blocks,
  // a chunk of 8 and a tail of 1; m 19: every x-row count of the tile as the last one's tail.
  const int64_t n = 42, k = 288, m = 19, nb = k / kBlockCols;
  const auto w = random_vector(static_cast<size_t>(n * k), 70, 0.05f);
  auto x = random_vector(static_cast<size_t>(m * k), 71, 1.0f);
  for (int64_t j = 0; j < 32; ++j) x[static_cast<size_t>(k + j)] = 0.0f;  // an all-zero block
  for (size_t j = 0; j < x.size(); j += 97) x[j] *= 30.0f;                // blocks that reach +-127
  const QuantX qx = quantize(x, m, k);
  for (QuantType type : {QuantType::kQ8Strips, QuantType::kQ4Strips}) {
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    std::vector<float> want(static_cast<size_t>(m * n));
    int8_gemm_reference(x.data(), m, packed, nullptr, want.data());
    float largest = 0;
    for (float v : want) largest = std::max(largest, std::fabs(v));
    const Int8TileKernel f = type == QuantType::kQ8Strips ? tile.q8s : tile.q4s;
    for (int64_t x_rows = 1; x_rows <= tile.x_rows; ++x_rows) {
      for (int64_t chunk : {int64_t{8}, nb, int64_t{1}}) {
        const int64_t ahead = x_rows % 2 == 0 ? 0 : strip_block_bytes(type);
        const auto got = run_tiles(f, x_rows, packed, qx, m, chunk, ahead);
        for (size_t at = 0; at < want.size(); ++at) {
          // Only the fp32 summation order differs from the oracle.
          ASSERT_NEAR(got[at], want[at], 1e-5f * largest)
              << tile.name << " " << quant_type_name(type) << " x_rows " << x_rows << " chunk "
              << chunk << " at x row " << static_cast<int64_t>(at) / n << ", w row "
              << static_cast<int64_t>(at) % n;
        }
      }
    }
  }
}

TEST_P(Int8GemmNeon, RowsGetTheSameBitsAtEveryTileSizeAndOnEitherKernel) {
  const NeonTile& tile = *GetParam();
  const int64_t n = 64, k = 160, m = 11, nb = k / kBlockCols;
  const auto w = random_vector(static_cast<size_t>(n * k), 80, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 81, 1.0f);
  const QuantX qx = quantize(x, m, k);
  for (QuantType type : {QuantType::kQ8Strips, QuantType::kQ4Strips}) {
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    const Int8TileKernel f = type == QuantType::kQ8Strips ? tile.q8s : tile.q4s;
    const auto alone = run_tiles(f, 1, packed, qx, m, nb, 0);
    std::vector<std::vector<float>> others;
    for (int64_t x_rows = 2; x_rows <= tile.x_rows; ++x_rows) {
      others.push_back(run_tiles(f, x_rows, packed, qx, m, nb, 0));
    }
    // The dotprod tile's bits: it runs i8mm's decode steps (m == 1), and every ARM tile gives them.
    if (has_dotprod()) {
      others.push_back(run_tiles(type == QuantType::kQ8Strips ? kDotprod.q8s : kDotprod.q4s, 1,
                                 packed, qx, m, nb, 0));
    }
    for (const auto& got : others) {
      for (size_t at = 0; at < alone.size(); ++at) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[at]), std::bit_cast<uint32_t>(alone[at]))
            << tile.name << " " << quant_type_name(type) << " at x row "
            << static_cast<int64_t>(at) / n << ", w row " << static_cast<int64_t>(at) % n;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tiles, Int8GemmNeon, ::testing::Values(&kSmull, &kDotprod, &kI8mm),
                         [](const ::testing::TestParamInfo<const NeonTile*>& info) {
                           if (info.param == &kSmull) return std::string("Smull");
                           return std::string(info.param == &kDotprod ? "Dotprod" : "I8mm");
                         });

// Weights of one magnitude with random signs, and x rows whose signs follow weight row i % n
// (negated on odd rows): every x and weight at its largest |q|, and blocks whose products all
// have one sign, the largest int16 pair sums (q8: 2 * 127 * 127) and dots the tiles can meet.
void extreme_inputs(int64_t n, int64_t k, int64_t m, std::vector<float>& w, std::vector<float>& x) {
  const auto signs = random_vector(static_cast<size_t>(n * k), 140, 1.0f);
  w.resize(static_cast<size_t>(n * k));
  x.resize(static_cast<size_t>(m * k));
  for (size_t j = 0; j < w.size(); ++j) w[j] = signs[j] < 0 ? -0.05f : 0.05f;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      const float s = w[static_cast<size_t>((i % n) * k + j)] < 0 ? -1.0f : 1.0f;
      x[static_cast<size_t>(i * k + j)] = i % 2 == 0 ? s : -s;
    }
  }
}

TEST(Int8GemmNeonSmull, GivesTheBitsOfTheDotprodTileOnEveryTail) {
  // The same exact block dots and fp32 update: a row's bits do not depend on the ARM kernel.
  if (!has_dotprod()) GTEST_SKIP() << "this CPU lacks dotprod: nothing to compare with";
  struct Shape {
    int64_t n, k, m;
  };
  // Partial strips and halves, a lone block, chunks with tails; m: every x-row tail of both.
  const Shape shapes[] = {{42, 288, 19}, {16, 32, 5}, {5, 96, 23}, {70, 1120, 9}};
  for (const Shape& p : shapes) {
    const int64_t nb = p.k / kBlockCols;
    for (bool extreme : {false, true}) {
      std::vector<float> w, x;
      if (extreme) {
        extreme_inputs(p.n, p.k, p.m, w, x);
      } else {
        w = random_vector(static_cast<size_t>(p.n * p.k), 150, 0.05f);
        x = random_vector(static_cast<size_t>(p.m * p.k), 151, 1.0f);
        for (int64_t j = 0; j < 32; ++j) x[static_cast<size_t>(j)] = 0.0f;  // an all-zero block
        for (size_t j = 0; j < x.size(); j += 97) x[j] *= 30.0f;
      }
      const QuantX qx = quantize(x, p.m, p.k);
      for (QuantType type : {QuantType::kQ8Strips, QuantType::kQ4Strips}) {
        const auto packed =
            PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), p.n, p.k}, type);
        const bool q8 = type == QuantType::kQ8Strips;
        const auto want =
            run_tiles(q8 ? kDotprod.q8s : kDotprod.q4s, kDotprod.x_rows, packed, qx, p.m, nb, 0);
        for (int64_t x_rows = 1; x_rows <= kSmull.x_rows; ++x_rows) {
          for (int64_t chunk : {int64_t{8}, nb, int64_t{1}}) {
            const int64_t ahead = x_rows % 2 == 0 ? 0 : strip_block_bytes(type);
            const auto got =
                run_tiles(q8 ? kSmull.q8s : kSmull.q4s, x_rows, packed, qx, p.m, chunk, ahead);
            for (size_t at = 0; at < want.size(); ++at) {
              ASSERT_EQ(std::bit_cast<uint32_t>(got[at]), std::bit_cast<uint32_t>(want[at]))
                  << quant_type_name(type) << (extreme ? " extreme" : "") << " n " << p.n << " k "
                  << p.k << " m " << p.m << " x_rows " << x_rows << " chunk " << chunk
                  << " at x row " << static_cast<int64_t>(at) / p.n << ", w row "
                  << static_cast<int64_t>(at) % p.n;
            }
          }
        }
      }
    }
  }
}

TEST(Int8GemmNeonSmull, TheGemmGivesTheBitsOfTheDotprodGemmAtAnyM) {
  // Through the driver (x tiles of 4 against 8, streamed and chunked depths).
  if (!has_dotprod()) GTEST_SKIP() << "this CPU lacks dotprod: nothing to compare with";
  struct Shape {
    int64_t n, k, m;
  };
  const Shape shapes[] = {{42, 288, 1}, {77, 1120, 3}, {131, 320, 40}, {5, 96, 263}};
  for (const Shape& p : shapes) {
    const auto w = random_vector(static_cast<size_t>(p.n * p.k), 160, 0.05f);
    const auto x = random_vector(static_cast<size_t>(p.m * p.k), 161, 1.0f);
    const auto bias = random_vector(static_cast<size_t>(p.n), 162, 1.0f);
    for (QuantType type : {QuantType::kQ8Strips, QuantType::kQ4Strips}) {
      const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), p.n, p.k}, type);
      std::vector<float> want(static_cast<size_t>(p.m * p.n)), got(want.size(), NAN);
      int8_gemm(Int8GemmKernel::kNeonDotprod, x.data(), p.m, packed, bias.data(), want.data());
      int8_gemm(Int8GemmKernel::kNeonSmull, x.data(), p.m, packed, bias.data(), got.data());
      for (size_t at = 0; at < want.size(); ++at) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[at]), std::bit_cast<uint32_t>(want[at]))
            << quant_type_name(type) << " n " << p.n << " k " << p.k << " m " << p.m << " at x row "
            << static_cast<int64_t>(at) / p.n << ", w row " << static_cast<int64_t>(at) % p.n;
      }
    }
  }
}

TEST(Int8GemmNeonI8mm, GivesTheBitsOfTheDotprodTileOverManyChunks) {
  // Deep enough (k 1120: 35 blocks) for the tiles' chunks of 16 blocks and their tails, on the
  // extreme products and random ones, every x-row count of the i8mm tile against dotprod's m = 1.
  if (!has_i8mm()) GTEST_SKIP() << "this CPU lacks i8mm";
  const int64_t n = 70, k = 1120, m = 9, nb = k / kBlockCols;
  for (bool extreme : {false, true}) {
    std::vector<float> w, x;
    if (extreme) {
      extreme_inputs(n, k, m, w, x);
    } else {
      w = random_vector(static_cast<size_t>(n * k), 170, 0.05f);
      x = random_vector(static_cast<size_t>(m * k), 171, 1.0f);
    }
    const QuantX qx = quantize(x, m, k);
    for (QuantType type : {QuantType::kQ8Strips, QuantType::kQ4Strips}) {
      const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
      const bool q8 = type == QuantType::kQ8Strips;
      const auto want = run_tiles(q8 ? kDotprod.q8s : kDotprod.q4s, 1, packed, qx, m, nb, 0);
      for (int64_t x_rows = 2; x_rows <= kI8mm.x_rows; ++x_rows) {
        const auto got = run_tiles(q8 ? kI8mm.q8s : kI8mm.q4s, x_rows, packed, qx, m, nb, 0);
        for (size_t at = 0; at < want.size(); ++at) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got[at]), std::bit_cast<uint32_t>(want[at]))
              << quant_type_name(type) << (extreme ? " extreme" : "") << " x_rows " << x_rows
              << " at x row " << static_cast<int64_t>(at) / n << ", w row "
              << static_cast<int64_t>(at) % n;
        }
      }
    }
  }
}

TEST(QuantizeRowNeon, SameBitsAsTheScalarCode) {
  const int64_t nb = 10;
  auto x = random_vector(static_cast<size_t>(nb * 32), 90, 1.0f);
  for (int64_t j = 0; j < 32; ++j) x[static_cast<size_t>(32 + j)] = j % 2 ? -0.0f : 0.0f;
  x[70] = NAN;  // a NaN in a block of zeros, and in a block of numbers
  x[100] = NAN;
  x[130] = INFINITY;
  for (int64_t j = 0; j < 32; ++j) x[static_cast<size_t>(160 + j)] = 0.25f * (j - 16);  // ties
  for (int64_t j = 0; j < 32; ++j) x[static_cast<size_t>(192 + j)] = 1e-40f * (j - 9);
  x[224] = 3e38f;
  x[225] = -3e38f;
  for (int32_t qmax : {127, 63}) {
    std::vector<int8_t> q0(static_cast<size_t>(nb * 32)), q1(q0.size());
    std::vector<float> s0(static_cast<size_t>(nb)), s1(s0.size());
    std::vector<int32_t> u0(s0.size()), u1(s0.size());
    kernels::quantize_row_to_scalar(x.data(), nb, qmax, q0.data(), s0.data(), u0.data());
    kernels::quantize_row_to_neon(x.data(), nb, qmax, q1.data(), s1.data(), u1.data());
    EXPECT_EQ(q0, q1) << "qmax " << qmax;
    EXPECT_EQ(u0, u1) << "qmax " << qmax;
    for (int64_t b = 0; b < nb; ++b) {
      EXPECT_EQ(std::bit_cast<uint32_t>(s0[b]), std::bit_cast<uint32_t>(s1[b]))
          << "qmax " << qmax << " block " << b;
    }
  }
}

}  // namespace
}  // namespace qvl::ops
