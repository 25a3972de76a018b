// The fp32-arithmetic GEMM on bf16 weights (vision tower, bf16 prefill) in the vision tower's
// shapes, against the fp32 FMA ceiling measured in the same run (BM_Fp32Peak: the machine probe's
// loop). Both report GFLOP/s on wall time and per CPU-second of the process (GFLOP/cpu_s), which
// stays meaningful on a loaded machine; % of peak = GEMM GFLOP/cpu_s / peak GFLOP/cpu_s.
// Shapes ([out, in], m rows): a 448x448 image has 784 patches (196 merged tokens), so the blocks
// run m = 784 through qkv 1024->3072, proj 1024->1024, fc1 1024->4096, fc2 4096->1024, and the
// mergers m = 196 through 4096->4096 and 4096->2048 (a 1024x768 image: m = 3072 and 768); a bf16
// text prefill of 512 tokens runs the same GEMM through the MLP's 2048->6144 and 6144->2048.
#include <benchmark/benchmark.h>

#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/half.h"
#include "base/thread_pool.h"
#include "ops/machine_probe_kernels.h"
#include "ops/x86/machine_probe_x86.h"
#include "ops/packed_matrix.h"

namespace {

using qvl::ops::PackedMatrix;
using qvl::ops::QuantType;

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void use_threads(int threads) {
  if (qvl::ThreadPool::global().size() != threads) qvl::ThreadPool::set_global_threads(threads);
}

const PackedMatrix& bf16_matrix(int64_t rows, int64_t cols) {
  static std::map<std::pair<int64_t, int64_t>, std::unique_ptr<PackedMatrix>> cache;
  auto& slot = cache[{rows, cols}];
  if (!slot) {
    std::mt19937 rng(static_cast<uint32_t>(rows * 31 + cols));
    std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
    std::vector<uint16_t> w(static_cast<size_t>(rows * cols));
    for (auto& v : w) v = qvl::f32_to_bf16(dist(rng));
    const qvl::ops::WeightRef source{qvl::ops::WeightType::kBF16, w.data(), rows, cols};
    slot = std::make_unique<PackedMatrix>(PackedMatrix::pack(source, QuantType::kBF16));
  }
  return *slot;
}

void report(benchmark::State& state, double flop, double cpu) {
  const double gflop = 1e-9 * flop * static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = benchmark::Counter(gflop, benchmark::Counter::kIsRate);
  state.counters["GFLOP/cpu_s"] = gflop / cpu;
}

void BM_VisionGemm(benchmark::State& state, int64_t m, int64_t rows, int64_t cols, int threads) {
  use_threads(threads);
  const PackedMatrix& w = bf16_matrix(rows, cols);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * cols)), y(static_cast<size_t>(m * rows));
  for (auto& v : x) v = dist(rng);
  qvl::ops::matmul(x.data(), m, w, nullptr, y.data());  // warm: scratch buffers, self-check
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    qvl::ops::matmul(x.data(), m, w, nullptr, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  report(state, 2.0 * static_cast<double>(m * rows * cols), process_cpu_seconds() - cpu0);
}

// The probe's fp32 FMA loop (registers only) on every pool thread.
void BM_Fp32Peak(benchmark::State& state, int threads) {
  use_threads(threads);
  constexpr int64_t kIters = 1 << 20;
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    qvl::ThreadPool::global().parallel_for(static_cast<size_t>(threads), [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) {
        benchmark::DoNotOptimize(qvl::ops::probe_kernels::fma_loop_avx2(kIters, 0.5f, 0.25f));
      }
    });
  }
  report(state,
         2.0 * static_cast<double>(qvl::ops::probe_kernels::kFmaAvx2PerIter * kIters * threads),
         process_cpu_seconds() - cpu0);
}

const int registered = [] {
  if (qvl::ops::best_isa() == qvl::ops::IsaLevel::kScalar) return 0;
  struct Shape {
    const char* what;
    int64_t m, rows, cols;
  };
  const Shape shapes[] = {{"qkv_m784_3072x1024", 784, 3072, 1024},
                          {"proj_m784_1024x1024", 784, 1024, 1024},
                          {"fc1_m784_4096x1024", 784, 4096, 1024},
                          {"fc2_m784_1024x4096", 784, 1024, 4096},
                          {"fc1_m3072_4096x1024", 3072, 4096, 1024},
                          {"merger_fc1_m196_4096x4096", 196, 4096, 4096},
                          {"merger_fc2_m196_2048x4096", 196, 2048, 4096},
                          {"prefill_up_m512_6144x2048", 512, 6144, 2048},
                          {"prefill_down_m512_2048x6144", 512, 2048, 6144}};
  const std::string isa = qvl::ops::isa_level_name(qvl::ops::best_isa());
  for (int threads : {1, 2}) {
    const std::string t = "/t" + std::to_string(threads);
    benchmark::RegisterBenchmark(("BM_Fp32Peak/avx2" + t).c_str(), BM_Fp32Peak, threads)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    for (const Shape& s : shapes) {
      benchmark::RegisterBenchmark(
          ("BM_VisionGemm/" + std::string(s.what) + "/bf16/" + isa + t).c_str(), BM_VisionGemm, s.m,
          s.rows, s.cols, threads)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  return 0;
}();

}  // namespace
