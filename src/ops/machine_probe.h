// What this machine can do at most, measured in a second or two: DRAM read bandwidth and the
// peak rates of the arithmetic the kernels use (fp32 FMA, bf16 dot, int8 dot), on 1 and on all
// threads. `qvl bench` reports its speeds as a percentage of these ceilings.
//
// Compute peaks come from register-only loops with enough independent accumulators to keep every
// pipeline busy (machine_probe_kernels.h), run by threads of the probe's own that take work in
// small chunks from a shared counter; each thread's rate is taken over its own CPU time and the
// rates are summed: what N threads deliver when each has a core, even on a machine where other
// processes take turns with them. Bandwidth comes from streaming reads over a buffer several
// times the size of the last-level cache, in short rounds that count only when all threads read
// at the same time undisturbed (see machine_probe.cpp); if none does (a very busy machine), from
// per-CPU-time rates like the compute peaks, which then assume the threads ran together.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/packed_matrix.h"

namespace qvl::ops {

struct ProbeOptions {
  std::vector<int> threads;  // thread counts to measure; empty: 1 and physical_core_count()
  double seconds = 0.2;      // time budget per figure and thread count (best of ~3 runs)
  int64_t buffer_bytes = 0;  // bandwidth buffer; 0: 4 x the last-level cache, at least 64 MiB
};

struct ProbeFigures {
  int threads = 0;
  double dram_read_gb_per_s = 0;   // 1e9 bytes/s
  int dram_concurrent_rounds = 0;  // rounds the bandwidth came from (0: per-CPU-time fallback)
  // Sustained: every thread streaming its share of the whole buffer at once. What decode's ~1 GB
  // per token can reach; dram_read is a burst rate above it.
  double dram_stream_gb_per_s = 0;
  double fp32_fma_gflop_per_s = 0;             // multiply-add = 2 flops
  std::optional<double> bf16_dot_gflop_per_s;  // absent without vdpbf16ps / BFMMLA at the level
  double int8_dot_gop_per_s = 0;               // multiply-add of a byte pair = 2 ops
};

struct MachineProbe {
  IsaLevel isa = IsaLevel::kScalar;  // the level whose loops ran: active_isa()
  int physical_cores = 0;
  int64_t llc_bytes = 0;  // last-level cache (0 if unknown)
  int64_t buffer_bytes = 0;
  std::string fp32_instruction, bf16_instruction, int8_instruction;  // bf16 empty when absent
  std::string int8_gemm_kernel;  // the one matmul uses: active_int8_gemm_kernel_name()
  // Idle load-to-use latency of DRAM (a dependent chain of loads, one thread). With a read rate it
  // gives the bytes a core keeps in flight (Little's law): rate per core * latency.
  double dram_latency_ns = 0;
  std::vector<ProbeFigures> figures;  // one per measured thread count, ascending

  // The figures of `threads`, else of the nearest measured count below it (the smallest if none).
  const ProbeFigures& at(int threads) const;
};

MachineProbe probe_machine(const ProbeOptions& options = {});

// Size of the last-level cache in bytes (sysfs, then sysconf), 0 if unknown.
int64_t last_level_cache_bytes();

}  // namespace qvl::ops
