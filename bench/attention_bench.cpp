// Attention: scalar reference vs the dispatched flash kernels, vision-like and decode-like shapes.
// Reports GFLOP/s (4 * nq * nk * heads * head_dim per call; causal not used here). The machine
// may be shared: compare reference and fast from the same run, and note the load average;
// GFLOP/cpu_s (per CPU-second of the process) is steadier on a busy machine.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/attention_kernels.h"
#include "ops/elementwise_kernels.h"
#include "ops/half_convert.h"
#include "ops/kv_q8.h"
#include "ops/packed_kernels.h"
#include "ops/x86/attention_x86.h"

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
// bf16 products (AVX-512 BF16 hosts; fp32 elsewhere), with their largest deviation from the fp32
// kernels' output on these inputs.
void run_bf16(benchmark::State& state, int64_t n) {
  AttentionShape s{16, 16, 64, 0.125f};
  Inputs in = make_inputs(n, n, s);
  std::vector<float> exact(in.out.size());
  qvl::ops::attention(in.q.data(), n, in.k.data(), in.v.data(), n, s, -1, exact.data());
  s.bf16_products = true;
  for (auto _ : state) {
    qvl::ops::attention(in.q.data(), n, in.k.data(), in.v.data(), n, s, -1, in.out.data());
    benchmark::DoNotOptimize(in.out.data());
  }
  float worst = 0;
  for (size_t i = 0; i < exact.size(); ++i)
    worst = std::max(worst, std::fabs(in.out[i] - exact[i]));
  state.counters["max_abs_diff"] = worst;
  state.counters["GFLOP/s"] = benchmark::Counter(
      4.0 * static_cast<double>(n * n * s.n_heads * s.head_dim),
      benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
void BM_AttentionVision784Bf16(benchmark::State& st) {
  run_bf16(st, 784);
}
void BM_AttentionVision3072Bf16(benchmark::State& st) {
  run_bf16(st, 3072);
}
BENCHMARK(BM_AttentionVision784Bf16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AttentionVision3072Bf16)->Unit(benchmark::kMillisecond)->UseRealTime();
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

// One flash task of a vision image on the calling thread alone (no pool, no packing): 64 query
// rows of one head (head_dim 64) against nk keys, in the kernels' K/V panel layouts. GFLOP/s here
// compares with one core's fp32 FMA peak (`qvl bench --probe-only`, ~100 on the 2-core Zen 3);
// the whole call (BM_AttentionVision*) adds packing and the pool's imbalance. Arg: nk. The
// avx2 variant runs the AVX2 task on an AVX-512 host too, so both tasks can be timed on one CPU.
void BM_AttentionTaskVision(benchmark::State& state, bool avx2) {
  using qvl::ops::IsaLevel;
  const IsaLevel isa = avx2 ? IsaLevel::kAvx2 : qvl::ops::active_isa();
  if (!qvl::ops::cpu_runs_isa(IsaLevel::kAvx2)) {
    state.SkipWithError("no AVX2 on this CPU: the flash tasks need it");
    return;
  }
  namespace ak = qvl::ops::attention_kernels;
  const int64_t nk = state.range(0), d = 64, rows = 64;
  const int64_t tiles = (nk + ak::kKeyTile - 1) / ak::kKeyTile;
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(rows * d)), out(q.size());
  std::vector<float> k_panels(static_cast<size_t>(tiles * ak::kKeyTile * d));
  std::vector<float> v_panels(static_cast<size_t>(nk * d));
  for (auto* buf : {&q, &k_panels, &v_panels}) {
    for (auto& x : *buf) x = dist(rng);
  }
  ak::Problem p;
  p.q = q.data();
  p.out = out.data();
  p.nq = rows;
  p.nk = nk;
  p.shape = {1, 1, d, 0.125f};
  p.k_panels = k_panels.data();
  p.v_panels = v_panels.data();
  std::vector<float> scratch(static_cast<size_t>(ak::task_scratch_floats(rows, d, 1)));
  const auto task = isa == IsaLevel::kAvx512 ? ak::task_avx512 : ak::task_avx2;
  for (auto _ : state) {
    task(p, 0, 1, 0, rows, scratch.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * static_cast<double>(rows * nk * d),
                                                 benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["load1"] = load[0];
}
BENCHMARK_CAPTURE(BM_AttentionTaskVision, best, false)
    ->Arg(784)
    ->Arg(3072)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AttentionTaskVision, avx2, true)
    ->Arg(784)
    ->Arg(3072)
    ->Unit(benchmark::kMicrosecond);

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

// Decode attention over a 16-bit KV cache of nk positions (Qwen3-VL-2B: 16 q heads, 8 kv heads,
// 128 wide), as a decode step meets it: one layer's K/V (4 MiB at 1K, 16 MiB at 4K) among many,
// so from DRAM. The call rotates over copies (> 4x the last-level cache in all) and reports K/V
// bytes read per second, and best_GB/s of its fastest call as pct_dram of the fastest pass of a
// plain read with the same threads (on a shared machine the least disturbed ones compare). x 28
// layers it is the attention part of a decode step at that context.
constexpr int64_t kDecodeColdBytes = int64_t{192} << 20;

// Bytes per second of the fastest of a few passes over a buffer far larger than the cache, read
// by every pool thread (the least disturbed pass: the DRAM ceiling on a shared machine).
double best_dram_rate() {
  static const double rate = [] {
    constexpr size_t kWords = (size_t{256} << 20) / sizeof(uint64_t);
    std::vector<uint64_t> buffer(kWords);
    for (size_t i = 0; i < kWords; ++i) buffer[i] = i;
    const size_t threads = static_cast<size_t>(qvl::ThreadPool::global().size());
    double best = 0;
    for (int pass = 0; pass < 10; ++pass) {
      std::vector<uint64_t> sums(threads);
      const auto t0 = std::chrono::steady_clock::now();
      qvl::ThreadPool::global().parallel_for(threads, [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) {
          uint64_t s[8] = {};
          for (size_t i = kWords * t / threads; i + 8 <= kWords * (t + 1) / threads; i += 8) {
            for (int x = 0; x < 8; ++x) s[x] += buffer[i + x];
          }
          sums[t] = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
        }
      });
      benchmark::DoNotOptimize(sums.data());
      const double sec =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, static_cast<double>(kWords * sizeof(uint64_t)) / sec);
    }
    return best;
  }();
  return rate;
}

