// Decode GEMV (m = 1) kernels on cold weights: BM_GemvKernel/<shape>/<type>/<isa> runs the AVX2
// (and, where the CPU has it, the AVX-512) run kernel over a whole 2B-shaped matrix with all pool
// threads, split as small_batch_matmul splits it (runs of kMaxRunGroups groups), on rotating copies
// that do not fit the cache, as decode reads them. To A/B a change, run this benchmark from a build
// of each commit (see README). Counters: pct_dram (weight bytes per second against BM_DramRead's
// all-thread rate, see gemv_bench.cpp: measured separately, so compare rows of the same run),
// load1.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "cold_matrices.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"
#include "ops/x86/packed_kernels_x86.h"

namespace {

namespace kernels = qvl::ops::kernels;
using qvl::ops::QuantType;

void BM_GemvKernel(benchmark::State& state, kernels::QuantRunKernel kernel, QuantType type,
                   int64_t rows, int64_t cols) {
  const qvl::bench::ColdMatrices& w = qvl::bench::cold_matrices(type, rows, cols);
  const int64_t nb = cols / kernels::kCols, groups = rows / kernels::kRows;
  std::vector<float> x(static_cast<size_t>(cols));
  for (size_t j = 0; j < x.size(); ++j) x[j] = static_cast<float>((j * 37) % 101) / 50.0f - 1.0f;
  std::vector<int8_t> q(static_cast<size_t>(cols));
  std::vector<float> scale(static_cast<size_t>(nb)), scaled_sum(scale.size());
  std::vector<int32_t> sum(scale.size());
  kernels::quantize_row_avx2(x.data(), nb, q.data(), scale.data(), sum.data());
  const kernels::QuantX qx{q.data(), scale.data(), sum.data(), nb, scaled_sum.data()};
  const auto group_bytes =
      static_cast<int64_t>(qvl::ops::packed_size_bytes(type, kernels::kRows, cols));
  std::vector<float> y(static_cast<size_t>(rows));
  size_t next = 0;
  for (auto _ : state) {
    const auto* bytes = static_cast<const uint8_t*>(w.views[next].bytes());
    qvl::ThreadPool::global().parallel_for(static_cast<size_t>(groups), [&](size_t g0, size_t g1) {
      for (auto g = static_cast<int64_t>(g0); g < static_cast<int64_t>(g1);
           g += kernels::kMaxRunGroups) {
        const int count = static_cast<int>(
            std::min<int64_t>(kernels::kMaxRunGroups, static_cast<int64_t>(g1) - g));
        const kernels::GroupRun run{bytes + g * group_bytes, group_bytes, nb * kernels::kScaleBytes,
                                    nb, count};
        kernel(run, qx, 1, y.data() + g * kernels::kRows);
      }
    });
    next = next + 1 == w.views.size() ? 0 : next + 1;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(w.original.size_bytes()));
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["load1"] = load[0];
}

const int registered = [] {
  if (qvl::ops::best_isa() == qvl::ops::IsaLevel::kScalar) return 0;
  struct Shape {
    const char* what;
    QuantType type;
    int64_t rows, cols;
  };
  const Shape shapes[] = {{"gate_up_6144x2048", QuantType::kQ4, 6144, 2048},
                          {"down_2048x6144", QuantType::kQ4, 2048, 6144},
                          {"gate_up_6144x2048", QuantType::kQ8, 6144, 2048},
                          {"lm_head_151936x2048", QuantType::kQ8, 151936, 2048}};
  struct Level {
    const char* name;
    kernels::QuantRunKernel q4, q8;
  };
  std::vector<Level> levels = {{"avx2", kernels::q4_run_avx2, kernels::q8_run_avx2}};
  if (qvl::ops::best_isa() == qvl::ops::IsaLevel::kAvx512) {
    levels.push_back({"avx512", kernels::q4_run_avx512, kernels::q8_run_avx512});
  }
  for (const Shape& s : shapes) {
    for (const Level& level : levels) {
      const kernels::QuantRunKernel kernel = s.type == QuantType::kQ4 ? level.q4 : level.q8;
      const std::string name = std::string("BM_GemvKernel/") + s.what + "/" +
                               qvl::ops::quant_type_name(s.type) + "/" + level.name;
      benchmark::RegisterBenchmark(name.c_str(), BM_GemvKernel, kernel, s.type, s.rows, s.cols)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return 0;
}();

}  // namespace
