// `qvl serve -m MODEL_DIR`: the OpenAI-compatible HTTP server (see server/server.h).
#pragma once

#include <CLI/CLI.hpp>

namespace qvl::cli {

// Registers the `serve` subcommand on `app`.
void add_serve_command(CLI::App& app);

}  // namespace qvl::cli
