// `qvl bench`: end-to-end speed of a model on this machine (load, vision, prefill, decode,
// time to first token, peak memory), medians over repeats, optionally as JSON.
#pragma once

#include <CLI/CLI.hpp>

namespace qvl::cli {

void add_bench_command(CLI::App& app);

}  // namespace qvl::cli
