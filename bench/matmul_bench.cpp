// Packed matmul kernels against the exact-mode kernel, on the best ISA of this CPU and all pool
// threads. GEMV (m = 1, decode) reports weight bytes streamed per second (bytes_per_second);
// GEMM (m = 512, prompt) reports multiply-adds as GFLOP/s (2 * m * n * k per call). The weights
// are random bf16 in Qwen3-VL-2B shapes ([out, in]); the exact baseline reads them as stored.
// BM_GemmAct compares the GEMM's fp32 and int8 activations (q8/q4) in one run, at 1 and 2 threads,
// as GOP/s (2 * m * n * k) on wall time and per CPU-second of the process (GOP/cpu_s, robust to a
// loaded machine); BM_Int8Peak is the int8 ceiling those are measured against. BM_Int8Gemm runs
// every int8 GEMM micro-kernel this CPU runs (int8_gemm.h) on prompt shapes (m = 512), for A/B
// of a new kernel against the former one in the same run.
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
#include "cold_matrices.h"
#include "ops/int8_gemm.h"
#include "ops/int8_gemm_kernels.h"
#include "ops/machine_probe_kernels.h"
#include "ops/packed_matrix.h"
#include "ops/x86/machine_probe_x86.h"

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

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// GOP/s (wall) and GOP/cpu_s (process CPU seconds: steady on a loaded machine) of m x rows x cols
// multiply-adds per iteration.
void set_gop_counters(benchmark::State& state, int64_t m, int64_t rows, int64_t cols,
                      double cpu_seconds) {
  const double ops =
      2e-9 * static_cast<double>(m * rows * cols) * static_cast<double>(state.iterations());
  state.counters["GOP/s"] = benchmark::Counter(ops, benchmark::Counter::kIsRate);
  state.counters["GOP/cpu_s"] = ops / cpu_seconds;
}

