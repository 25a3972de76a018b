// Decode attention as the engine meets it: one query token (16 q heads on 8 kv heads of 128, the
// 2B text model) against a paged KV cache laid out like engine/kv_pool (a page holds page_rows
// positions of every layer, K then V per layer, 8-bit ones head-major; pages handed out in
// shuffled order), one layer
// per call, the layers in turn, so each call reads its layer's K/V from DRAM (all 28 layers: 448
// MiB at 4K, far more than the last-level cache). Counters: GB/s (K/V bytes per second over all
// calls), best_GB/s (the fastest call: the least disturbed on a shared machine) and pct_dram,
// best_GB/s as a share of the machine probe's all-threads DRAM read rate (the ceiling `qvl bench`
// reports decode attention against). x 28 it is the attention of a decode step at that context.
// With threads 1 (the pool resized for the run), GB/cpu_s (bytes per CPU second of the process) is
// the kernel's own streaming rate, steady on a loaded machine where wall times are not.
// hot 1 calls layer 0 only (its K/V stay in the cache): the kernel's ceiling without DRAM.
// Args: context, kv type (0 f16, 1 q8), threads (0: the default pool), hot.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "kv_pages.h"
#include "ops/attention.h"
#include "ops/machine_probe.h"

namespace {

using qvl::ops::AttentionShape;

constexpr int64_t kLayers = qvl::bench::kKVLayers;

// The probe's DRAM read rate (bytes/s) with the pool's thread count (measured once, 1 and all).
double probe_dram_rate() {
  static const qvl::ops::MachineProbe probe = qvl::ops::probe_machine();
  return probe.at(qvl::ThreadPool::global().size()).dram_read_gb_per_s * 1e9;
}

using qvl::bench::engine_kv_layout;
using qvl::bench::PagedKVCache;

void BM_DecodeAttentionPaged(benchmark::State& state) {
  const int64_t nk = state.range(0);
  const bool q8 = state.range(1) != 0;
  const int threads = static_cast<int>(state.range(2));
  if (threads > 0) qvl::ThreadPool::set_global_threads(threads);
  const int64_t layers_called = state.range(3) != 0 ? 1 : kLayers;
  const AttentionShape s{16, 8, 128, 1.0f / std::sqrt(128.0f)};
  const PagedKVCache cache(engine_kv_layout(q8), nk, q8);
  const int64_t row_bytes = cache.row_bytes;
  std::mt19937 rng(12);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(s.n_heads * s.head_dim)), out(q.size());
  for (auto& v : q) v = dist(rng);
  const double dram = probe_dram_rate();
  int64_t layer = 0;
  double fastest = 1e30;
  timespec c0{}, c1{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  for (auto _ : state) {
    const qvl::ops::PagedKV kv = cache.layer(layer);
    const auto t0 = std::chrono::steady_clock::now();
    qvl::ops::attention(q.data(), 1, kv, nk, s, nk - 1, out.data());
    fastest = std::min(
        fastest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    benchmark::DoNotOptimize(out.data());
    layer = (layer + 1) % layers_called;
  }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  const double cpu = static_cast<double>(c1.tv_sec - c0.tv_sec) +
                     1e-9 * static_cast<double>(c1.tv_nsec - c0.tv_nsec);
  const double bytes = static_cast<double>(2 * nk * row_bytes);
  state.counters["GB/cpu_s"] = bytes * static_cast<double>(state.iterations()) / cpu * 1e-9;
  state.counters["GB/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  state.counters["best_GB/s"] = bytes / fastest * 1e-9;
  state.counters["pct_dram"] = 100.0 * bytes / fastest / dram;
  state.counters["dram_GB/s"] = dram * 1e-9;
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["load1"] = load[0];
  if (threads > 0) qvl::ThreadPool::set_global_threads(0);
}
BENCHMARK(BM_DecodeAttentionPaged)
    ->ArgNames({"ctx", "q8", "threads", "hot"})
    ->ArgsProduct({{1024, 4096}, {0, 1}, {0, 1}, {0}})
    ->Args({1024, 0, 1, 1})
    ->Args({1024, 1, 1, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

namespace {

using qvl::bench::median;

// Each step calls the attention on one layer, then reads the next layer's K/V plainly: both see
// the same machine at nearly the same moment, so pct_read (the attention's median rate against
// the read's) is the attention's share of what this layout can stream now, steady where the
// machine is shared and the absolute rates are not. 1280 is an odd number of spans (over two
// threads). Args: context, kv type (0 f16, 1 q8).
void BM_DecodeAttentionPagedVsRead(benchmark::State& state) {
  const int64_t nk = state.range(0);
  const bool q8 = state.range(1) != 0;
  const PagedKVCache cache(engine_kv_layout(q8), nk, q8);
  const AttentionShape s{16, 8, 128, 1.0f / std::sqrt(128.0f)};
  std::vector<float> q(static_cast<size_t>(s.n_heads * s.head_dim), 0.5f), out(q.size());
  std::vector<double> attend_s, read_s;
  int64_t layer = 0;
  for (auto _ : state) {
    const qvl::ops::PagedKV kv = cache.layer(layer);
    const auto t0 = std::chrono::steady_clock::now();
    qvl::ops::attention(q.data(), 1, kv, nk, s, nk - 1, out.data());
    const auto t1 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(cache.read_layer((layer + 1) % kLayers));
    const auto t2 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(out.data());
    attend_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    read_s.push_back(std::chrono::duration<double>(t2 - t1).count());
    layer = (layer + 2) % kLayers;
  }
  const double bytes = static_cast<double>(2 * nk * cache.row_bytes);
  const double attend = bytes / median(attend_s), read = bytes / median(read_s);
  state.counters["attn_GB/s"] = attend * 1e-9;
  state.counters["read_GB/s"] = read * 1e-9;
  state.counters["pct_read"] = 100.0 * attend / read;
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["load1"] = load[0];
}
BENCHMARK(BM_DecodeAttentionPagedVsRead)
    ->ArgNames({"ctx", "q8"})
    ->ArgsProduct({{1024, 1280, 4096}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
