#include "ops/machine_probe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/aligned_buffer.h"
#include "ops/isa_test_util.h"
#include "ops/machine_probe_kernels.h"
#include "ops/x86/machine_probe_x86.h"

namespace qvl::ops {
namespace {

namespace pk = probe_kernels;

bool cpu_runs(IsaLevel level) {
  if (static_cast<int>(best_isa()) >= static_cast<int>(level)) return true;
  std::printf("note: this CPU lacks %s; its probe loops are compiled but not run\n",
              isa_level_name(level));
  return false;
}

const int64_t kIterations[] = {0, 1, 2, 3, 7, 64, 1000};

TEST(MachineProbeKernels, FmaLoopsMatchTheScalarLoop) {
  for (const IsaLevel level : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (!cpu_runs(level)) continue;
    const auto loop = level == IsaLevel::kAvx2 ? pk::fma_loop_avx2 : pk::fma_loop_avx512;
    for (const int64_t iters : kIterations) {
      // a = 0.5 keeps every product exact, so FMA and mul+add round alike.
      for (const auto& [a, b] : {std::pair{0.5f, 1.0f}, std::pair{1.0f, 0.25f}}) {
        EXPECT_EQ(loop(iters, a, b), pk::fma_loop_scalar(iters, a, b))
            << isa_level_name(level) << " iters " << iters << " a " << a;
      }
    }
  }
  EXPECT_EQ(pk::fma_loop_scalar(1000, 1.0f, 0.25f), 250.0f);
}

TEST(MachineProbeKernels, Int8LoopsMatchTheScalarLoop) {
  for (const IsaLevel level : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (!cpu_runs(level)) continue;
    const auto loop = level == IsaLevel::kAvx2 ? pk::int8_dot_loop_avx2 : pk::int8_dot_loop_avx512;
    for (const int64_t iters : kIterations) {
      for (const auto& [u, s] : {std::pair<uint8_t, int8_t>{1, 1}, {3, -2}, {200, 81}}) {
        EXPECT_EQ(loop(iters, u, s), pk::int8_dot_loop_scalar(iters, u, s))
            << isa_level_name(level) << " iters " << iters << " u " << int{u} << " s " << int{s};
      }
    }
  }
  EXPECT_EQ(pk::int8_dot_loop_scalar(10, 3, -2), -240);
}

TEST(MachineProbeKernels, Bf16LoopMatchesTheScalarLoop) {
  EXPECT_EQ(pk::bf16_dot_loop_scalar(100, 0.5f, 0.25f), 25.0f);
  // Truncation to bf16: 1 + 2^-10 keeps only its leading 1.
  EXPECT_EQ(pk::bf16_dot_loop_scalar(1, 1.0f + 1.0f / 1024, 1.0f), 2.0f);
  if (!cpu_runs(IsaLevel::kAvx512)) GTEST_SKIP() << "vdpbf16ps needs AVX-512 BF16";
  for (const int64_t iters : kIterations) {
    EXPECT_EQ(pk::bf16_dot_loop_avx512(iters, 0.5f, 0.25f),
              pk::bf16_dot_loop_scalar(iters, 0.5f, 0.25f));
    EXPECT_EQ(pk::bf16_dot_loop_avx512(iters, 1.0f + 1.0f / 1024, 3.0f),
              pk::bf16_dot_loop_scalar(iters, 1.0f + 1.0f / 1024, 3.0f));
  }
}

TEST(MachineProbeKernels, ReadLoopsSumEveryWord) {
  AlignedBuffer<uint8_t> buffer(8192 + 64);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<uint8_t>(i * 131 + 7);
  const bool avx2 = cpu_runs(IsaLevel::kAvx2), avx512 = cpu_runs(IsaLevel::kAvx512);
  for (const size_t bytes : {size_t{0}, size_t{64}, size_t{128}, size_t{192}, size_t{256},
                             size_t{320}, size_t{1024 + 64}, size_t{8192 + 64}}) {
    const uint64_t want = pk::read_sum_scalar(buffer.data(), bytes);
    uint64_t words = 0;
    for (size_t i = 0; i < bytes; i += 8) {
      uint64_t w;
      std::memcpy(&w, buffer.data() + i, 8);
      words += w;
    }
    EXPECT_EQ(want, words) << bytes;
    if (avx2) {
      EXPECT_EQ(pk::read_sum_avx2(buffer.data(), bytes), want);
    }
    if (avx512) {
      EXPECT_EQ(pk::read_sum_avx512(buffer.data(), bytes), want);
    }
  }
}

void expect_positive(double v, const char* what) {
  EXPECT_TRUE(std::isfinite(v) && v > 0) << what << " " << v;
}

TEST(MachineProbe, FiguresArePositiveForEveryThreadCount) {
  ProbeOptions o;
  o.threads = {2, 1};
  o.seconds = 0.03;
  o.buffer_bytes = 32 << 20;
  const MachineProbe m = probe_machine(o);
  EXPECT_EQ(m.isa, active_isa());
  EXPECT_EQ(m.buffer_bytes, 32 << 20);
  EXPECT_FALSE(m.fp32_instruction.empty());
  EXPECT_FALSE(m.int8_instruction.empty());
  expect_positive(m.dram_latency_ns, "DRAM latency");
  ASSERT_EQ(m.figures.size(), 2u);
  const ProbeFigures& one = m.figures[0];
  const ProbeFigures& two = m.figures[1];
  EXPECT_EQ(one.threads, 1);
  EXPECT_EQ(two.threads, 2);
  for (const ProbeFigures* f : {&one, &two}) {
    expect_positive(f->dram_read_gb_per_s, "DRAM");
    expect_positive(f->dram_stream_gb_per_s, "sustained DRAM");
    expect_positive(f->fp32_fma_gflop_per_s, "fp32");
    expect_positive(f->int8_dot_gop_per_s, "int8");
    EXPECT_EQ(f->bf16_dot_gflop_per_s.has_value(), m.isa == IsaLevel::kAvx512);
    if (f->bf16_dot_gflop_per_s) expect_positive(*f->bf16_dot_gflop_per_s, "bf16");
  }
  // How the figures scale with threads is a measurement (qvl bench reports it), not a property a
  // unit test can hold on a shared machine: under ctest -j2 another test's memory traffic took the
  // 2-thread DRAM figure to 0.66x the 1-thread one.
  EXPECT_EQ(&m.at(1), &one);
  EXPECT_EQ(&m.at(2), &two);
  EXPECT_EQ(&m.at(64), &two);  // the nearest measured count below
}

TEST(MachineProbe, FindsTheLastLevelCache) {
  // Every x86 Linux machine reports one; a missing one would only make the buffer 64 MiB.
  EXPECT_GT(last_level_cache_bytes(), 0);
}

}  // namespace
}  // namespace qvl::ops
