#include "ops/machine_probe.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "base/aligned_buffer.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "ops/machine_probe_kernels.h"

namespace qvl::ops {
namespace {

namespace pk = probe_kernels;

// Results are folded in here so no loop is optimised away.
std::atomic<uint64_t> g_sink{0};

void sink(uint64_t v) {
  g_sink.fetch_add(v, std::memory_order_relaxed);
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct RunResult {
  double wall_seconds = 0;
  double chunks_per_cpu_second = 0;  // sum over threads of chunks done / CPU seconds used
};

// Runs chunk(i) for every i in [0, total) on `threads` threads of our own, which take indexes
// from a shared counter. Each thread's rate is taken over its own CPU time, so time the OS gives
// to other processes does not count (see machine_probe.h).
RunResult run_chunks(int threads, int64_t total, const std::function<void(int64_t)>& chunk) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<int64_t> next{0};
  std::vector<double> cpu(static_cast<size_t>(threads), 0.0);
  std::vector<int64_t> done(static_cast<size_t>(threads), 0);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const double cpu_start = thread_cpu_seconds();
      int64_t n = 0;
      for (int64_t i = next.fetch_add(1); i < total; i = next.fetch_add(1), ++n) chunk(i);
      cpu[static_cast<size_t>(t)] = thread_cpu_seconds() - cpu_start;
      done[static_cast<size_t>(t)] = n;
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const Timer timer;
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  RunResult r;
  r.wall_seconds = std::max(timer.seconds(), 1e-9);
  for (size_t t = 0; t < cpu.size(); ++t) {
    if (done[t] > 0)
      r.chunks_per_cpu_second += static_cast<double>(done[t]) / std::max(cpu[t], 1e-9);
  }
  return r;
}

constexpr int kRuns = 3;

// Best rate in operations per second of a register-only loop: `loop(iters)` runs iters
// iterations of ops_per_iter multiply-adds (2 operations each).
double best_compute_rate(int threads, double seconds, int64_t ops_per_iter,
                         const std::function<void(int64_t)>& loop) {
  constexpr int64_t kChunkIters = 1 << 13;  // tens of microseconds per chunk
  const auto run = [&](int64_t chunks) {
    return run_chunks(threads, chunks, [&](int64_t) { loop(kChunkIters); });
  };
  // Size the runs from a short one: about seconds / kRuns each.
  int64_t chunks = 4 * threads;
  const double calibration = run(chunks).wall_seconds;
  chunks = std::max<int64_t>(
      chunks, static_cast<int64_t>(static_cast<double>(chunks) * seconds / kRuns / calibration));
  double best = 0;
  for (int r = 0; r < kRuns; ++r) {
    best = std::max(best, run(chunks).chunks_per_cpu_second);
  }
  return best * static_cast<double>(kChunkIters * ops_per_iter * 2);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// All threads wait until the last one arrives (spinning politely: rounds are short).
class SpinBarrier {
 public:
  explicit SpinBarrier(int n) : n_(n) {}
  void wait() {
    const int generation = generation_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) == n_ - 1) {
      count_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      return;
    }
    while (generation_.load(std::memory_order_acquire) == generation) std::this_thread::yield();
  }

