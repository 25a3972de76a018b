// Small batches below the GEMM (m = 1..8 rows of x, the decode step of m running streams) at
// Qwen3-VL-2B shapes, as int8 dot throughput against the machine's int8 peak.
//
// BM_SmallBatchKernel/<type>/m<m>: one thread runs the AVX2 q4/q8 run kernels over a
// 6144 x 2048 matrix (L3-resident: the arithmetic, not DRAM, sets the pace) the way
// small_batch_matmul does (each pair of groups of 4 weight rows against all m rows of x, the whole
// batch in one call). A/B against another commit by running each commit's build (see README).
// BM_SmallBatchMatmul/<shape>/<type>/m<m>: ops::matmul with all pool threads on cold weights
// (rotating copies > the cache, as decode reads them; q8 against q8-strips: the GEMV and small
// batch kernels against the int8 GEMM's stored-strip tile on the same values); BM_SmallBatchGemm
// the same batches on the AVX2 int8 GEMM (m >= 16's path), to place the crossover. Counters: GOP_s
// (2 m n k per wall second), GOP_cpu_s (per CPU-second of the whole process, so a loaded machine's
// waits do not count), pct_int8_peak (GOP_cpu_s against the probe's 1-thread int8 dot peak), load1.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/half.h"
#include "base/thread_pool.h"
#include "cold_matrices.h"
#include "ops/int8_gemm.h"
#include "ops/machine_probe.h"
#include "ops/packed_kernels.h"
#include "ops/x86/packed_kernels_x86.h"
#include "ops/packed_matrix.h"

namespace {

using qvl::bench::cold_matrices;
using qvl::bench::ColdMatrices;
using qvl::bench::random_packed;

using qvl::ops::PackedMatrix;
using qvl::ops::QuantType;
namespace kernels = qvl::ops::kernels;

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double one_thread_int8_peak() {
  static const double peak = [] {
    qvl::ops::ProbeOptions options;
    options.threads = {1};
    return qvl::ops::probe_machine(options).at(1).int8_dot_gop_per_s;
  }();
  return peak;
}

void note_counters(benchmark::State& state, double ops_per_iteration, double cpu_seconds) {
  const double ops = ops_per_iteration * static_cast<double>(state.iterations());
  state.counters["GOP_s"] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsRate);
  state.counters["GOP_cpu_s"] = ops * 1e-9 / cpu_seconds;
  state.counters["pct_int8_peak"] = 100.0 * ops * 1e-9 / cpu_seconds / one_thread_int8_peak();
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["load1"] = load[0];
}

std::vector<float> random_x(int64_t m, int64_t k) {
  std::vector<float> x(static_cast<size_t>(m * k));
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (auto& v : x) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    v = static_cast<float>(s >> 40) * 0x1p-23f - 1.0f;
  }
  return x;
}

// ---- kernel A/B, one thread ----

struct QuantizedX {
  std::vector<int8_t> q;
  std::vector<float> scale, scaled_sum;
  std::vector<int32_t> sum;
};

QuantizedX quantize(const std::vector<float>& x, int64_t m, int64_t nb) {
  QuantizedX r;
  r.q.resize(static_cast<size_t>(m * nb * kernels::kCols));
  r.scale.resize(static_cast<size_t>(m * nb));
  r.sum.resize(r.scale.size());
  r.scaled_sum.resize(r.scale.size());
  for (int64_t i = 0; i < m; ++i) {
    kernels::quantize_row_avx2(x.data() + i * nb * kernels::kCols, nb,
                               r.q.data() + i * nb * kernels::kCols, r.scale.data() + i * nb,
                               r.sum.data() + i * nb);
  }
  for (size_t b = 0; b < r.scale.size(); ++b) r.scaled_sum[b] = r.scale[b] * r.sum[b];
  return r;
}

void BM_SmallBatchKernel(benchmark::State& state, kernels::QuantRunKernel kernel,
                         int groups_per_call, int rows_per_call, QuantType type, int m) {
  constexpr int64_t kN = 6144, kK = 2048, kNb = kK / kernels::kCols;
  static std::map<int, PackedMatrix> matrices;
  auto& w = matrices[static_cast<int>(type)];
  if (w.rows() == 0) w = random_packed(type, kN, kK);
  const QuantizedX qx = quantize(random_x(m, kK), m, kNb);
  const kernels::QuantX x{qx.q.data(), qx.scale.data(), qx.sum.data(), kNb, qx.scaled_sum.data()};
  const auto group_bytes =
      static_cast<int64_t>(qvl::ops::packed_size_bytes(type, kernels::kRows, kK));
  const auto* bytes = static_cast<const uint8_t*>(w.bytes());
  float out[kernels::kMaxRunBatchGroups * kernels::kMaxRunXRows * kernels::kRows];
  float sink = 0;
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    for (int64_t g = 0; g < kN / kernels::kRows; g += groups_per_call) {
      const kernels::GroupRun run{bytes + g * group_bytes, group_bytes, kNb * kernels::kScaleBytes,
                                  kNb, groups_per_call};
      for (int i = 0; i < m; i += rows_per_call) {
        const int nx = std::min(rows_per_call, m - i);
        const kernels::QuantX xi{x.q + i * kK, x.scale + i * kNb, x.sum + i * kNb, kNb,
                                 x.scaled_sum + i * kNb};
        kernel(run, xi, nx, out);
        sink += out[0];
      }
    }
  }
  benchmark::DoNotOptimize(sink);
  note_counters(state, 2.0 * m * kN * kK, process_cpu_seconds() - cpu0);
}

// ---- ops::matmul, all threads, cold weights ----

