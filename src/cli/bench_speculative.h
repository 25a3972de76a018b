// `qvl bench`'s speculative-decoding figures: two tasks where drafts can help (a receipt to JSON
// under a schema: jump-forward over the schema's forced text; a transcription of text given in
// the prompt: prompt lookup), each decoded with and without drafts in the same run, and checked
// to give the same tokens. On a model with random weights (gen-model) the acceptance reflects
// that model's own loops, not a trained model's copying: the step costs are what carries over.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "qvl/engine.h"

namespace qvl::cli {

struct SpeculativeTask {
  std::string name;  // "json", "ocr"
  int64_t completion_tokens = 0;
  double plain_tok_per_s = 0;  // decode speed without drafts (median)
  double tok_per_s = 0;        // with drafts (median)
  double plain_step_ms = 0;    // one decode step without drafts
  double step_ms = 0;          // one step with drafts (the rows it verifies included)
  int64_t draft_tokens = 0;    // drafted, over the repeats
  int64_t accepted_tokens = 0;
  bool same_answer = true;  // every repeat gave the plain run's tokens
};

// Runs both tasks `repeats` times each way (median speeds). Requests are new to the engine's
// caches each time.
std::vector<SpeculativeTask> measure_speculative(Engine& engine, int repeats);

// Adds the figures as speculative_<task>_* keys.
void add_speculative_json(const std::vector<SpeculativeTask>& tasks, nlohmann::json& out);

}  // namespace qvl::cli