 private:
  const int n_;
  std::atomic<int> count_{0};
  std::atomic<int> generation_{0};
};

struct ReadRounds {
  double bytes_per_second = 0;  // 0 when no round qualified
  int valid = 0;
};

// Bandwidth needs the threads to read at the same time, which a busy machine does not always
// allow, so it is measured in short rounds: the threads meet at a barrier, each reads its own
// slice (slices walk through the buffer, so none is still cached), and a round counts only when
// every thread read without being descheduled (CPU time >= 90% of wall time) and the reads
// overlapped. A round's rate is the sum of the threads' rates; the figure is the 90th percentile
// of the rounds that counted (the best if fewer than 10).
ReadRounds read_in_rounds(int threads, double seconds, const AlignedBuffer<uint8_t>& buffer,
                          uint64_t (*read)(const uint8_t*, size_t)) {
  const size_t slice = std::min<size_t>(size_t{8} << 20, buffer.size() / (2 * threads) / 64 * 64);
  const size_t slices = buffer.size() / std::max<size_t>(slice, 64);
  struct Sample {
    double wall0, wall1, cpu0, cpu1;
  };
  std::vector<Sample> samples(static_cast<size_t>(threads));
  std::vector<double> rates;
  SpinBarrier barrier(threads);
  std::atomic<bool> stop{false};
  const double start = wall_seconds();
  const auto evaluate = [&] {  // thread 0, between rounds
    double first_end = 1e300, last_start = 0, longest = 0, rate = 0;
    bool ran_through = true;
    for (const Sample& s : samples) {
      const double wall = s.wall1 - s.wall0;
      ran_through = ran_through && s.cpu1 - s.cpu0 >= 0.9 * wall;
      first_end = std::min(first_end, s.wall1);
      last_start = std::max(last_start, s.wall0);
      longest = std::max(longest, wall);
      rate += static_cast<double>(slice) / std::max(wall, 1e-9);
    }
    if (ran_through && first_end - last_start >= 0.8 * longest) rates.push_back(rate);
    const double elapsed = wall_seconds() - start;
    if ((elapsed >= seconds && rates.size() >= 5) || elapsed >= std::max(0.5, 10 * seconds)) {
      stop.store(true, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      Sample& s = samples[static_cast<size_t>(t)];
      for (size_t round = 0;; ++round) {
        barrier.wait();
        if (stop.load(std::memory_order_relaxed)) return;
        const uint8_t* p = buffer.data() + (round * threads + t) % slices * slice;
        s.cpu0 = thread_cpu_seconds();
        s.wall0 = wall_seconds();
        sink(read(p, slice));
        s.wall1 = wall_seconds();
        s.cpu1 = thread_cpu_seconds();
        barrier.wait();
        if (t == 0) evaluate();
      }
    });
  }
  for (auto& th : pool) th.join();
  ReadRounds r;
  r.valid = static_cast<int>(rates.size());
  if (!rates.empty()) {
    std::sort(rates.begin(), rates.end());
    r.bytes_per_second = rates.size() >= 10 ? rates[rates.size() * 9 / 10] : rates.back();
  }
  return r;
}

// The sustained read rate: all threads stream their contiguous share of the whole buffer at
// once, as decode streams ~1 GB of weights per token, and a pass's rate is the buffer's bytes over
// the time from the first start to the last end. The rounds above time 8 MiB slices per thread
// and sum the threads' own rates at their 90th percentile: a burst figure, above what a stream of
// the whole buffer sustains (on a shared 2-core Zen 5 VM 64.7 against 58.5 GB/s). Passes where a
// thread was descheduled (CPU time < 90% of wall) do not count; the figure is the best pass (of
// all passes when none counted).
double stream_read_rate(int threads, double seconds, const AlignedBuffer<uint8_t>& buffer,
                        uint64_t (*read)(const uint8_t*, size_t)) {
  const size_t share = buffer.size() / static_cast<size_t>(threads) / 64 * 64;
  constexpr size_t kPiece = size_t{8} << 20;
  struct Sample {
    double wall0, wall1, cpu0, cpu1;
  };
  std::vector<Sample> samples(static_cast<size_t>(threads));
  double best = 0, best_disturbed = 0;
  const double start = wall_seconds();
  for (int pass = 0; pass < 20; ++pass) {
    SpinBarrier barrier(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        Sample& s = samples[static_cast<size_t>(t)];
        const uint8_t* p = buffer.data() + static_cast<size_t>(t) * share;
        barrier.wait();
        s.cpu0 = thread_cpu_seconds();
        s.wall0 = wall_seconds();
        for (size_t done = 0; done < share; done += kPiece) {
          sink(read(p + done, std::min(kPiece, share - done)));
        }
        s.wall1 = wall_seconds();
        s.cpu1 = thread_cpu_seconds();
      });
    }
    for (auto& th : pool) th.join();
    double first = 1e300, last = 0;
    bool ran_through = true;
    for (const Sample& s : samples) {
      first = std::min(first, s.wall0);
      last = std::max(last, s.wall1);
      ran_through = ran_through && s.cpu1 - s.cpu0 >= 0.9 * (s.wall1 - s.wall0);
    }
    const double rate = static_cast<double>(share) * threads / std::max(last - first, 1e-9);
    double& kept = ran_through ? best : best_disturbed;
    kept = std::max(kept, rate);
    if (pass >= 4 && wall_seconds() - start >= seconds) break;
  }
  return best > 0 ? best : best_disturbed;
}

