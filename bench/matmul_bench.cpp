// Packed matmul kernels against the exact-mode kernel, on the best ISA of this CPU and all pool
// threads. GEMV (m = 1, decode) reports weight bytes streamed per second (bytes_per_second);
// GEMM (m = 512, prompt) reports multiply-adds as GFLOP/s (2 * m * n * k per call). The weights
// are random bf16 in Qwen3-VL-2B shapes ([out, in]); the exact baseline reads them as stored.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/half.h"
#include "base/thread_pool.h"
#include "ops/packed_matrix.h"

namespace {

using qvl::ops::PackedMatrix;
using qvl::ops::QuantType;

const std::vector<uint16_t>& bf16_weights(int64_t rows, int64_t cols) {
  static std::map<std::pair<int64_t, int64_t>, std::vector<uint16_t>> cache;
  auto& w = cache[{rows, cols}];
  if (w.empty()) {
    std::mt19937 rng(static_cast<uint32_t>(rows * 31 + cols));
    std::normal_distribution<float> dist(0.0f, 0.05f);
    w.resize(static_cast<size_t>(rows * cols));
    for (auto& v : w) v = qvl::f32_to_bf16(dist(rng));
  }
  return w;
}

// Packed once per (type, shape) and kept, so repetitions measure the kernel only.
const PackedMatrix& packed(QuantType type, int64_t rows, int64_t cols) {
  static std::map<std::tuple<int, int64_t, int64_t>, std::unique_ptr<PackedMatrix>> cache;
  auto& slot = cache[{static_cast<int>(type), rows, cols}];
  if (!slot) {
    const qvl::ops::WeightRef source{qvl::ops::WeightType::kBF16, bf16_weights(rows, cols).data(),
                                     rows, cols};
    slot = std::make_unique<PackedMatrix>(PackedMatrix::pack(source, type));
  }
  return *slot;
}

std::vector<float> activations(int64_t m, int64_t k) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * k));
  for (auto& v : x) v = dist(rng);
  return x;
}

void run_matmul(benchmark::State& state, QuantType type, int64_t m, int64_t rows, int64_t cols) {
  const PackedMatrix& w = packed(type, rows, cols);
  const std::vector<float> x = activations(m, cols);
  std::vector<float> y(static_cast<size_t>(m * rows));
  for (auto _ : state) {
    qvl::ops::matmul(x.data(), m, w, nullptr, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const auto iterations = static_cast<int64_t>(state.iterations());
  state.counters["threads"] = qvl::ThreadPool::global().size();
  if (m == 1) {
    state.SetBytesProcessed(iterations * static_cast<int64_t>(w.size_bytes()));
  } else {
    state.counters["GFLOP/s"] = benchmark::Counter(
        2e-9 * static_cast<double>(m * rows * cols) * static_cast<double>(iterations),
        benchmark::Counter::kIsRate);
  }
}

const int registered = [] {
  struct Shape {
    const char* what;
    int64_t rows, cols;
  };
  const Shape gemv_shapes[] = {{"attn_2048x2048", 2048, 2048},
                               {"up_6144x2048", 6144, 2048},
                               {"down_2048x6144", 2048, 6144},
                               {"lm_head_151936x2048", 151936, 2048}};
  const QuantType types[] = {QuantType::kExact, QuantType::kBF16, QuantType::kQ8, QuantType::kQ4};
  const std::string isa = qvl::ops::isa_level_name(qvl::ops::best_isa());
  for (const Shape& s : gemv_shapes) {
    for (QuantType t : types) {
      const std::string name =
          std::string("BM_Gemv/") + s.what + "/" + qvl::ops::quant_type_name(t) + "/" + isa;
      benchmark::RegisterBenchmark(name.c_str(), run_matmul, t, int64_t{1}, s.rows, s.cols)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (QuantType t : types) {
    const std::string name =
        std::string("BM_Gemm/m512_2048x6144/") + qvl::ops::quant_type_name(t) + "/" + isa;
    benchmark::RegisterBenchmark(name.c_str(), run_matmul, t, int64_t{512}, int64_t{2048},
                                 int64_t{6144})
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  return 0;
}();

}  // namespace
