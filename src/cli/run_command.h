// `qvl run`: one question (or a messages file) from the command line, answer streamed to stdout.
#pragma once

#include <CLI/CLI.hpp>

namespace qvl::cli {

void add_run_command(CLI::App& app);

}  // namespace qvl::cli
