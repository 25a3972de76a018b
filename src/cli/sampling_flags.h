// Sampling and budget flags shared by `run` and `bench`.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "qvl/engine.h"

namespace qvl::cli {

struct SamplingFlags {
  std::optional<float> temperature, top_p, min_p, repetition_penalty;
  std::optional<float> presence_penalty, frequency_penalty;
  std::optional<int64_t> top_k;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  int64_t max_tokens = 512;
  bool ignore_eos = false;

  void add_to(CLI::App& cmd);
  // Model defaults (generation_config.json) overridden by whatever was given on the command line.
  SamplingParams resolve(const SamplingParams& defaults) const;
};

}  // namespace qvl::cli
