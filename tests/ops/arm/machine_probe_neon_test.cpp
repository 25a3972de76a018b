// The aarch64 loops of the machine probe against the scalar loops: same values at every level
// the CPU runs, and the report names the level's instructions.
#include "ops/arm/machine_probe_neon.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "base/aligned_buffer.h"
#include "ops/isa_test_util.h"
#include "ops/machine_probe.h"
#include "ops/machine_probe_kernels.h"

namespace qvl::ops {
namespace {

namespace pk = probe_kernels;
using testing::runs_level;

bool cpu_runs(IsaLevel level) {
  if (runs_level(level)) return true;
  std::printf("note: this CPU lacks %s; its probe loops are compiled but not run\n",
              isa_level_name(level));
  return false;
}

const int64_t kIterations[] = {0, 1, 2, 3, 7, 64, 1000};

TEST(MachineProbeNeon, FmaLoopMatchesTheScalarLoop) {
  ASSERT_TRUE(cpu_runs(IsaLevel::kNeon));
  for (const int64_t iters : kIterations) {
    // a = 0.5 keeps every product exact, so FMLA and mul+add round alike.
    for (const auto& [a, b] : {std::pair{0.5f, 1.0f}, std::pair{1.0f, 0.25f}}) {
      EXPECT_EQ(pk::fma_loop_neon(iters, a, b), pk::fma_loop_scalar(iters, a, b))
          << "iters " << iters << " a " << a;
    }
  }
}

TEST(MachineProbeNeon, Int8LoopsMatchTheScalarLoop) {
  // Signed-byte u for SMULL and SDOT; USMMLA takes any u.
  const std::pair<uint8_t, int8_t> small[] = {{1, 1}, {3, -2}, {127, 127}, {100, -128}};
  const std::pair<uint8_t, int8_t> wide[] = {{200, 81}, {255, -128}, {255, 127}};
  const bool dotprod = cpu_runs(IsaLevel::kNeonDotprod), i8mm = cpu_runs(IsaLevel::kNeonI8mm);
  for (const int64_t iters : kIterations) {
    for (const auto& [u, s] : small) {
      const int32_t want = pk::int8_dot_loop_scalar(iters, u, s);
      const std::string what =
          "iters " + std::to_string(iters) + " u " + std::to_string(u) + " s " + std::to_string(s);
      EXPECT_EQ(pk::int8_dot_loop_neon(iters, u, s), want) << "neon " << what;
      if (dotprod) {
        EXPECT_EQ(pk::int8_dot_loop_dotprod(iters, u, s), want) << "dotprod " << what;
      }
    }
    if (!i8mm) continue;
    using Pairs = std::span<const std::pair<uint8_t, int8_t>>;
    for (const Pairs pairs : {Pairs(small), Pairs(wide)}) {
      for (const auto& [u, s] : pairs) {
        EXPECT_EQ(pk::int8_dot_loop_i8mm(iters, u, s), pk::int8_dot_loop_scalar(iters, u, s))
            << "i8mm iters " << iters << " u " << int{u} << " s " << int{s};
      }
    }
  }
}

TEST(MachineProbeNeon, Bf16LoopMatchesTheScalarLoop) {
  if (!cpu_runs(IsaLevel::kNeonI8mm)) GTEST_SKIP() << "BFMMLA needs the i8mm level (BF16)";
  for (const int64_t iters : kIterations) {
    // Exact sums (so BFMMLA's rounding to odd rounds nothing), and 1 + 2^-10, whose truncation
    // to bf16 keeps only the leading 1.
    for (const auto& [a, b] : {std::pair{0.5f, 0.25f}, std::pair{1.0f + 1.0f / 1024, 3.0f},
                               std::pair{-2.0f, 1.5f}}) {
      EXPECT_EQ(pk::bf16_dot_loop_bfmmla(iters, a, b), pk::bf16_dot_loop_scalar(iters, a, b))
          << "iters " << iters << " a " << a << " b " << b;
    }
  }
}

TEST(MachineProbeNeon, ReadLoopSumsEveryWord) {
  AlignedBuffer<uint8_t> buffer(8192 + 64);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<uint8_t>(i * 131 + 7);
  for (const size_t bytes : {size_t{0}, size_t{64}, size_t{128}, size_t{192}, size_t{256},
                             size_t{320}, size_t{1024 + 64}, size_t{8192 + 64}}) {
    EXPECT_EQ(pk::read_sum_neon(buffer.data(), bytes), pk::read_sum_scalar(buffer.data(), bytes))
        << bytes;
  }
}

TEST(MachineProbeNeon, EveryLevelHasItsLoopsAndNamesItsInstructions) {
  const std::pair<IsaLevel, const char*> levels[] = {{IsaLevel::kNeon, "smull+smlal2+sadalp"},
                                                     {IsaLevel::kNeonDotprod, "sdot"},
                                                     {IsaLevel::kNeonI8mm, "usmmla"}};
  for (const auto& [level, int8] : levels) {
    const pk::ProbeKernels* k = pk::probe_kernels_for(level);
    ASSERT_NE(k, nullptr) << isa_level_name(level);
    EXPECT_STREQ(k->int8_instruction, int8);
    EXPECT_STREQ(k->fp32_instruction, "fmla v.4s");
    // BFMMLA only at i8mm, which requires BF16.
    if (level == IsaLevel::kNeonI8mm) {
      EXPECT_EQ(k->bf16_dot_loop, &pk::bf16_dot_loop_bfmmla);
      EXPECT_STREQ(k->bf16_instruction, "bfmmla");
    } else {
      EXPECT_EQ(k->bf16_dot_loop, nullptr);
    }
  }
  EXPECT_EQ(pk::probe_kernels_for(IsaLevel::kScalar), nullptr);
}

TEST(MachineProbeNeon, ReportNamesTheActiveLevelsInstructions) {
  ProbeOptions o;
  o.threads = {1};
  o.seconds = 0.01;
  o.buffer_bytes = 4 << 20;
  const MachineProbe m = probe_machine(o);
  const pk::ProbeKernels* k = pk::probe_kernels_for(m.isa);
  ASSERT_NE(k, nullptr) << isa_level_name(m.isa);
  EXPECT_EQ(m.int8_instruction, k->int8_instruction);
  ASSERT_EQ(m.figures.size(), 1u);
  EXPECT_GT(m.figures[0].int8_dot_gop_per_s, 0.0);
  EXPECT_GT(m.figures[0].fp32_fma_gflop_per_s, 0.0);
  EXPECT_EQ(m.figures[0].bf16_dot_gflop_per_s.has_value(), m.isa == IsaLevel::kNeonI8mm);
}

}  // namespace
}  // namespace qvl::ops
