// `qvl pull Org/Name[@revision]`: downloads a model into the Hugging Face cache.
#pragma once

#include <CLI/CLI.hpp>

namespace qvl::cli {

// Registers the `pull` subcommand on `app`.
void add_pull_command(CLI::App& app);

}  // namespace qvl::cli
