// The speculative-decoding flags of qvl serve, run and batch (SpeculativeOptions;
// docs/speculative-decoding.md).
#pragma once

#include <CLI/CLI.hpp>

#include "qvl/engine.h"

namespace qvl::cli {

void add_draft_flags(CLI::App* cmd, SpeculativeOptions& options);

}  // namespace qvl::cli
