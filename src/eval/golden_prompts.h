// The conversations of a golden folder (the layout of /work/shared/testdata/qwen3vl-tiny-a:
// manifest.json with Hugging Face style messages, image files and the reference greedy tokens)
// as quality prompts whose continuation is the golden greedy output.
#pragma once

#include <string>
#include <vector>

#include "eval/quality_eval.h"

namespace qvl {

// Throws qvl::Error (kNotFound / kCorrupt) naming the file or case that is missing or malformed.
std::vector<QualityPrompt> golden_quality_prompts(const std::string& golden_dir);

}  // namespace qvl