// Best streaming read rate (bytes/s) over `buffer` from passes in 1 MiB chunks, each thread's
// rate over its CPU time: the fallback when no round of read_in_rounds qualified.
double read_rate_per_cpu_time(int threads, const AlignedBuffer<uint8_t>& buffer,
                              uint64_t (*read)(const uint8_t*, size_t)) {
  constexpr size_t kChunk = size_t{1} << 20;
  const int64_t chunks = static_cast<int64_t>(buffer.size() / kChunk);
  double best = 0;
  for (int pass = 0; pass < kRuns; ++pass) {
    const RunResult r = run_chunks(threads, chunks, [&](int64_t i) {
      sink(read(buffer.data() + static_cast<size_t>(i) * kChunk, kChunk));
    });
    best = std::max(best, r.chunks_per_cpu_second);
  }
  return best * static_cast<double>(kChunk);
}

// Idle DRAM latency in ns: one dependent chain of loads through lines 8-63 of the 4 KiB pages of
// the buffer's first 4 MiB in a scattered order, each line once. Before the chain runs, half the
// rest of the buffer is read (at the default size 2x the last-level cache, so none of the chained
// lines stays cached), then line 0 of each page, so that the 1024 pages' translations are in the
// TLB: a load costs DRAM's latency, not a page walk besides (streamed weights miss the TLB once per
// page, a random chain over a large buffer at every load: ~340 ns against ~100 in this VM).
// Lines 8 on are not next to line 0, which a prefetcher may fetch with it. Best of 2 chains.
double dram_latency_ns(AlignedBuffer<uint8_t>& buffer, uint64_t (*read)(const uint8_t*, size_t)) {
  constexpr uint64_t kLine = 64, kPage = 4096, kFirstLine = 8;
  constexpr uint64_t kRegion = uint64_t{4} << 20;
  constexpr uint64_t kStride = 2654435761u;  // prime, above the line count: a full cycle
  if (buffer.size() < 2 * kRegion) return 0;
  constexpr uint64_t pages = kRegion / kPage, steps = pages * (kPage / kLine - kFirstLine);
  double best = 0;
  for (uint64_t chain = 0; chain < 2; ++chain) {
    // Step j's line: k = (j * kStride + chain) mod steps, page k mod pages, line 8 + k / pages.
    const auto line = [&](uint64_t j) {
      const uint64_t k = (j * kStride + chain) % steps;
      return buffer.data() + k % pages * kPage + (kFirstLine + k / pages) * kLine;
    };
    for (uint64_t j = 0; j + 1 < steps; ++j) {
      uint8_t* next = line(j + 1);
      std::memcpy(line(j), &next, sizeof(next));
    }
    const uint8_t* last = nullptr;
    std::memcpy(line(steps - 1), &last, sizeof(last));
    sink(read(buffer.data() + kRegion, (buffer.size() - kRegion) / 2));
    uint64_t touched = 0;
    for (uint64_t page = 0; page < pages; ++page) touched += buffer[page * kPage];
    sink(touched);
    const uint8_t* p = line(0);
    uint64_t hops = 0;  // used after the loop, so the chain cannot be optimised away
    const double start = wall_seconds();
    for (; p != nullptr; ++hops) std::memcpy(&p, p, sizeof(p));
    const double ns = (wall_seconds() - start) * 1e9 / static_cast<double>(hops);
    QVL_CHECK(hops == steps);
    best = best == 0 ? ns : std::min(best, ns);
  }
  return best;
}

int64_t parse_cache_size(const std::string& text) {
  // sysfs writes e.g. "32768K" or "1M".
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (...) {
    return 0;
  }
  const char unit = used < text.size() ? text[used] : ' ';
  return unit == 'K' ? value << 10 : unit == 'M' ? value << 20 : value;
}

}  // namespace

int64_t last_level_cache_bytes() {
  int best_level = 0;
  int64_t best = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_file(dir + "/level"), size_file(dir + "/size");
    int level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size)) continue;
    if (level >= best_level) {
      best_level = level;
      best = parse_cache_size(size);
    }
  }
  if (best > 0) return best;
  for (const int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long v = sysconf(name);
    if (v > 0) return v;
  }
  return 0;
}

