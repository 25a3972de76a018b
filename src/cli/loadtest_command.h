// `qvl loadtest`: measures the serving targets (cached turns and images, batched decode, token
// gaps under interference, memory) against a running `qvl serve`.
#pragma once

#include <CLI/CLI.hpp>

namespace qvl::cli {

void add_loadtest_command(CLI::App& app);

}  // namespace qvl::cli
