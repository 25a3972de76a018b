// `qvl quality`: how closely the fast weight types (bf16, q8, q4) follow the exact fp32 model:
// top-1 agreement and KL divergence of next-token distributions over prompts with images.
#pragma once

#include <CLI/CLI.hpp>

namespace qvl::cli {

void add_quality_command(CLI::App& app);

}  // namespace qvl::cli
