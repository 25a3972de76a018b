// KV page layouts for decode attention, A/B in one run: the 2B text model's decode attention (one
// query token, 16 q heads on 8 kv heads of 128) over 28 layers of paged K/V laid out as
//   pos32/64/128/256: position-major pages [page_rows][kv heads][head_dim] (the engine's today,
//                     at 32 rows), K then V per layer;
//   head32/128:       head-major pages [kv heads][page_rows][head_dim] (a head's rows contiguous);
//   ...h:             the same in transparent huge pages (madvise(MADV_HUGEPAGE) on the pool).
// Each iteration calls every layout once (a layer each, layers in turn, so K/V come from DRAM) and
// follows each call by a plain read of another layer of the same layout: the layouts meet the same
// machine at nearly the same moment. Counters per layout: <name>_GB/s (median attention rate),
// <name>_pct (of the machine probe's DRAM read with the pool's threads) and <name>_read (median
// plain-read rate, GB/s). Args: context, kv type (0 f16, 1 q8).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kv_pages.h"
#include "ops/attention.h"
#include "ops/machine_probe.h"

namespace {

using qvl::ops::AttentionShape;

constexpr int64_t kLayers = qvl::bench::kKVLayers, kHeads = qvl::bench::kKVHeads,
                  kHeadDim = qvl::bench::kKVHeadDim;

struct Layout {
  const char* name;
  qvl::bench::KVPageLayout pages;
};
constexpr Layout kLayouts[] = {{"pos32", {32, false, false}},   {"pos64", {64, false, false}},
                               {"pos128", {128, false, false}}, {"pos256", {256, false, false}},
                               {"head32", {32, true, false}},   {"head128", {128, true, false}},
                               {"pos32h", {32, false, true}},   {"pos128h", {128, false, true}},
                               {"head128h", {128, true, true}}};

using qvl::bench::median;
using qvl::bench::PagedKVCache;

void BM_DecodeAttentionLayouts(benchmark::State& state) {
  const int64_t nk = state.range(0);
  const bool q8 = state.range(1) != 0;
  constexpr size_t kCount = std::size(kLayouts);
  std::vector<PagedKVCache> caches;
  caches.reserve(kCount);
  for (const Layout& l : kLayouts) caches.emplace_back(l.pages, nk, q8);
  const AttentionShape s{16, kHeads, kHeadDim, 1.0f / std::sqrt(static_cast<float>(kHeadDim))};
  std::mt19937 rng(12);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(s.n_heads * s.head_dim)), out(q.size());
  for (auto& v : q) v = dist(rng);
  static const qvl::ops::MachineProbe probe = qvl::ops::probe_machine();
  std::vector<std::vector<double>> attend_s(kCount), read_s(kCount);
  int64_t layer = 0;
  for (auto _ : state) {
    for (size_t x = 0; x < kCount; ++x) {
      const qvl::ops::PagedKV kv = caches[x].layer(layer);
      const auto t0 = std::chrono::steady_clock::now();
      qvl::ops::attention(q.data(), 1, kv, nk, s, nk - 1, out.data());
      const auto t1 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(caches[x].read_layer((layer + 1) % kLayers));
      const auto t2 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(out.data());
      attend_s[x].push_back(std::chrono::duration<double>(t1 - t0).count());
      read_s[x].push_back(std::chrono::duration<double>(t2 - t1).count());
    }
    layer = (layer + 2) % kLayers;
  }
  const double bytes = static_cast<double>(2 * nk * caches[0].row_bytes);
  const double dram = probe.at(qvl::ThreadPool::global().size()).dram_read_gb_per_s;
  for (size_t x = 0; x < kCount; ++x) {
    const double attend = bytes / median(attend_s[x]) * 1e-9;
    const std::string name = kLayouts[x].name;
    state.counters[name + "_GB/s"] = attend;
    state.counters[name + "_pct"] = 100.0 * attend / dram;
    state.counters[name + "_read"] = bytes / median(read_s[x]) * 1e-9;
  }
  state.counters["dram_GB/s"] = dram;
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["load1"] = load[0];
}
BENCHMARK(BM_DecodeAttentionLayouts)
    ->ArgNames({"ctx", "q8"})
    ->ArgsProduct({{1024, 4096}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