const ProbeFigures& MachineProbe::at(int threads) const {
  QVL_CHECK(!figures.empty());
  const ProbeFigures* found = &figures.front();
  for (const auto& f : figures) {
    if (f.threads <= threads) found = &f;
  }
  return *found;
}

MachineProbe probe_machine(const ProbeOptions& options) {
  MachineProbe m;
  m.isa = active_isa();
  m.int8_gemm_kernel = active_int8_gemm_kernel_name();
  m.physical_cores = physical_core_count();
  m.llc_bytes = last_level_cache_bytes();
  std::vector<int> counts = options.threads;
  if (counts.empty()) counts = {1, m.physical_cores};
  for (int& c : counts) c = std::max(1, c);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());

  constexpr int64_t kMiB = int64_t{1} << 20;
  int64_t bytes = options.buffer_bytes > 0 ? options.buffer_bytes
                                           : std::max<int64_t>(64 * kMiB, 4 * m.llc_bytes);
  bytes = std::max<int64_t>(kMiB, bytes / kMiB * kMiB);
  m.buffer_bytes = bytes;
  // On 2 MiB pages where the system gives them (AlignedBuffer), as a model file's weights are in
  // the page cache's large folios: the reads see the TLB the GEMV sees, and the buffer is mapped
  // in ~3 s faster in a VM than in 4 KiB faults.
  AlignedBuffer<uint8_t> buffer(static_cast<size_t>(bytes));
  // Touch every page (and give the reads something to add).
  for (int64_t i = 0; i < bytes; ++i) buffer[static_cast<size_t>(i)] = static_cast<uint8_t>(i * 7);

  static const pk::ProbeKernels scalar{pk::fma_loop_scalar,
                                       pk::kFmaScalarPerIter,
                                       "scalar mul+add",
                                       nullptr,
                                       0,
                                       "",
                                       pk::int8_dot_loop_scalar,
                                       pk::kInt8ScalarPerIter,
                                       "scalar",
                                       pk::read_sum_scalar};
  const pk::ProbeKernels* found =
      m.isa == IsaLevel::kScalar ? nullptr : pk::probe_kernels_for(m.isa);
  const pk::ProbeKernels& k = found != nullptr ? *found : scalar;
  const auto read = k.read_sum;
  const auto fma = k.fma_loop;
  const int64_t fma_ops = k.fma_per_iter;
  const auto int8 = k.int8_dot_loop;
  const int64_t int8_ops = k.int8_per_iter;
  m.fp32_instruction = k.fp32_instruction;
  m.bf16_instruction = k.bf16_dot_loop != nullptr ? k.bf16_instruction : "";
  m.int8_instruction = k.int8_instruction;

  for (const int t : counts) {
    ProbeFigures f;
    f.threads = t;
    const ReadRounds rounds = read_in_rounds(t, options.seconds, buffer, read);
    f.dram_concurrent_rounds = rounds.valid;
    f.dram_read_gb_per_s =
        (rounds.valid > 0 ? rounds.bytes_per_second : read_rate_per_cpu_time(t, buffer, read)) *
        1e-9;
    f.dram_stream_gb_per_s = stream_read_rate(t, options.seconds, buffer, read) * 1e-9;
    f.fp32_fma_gflop_per_s =
        best_compute_rate(
            t, options.seconds, fma_ops,
            [&](int64_t iters) { sink(std::bit_cast<uint32_t>(fma(iters, 0.5f, 1.0f))); }) *
        1e-9;
    if (k.bf16_dot_loop != nullptr) {
      f.bf16_dot_gflop_per_s =
          best_compute_rate(t, options.seconds, k.bf16_per_iter,
                            [&](int64_t iters) {
                              sink(std::bit_cast<uint32_t>(k.bf16_dot_loop(iters, 0.5f, 0.25f)));
                            }) *
          1e-9;
    }
    f.int8_dot_gop_per_s =
        best_compute_rate(t, options.seconds, int8_ops,
                          [&](int64_t iters) { sink(static_cast<uint32_t>(int8(iters, 1, 1))); }) *
        1e-9;
    m.figures.push_back(f);
  }
  m.dram_latency_ns = dram_latency_ns(buffer, read);
  return m;
}

}  // namespace qvl::ops
