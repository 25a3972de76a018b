// `qvl quantize -m MODEL -o FILE --quant q4`: writes a pre-packed model file that run, serve
// and bench load with -m FILE in well under a second.
#pragma once

#include <CLI/CLI.hpp>

namespace qvl::cli {

// Registers the `quantize` subcommand on `app`.
void add_quantize_command(CLI::App& app);

}  // namespace qvl::cli
