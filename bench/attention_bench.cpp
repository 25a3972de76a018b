// Attention: scalar reference vs the dispatched flash kernels, vision-like and decode-like shapes.
// Reports GFLOP/s (4 * nq * nk * heads * head_dim per call; causal not used here). The machine
// may be shared: compare reference and fast from the same run, and note the load average;
// GFLOP/cpu_s (per CPU-second of the process) is steadier on a busy machine.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/attention_kernels.h"
#include "ops/elementwise_kernels.h"
#include "ops/half_convert.h"
#include "ops/kv_q8.h"
#include "ops/packed_kernels.h"

namespace {

using qvl::ops::AttentionShape;

struct Inputs {
  std::vector<float> q, k, v, out;
};

Inputs make_inputs(int64_t nq, int64_t nk, const AttentionShape& s) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Inputs in;
  in.q.resize(static_cast<size_t>(nq * s.n_heads * s.head_dim));
  in.k.resize(static_cast<size_t>(nk * s.n_kv_heads * s.head_dim));
  in.v.resize(in.k.size());
  in.out.resize(in.q.size());
  for (auto* buf : {&in.q, &in.k, &in.v}) {
    for (auto& x : *buf) x = dist(rng);
  }
  return in;
}

void run(benchmark::State& state, bool fast, int64_t nq, int64_t nk, AttentionShape s) {
  s.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  Inputs in = make_inputs(nq, nk, s);
  timespec c0{}, c1{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  for (auto _ : state) {
    if (fast) {
      qvl::ops::attention(in.q.data(), nq, in.k.data(), in.v.data(), nk, s, -1, in.out.data());
    } else {
      qvl::ops::attention_kernels::attention_reference(in.q.data(), nq, in.k.data(), in.v.data(),
                                                       nk, s, -1, in.out.data());
    }
    benchmark::DoNotOptimize(in.out.data());
  }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  const double flops = 4.0 * static_cast<double>(nq * nk * s.n_heads * s.head_dim);
  state.counters["GFLOP/cpu_s"] = 1e-9 * flops * static_cast<double>(state.iterations()) /
                                  (static_cast<double>(c1.tv_sec - c0.tv_sec) +
                                   1e-9 * static_cast<double>(c1.tv_nsec - c0.tv_nsec));
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["load1"] = load[0];
}

void BM_AttentionVision784(benchmark::State& st, bool fast) {
  run(st, fast, 784, 784, {16, 16, 64, 1});
}
void BM_AttentionVision3072(benchmark::State& st, bool fast) {
  run(st, fast, 3072, 3072, {16, 16, 64, 1});
}
void BM_AttentionDecode4096(benchmark::State& st, bool fast) {
  run(st, fast, 1, 4096, {16, 8, 128, 1});
}

BENCHMARK_CAPTURE(BM_AttentionVision784, reference, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_AttentionVision784, fast, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_AttentionVision3072, reference, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_AttentionVision3072, fast, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_AttentionDecode4096, reference, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_AttentionDecode4096, fast, true)->Unit(benchmark::kMillisecond)->UseRealTime();

// The 16-bit KV cache of the 2B text model (16 query heads on 8 kv heads of 128), contiguous
// (page_rows 0) or in pages of page_rows positions scattered through a pool in shuffled order,
// as the engine's paged cache hands them out. Args: nq, nk, page_rows; causal, the last query at
// the last key (decode: nq = 1).
void BM_AttentionPagedF16(benchmark::State& state) {
  const int64_t nq = state.range(0), nk = state.range(1), page_rows = state.range(2);
  const AttentionShape s{16, 8, 128, 1.0f / std::sqrt(128.0f)};
  const int64_t row_elems = s.n_kv_heads * s.head_dim;
  Inputs in = make_inputs(nq, nk, s);
  std::vector<uint16_t> k16(in.k.size()), v16(in.v.size());
  for (size_t i = 0; i < k16.size(); ++i) {
    k16[i] = qvl::ops::kernels::f32_to_f16(in.k[i]);
    v16[i] = qvl::ops::kernels::f32_to_f16(in.v[i]);
  }
  const int64_t rows_per_page = page_rows > 0 ? page_rows : nk;
  const int64_t n_pages = (nk + rows_per_page - 1) / rows_per_page;
  const int64_t page_elems = rows_per_page * row_elems;
  std::vector<uint16_t> k_pool(static_cast<size_t>(n_pages * page_elems));
  std::vector<uint16_t> v_pool(k_pool.size());
  std::vector<int64_t> slot(static_cast<size_t>(n_pages));
  for (int64_t x = 0; x < n_pages; ++x) slot[static_cast<size_t>(x)] = x;
  std::shuffle(slot.begin(), slot.end(), std::mt19937(7));
  std::vector<const uint16_t*> k_pages, v_pages;
  for (int64_t x = 0; x < n_pages; ++x) {
    const int64_t from = x * page_elems;
    const int64_t count = std::min(page_elems, nk * row_elems - from);
    const int64_t to = slot[static_cast<size_t>(x)] * page_elems;
    std::copy(k16.begin() + from, k16.begin() + from + count, k_pool.begin() + to);
    std::copy(v16.begin() + from, v16.begin() + from + count, v_pool.begin() + to);
    k_pages.push_back(k_pool.data() + to);
    v_pages.push_back(v_pool.data() + to);
  }
  qvl::ops::PagedKV kv;
  kv.k16_pages = k_pages.data();
  kv.v16_pages = v_pages.data();
  kv.page_rows = page_rows;
  for (auto _ : state) {
    if (page_rows > 0) {
      qvl::ops::attention(in.q.data(), nq, kv, nk, s, nk - nq, in.out.data());
    } else {
      qvl::ops::attention(in.q.data(), nq, k16.data(), v16.data(), nk, s, nk - nq, in.out.data());
    }
    benchmark::DoNotOptimize(in.out.data());
  }
  // K and V bytes read per call (decode is bound by them).
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(2 * nk * row_elems * 2),
                                              benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["load1"] = load[0];
}
BENCHMARK(BM_AttentionPagedF16)
    ->ArgNames({"nq", "nk", "page"})
    ->ArgsProduct({{1}, {1024, 4096}, {0, 16, 32, 64}})
    ->Args({512, 512, 0})
    ->Args({512, 512, 32})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Decode attention over a 4K-token 16-bit KV cache (Qwen3-VL-2B: 16 q heads, 8 kv heads, 128
// wide), as a decode step meets it: one layer's K/V (16 MiB) among many, so from DRAM. The call
// rotates over kLayers copies (> the last-level cache) and reports K/V bytes read per second;
// x 28 layers it is the attention part of a decode step at that context.
void BM_AttentionDecode4096Half(benchmark::State& state) {
  constexpr int64_t nk = 4096, kLayers = 12;
  AttentionShape s{16, 8, 128, 1.0f / std::sqrt(128.0f)};
  Inputs in = make_inputs(1, nk, s);
  const size_t per_layer = in.k.size();
  std::vector<uint16_t> k(per_layer * kLayers), v(k.size());
  for (int64_t l = 0; l < kLayers; ++l) {
    qvl::ops::f32_to_f16_row(in.k.data(), static_cast<int64_t>(per_layer), &k[l * per_layer]);
    qvl::ops::f32_to_f16_row(in.v.data(), static_cast<int64_t>(per_layer), &v[l * per_layer]);
  }
  int64_t layer = 0;
  for (auto _ : state) {
    qvl::ops::attention(in.q.data(), 1, k.data() + layer * per_layer, v.data() + layer * per_layer,
                        nk, s, nk - 1, in.out.data());
    layer = (layer + 1) % kLayers;
    benchmark::DoNotOptimize(in.out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(2 * per_layer * sizeof(uint16_t)));
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["load1"] = load[0];
}
BENCHMARK(BM_AttentionDecode4096Half)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The same over the 8-bit cache (--kv-type q8): 0.56x the bytes; the figure to compare with the
// half one above in the same run. Bytes processed count the 8-bit bytes actually read.
void BM_AttentionDecode4096Q8(benchmark::State& state) {
  constexpr int64_t nk = 4096, kLayers = 12;
  AttentionShape s{16, 8, 128, 1.0f / std::sqrt(128.0f)};
  Inputs in = make_inputs(1, nk, s);
  const size_t per_layer = in.k.size();
  const size_t bytes = static_cast<size_t>(qvl::ops::kv_q8_bytes(static_cast<int64_t>(per_layer)));
  std::vector<int8_t> k(bytes * kLayers), v(k.size());
  for (int64_t l = 0; l < kLayers; ++l) {
    qvl::ops::quantize_kv_q8(in.k.data(), static_cast<int64_t>(per_layer), &k[l * bytes]);
    qvl::ops::quantize_kv_q8(in.v.data(), static_cast<int64_t>(per_layer), &v[l * bytes]);
  }
  int64_t layer = 0;
  for (auto _ : state) {
    qvl::ops::attention(in.q.data(), 1, k.data() + layer * bytes, v.data() + layer * bytes, nk, s,
                        nk - 1, in.out.data());
    layer = (layer + 1) % kLayers;
    benchmark::DoNotOptimize(in.out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(2 * bytes));
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["load1"] = load[0];
}
BENCHMARK(BM_AttentionDecode4096Q8)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The vision MLP activation: 784 patches x 4096 (one call per layer).
void BM_GeluTanhVision(benchmark::State& state, bool fast) {
  const int64_t n = 784 * 4096;
  std::vector<float> x(static_cast<size_t>(n));
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  for (auto& v : x) v = dist(rng);
  const std::vector<float> input = x;
  for (auto _ : state) {
    // Fresh inputs each time: GELU applied again and again would drift into subnormals.
    state.PauseTiming();
    x = input;
    state.ResumeTiming();
    if (fast) {
      qvl::ops::gelu_tanh(x.data(), n);
    } else {
      qvl::ops::elementwise_kernels::gelu_tanh_reference(x.data(), n);
    }
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["Melem/s"] = benchmark::Counter(static_cast<double>(n) / 1e6,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_GeluTanhVision, reference, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_GeluTanhVision, fast, true)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
