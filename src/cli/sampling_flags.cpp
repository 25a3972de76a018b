#include "cli/sampling_flags.h"

namespace qvl::cli {

void SamplingFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--temperature", temperature, "Sampling temperature; 0 = greedy");
  cmd.add_option("--top-p", top_p, "Nucleus sampling mass (0, 1]");
  cmd.add_option("--top-k", top_k, "Keep only the k most likely tokens; 0 = off");
  cmd.add_option("--min-p", min_p, "Drop tokens below min-p times the top probability");
  cmd.add_option("--repetition-penalty", repetition_penalty, "HF-style repetition penalty");
  cmd.add_option("--presence-penalty", presence_penalty, "OpenAI presence penalty [-2, 2]");
  cmd.add_option("--frequency-penalty", frequency_penalty, "OpenAI frequency penalty [-2, 2]");
  cmd.add_option("--seed", seed, "Random seed (same seed, same output)");
  cmd.add_option("--stop", stop, "Stop string (repeatable)")->allow_extra_args(false);
  cmd.add_option("--max-tokens", max_tokens, "Maximum tokens to generate")
      ->check(CLI::PositiveNumber);
  cmd.add_flag("--ignore-eos", ignore_eos, "Keep generating past end-of-sequence tokens");
}

SamplingParams SamplingFlags::resolve(const SamplingParams& defaults) const {
  SamplingParams p = defaults;
  if (temperature) p.temperature = *temperature;
  if (top_p) p.top_p = *top_p;
  if (top_k) p.top_k = *top_k;
  if (min_p) p.min_p = *min_p;
  if (repetition_penalty) p.repetition_penalty = *repetition_penalty;
  if (presence_penalty) p.presence_penalty = *presence_penalty;
  if (frequency_penalty) p.frequency_penalty = *frequency_penalty;
  if (seed) p.seed = *seed;
  p.stop = stop;
  p.max_tokens = max_tokens;
  p.ignore_eos = ignore_eos;
  return p;
}

}  // namespace qvl::cli
