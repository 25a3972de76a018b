// `qvl bench` output: the figures of each thread count next to the machine's ceilings (DRAM
// bandwidth for decode, the peak of the arithmetic in use for prefill and vision), the stage
// breakdowns and the scaling between thread counts, as one JSON object or a table.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/bench_figures.h"
#include "ops/machine_probe.h"
#include "qvl/engine.h"

namespace qvl::cli {

nlohmann::json machine_json(const ops::MachineProbe& machine);

struct BenchContext {
  std::string model;
  const ModelInfo* info = nullptr;
  const BenchSettings* settings = nullptr;
  const ops::MachineProbe* machine = nullptr;
  double load_ms = 0;
  double peak_rss_mib = 0;
};

// Top level: model facts, load time, peak memory, "machine", the figures of the last run (the
// existing flat keys), "runs" (one object per thread count) and "scaling" (first run -> each
// other run, as speed-ups).
nlohmann::json bench_json(const BenchContext& context, const std::vector<RunFigures>& runs);

// A human-readable table of bench_json's output (or of machine_json's, for --probe-only).
void print_bench_table(const nlohmann::json& report);

}  // namespace qvl::cli