void run_gemm_activations(benchmark::State& state, QuantType type, qvl::ops::GemmActivations act,
                          int64_t m, int64_t rows, int64_t cols, int threads) {
  if (qvl::ThreadPool::global().size() != threads) qvl::ThreadPool::set_global_threads(threads);
  const PackedMatrix& w = packed(type, rows, cols);
  const std::vector<float> x = activations(m, cols);
  std::vector<float> y(static_cast<size_t>(m * rows));
  qvl::ops::set_gemm_activations(act);
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    qvl::ops::matmul(x.data(), m, w, nullptr, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double cpu = process_cpu_seconds() - cpu0;
  qvl::ops::set_gemm_activations(std::nullopt);
  set_gop_counters(state, m, rows, cols, cpu);
}

// cold = false: one matrix, cached after the first call. cold = true: weights cold from memory,
// as a prompt's GEMM meets them (every matrix of the model once per chunk): copies cycled so that
// none stays cached (cold_matrices.h), so the driver's repack of the stored weights reads DRAM.
// Small m is a chat's later turn; m512 a long prompt.
void run_int8_gemm(benchmark::State& state, QuantType type, qvl::ops::Int8GemmKernel kernel,
                   int64_t m, int64_t rows, int64_t cols, int threads, bool cold) {
  if (qvl::ThreadPool::global().size() != threads) qvl::ThreadPool::set_global_threads(threads);
  const std::vector<PackedMatrix>* copies =
      cold ? &qvl::bench::cold_matrices(type, rows, cols).views : nullptr;
  const PackedMatrix* warm = cold ? nullptr : &packed(type, rows, cols);
  const std::vector<float> x = activations(m, cols);
  std::vector<float> y(static_cast<size_t>(m * rows));
  size_t next = 0;
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    const PackedMatrix& w = copies != nullptr ? (*copies)[next] : *warm;
    if (copies != nullptr) next = (next + 1) % copies->size();
    qvl::ops::int8_gemm(kernel, x.data(), m, w, nullptr, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_gop_counters(state, m, rows, cols, process_cpu_seconds() - cpu0);
}

// Throughput of the AVX2 int8 multiply-add sequence the int8 GEMM is built on (vpmaddubsw,
// vpmaddwd, vpaddd: 32 multiply-adds per 256-bit vector), operands in registers: the int8 ceiling
// of one core. The machine probe's loop (`qvl bench --probe-only`), so that % of peak here and
// there agree; this file's own loop kept its accumulators on the stack and read half the rate.
void BM_Int8Peak(benchmark::State& state) {
  constexpr int64_t kIters = 1 << 20;
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    benchmark::DoNotOptimize(qvl::ops::probe_kernels::int8_dot_loop_avx2(kIters, 1, 1));
  }
  const double ops = 2e-9 * static_cast<double>(qvl::ops::probe_kernels::kInt8Avx2PerIter) *
                     kIters * static_cast<double>(state.iterations());
  state.counters["GOP/s"] = benchmark::Counter(ops, benchmark::Counter::kIsRate);
  state.counters["GOP/cpu_s"] = ops / (process_cpu_seconds() - cpu0);
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
  if (qvl::ops::best_isa() != qvl::ops::IsaLevel::kScalar) {
    benchmark::RegisterBenchmark("BM_Int8Peak/avx2", BM_Int8Peak)->Unit(benchmark::kMillisecond);
  }
  // Prompt shapes [out, in]: attention q/o, k/v, MLP gate/up, MLP down.
  const Shape prompt_shapes[] = {{"2048x2048", 2048, 2048},
                                 {"1024x2048", 1024, 2048},
                                 {"6144x2048", 6144, 2048},
                                 {"2048x6144", 2048, 6144}};
  // q8/q4 (groups, repacked per call) and q8/q4 strips (what a pre-packed q4 file stores, read in
  // place by the kernels that can).
  for (const Shape& s : prompt_shapes) {
    for (QuantType t :
         {QuantType::kQ8, QuantType::kQ4, QuantType::kQ8Strips, QuantType::kQ4Strips}) {
      for (auto kernel : {qvl::ops::Int8GemmKernel::kAvx2, qvl::ops::Int8GemmKernel::kAvxVnni,
                          qvl::ops::Int8GemmKernel::kAvx512Vnni}) {
        if (!qvl::ops::cpu_runs_int8_gemm_kernel(kernel)) continue;
        if (!qvl::ops::kernels::int8_kernel_supports(kernel, t)) continue;
        for (int threads : {1, 2}) {
          const std::string name =
              std::string("BM_Int8Gemm/") + s.what + "/m512/" + qvl::ops::quant_type_name(t) + "/" +
              qvl::ops::int8_gemm_kernel_name(kernel) + "/t" + std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), run_int8_gemm, t, kernel, int64_t{512}, s.rows,
                                       s.cols, threads, false)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
      }
    }
  }
  for (QuantType t : {QuantType::kQ8, QuantType::kQ4}) {
    for (int64_t m : {32, 512}) {
      for (auto kernel : {qvl::ops::Int8GemmKernel::kAvx2, qvl::ops::Int8GemmKernel::kAvxVnni,
                          qvl::ops::Int8GemmKernel::kAvx512Vnni}) {
        if (!qvl::ops::cpu_runs_int8_gemm_kernel(kernel)) continue;
        const std::string name = std::string("BM_Int8GemmCold/2048x6144/m") + std::to_string(m) +
                                 "/" + qvl::ops::quant_type_name(t) + "/" +
                                 qvl::ops::int8_gemm_kernel_name(kernel) + "/t2";
        benchmark::RegisterBenchmark(name.c_str(), run_int8_gemm, t, kernel, m, int64_t{2048},
                                     int64_t{6144}, 2, true)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  // Vision tower shapes (q8: the tower of the default q4 file) at a 448x448 image's 784 patches:
  // qkv, attention proj, MLP fc1, MLP fc2, and the mergers' fc1 / fc2 at its 196 tokens in their
  // two row chunks of 98; the kernels on q8 (repacked per call) and on q8-strips (as the tower
  // stores them: read in place by the VNNI kernels and by avx2-x7, the AVX2 tower's kernel with
  // 7-bit x).
  struct VisionShape {
    const char* what;
    int64_t m, rows, cols;
  };
  const VisionShape vision_shapes[] = {
      {"vision_qkv_3072x1024", 784, 3072, 1024}, {"vision_proj_1024x1024", 784, 1024, 1024},
      {"vision_fc1_4096x1024", 784, 4096, 1024}, {"vision_fc2_1024x4096", 784, 1024, 4096},
      {"merger_fc1_4096x4096", 98, 4096, 4096},  {"merger_fc2_2048x4096", 98, 2048, 4096}};
  for (const VisionShape& s : vision_shapes) {
    for (auto kernel :
         {qvl::ops::Int8GemmKernel::kAvx2, qvl::ops::Int8GemmKernel::kAvx2X7,
          qvl::ops::Int8GemmKernel::kAvxVnni, qvl::ops::Int8GemmKernel::kAvx512Vnni}) {
      if (!qvl::ops::cpu_runs_int8_gemm_kernel(kernel)) continue;
      for (QuantType t : {QuantType::kQ8, QuantType::kQ8Strips}) {
        if (kernel == qvl::ops::Int8GemmKernel::kAvx2X7 && t == QuantType::kQ8) continue;
        for (int threads : {1, 2}) {
          const std::string name = std::string("BM_Int8Gemm/") + s.what + "/m" +
                                   std::to_string(s.m) + "/" + qvl::ops::quant_type_name(t) + "/" +
                                   qvl::ops::int8_gemm_kernel_name(kernel) + "/t" +
                                   std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), run_int8_gemm, t, kernel, s.m, s.rows, s.cols,
                                       threads, false)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
      }
    }
  }
  // [rows, cols] = [out, in]: attention 2048x2048, MLP down 2048x6144, vision MLP fc1 4096x1024.
  const Shape gemm_shapes[] = {
      {"2048x2048", 2048, 2048}, {"2048x6144", 2048, 6144}, {"4096x1024", 4096, 1024}};
  for (const Shape& s : gemm_shapes) {
    for (int64_t m : {196, 512, 784}) {
      for (QuantType t : {QuantType::kQ8, QuantType::kQ4}) {
        for (auto act : {qvl::ops::GemmActivations::kF32, qvl::ops::GemmActivations::kInt8}) {
          for (int threads : {1, 2}) {
            const std::string name = std::string("BM_GemmAct/") + s.what + "/m" +
                                     std::to_string(m) + "/" + qvl::ops::quant_type_name(t) + "/" +
                                     qvl::ops::gemm_activations_name(act) + "/t" +
                                     std::to_string(threads);
            benchmark::RegisterBenchmark(name.c_str(), run_gemm_activations, t, act, m, s.rows,
                                         s.cols, threads)
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
          }
        }
      }
    }
  }
  return 0;
}();

}  // namespace