// ops::matmul (the run kernels below m = 16), or the int8 GEMM (what matmul runs from m = 16) on
// the same small batches: where it would pay to hand a small batch to it (it repacks the
// weights on every call).
enum class BatchPath { kMatmul, kInt8Gemm };

void BM_SmallBatch(benchmark::State& state, BatchPath path, QuantType type, int m, int64_t rows,
                   int64_t cols) {
  const ColdMatrices& w = cold_matrices(type, rows, cols);
  const std::vector<float> x = random_x(m, cols);
  std::vector<float> y(static_cast<size_t>(m * rows));
  size_t next = 0;
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    if (path == BatchPath::kMatmul) {
      qvl::ops::matmul(x.data(), m, w.views[next], nullptr, y.data());
    } else {
      qvl::ops::int8_gemm(qvl::ops::Int8GemmKernel::kAvx2, x.data(), m, w.views[next], nullptr,
                          y.data());
    }
    next = next + 1 == w.views.size() ? 0 : next + 1;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  note_counters(state, 2.0 * m * rows * cols, process_cpu_seconds() - cpu0);
  state.counters["threads"] = qvl::ThreadPool::global().size();
}

double max_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}

const int registered = [] {
  if (const char* threads = std::getenv("QVL_BENCH_THREADS")) {
    qvl::ThreadPool::set_global_threads(std::atoi(threads));
  }
  // QVL_BENCH_ISA=avx2 (or scalar): matmul's kernels of that level on a better CPU, without
  // AVX-VNNI (as qvl --isa avx2: what an AVX2-only CPU runs).
  if (const char* isa = std::getenv("QVL_BENCH_ISA")) {
    for (auto level : {qvl::ops::IsaLevel::kScalar, qvl::ops::IsaLevel::kAvx2}) {
      if (std::string(isa) == qvl::ops::isa_level_name(level)) qvl::ops::set_isa_override(level);
    }
    qvl::ops::set_avx_vnni_allowed(false);
  }
  const int batch[] = {1, 2, 3, 4, 6, 8};
  if (qvl::ops::best_isa() != qvl::ops::IsaLevel::kScalar) {
    for (QuantType t : {QuantType::kQ4, QuantType::kQ8}) {
      for (int m : batch) {
        const std::string name = std::string("BM_SmallBatchKernel/") +
                                 qvl::ops::quant_type_name(t) + "/m" + std::to_string(m);
        benchmark::RegisterBenchmark(
            name.c_str(), BM_SmallBatchKernel,
            t == QuantType::kQ4 ? kernels::q4_run_avx2 : kernels::q8_run_avx2,
            kernels::kMaxRunBatchGroups, kernels::kMaxRunXRows, t, m)
            ->Unit(benchmark::kMillisecond)
            ->ComputeStatistics("max", max_of);  // the least disturbed rate on a busy machine
      }
    }
  }
  struct Shape {
    const char* what;
    QuantType type;
    int64_t rows, cols;
  };
  // The q4 file's decoder projections are q4 (stored as q4-strips: the int8 GEMM's stored-strip
  // tile at every m; q4 groups are the GEMV and small-batch kernels), its lm_head q8.
  const Shape shapes[] = {{"q_o_2048x2048", QuantType::kQ4, 2048, 2048},
                          {"q_o_2048x2048", QuantType::kQ4Strips, 2048, 2048},
                          {"kv_1024x2048", QuantType::kQ4, 1024, 2048},
                          {"kv_1024x2048", QuantType::kQ4Strips, 1024, 2048},
                          {"gate_up_6144x2048", QuantType::kQ4, 6144, 2048},
                          {"gate_up_6144x2048", QuantType::kQ4Strips, 6144, 2048},
                          {"down_2048x6144", QuantType::kQ4, 2048, 6144},
                          {"down_2048x6144", QuantType::kQ4Strips, 2048, 6144},
                          {"lm_head_151936x2048", QuantType::kQ8, 151936, 2048},
                          // The same values stored for the int8 GEMM (the vision tower's q8):
                          // matmul runs its stored-strip tile at every m, no repack.
                          {"lm_head_151936x2048", QuantType::kQ8Strips, 151936, 2048},
                          {"gate_up_6144x2048", QuantType::kQ8, 6144, 2048},
                          {"gate_up_6144x2048", QuantType::kQ8Strips, 6144, 2048}};
  const std::string isa = qvl::ops::isa_level_name(qvl::ops::active_isa());
  const auto add = [&](BatchPath path, const Shape& s, int m) {
    const std::string name =
        std::string(path == BatchPath::kMatmul ? "BM_SmallBatchMatmul/" : "BM_SmallBatchGemm/") +
        s.what + "/" + qvl::ops::quant_type_name(s.type) + "/m" + std::to_string(m) + "/" + isa;
    benchmark::RegisterBenchmark(name.c_str(), BM_SmallBatch, path, s.type, m, s.rows, s.cols)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond)
        ->ComputeStatistics("max", max_of);
  };
  const bool gemm = qvl::ops::best_isa() != qvl::ops::IsaLevel::kScalar;
  for (const Shape& s : shapes) {
    for (int m : {1, 2, 3, 4, 6, 8, 12, 15}) {
      if (m > 8 && !gemm) continue;  // 12 and 15 are there to compare with the GEMM
      add(BatchPath::kMatmul, s, m);
    }
    // A chat turn's question and an image's merger rows: stored strips streamed whole (m <= 256).
    if (gemm && qvl::ops::in_strips(s.type)) {
      for (int m : {30, 196}) add(BatchPath::kMatmul, s, m);
    }
    if (!gemm) continue;
    for (int m : {4, 8, 12, 15}) add(BatchPath::kInt8Gemm, s, m);
  }
  return 0;
}();

}  // namespace