void decode_over_cache(benchmark::State& state, int64_t nk, bool q8) {
  AttentionShape s{16, 8, 128, 1.0f / std::sqrt(128.0f)};
  Inputs in = make_inputs(1, nk, s);
  const auto per_layer = static_cast<int64_t>(in.k.size());
  const int64_t bytes = q8 ? qvl::ops::kv_q8_bytes(per_layer) : per_layer * 2;  // K or V
  const int64_t layers = std::max<int64_t>(2, kDecodeColdBytes / (2 * bytes));
  std::vector<uint16_t> k16, v16;
  std::vector<int8_t> k8, v8;
  if (q8) {
    k8.resize(static_cast<size_t>(bytes * layers));
    v8.resize(k8.size());
  } else {
    k16.resize(static_cast<size_t>(per_layer * layers));
    v16.resize(k16.size());
  }
  for (int64_t l = 0; l < layers; ++l) {
    if (q8) {
      qvl::ops::quantize_kv_q8(in.k.data(), per_layer, &k8[l * bytes]);
      qvl::ops::quantize_kv_q8(in.v.data(), per_layer, &v8[l * bytes]);
    } else {
      qvl::ops::f32_to_f16_row(in.k.data(), per_layer, &k16[l * per_layer]);
      qvl::ops::f32_to_f16_row(in.v.data(), per_layer, &v16[l * per_layer]);
    }
  }
  int64_t layer = 0;
  double fastest = 1e30;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    if (q8) {
      qvl::ops::attention(in.q.data(), 1, k8.data() + layer * bytes, v8.data() + layer * bytes, nk,
                          s, nk - 1, in.out.data());
    } else {
      qvl::ops::attention(in.q.data(), 1, k16.data() + layer * per_layer,
                          v16.data() + layer * per_layer, nk, s, nk - 1, in.out.data());
    }
    benchmark::DoNotOptimize(in.out.data());
    fastest = std::min(
        fastest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    layer = (layer + 1) % layers;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * bytes);
  // The least disturbed call against the least disturbed DRAM pass (a shared machine).
  const double best_rate = static_cast<double>(2 * bytes) / fastest;
  state.counters["best_GB/s"] = best_rate * 1e-9;
  state.counters["pct_dram"] = 100.0 * best_rate / best_dram_rate();
  state.counters["threads"] = qvl::ThreadPool::global().size();
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["load1"] = load[0];
}
void BM_AttentionDecode1024Half(benchmark::State& state) {
  decode_over_cache(state, 1024, false);
}
void BM_AttentionDecode4096Half(benchmark::State& state) {
  decode_over_cache(state, 4096, false);
}
// The same over the 8-bit cache (--kv-type q8): 0.56x the bytes. Bytes processed count the 8-bit
// bytes actually read.
void BM_AttentionDecode1024Q8(benchmark::State& state) {
  decode_over_cache(state, 1024, true);
}
void BM_AttentionDecode4096Q8(benchmark::State& state) {
  decode_over_cache(state, 4096, true);
}
BENCHMARK(BM_AttentionDecode1024Half)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AttentionDecode4096Half)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AttentionDecode1024Q8)->Unit(benchmark::kMicrosecond)->UseRealTime();
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
