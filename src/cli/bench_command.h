// `qvl bench`: end-to-end speed of a model on this machine (load, vision, prefill, decode at
// several context lengths, time to first token, peak memory), medians over repeats, each next to
// the machine's ceiling (a built-in probe: ops/machine_probe.h), with per-stage breakdowns and
// the scaling over a list of thread counts; a table or one JSON object.
#pragma once

#include <CLI/CLI.hpp>

namespace qvl::cli {

void add_bench_command(CLI::App& app);

}  // namespace qvl::cli
