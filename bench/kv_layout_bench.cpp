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
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/thread_pool.h"
#include "ops/attention.h"
#include "ops/half_convert.h"
#include "ops/kv_q8.h"
#include "ops/machine_probe.h"
#include "ops/machine_probe_kernels.h"
#include "page_read.h"

namespace {

using qvl::ops::AttentionShape;

constexpr int64_t kLayers = 28, kHeads = 8, kHeadDim = 128;

struct Layout {
  const char* name;
  int64_t page_rows;
  bool head_major;
  bool huge_pages;  // the pool asks for transparent huge pages (madvise)
};
constexpr Layout kLayouts[] = {
    {"pos32", 32, false, false},   {"pos64", 64, false, false},   {"pos128", 128, false, false},
    {"pos256", 256, false, false}, {"head32", 32, true, false},   {"head128", 128, true, false},
    {"pos32h", 32, false, true},   {"pos128h", 128, false, true}, {"head128h", 128, true, true}};

// 28 layers of K/V at context nk in pages of one layout (shuffled page order, as a pool hands
// them out), and per layer its page tables.
struct LayoutCache {
  LayoutCache(const Layout& layout, int64_t nk, bool q8);
  qvl::ops::PagedKV layer(int64_t l) const;
  Layout layout;
  bool q8;
  int64_t head_row, layer_bytes;  // head_row in elements (half) or bytes (8-bit)
  qvl::AlignedBuffer<uint8_t> pool;
  std::vector<std::vector<const void*>> k_ptrs, v_ptrs;
};

LayoutCache::LayoutCache(const Layout& l, int64_t nk, bool q8_) : layout(l), q8(q8_) {
  const int64_t width = kHeads * kHeadDim, rows = layout.page_rows;
  head_row = q8 ? qvl::ops::kv_q8_bytes(kHeadDim) : kHeadDim;
  const int64_t row_bytes = q8 ? qvl::ops::kv_q8_bytes(width) : width * 2;
  layer_bytes = rows * row_bytes;
  const int64_t page_bytes = 2 * kLayers * layer_bytes;
  const int64_t pages = (nk + rows - 1) / rows;
  pool = qvl::AlignedBuffer<uint8_t>(static_cast<size_t>(pages * page_bytes));
  if (layout.huge_pages) {  // the whole 2 MiB pages inside the buffer (before the first touch)
    const auto begin = reinterpret_cast<uintptr_t>(pool.data());
    const uintptr_t first = (begin + (uintptr_t{1} << 21) - 1) & ~((uintptr_t{1} << 21) - 1);
    const uintptr_t end =
        (begin + static_cast<uintptr_t>(pages * page_bytes)) & ~((uintptr_t{1} << 21) - 1);
    if (end > first) madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);
  }
  // A few random blocks repeated (the speed does not depend on which numbers or where they are).
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> block(static_cast<size_t>(rows * width));
  for (auto& v : block) v = dist(rng);
  std::vector<uint8_t> coded(static_cast<size_t>(layer_bytes));
  if (q8) {
    qvl::ops::quantize_kv_q8(block.data(), rows * width, reinterpret_cast<int8_t*>(coded.data()));
  } else {
    qvl::ops::f32_to_f16_row(block.data(), rows * width, reinterpret_cast<uint16_t*>(coded.data()));
  }
  for (int64_t x = 0; x < pages * 2 * kLayers; ++x) {
    std::copy(coded.begin(), coded.end(), pool.data() + x * layer_bytes);
  }
  std::vector<int64_t> slot(static_cast<size_t>(pages));
  for (int64_t x = 0; x < pages; ++x) slot[static_cast<size_t>(x)] = x;
  std::shuffle(slot.begin(), slot.end(), std::mt19937(7));
  k_ptrs.resize(kLayers);
  v_ptrs.resize(kLayers);
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    for (int64_t x = 0; x < pages; ++x) {
      const uint8_t* page = pool.data() + slot[static_cast<size_t>(x)] * page_bytes;
      k_ptrs[static_cast<size_t>(layer)].push_back(page + 2 * layer * layer_bytes);
      v_ptrs[static_cast<size_t>(layer)].push_back(page + (2 * layer + 1) * layer_bytes);
    }
  }
}

qvl::ops::PagedKV LayoutCache::layer(int64_t l) const {
  qvl::ops::PagedKV kv;
  kv.page_rows = layout.page_rows;
  if (layout.head_major) {
    kv.row_stride = head_row;
    kv.head_stride = layout.page_rows * head_row;
  }
  const auto i = static_cast<size_t>(l);
  if (q8) {
    kv.k8_pages = reinterpret_cast<const int8_t* const*>(k_ptrs[i].data());
    kv.v8_pages = reinterpret_cast<const int8_t* const*>(v_ptrs[i].data());
  } else {
    kv.k16_pages = reinterpret_cast<const uint16_t* const*>(k_ptrs[i].data());
    kv.v16_pages = reinterpret_cast<const uint16_t* const*>(v_ptrs[i].data());
  }
  return kv;
}

// A plain read of layer l's K and V pages (the machine probe's loop).
uint64_t read_layer(const LayoutCache& c, int64_t l) {
  return qvl::bench::read_pages(c.k_ptrs[static_cast<size_t>(l)], c.v_ptrs[static_cast<size_t>(l)],
                                static_cast<size_t>(c.layer_bytes));
}
using qvl::bench::median;

void BM_DecodeAttentionLayouts(benchmark::State& state) {
  const int64_t nk = state.range(0);
  const bool q8 = state.range(1) != 0;
  constexpr size_t kCount = std::size(kLayouts);
  std::vector<LayoutCache> caches;
  caches.reserve(kCount);
  for (const Layout& l : kLayouts) caches.emplace_back(l, nk, q8);
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
      benchmark::DoNotOptimize(read_layer(caches[x], (layer + 1) % kLayers));
      const auto t2 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(out.data());
      attend_s[x].push_back(std::chrono::duration<double>(t1 - t0).count());
      read_s[x].push_back(std::chrono::duration<double>(t2 - t1).count());
    }
    layer = (layer + 2) % kLayers;
  }
  const int64_t row_bytes = q8 ? qvl::ops::kv_q8_bytes(kHeads * kHeadDim) : kHeads * kHeadDim * 2;
  const double bytes = static_cast<double>(2 * nk * row_bytes);
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
