// Decode GEMV (m = 1) and small batches (m < 16) at Qwen3-VL-2B shapes, against the memory
// bandwidth this machine actually has. BM_DramRead streams a buffer far larger than the last-level
// cache with 1 and all pool threads; BM_DecodeGemv reports weight bytes streamed per second and
// "pct_dram": that rate as a share of the all-threads DRAM read rate measured in this process.
// Decode reads ~1 GB of weights per token, so every matrix comes from DRAM: the GEMV rotates over
// enough copies of its matrix (views of copied bytes, >= cold_bytes() in all) that none stays
// cached. The machine may be shared: note the load (counter load1) and compare rows of the same
// run; with QVL_BENCH_THREADS=1 the CPU time column gives the single-core cost of a call even under
// load.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/half.h"
#include "base/thread_pool.h"
#include "cold_matrices.h"
#include "ops/packed_matrix.h"

namespace {

using qvl::bench::cold_matrices;
using qvl::bench::ColdMatrices;

using qvl::ops::PackedMatrix;
using qvl::ops::QuantType;

const qvl::AlignedBuffer<uint64_t>& dram_buffer() {
  static const auto buffer = [] {
    qvl::AlignedBuffer<uint64_t> b;
    b.resize(qvl::bench::cold_bytes() / sizeof(uint64_t));
    for (size_t i = 0; i < b.size(); ++i) b.data()[i] = i * 0x9e3779b97f4a7c15ull;
    return b;
  }();
  return buffer;
}

// Sums [begin, end) with independent accumulators, so the loads, not the adds, set the pace.
uint64_t stream_sum(const uint64_t* begin, const uint64_t* end) {
  uint64_t s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (const uint64_t* p = begin; p + 8 <= end; p += 8) {
    for (int j = 0; j < 8; ++j) s[j] += p[j];
  }
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

// One pass over the buffer split into contiguous ranges, one per thread.
uint64_t read_buffer(int threads) {
  const auto& buf = dram_buffer();
  const size_t n = buf.size();
  if (threads <= 1) return stream_sum(buf.data(), buf.data() + n);
  std::vector<uint64_t> partial(static_cast<size_t>(threads));
  qvl::ThreadPool::global().parallel_for(static_cast<size_t>(threads), [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) {
      const size_t lo = n * t / threads, hi = n * (t + 1) / threads;
      partial[t] = stream_sum(buf.data() + lo, buf.data() + hi);
    }
  });
  uint64_t total = 0;
  for (uint64_t v : partial) total += v;
  return total;
}

// Bytes per second of read_buffer(all threads): best of a few passes (the least disturbed).
double all_threads_dram_rate() {
  static const double rate = [] {
    const int threads = qvl::ThreadPool::global().size();
    double best = 0;
    for (int pass = 0; pass < 5; ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(read_buffer(threads));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, static_cast<double>(qvl::bench::cold_bytes()) / s);
    }
    return best;
  }();
  return rate;
}

void note_load(benchmark::State& state) {
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["load1"] = load[0];
}

void BM_DramRead(benchmark::State& state) {
  const int threads =
      state.range(0) == 0 ? qvl::ThreadPool::global().size() : static_cast<int>(state.range(0));
  dram_buffer();  // allocated and written outside the timed loop
  for (auto _ : state) benchmark::DoNotOptimize(read_buffer(threads));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(qvl::bench::cold_bytes()));
  state.counters["threads"] = threads;
  note_load(state);
}

void BM_DecodeGemv(benchmark::State& state, QuantType type, int64_t m, int64_t rows, int64_t cols) {
  const ColdMatrices& w = cold_matrices(type, rows, cols);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * cols)), y(static_cast<size_t>(m * rows));
  for (auto& v : x) v = dist(rng);
  const double dram = all_threads_dram_rate();
  size_t next = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    qvl::ops::matmul(x.data(), m, w.views[next], nullptr, y.data());
    next = next + 1 == w.views.size() ? 0 : next + 1;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double bytes = static_cast<double>(w.original.size_bytes());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["pct_dram"] =
      100.0 * bytes * static_cast<double>(state.iterations()) / seconds / dram;
  state.counters["dram_GB/s"] = dram * 1e-9;
  note_load(state);
}

// Cost of one pool dispatch with no work (publish, hand out the chunks, wait): what a decode step
// pays per parallel region on top of the work itself.
void BM_PoolDispatch(benchmark::State& state) {
  std::vector<size_t> sink(64);
  for (auto _ : state) {
    qvl::ThreadPool::global().parallel_for(512,
                                           [&](size_t b, size_t e) { sink[(b / 8) % 64] += e; });
  }
  benchmark::DoNotOptimize(sink.data());
  state.counters["threads"] = qvl::ThreadPool::global().size();
  note_load(state);
}

const int registered = [] {
  // QVL_BENCH_THREADS=1 on a busy machine: the CPU column (the caller's thread time) is then the
  // whole cost of a call, unaffected by waiting for a core.
  if (const char* threads = std::getenv("QVL_BENCH_THREADS")) {
    qvl::ThreadPool::set_global_threads(std::atoi(threads));
  }
  benchmark::RegisterBenchmark("BM_PoolDispatch", BM_PoolDispatch)->UseRealTime();
  benchmark::RegisterBenchmark("BM_DramRead/threads:1", BM_DramRead)
      ->Arg(1)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_DramRead/threads:all", BM_DramRead)
      ->Arg(0)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  struct Shape {
    const char* what;
    int64_t rows, cols;
  };
  const Shape shapes[] = {{"q_o_2048x2048", 2048, 2048},
                          {"kv_1024x2048", 1024, 2048},
                          {"gate_up_6144x2048", 6144, 2048},
                          {"down_2048x6144", 2048, 6144},
                          {"lm_head_151936x2048", 151936, 2048}};
  const std::string isa = qvl::ops::isa_level_name(qvl::ops::best_isa());
  // q8/q4 as groups (the GEMV kernels) and as strips (what a q8/q4 model stores: the int8 GEMM's
  // stored-strip tiles at every m).
  for (int64_t m : {1, 4}) {
    for (const Shape& s : shapes) {
      for (QuantType t : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4, QuantType::kQ8Strips,
                          QuantType::kQ4Strips}) {
        const std::string name = "BM_DecodeGemv/m" + std::to_string(m) + "/" + s.what + "/" +
                                 qvl::ops::quant_type_name(t) + "/" + isa;
        benchmark::RegisterBenchmark(name.c_str(), BM_DecodeGemv, t, m, s.rows, s.cols)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  return 0;
}();

}  // namespace
