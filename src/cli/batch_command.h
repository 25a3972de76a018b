// `qvl batch`: many images (or a JSONL file of chat requests) through the engine concurrently,
// one JSON line per input, resumable, with progress and a summary.
#pragma once

#include <CLI/CLI.hpp>

namespace qvl::cli {

void add_batch_command(CLI::App& app);

}  // namespace qvl::cli
